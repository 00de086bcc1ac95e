"""What a self-play call returns: its training positions and game records (`SelfPlayData`), and its figures
(`SelfPlayStats`).

Parts played apart (index ranges of one call, by the workers of
`agents.alphazero.distributed.workers`) are put back together with `merge_selfplay`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

import numpy as np

from agents.arena.records import GameRecord

TIMING_STATS = ("seconds", "games_per_s", "positions_per_s", "simulations_per_s")
"""The stats that measure time (all others depend on the games only)."""


@dataclass
class SelfPlayStats:
    """The figures of a self-play call: counts of its games, positions and simulations, its wall time, and the
    rates that follow from them."""

    games: int = 0
    positions: int = 0
    full_search_positions: int = 0
    """Positions searched in full (the others: playout-capped cheap searches and the opponents' moves)."""
    simulations: int = 0
    seconds: float = 0.0
    """Wall time of the call (of the whole, for parts played at once: `merge`)."""
    red_wins: int = 0
    blue_wins: int = 0
    draws: int = 0
    truncated: int = 0
    """Games cut at `SelfPlayConfig.max_plies` or judged level (`SelfPlayConfig.level_plies`), counted among the
    draws."""
    left_out: int = 0
    """Positions played (counted in `positions`) but not among the rows: drawn games that
    `SelfPlayConfig.draw_keep` leaves out of training (less the rows `SelfPlayConfig.draw_policy` keeps)."""
    policy_only: int = 0
    """Rows without a value target (`SelfPlayData.trains_value` False): the positions of left-out draws that
    train the policy (`SelfPlayConfig.draw_policy`)."""
    opponent_games: int = 0
    opponent_score: float = math.nan
    """The network's mean score (1 win, 0.5 draw, 0 loss) in its opponent games; NaN when there were none."""
    terminations: dict[str, int] = field(default_factory=dict)
    """Games by the name of their termination (``den``, ``repetition``, ``ply_cap``, ...)."""

    @property
    def mean_length(self) -> float:
        """Positions per game (0 without games)."""
        return self.positions / max(self.games, 1)

    @property
    def games_per_s(self) -> float:
        return self._per_second(self.games)

    @property
    def positions_per_s(self) -> float:
        return self._per_second(self.positions)

    @property
    def simulations_per_s(self) -> float:
        return self._per_second(self.simulations)

    def _per_second(self, count: int) -> float:
        return float(count) / self.seconds if self.seconds > 0 else math.nan

    def untimed(self) -> dict[str, Any]:
        """Every figure but those of `TIMING_STATS` by name (the mean length among them): what the games decide."""
        figures = {f.name: getattr(self, f.name) for f in fields(self)}
        figures["mean_length"] = self.mean_length
        figures["terminations"] = dict(self.terminations)
        return {k: v for k, v in figures.items() if k not in TIMING_STATS}

    @classmethod
    def merge(cls, parts: Sequence[SelfPlayStats], seconds: float | None = None) -> SelfPlayStats:
        """The figures of the parts together: counts add up, the opponent score is weighted by each part's
        opponent games. `seconds` is the wall time of the whole (for parts played at once, by workers); by
        default the parts' times add up (parts played one after the other). Rates follow from it."""
        total = float(sum(p.seconds for p in parts)) if seconds is None else float(seconds)
        terminations: dict[str, int] = {}
        for p in parts:
            for name, count in p.terminations.items():
                terminations[name] = terminations.get(name, 0) + count
        opponent_games = sum(p.opponent_games for p in parts)
        points = sum(p.opponent_score * p.opponent_games for p in parts if p.opponent_games > 0)
        return cls(
            games=sum(p.games for p in parts),
            positions=sum(p.positions for p in parts),
            full_search_positions=sum(p.full_search_positions for p in parts),
            simulations=sum(p.simulations for p in parts),
            seconds=total,
            red_wins=sum(p.red_wins for p in parts),
            blue_wins=sum(p.blue_wins for p in parts),
            draws=sum(p.draws for p in parts),
            truncated=sum(p.truncated for p in parts),
            left_out=sum(p.left_out for p in parts),
            policy_only=sum(p.policy_only for p in parts),
            opponent_games=opponent_games,
            opponent_score=points / opponent_games if opponent_games else math.nan,
            terminations=terminations,
        )


class Rows(Protocol):
    """Training rows of positions: `SelfPlayData`'s arrays (of a whole call, a part of one, or one game)."""

    @property
    def obs(self) -> np.ndarray: ...
    @property
    def mask(self) -> np.ndarray: ...
    @property
    def policy(self) -> np.ndarray: ...
    @property
    def value(self) -> np.ndarray: ...
    @property
    def full_search(self) -> np.ndarray: ...
    @property
    def survival(self) -> np.ndarray: ...
    @property
    def trains_value(self) -> np.ndarray: ...
    @property
    def ply(self) -> np.ndarray: ...
    @property
    def game(self) -> np.ndarray: ...
    @property
    def game_count(self) -> int: ...


@dataclass
class SelfPlayData:
    """N positions of self-play (game by game, in game-index order) and the games' records."""

    obs: np.ndarray
    """float32 [N, 32, 9, 7]: observations, side to move's frame."""
    mask: np.ndarray
    """bool [N, 252]: legal actions."""
    policy: np.ndarray
    """float32 [N, 252]: search policy (0 off the mask)."""
    value: np.ndarray
    """float32 [N]: value target from the side to move's view: the game's result (+1 win, -1 loss, 0 draw),
    for a cut game the search's bootstrapped verdict, blended with the root value per `value_q_weight`."""
    full_search: np.ndarray
    """bool [N]: False for playout-capped cheap moves (not policy targets)."""
    survival: np.ndarray
    """float32 [N, 16]: 1 for each piece on the board in the game's last position (a cut game's too), the
    side to move's Rat .. Elephant then the opponent's (observation planes 0-15); the survival head's target."""
    trains_value: np.ndarray
    """bool [N]: False for rows that train the policy only (`SelfPlayConfig.draw_policy`), whose value
    target is not used."""
    ply: np.ndarray
    """int16 [N]: the ply of each row's position in its game (0: the game's first position)."""
    game: np.ndarray
    """int32 [N]: each row's game, an index into `records` (the record the row's position is replayed from:
    its start, then its first `ply` moves)."""
    records: list[GameRecord] = field(default_factory=list)
    stats: SelfPlayStats = field(default_factory=SelfPlayStats)

    def __len__(self) -> int:
        return int(self.value.shape[0])

    @property
    def game_count(self) -> int:
        """The games of `records` (those without rows included)."""
        return len(self.records)

    @classmethod
    def joined(cls, parts: Sequence[Rows], records: list[GameRecord], stats: SelfPlayStats) -> SelfPlayData:
        """The rows of `parts` one after the other, with the games' `records` (each part's `game_count` of them,
        in the parts' order) and `stats`."""
        offsets = np.cumsum([0] + [p.game_count for p in parts])
        if offsets[-1] != len(records):
            raise ValueError(f"the parts hold {offsets[-1]} games, the records {len(records)}")
        return cls(
            obs=np.concatenate([p.obs for p in parts]),
            mask=np.concatenate([p.mask for p in parts]),
            policy=np.concatenate([p.policy for p in parts]),
            value=np.concatenate([p.value for p in parts]),
            full_search=np.concatenate([p.full_search for p in parts]),
            survival=np.concatenate([p.survival for p in parts]),
            trains_value=np.concatenate([p.trains_value for p in parts]),
            ply=np.concatenate([p.ply for p in parts]).astype(np.int16),
            game=np.concatenate([p.game.astype(np.int32) + k for p, k in zip(parts, offsets)]).astype(np.int32),
            records=records,
            stats=stats,
        )


def merge_selfplay(parts: Sequence[SelfPlayData], seconds: float | None = None) -> SelfPlayData:
    """The parts' positions and records one after the other, with their stats combined (`SelfPlayStats.merge`:
    `seconds` is the wall time of the whole, by default the parts' times added up)."""
    if not parts:
        raise ValueError("merge_selfplay needs at least one part")
    return SelfPlayData.joined(
        parts, [r for p in parts for r in p.records], SelfPlayStats.merge([p.stats for p in parts], seconds)
    )

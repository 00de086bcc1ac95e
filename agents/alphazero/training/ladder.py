"""Evaluation during training: the network (with a small search) against a ladder of players.

`play_match` plays ``games`` games between two sides at once, colours
alternating (side A is Red in even games). A side is either a `Searcher`
(an evaluator driving a `BatchedMCTS` over all games where it is to move,
one network call per simulation step for all of them) or any `Player`
(alpha-beta, random, ...) asked game by game. Scores are from side A's
view: win 1, draw 1/2, loss 0; a game reaching ``max_plies`` counts as a draw.
The openings are the tournaments' (`agents.arena.tournament.random_openings`).
`evaluate_ladder` is a training run's evaluation: the ladder, the previous network and the running Elo.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import torch
from tqdm import tqdm

from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.search import BatchedMCTS, Evaluator, MCTSConfig, make_policy, search_tables
from agents.alphazero.selfplay.endgames import tables_if_built, value_accuracy
from agents.arena.ratings import elo_from_score, score_interval
from agents.arena.tournament import random_openings
from envs import RuleSet
from envs import kernels as K
from envs.batch import GameBatch
from envs.encoding import move_to_action
from envs.players import Player, make_player
from envs.seeding import derive_seed

if TYPE_CHECKING:
    from agents.alphazero.training.config import EvalConfig


@dataclass
class Searcher:
    """A network side of a match: its evaluator and the search it runs (greedy, no noise)."""

    evaluator: Evaluator
    mcts: MCTSConfig
    num_simulations: int
    """The search's simulations a move (`EvalConfig.num_simulations` in a training run's evaluation)."""
    name: str = "net"


Side = Union[Searcher, Player]


@dataclass
class MatchResult:
    """Counts from side A's view, and the score in [0, 1]."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    plies: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / max(1, self.games)


def greedy(config: MCTSConfig) -> MCTSConfig:
    """The search settings for evaluation: no exploration temperature."""
    return dataclasses.replace(config, puct=dataclasses.replace(config.puct, temperature=0.0, temperature_plies=0))


def play_match(
    a: Side, b: Side, *, games: int, rules: RuleSet, seed: int = 0, max_plies: int = 400, opening_plies: int = 0
) -> MatchResult:
    """Play `games` games of `a` against `b` in lockstep; colours alternate (a is Red in even games).

    With `opening_plies` > 0 each pair of games (2k, 2k+1) starts from the same
    position after that many random plies, one game with each colour, so two
    deterministic players still play varied games.
    """
    openings = [o.board(rules).jfen() for o in random_openings((games + 1) // 2, opening_plies, seed, rules)]
    batch = GameBatch(games, rules, max_plies=max_plies)
    for i in range(games):
        batch.reset(i, openings[i // 2])
    a_side = np.array([K.RED if i % 2 == 0 else K.BLUE for i in range(games)])  # a's colour per game
    searches: dict[int, BatchedMCTS] = {}
    for k, s in enumerate((a, b)):
        if isinstance(s, Searcher):
            searches[k] = BatchedMCTS(
                s.evaluator,
                make_policy(greedy(s.mcts)),
                batch.flags,
                seed=derive_seed(seed, "search", k),
                tablebase=search_tables(s.mcts, rules),
            )
        else:
            s.reset()
    while not batch.done.all():
        for k, side in enumerate((a, b)):
            to_move = batch.state[:, K.S_SIDE].astype(np.int64)
            mine = ~batch.done & ((to_move == a_side) if k == 0 else (to_move != a_side))
            idx = np.flatnonzero(mine)
            if len(idx) == 0:
                continue
            if isinstance(side, Searcher):
                out = searches[k].search(batch, active=mine, add_noise=False, num_simulations=side.num_simulations)
                actions = {int(i): int(out.action[i]) for i in idx}
            else:
                actions = {}
                for j in idx.tolist():
                    move = side.select_move(batch.board(j))
                    actions[j] = int(move_to_action(move.to_int(), int(to_move[j])))
            for g, action in actions.items():
                batch.play(g, action)
                for search in searches.values():
                    search.advance(g, action)
    result = MatchResult()
    for i in range(games):
        result.plies += batch.plies(i)
        _, winner = batch.outcome(i)
        if batch.truncated[i] or winner == K.DRAW or winner < 0:
            result.draws += 1
        elif winner == a_side[i]:
            result.wins += 1
        else:
            result.losses += 1
    return result


def play_vs_spec(
    searcher: Searcher,
    spec: str,
    *,
    games: int,
    rules: RuleSet,
    seed: int,
    max_plies: int = 400,
    opening_plies: int = 0,
) -> MatchResult:
    """Net against the player built from `spec` (`random`, `alphabeta:depth=2`...), one seeded player per match."""
    opponent = make_player(spec, rules=rules, seed=seed)
    return play_match(
        searcher, opponent, games=games, rules=rules, seed=seed, max_plies=max_plies, opening_plies=opening_plies
    )


def spec_tag(spec: str) -> str:
    """A TensorBoard-friendly tag for a player spec: `alphabeta:depth=2` -> `alphabeta_depth2`."""
    kind, _, rest = spec.partition(":")
    return kind + ("_" + rest.replace("=", "").replace(",", "_") if rest else "")


def evaluate_ladder(
    evaluator: Any,
    previous: torch.nn.Module,
    *,
    config: EvalConfig,
    mcts: MCTSConfig,
    rules: RuleSet,
    seed: int,
    iteration: int,
    device: torch.device,
    precision: str,
    elo: float,
    progress: bool = False,
) -> dict[str, float]:
    """Scores of the network of `evaluator` against the ladder of `config` (``train.eval``) and against
    `previous` (the network of the last evaluation, run on `device` in `precision`), both searching with `mcts`
    under `rules`, each match seeded from `seed` and `iteration`; the running Elo (`elo` before this
    evaluation); and the value head's accuracy on endgame-table positions (`endgames.value_accuracy`) when the
    tables are built.

    Changes nothing outside: a stop may abandon it at any point."""
    me = Searcher(evaluator, mcts, config.num_simulations)
    out: dict[str, float] = {}
    ladder = []
    bar = tqdm(
        total=len(config.opponents) + int(config.vs_previous),
        desc="eval",
        unit="match",
        disable=not progress,
        leave=False,
    )
    for spec in config.opponents:
        bar.set_postfix_str(spec)
        r = play_vs_spec(
            me,
            spec,
            games=config.games,
            rules=rules,
            seed=derive_seed(seed, "eval", spec, iteration),
            max_plies=config.max_plies,
            opening_plies=config.opening_plies,
        )
        out[f"score_{spec_tag(spec)}"] = r.score
        # The 95% interval of the score (24 games: about +-0.2), logged beside it and drawn by plot_run.py.
        out[f"low_{spec_tag(spec)}"], out[f"high_{spec_tag(spec)}"] = score_interval(r.wins, r.draws, r.losses)
        ladder.append(r.score)
        bar.update(1)
    if ladder:
        out["ladder_score"] = float(np.mean(ladder))
    if config.vs_previous:
        bar.set_postfix_str("previous")
        prev = Searcher(make_evaluator(previous, device, precision), mcts, config.num_simulations, name="previous")
        r = play_match(
            me,
            prev,
            games=config.games,
            rules=rules,
            seed=derive_seed(seed, "previous", iteration),
            max_plies=config.max_plies,
            opening_plies=config.opening_plies,
        )
        out["score_previous"] = r.score
        out["elo"] = elo + elo_from_score(r.score, r.games)
        bar.update(1)
    bar.close()
    tables = tables_if_built(rules) if config.tablebase_positions > 0 else None
    if tables is not None:
        out.update(
            value_accuracy(
                evaluator, rules, tables, config.tablebase_positions, seed=derive_seed(seed, "tablebase", iteration)
            ).tags()
        )
    return out

"""The `alphabeta` player kind: the alpha-beta baseline behind the Player protocol.

Specs (options combine; limits given together all apply, the first reached stops):

``alphabeta``                      the ``normal`` level
``alphabeta:level=beginner``       1 ply, and a random legal move 20% of the time
``alphabeta:level=normal``         3 plies
``alphabeta:level=expert``         6 plies
``alphabeta:depth=4``              an explicit depth in plies
``alphabeta:time=0.5``             seconds per move (iterative deepening; machine-dependent)
``alphabeta:nodes=100000``         positions per move (reproducible)
``alphabeta:depth=4,noise=20``     evaluation noise in [-20, 20] (a Dog = 300) so games differ
``alphabeta:level=expert,tt=22``   a 2**22-entry transposition table (default 2**20)
``alphabeta:depth=4,tablebase=true`` exact scores from the endgame tables (default false), read from
                                   their default location (`envs.tablebase`); built with
                                   ``python -m envs tablebase build``

``random=0.1`` sets the chance of a random move at any level. A seed passed to
`make_player` makes the noise and the random moves reproducible.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from agents.alphabeta.search import MAX_PLY, AlphaBeta, SearchResult
from envs import Board, Move
from envs.config import check_range
from envs.players import Limit, PlayerSpecError, StopSignal, register_player
from envs.rules import RuleSet
from envs.tablebase import Tablebase, default_tablebase

LEVELS: dict[str, dict[str, Any]] = {
    "beginner": {"depth": 1, "random": 0.2},
    "normal": {"depth": 3, "random": 0.0},
    "expert": {"depth": 6, "random": 0.0},
}
"""Named levels: search depth in plies and the chance of a random move."""


class AlphaBetaPlayer:
    """Plays the alpha-beta search's best move; `last_result` holds the last search (or None)."""

    def __init__(
        self,
        *,
        depth: Optional[int] = None,
        nodes: Optional[int] = None,
        time: Optional[float] = None,
        noise: int = 0,
        random: float = 0.0,
        tt_bits: int = 20,
        rules: Optional[RuleSet] = None,
        seed: Optional[int] = None,
        name: str = "alphabeta",
        tablebase: Optional[Tablebase] = None,
    ) -> None:
        if depth is None and nodes is None and time is None:
            depth = LEVELS["normal"]["depth"]
        check_range({"random": random}, "alphabeta option ", PlayerSpecError, random=(0, 1))
        self.name = name
        self.depth, self.nodes, self.time = depth, nodes, time
        self.random = float(random)
        self.rng = np.random.default_rng(seed)
        engine_seed = int(self.rng.integers(0, 2**63 - 1))
        self.engine = AlphaBeta(rules, tt_bits=tt_bits, noise=noise, seed=engine_seed, tablebase=tablebase)
        self.last_result: Optional[SearchResult] = None

    def select_move(self, board: Board, limit: Optional[Limit] = None, stop: Optional[StopSignal] = None) -> Move:
        """The search's move. `limit` replaces the spec's depth, nodes and time for this move (its other
        options stay); `stop` ends the search early from another thread (`envs.players.StopSignal`)."""
        if self.random > 0 and self.rng.random() < self.random:
            moves = board.legal_move_ints()
            if len(moves) == 0:
                raise ValueError(f"no legal move in {board.jfen()!r}")
            self.last_result = None
            return Move.from_int(int(moves[self.rng.integers(len(moves))]))
        depth, nodes, seconds = self.depth, self.nodes, self.time
        if limit is not None:  # the deepest search the kernels allow is as far as a deeper limit goes
            depth = None if limit.depth is None else min(limit.depth, MAX_PLY - 16)
            nodes, seconds = limit.nodes, limit.time
        result = self.engine.search(board, depth=depth, nodes=nodes, time=seconds, stop=stop)
        self.last_result = result
        if result.move is None:
            raise ValueError(f"no legal move in {board.jfen()!r}")
        return result.move

    def reset(self) -> None:
        self.engine.clear()
        self.last_result = None


def _number(spec_key: str, text: Any, kind: type, low: float, high: float) -> Any:
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise PlayerSpecError(
            f"alphabeta option {spec_key}={text!r} is not a{'n integer' if kind is int else ' number'}"
        ) from None
    check_range({spec_key: value}, "alphabeta option ", PlayerSpecError, **{spec_key: (low, high)})
    return value


def make_alphabeta_player(
    rules: Optional[RuleSet] = None, seed: Optional[int] = None, **options: Any
) -> AlphaBetaPlayer:
    """Factory for `make_player('alphabeta:...')`; PlayerSpecError names a bad option."""
    known = {"level", "depth", "nodes", "time", "noise", "random", "tt", "tablebase"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise PlayerSpecError(f"unknown alphabeta option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    kwargs: dict[str, Any] = {}
    if "level" in options:
        level = str(options["level"])
        if level not in LEVELS:
            raise PlayerSpecError(f"unknown alphabeta level {level!r}; known: {', '.join(LEVELS)}")
        kwargs.update(LEVELS[level])
    if "depth" in options:
        kwargs["depth"] = _number("depth", options["depth"], int, 1, MAX_PLY - 16)
    if "nodes" in options:
        kwargs["nodes"] = _number("nodes", options["nodes"], int, 1, 10**12)
    if "time" in options:
        kwargs["time"] = _number("time", options["time"], float, 1e-3, 1e6)
    if "noise" in options:
        kwargs["noise"] = _number("noise", options["noise"], int, 0, 10000)
    if "random" in options:
        kwargs["random"] = _number("random", options["random"], float, 0.0, 1.0)
    if "tt" in options:
        kwargs["tt_bits"] = _number("tt", options["tt"], int, 4, 28)
    if "tablebase" in options:
        text = str(options["tablebase"]).lower()
        if text not in ("true", "false"):
            raise PlayerSpecError(f"alphabeta option tablebase={options['tablebase']!r} must be true or false")
        if text == "true":  # TablebaseMissingError says how to build missing tables
            kwargs["tablebase"] = default_tablebase(rules)
    return AlphaBetaPlayer(rules=rules, seed=seed, **kwargs)


register_player("alphabeta", make_alphabeta_player)

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
`make_player` makes the noise and the random moves reproducible. The options are `AlphaBetaOptions`
(agents/alphabeta/options.py: each one's default, bounds and line; the table in docs/evaluation.md);
``AlphaBetaPlayer(depth=4, noise=20)`` takes the same names as keywords.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from agents.alphabeta.options import MAX_DEPTH, AlphaBetaOptions
from agents.alphabeta.search import AlphaBeta, SearchResult
from envs import Board, Move
from envs.players import Limit, StopSignal, register_player
from envs.rules import RuleSet
from envs.tablebase import default_tablebase


class AlphaBetaPlayer:
    """Plays the alpha-beta search's best move; `last_result` holds the last search (or None)."""

    def __init__(
        self,
        *,
        rules: Optional[RuleSet] = None,
        seed: Optional[int] = None,
        options: Optional[AlphaBetaOptions] = None,
        **keywords: Any,
    ) -> None:
        """A player for `rules` with `options`, or the options `AlphaBetaOptions(**keywords)` (`depth=`, `time=`,
        `level=`, ...: the names of the spec's options)."""
        if options is None:
            options = AlphaBetaOptions.from_keywords(keywords)
        self.options = options.resolved()
        """The player's options, with what its level gives filled in."""
        o = self.options
        self.name = o.name or "alphabeta"  # make_player names it by its spec
        self.depth, self.nodes, self.time = o.depth, o.nodes, o.time
        self.random = float(o.random or 0.0)
        self.rng = np.random.default_rng(seed)
        engine_seed = int(self.rng.integers(0, 2**63 - 1))
        tables = default_tablebase(rules) if o.tablebase else None  # TablebaseMissingError says how to build them
        self.engine = AlphaBeta(rules, tt_bits=o.tt, noise=o.noise, seed=engine_seed, tablebase=tables)
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
            depth = None if limit.depth is None else min(limit.depth, MAX_DEPTH)
            nodes, seconds = limit.nodes, limit.time
        result = self.engine.search(board, depth=depth, nodes=nodes, time=seconds, stop=stop)
        self.last_result = result
        if result.move is None:
            raise ValueError(f"no legal move in {board.jfen()!r}")
        return result.move

    def reset(self) -> None:
        self.engine.clear()
        self.last_result = None


def make_alphabeta_player(
    rules: Optional[RuleSet] = None, seed: Optional[int] = None, **options: str
) -> AlphaBetaPlayer:
    """The player of a spec's options (`AlphaBetaOptions.from_spec`); PlayerSpecError names a bad option."""
    return AlphaBetaPlayer(rules=rules, seed=seed, options=AlphaBetaOptions.from_spec(options))


register_player("alphabeta", make_alphabeta_player)

__all__ = ["AlphaBetaOptions", "AlphaBetaPlayer"]

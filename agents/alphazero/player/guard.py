"""An alpha-beta check on the network's move: the checkpoint player's ``guard=`` option.

The network's search judges a position by its value head, which can miss a capture sequence a few plies
deep that an alpha-beta search sees at once. With a guard the player first searches the position with
alpha-beta for ``guard`` seconds (iterative deepening; its best score is the reference), then runs its
own search, and before playing checks its move: the alpha-beta score after the move, searched one ply
shallower than the reference (the transposition table is warm from it), may fall below the reference by
at most ``guard_margin`` evaluation units (a Dog is 300). A move that falls further is passed over for the
search's next choices (by its policy, up to `GUARD_CANDIDATES` moves in all); when none holds, the
player plays alpha-beta's move. A forced win that alpha-beta finds is therefore always played, and a
move into a forced loss is played only when every move loses.

Alpha-beta's time comes out of the move's time: a player with ``time=0.5,guard=0.1`` spends about 0.5 s a
move in all.
"""

from __future__ import annotations

import time
from typing import Optional, Sequence

from agents.alphabeta.search import MATE, AlphaBeta, SearchResult
from envs import Board, Move, RuleSet

GUARD_CANDIDATES = 3
"""The search's choices the player has checked in turn before it falls back on alpha-beta's move."""

DEFAULT_MARGIN = 300
"""How far (evaluation units, a Dog = 300) the score after a move may fall below alpha-beta's best."""

MIN_CHECK_SECONDS = 0.005
"""The least time a check searches, even past the move's deadline (a check at depth 1 or 2)."""


class AlphaBetaGuard:
    """Alpha-beta's reference search of a position and the check of candidate moves against it.

    `checks` counts the positions checked, `vetoes` those where the search's own choice was passed over.
    The transposition table lives as long as the guard; `reset` clears it between games."""

    def __init__(self, rules: RuleSet, seconds: float, margin: int = DEFAULT_MARGIN, tt_bits: int = 20) -> None:
        if not seconds > 0:
            raise ValueError(f"guard={seconds} must be positive seconds")
        if margin < 0:
            raise ValueError(f"guard_margin={margin} must be >= 0")
        self.engine = AlphaBeta(rules, tt_bits=tt_bits)
        self.seconds = float(seconds)
        self.margin = int(margin)
        self.checks = 0
        self.vetoes = 0
        self.last_reference: Optional[SearchResult] = None
        """The last position's reference search."""
        self.last_vetoed = False
        """Whether the last check passed over the search's own choice."""

    def reference(self, board: Board) -> SearchResult:
        """Search `board` for `seconds`: the score the checks compare against."""
        self.last_reference = self.engine.search(board, time=self.seconds)
        return self.last_reference

    def score_after(self, board: Board, move: Move, depth: int, deadline: float) -> int:
        """Alpha-beta's score of `move` for the side playing it: a game it ends scores exactly, otherwise
        the opponent's position is searched to `depth` plies or until `deadline` (perf_counter seconds)."""
        after = board.copy()
        after.push(move)
        outcome = after.outcome()
        if outcome is not None:
            if outcome.winner is None:
                return 0
            return MATE if outcome.winner == board.side_to_move else -MATE
        seconds = max(MIN_CHECK_SECONDS, deadline - time.perf_counter())
        return -self.engine.search(after, depth=max(1, depth), time=seconds).score

    def choose(self, board: Board, candidates: Sequence[Move], deadline: float) -> Move:
        """The first of `candidates` (the search's choice first; the player passes `GUARD_CANDIDATES`) whose
        score after it stays within `margin` of the reference, else the reference's move. Call
        `reference(board)` first."""
        ref = self.last_reference
        if not candidates:
            raise ValueError("the guard needs at least one candidate move")
        if ref is None or ref.move is None:
            raise ValueError(f"the guard has no reference search of {board.jfen()!r}: call reference(board) first")
        self.checks += 1
        self.last_vetoed = False
        for move in candidates:
            if move == ref.move or self.score_after(board, move, ref.depth - 1, deadline) >= ref.score - self.margin:
                chosen = move
                break
        else:
            chosen = ref.move
        if chosen != candidates[0]:
            self.vetoes += 1
            self.last_vetoed = True
        return chosen

    def reset(self) -> None:
        """Forget the transposition table (a new game)."""
        self.engine.clear()
        self.last_reference = None


__all__ = ["DEFAULT_MARGIN", "GUARD_CANDIDATES", "AlphaBetaGuard"]

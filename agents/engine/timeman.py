"""Time management: how long the engine searches a move, from its clock or a fixed move time (docs/protocol.md,
"Time management").

The rule, with `left` and `inc` the side to move's remaining time and increment and `overhead` the
``MoveOverhead`` option (milliseconds the driver's side of the line costs each move):

    usable = max(left - overhead, 0)
    budget = min(usable / moves_to_go + inc, usable / 2)      moves_to_go: movestogo, else DEFAULT_MOVES_TO_GO

then at least `MIN_BUDGET_MS`. A move so never costs more than half of what the clock holds beyond the
overhead, so a search that keeps to its budget (and a driver that costs no more than the overhead) leaves
the clock above zero: after the move it holds at least ``(left - overhead) / 2 + inc``.
"""

from __future__ import annotations

from typing import Optional

from agents.engine.protocol import GoLimits

DEFAULT_MOVES_TO_GO = 30
"""The moves the remaining time is shared among when ``go`` gives no ``movestogo``."""
MIN_BUDGET_MS = 1
"""The shortest search: a clock at or below the overhead still gets a move (alpha-beta's first iteration
always completes)."""


def clock_budget_ms(left: int, inc: int = 0, moves_to_go: Optional[int] = None, overhead: int = 0) -> int:
    """Milliseconds to search a move with `left` ms on the clock and `inc` ms added after it (the rule above)."""
    usable = max(left - overhead, 0)
    share = usable / (moves_to_go if moves_to_go else DEFAULT_MOVES_TO_GO) + inc
    return max(MIN_BUDGET_MS, int(min(share, usable / 2)))


def move_time_ms(limits: GoLimits, red_to_move: bool, overhead: int) -> Optional[int]:
    """The time limit of a ``go`` in milliseconds (None: none): ``movetime`` less the overhead, the clock's
    budget (`clock_budget_ms`) when the side to move's clock is given, the smaller of the two when both."""
    budgets = []
    if limits.movetime is not None:
        budgets.append(max(MIN_BUDGET_MS, limits.movetime - overhead))
    left = limits.wtime if red_to_move else limits.btime
    if left is not None:
        inc = (limits.winc if red_to_move else limits.binc) or 0
        budgets.append(clock_budget_ms(left, inc, limits.movestogo, overhead))
    return min(budgets) if budgets else None


__all__ = ["DEFAULT_MOVES_TO_GO", "MIN_BUDGET_MS", "clock_budget_ms", "move_time_ms"]

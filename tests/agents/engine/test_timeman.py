"""Time management: the budget rule of docs/protocol.md, and a game on a short clock where every move costs its
budget plus the whole overhead never runs the clock out."""

from __future__ import annotations

import pytest

from agents.engine.protocol import GoLimits
from agents.engine.timeman import DEFAULT_MOVES_TO_GO, MIN_BUDGET_MS, clock_budget_ms, move_time_ms


def test_the_budget_is_a_share_of_the_clock_plus_the_increment_less_the_overhead() -> None:
    assert clock_budget_ms(3050, 100, overhead=50) == 3000 // DEFAULT_MOVES_TO_GO + 100
    assert clock_budget_ms(10_050, 0, moves_to_go=10, overhead=50) == 1000
    assert clock_budget_ms(1050, 0, moves_to_go=1, overhead=50) == 500  # never more than half the clock
    assert clock_budget_ms(250, 1000, overhead=50) == 100  # an increment does not lift it over half either


@pytest.mark.parametrize("left", [0, 10, 50])
def test_a_clock_at_or_below_the_overhead_still_gets_the_shortest_search(left: int) -> None:
    assert clock_budget_ms(left, 0, overhead=50) == MIN_BUDGET_MS


@pytest.mark.parametrize("overhead", [0, 50, 300])
@pytest.mark.parametrize("moves_to_go", [None, 1, 7])
@pytest.mark.parametrize("start, inc", [(3000, 100), (1000, 0), (60_000, 0), (400, 20)])
def test_a_game_that_spends_each_budget_and_the_overhead_never_runs_out(
    start: int, inc: int, moves_to_go: int | None, overhead: int
) -> None:
    """The worst case the rule allows: every move costs its budget and the full overhead, for 60 moves."""
    left = start
    for _ in range(60):
        before = left
        left -= clock_budget_ms(left, inc, moves_to_go, overhead) + overhead
        if before > overhead + 2 * MIN_BUDGET_MS:
            assert left > 0, (before, left)
        left = max(left, 0) + inc


def test_the_go_limits_give_the_side_to_moves_time() -> None:
    clocks = GoLimits(wtime=3050, btime=60_050, winc=100, binc=0)
    assert move_time_ms(clocks, red_to_move=True, overhead=50) == 200
    assert move_time_ms(clocks, red_to_move=False, overhead=50) == 2000
    assert move_time_ms(GoLimits(movetime=500), red_to_move=True, overhead=50) == 450
    assert move_time_ms(GoLimits(movetime=30), red_to_move=True, overhead=50) == MIN_BUDGET_MS
    assert move_time_ms(GoLimits(movetime=150, wtime=3050, winc=100), red_to_move=True, overhead=50) == 100
    assert move_time_ms(GoLimits(btime=1000, depth=4), red_to_move=True, overhead=50) is None
    assert move_time_ms(GoLimits(depth=4), red_to_move=True, overhead=50) is None

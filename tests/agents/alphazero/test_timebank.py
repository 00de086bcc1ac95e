"""Time management of a search by time (``stretch``): settled moves end early, unsettled ones search on with
what they saved, and a game's moves average at most the move time."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import pytest

from agents.alphazero.player import player as player_module
from agents.alphazero.player.player import CheckpointPlayer
from agents.alphazero.player.timebank import CLEAR, CLOSE, EARLY_FRACTION, FALL, MAX_DEBT, MoveTimer, TimeBank
from envs import Board, Move
from envs.players import PlayerSpecError, RandomPlayer
from tests import support

SHIPPED = support.ROOT / "checkpoints" / "shipped" / "results-only-60.pt"


def test_a_settled_move_ends_once_it_has_searched_the_early_share() -> None:
    timer = MoveTimer(soft=1.0, hard=2.0, early=0.5, last_value=0.0)
    rounds = 1
    while timer.go_on(7, CLEAR, 0.0, 0.1 * rounds, rounds):
        rounds += 1
    # rounds 1-4 choose 7 but before 0.5 s; round 5 (0.5 s) is settled: it stops there, half its time unspent
    assert rounds == 5
    assert timer.stopped_early and not timer.extended


@pytest.mark.parametrize(
    "actions, share, value",
    [
        ([1, 2] * 5, 1.0, 0.0),  # the choice moves from round to round
        ([7] * 10, CLEAR - 0.01, 0.0),  # the search's policy is not sure of it
        ([7] * 10, 1.0, -FALL),  # the value fell since this player's last move
    ],
)
def test_a_move_that_is_not_settled_searches_its_time(actions: list[int], share: float, value: float) -> None:
    timer = MoveTimer(soft=1.0, hard=2.0, early=0.5, last_value=0.0)
    assert all(timer.go_on(a, share, value, 0.1 * (k + 1), k + 1) for k, a in enumerate(actions[:9]))
    assert not timer.stopped_early


def test_past_its_time_a_move_goes_on_only_while_unsettled_and_never_past_hard() -> None:
    def past(last_value: Optional[float] = None, hard: float = 1.5) -> MoveTimer:
        timer = MoveTimer(soft=1.0, hard=hard, early=2.0, last_value=last_value)
        timer.actions = [3] * 9
        return timer

    changed = past()
    assert changed.go_on(4, 1.0, 0.0, 1.0, 10)  # next round ends at 1.1 > soft, the choice just changed
    assert changed.extended
    assert not changed.go_on(4, 1.0, 0.0, 1.1, 11)  # the same choice twice and clear: done
    stable = past()
    assert not stable.go_on(3, CLOSE, 0.0, 1.0, 10) and not stable.extended
    close = past()
    assert close.go_on(3, CLOSE - 0.01, 0.0, 1.0, 10) and close.extended  # another move nearly as good
    falling = past(last_value=0.3)
    assert falling.go_on(3, 1.0, 0.3 - FALL, 1.0, 10)  # the value fell since this player's last move
    assert not falling.go_on(3, 1.0, 0.3 - FALL, 1.45, 14)  # the next round would end past hard (1.5)
    no_bank = past(hard=1.0)
    assert not no_bank.go_on(2, 0.1, 0.0, 1.0, 10)  # nothing saved: hard = soft


def test_the_bank_lends_nothing_and_an_overrun_is_paid_back() -> None:
    bank = TimeBank(0.5, 3.0)
    assert bank.limits() == (0.5, 0.5)  # nothing saved: no stretch yet
    timer = bank.start_move(0.0, None)
    bank.end_move(0.3, timer)
    assert bank.balance == pytest.approx(0.2) and bank.limits() == pytest.approx((0.5, 0.7))
    for _ in range(10):
        bank.end_move(0.25, timer)
    assert bank.limits() == pytest.approx((0.5, 1.5))  # stretch x time at most, whatever is saved
    bank.balance = -0.1  # a round ran past the move's time
    assert bank.limits() == pytest.approx((0.4, 0.4))
    bank.end_move(10.0, timer)  # a move far past its time (a first search compiling): one move time owed
    assert bank.balance == pytest.approx(-MAX_DEBT * 0.5) and bank.limits() == pytest.approx((0.25, 0.25))
    timer = bank.start_move(0.05, 0.2)
    assert (timer.soft, timer.hard, timer.early) == pytest.approx((0.2, 0.2, EARLY_FRACTION * 0.5 - 0.05))
    bank.reset()
    assert bank.balance == 0 and bank.moves == 0
    with pytest.raises(ValueError, match="stretch"):
        TimeBank(0.5, 0.5)


class Clock:
    """`time.perf_counter` for the player: it moves by `round_seconds` a search round, else stands still."""

    def __init__(self, round_seconds: float) -> None:
        self.now, self.round_seconds = 1000.0, round_seconds

    def perf_counter(self) -> float:
        return self.now


def _clocked(player: CheckpointPlayer, clock: Clock, torn: Callable[[int], bool] = lambda move: False) -> None:
    """Each search round moves `clock` on; on the player's moves that `torn` picks (by their number in the
    game, from 0), every other round reports its second choice, so that the search changes its mind."""
    search, select = player.search.search, player.select_move
    rounds = {"move": -1, "round": 0}

    def timed(*args: Any, **kwargs: Any) -> Any:
        clock.now += clock.round_seconds
        out = search(*args, **kwargs)
        rounds["round"] += 1
        second = np.argsort(-out.policy[0], kind="stable")[1]
        if torn(rounds["move"]) and rounds["round"] % 2 == 0 and out.policy[0, second] > 0:
            out.action[0] = second
        return out

    def move(board: Board) -> Move:
        rounds.update(move=rounds["move"] + 1, round=0)
        return select(board)

    player.search.search = timed  # type: ignore[method-assign]
    player.select_move = move  # type: ignore[method-assign,assignment]


def _game(player: CheckpointPlayer, clock: Clock, plies: int) -> list[float]:
    """The seconds each of `player`'s moves took in a game against a random player."""
    board, rnd, spent = Board(), RandomPlayer(seed=5), []
    player.reset()
    for ply in range(plies):
        if board.outcome() is not None:
            break
        if ply % 2 == 0:
            t0 = clock.now
            board.push(player.select_move(board.copy()))
            spent.append(clock.now - t0)
        else:
            board.push(rnd.select_move(board))
    return spent


def test_a_player_with_a_bank_averages_at_most_its_move_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a clock that moves only with the search's rounds: without `stretch` every move runs the rounds that
    fit in `time`; with it some moves end settled, others run past `time` on what those saved, and the game's
    moves average at most `time` (less than a round over, the last round's overrun)."""
    clock = Clock(round_seconds=0.01)
    monkeypatch.setattr(player_module.time, "perf_counter", clock.perf_counter)
    plain = CheckpointPlayer(str(SHIPPED), time=0.1, sims=8)
    _clocked(plain, clock)
    spent = _game(plain, clock, 40)
    assert plain.bank is None and spent == pytest.approx([0.1] * len(spent))
    with_bank = CheckpointPlayer(str(SHIPPED), time=0.1, sims=8, stretch=4)
    _clocked(with_bank, clock, torn=lambda move: move >= 4 and move % 3 == 0)
    spent = _game(with_bank, clock, 40)
    bank = with_bank.bank
    assert bank is not None and bank.moves == len(spent) >= 10
    assert bank.early > 0 and bank.extended > 0
    assert min(spent) < 0.1 - 1e-9 < 0.1 + 1e-9 < max(spent) <= 0.4 + 1e-9
    assert sum(spent) <= 0.1 * len(spent) + 0.01 + 1e-9
    assert bank.balance == pytest.approx(0.1 * len(spent) - sum(spent))
    _game(with_bank, clock, 2)  # a new game starts with nothing saved
    assert bank.moves == 1


def test_stretch_needs_a_move_time_and_no_guard() -> None:
    with pytest.raises(PlayerSpecError, match="stretch=2 needs time"):
        CheckpointPlayer(str(SHIPPED), stretch=2)
    with pytest.raises(PlayerSpecError, match="use one of them"):
        CheckpointPlayer(str(SHIPPED), time=1.0, guard=0.2, stretch=2)

"""Each side's thinking time in a game record, and each player's seconds per move in a tournament's report."""

from __future__ import annotations

import pytest

from agents.arena import tournament
from agents.arena.openings import random_openings
from agents.arena.records import GameRecord
from agents.arena.reporting import summarize
from envs import Board, Move
from envs.players import RandomPlayer


class FakeClock:
    """`time.perf_counter` under a test's control: it moves only when a player says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


class SlowRandom(RandomPlayer):
    """A random player whose every move takes `seconds` on the fake clock."""

    def __init__(self, clock: FakeClock, seconds: float, seed: int) -> None:
        super().__init__(seed=seed)
        self.clock, self.seconds = clock, seconds

    def select_move(self, board: Board) -> Move:
        self.clock.now += self.seconds
        return super().select_move(board)


def test_a_game_records_each_sides_moves_and_the_seconds_they_took(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(tournament.time, "perf_counter", clock.perf_counter)
    red, blue = SlowRandom(clock, 0.25, seed=1), SlowRandom(clock, 0.5, seed=2)
    (opening,) = random_openings(1, 4, seed=3)
    rec = tournament.play_game(red, blue, opening, max_plies=40, red_name="fast", blue_name="slow")
    think = rec.extra["think"]
    played = len(rec.moves) - rec.extra["opening_plies"]
    assert think["red"]["moves"] + think["blue"]["moves"] == played > 0
    assert abs(think["red"]["moves"] - think["blue"]["moves"]) <= 1
    assert think["red"]["seconds"] == pytest.approx(0.25 * think["red"]["moves"])
    assert think["blue"]["seconds"] == pytest.approx(0.5 * think["blue"]["moves"])

    again = tournament.play_game(blue, red, opening, max_plies=40, red_name="slow", blue_name="fast")
    result = summarize([rec, again], ["fast", "slow"])
    assert result.move_seconds("fast") == pytest.approx(0.25)
    assert result.move_seconds("slow") == pytest.approx(0.5)
    assert result.to_dict()["move_seconds"] == {"fast": 0.25, "slow": 0.5}
    assert "Seconds per move: P1 0.250, P2 0.500" in result.table()


def test_games_without_the_record_report_no_seconds_per_move() -> None:
    """Game files written before the record (or by hand) rate as before; the report leaves the line out."""
    board = Board()
    old = GameRecord.from_board(board, board.jfen(), red="a", blue="b", result="1/2-1/2", termination="ply_cap")
    result = summarize([old], ["a", "b"])
    assert result.move_seconds("a") is None
    assert result.to_dict()["move_seconds"] == {"a": None, "b": None}
    assert "Seconds per move" not in result.table()

"""The endgame tables in training: self-play adjudication and rescoring, the value head's accuracy on them, and
nothing changing for a user who never builds them."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from agents.alphazero.search import MCTSConfig, uniform_evaluator
from agents.alphazero.selfplay.data import SelfPlayData
from agents.alphazero.selfplay.endgames import random_table_positions, tables_if_built, value_accuracy
from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
from envs import Board, RuleSet
from envs import kernels as K
from envs.board import state_to_jfen
from envs.tablebase import DRAW, ROOT_ENV, UNKNOWN, WIN, Tablebase, TablebaseMissingError

RULES = RuleSet()
THREE = "6c/7/7/7/7/7/7/6d/6L r 0 1"
"""Red's Lion beside Blue's Dog, Blue's Cat in the corner: games soon capture into a 2-piece ending."""


@pytest.fixture(scope="module")
def tb2() -> Tablebase:
    return Tablebase.build(RULES, pieces=2)


@pytest.fixture
def tables_dir(tb2: Tablebase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    tb2.save()
    return tmp_path


def play(seed: int = 3, **switches: bool) -> SelfPlayData:
    settings = SelfPlayConfig(parallel=3, max_plies=60, start_jfen=THREE, value_q_weight=0.0, **switches)
    return play_games(
        uniform_evaluator, settings, mcts=MCTSConfig(num_simulations=8), rules=RULES, num_games=6, seed=seed
    )


def positions(record) -> list[Board]:
    """Every position of a game, the last (after its final move) included."""
    board = Board(record.start)
    out = [board.copy()]
    for m in record.moves:
        board.push(m)
        out.append(board.copy())
    return out


def verdict(tb: Tablebase, board: Board) -> int:
    return tb.probe(board).clock_wdl if not board.is_game_over() and tb.holds(board) else UNKNOWN


def same_games(a: SelfPlayData, b: SelfPlayData) -> bool:
    return [(r.moves, r.result, r.termination) for r in a.records] == [
        (r.moves, r.result, r.termination) for r in b.records
    ]


def test_adjudication_ends_games_at_the_first_table_position(tb2: Tablebase, tables_dir: Path) -> None:
    data = play(tablebase_adjudicate=True)
    at = 0
    adjudged = 0
    for rec in data.records:
        boards = positions(rec)
        assert all(verdict(tb2, b) == UNKNOWN for b in boards[:-1]), rec.moves
        n = len(rec.moves)
        if rec.termination == "tablebase":
            adjudged += 1
            last = boards[-1]
            v = verdict(tb2, last)
            assert v != UNKNOWN
            winner = K.DRAW if v == DRAW else (int(last.side_to_move) if v == WIN else 1 - int(last.side_to_move))
            assert rec.result == {K.RED: "1-0", K.BLUE: "0-1", K.DRAW: "1/2-1/2"}[winner]
            # value_q_weight=0: every position's target is the tables' result, seen from its side to move.
            want = [0.0 if winner == K.DRAW else (1.0 if int(b.side_to_move) == winner else -1.0) for b in boards[:-1]]
            np.testing.assert_array_equal(data.value[at : at + n], want)
        at += n
    assert adjudged >= 4 and data.stats.terminations.get("tablebase") == adjudged
    # A game without the switch plays on past the first table position.
    plain = play()
    assert not any(r.termination == "tablebase" for r in plain.records)
    assert sum(len(r.moves) for r in plain.records) > sum(len(r.moves) for r in data.records)


def test_rescoring_gives_table_positions_their_exact_value(tb2: Tablebase, tables_dir: Path) -> None:
    plain, rescored = play(), play(tablebase_rescore=True)
    assert same_games(plain, rescored)
    at, changed = 0, 0
    for rec in rescored.records:
        for i, b in enumerate(positions(rec)[:-1]):
            v = verdict(tb2, b)
            want = plain.value[at + i] if v == UNKNOWN else float(v)
            assert rescored.value[at + i] == want, (b.jfen(), v)
            changed += int(v != UNKNOWN and plain.value[at + i] != float(v))
        at += len(rec.moves)
    assert at == len(rescored.value) and changed > 0


def test_without_tables_nothing_changes_and_nothing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A user who never builds a table: the switches are off, self-play plays the same games as with tables
    built, the diagnostic is absent with one log line saying how to build them; a switch on says the same."""
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "none"))
    without = play()
    with caplog.at_level(logging.INFO, logger="agents.alphazero.selfplay.endgames"):
        assert tables_if_built(RULES) is None
        assert tables_if_built(RULES) is None
    said = [r.getMessage() for r in caplog.records if "tablebase" in r.getMessage()]
    assert len(said) == 1 and "python -m envs tablebase build" in said[0]
    with pytest.raises(TablebaseMissingError, match="python -m envs tablebase build"):
        play(tablebase_adjudicate=True)
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "built"))
    Tablebase.build(RULES, pieces=2).save()
    assert same_games(without, play())
    np.testing.assert_array_equal(without.value, play().value)


class ConstantValue:
    """An evaluator whose value is `v` for every position."""

    def __init__(self, v: float) -> None:
        self.v = v

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(mask.shape, dtype=np.float32), np.full(len(obs), self.v, dtype=np.float32)


def test_value_accuracy_on_a_tiny_table(tb2: Tablebase) -> None:
    states, exact = random_table_positions(tb2, 2, 300, seed=5 + 2)
    assert len(states) == 300 and set(exact.tolist()) <= {-1, 0, 1} and len(set(exact.tolist())) == 3
    for st, v in zip(states[:20], exact[:20]):
        assert tb2.probe(Board(state_to_jfen(st))).clock_wdl == v
    zero = value_accuracy(uniform_evaluator, RULES, tb2, positions=300, seed=5)
    assert zero.positions == {2: 300}
    assert zero.accuracy[2] == pytest.approx(np.mean(exact == 0))
    assert zero.sign[2] == 0.0
    assert zero.mae[2] == pytest.approx(np.mean(exact != 0))
    half = value_accuracy(ConstantValue(0.5), RULES, tb2, positions=300, seed=5)
    assert half.accuracy[2] == pytest.approx(np.mean(exact == 1))
    assert half.sign[2] == pytest.approx(np.mean(exact[exact != 0] == 1))
    assert half.mae[2] == pytest.approx(np.mean(np.abs(0.5 - exact)))
    tags = half.tags()
    assert tags["tablebase_accuracy_2"] == tags["tablebase_accuracy"] == half.accuracy[2]
    assert set(tags) == {f"tablebase_{k}{n}" for k in ("accuracy", "sign", "mae") for n in ("", "_2")}

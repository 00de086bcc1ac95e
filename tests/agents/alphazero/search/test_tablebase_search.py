"""The search with endgame tables (`mcts.tablebase`): table positions are proven leaves, a table root plays
the table's best move, and with the switch off nothing changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

from agents.alphazero.search import ROOT, BatchedMCTS, MCTSConfig, make_policy, search_tables, uniform_evaluator
from agents.alphazero.search.base import SearchOutput
from envs import Board, Move, RuleSet
from envs.batch import GameBatch
from envs.encoding import move_to_action
from envs.tablebase import DRAW, LOSS, ROOT_ENV, WIN, Tablebase, TablebaseMissingError, empty_arrays

RULES = RuleSet()
FLAGS = RULES.flags()
ALGORITHMS = ("puct", "gumbel")
LION_CAT = "6c/7/7/7/7/7/7/7/L6 r 0 1"
"""Red's Lion against Blue's Cat, Red to move: a win in 15 plies (best a1a2, a1b1)."""


@pytest.fixture(scope="module")
def tb2() -> Tablebase:
    return Tablebase.build(RULES, pieces=2)


def action(board: Board, move: Move) -> int:
    return int(move_to_action(move.to_int(), int(board.side_to_move)))


def search(
    jfen: str, algorithm: str, tables: Optional[Tablebase], sims: int = 48, **config: Any
) -> tuple[BatchedMCTS, SearchOutput]:
    cfg = MCTSConfig(algorithm=algorithm, num_simulations=sims, tablebase=tables is not None, **config)
    mcts = BatchedMCTS(
        uniform_evaluator, make_policy(cfg), FLAGS, seed=0, tablebase=None if tables is None else tables.arrays
    )
    return mcts, mcts.search(GameBatch(1, RULES, start_jfen=jfen), add_noise=False)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_table_win_is_searched_as_proven(tb2: Tablebase, algorithm: str) -> None:
    board = Board(LION_CAT)
    p = tb2.probe(board)
    assert p.wdl == WIN and p.dtm == 15
    mcts, out = search(LION_CAT, algorithm, tb2)
    assert out.action[0] in {action(board, m) for m in p.best_moves}
    assert out.root_value[0] == 1.0
    # Every child the search visited is proven with the table's value (for the side to move there).
    tree = mcts.tree
    fc, n = int(tree.first_child[0, ROOT]), int(tree.num_children[0, ROOT])
    visited = 0
    for c in range(fc, fc + n):
        if tree.visits[0, c] == 0:
            continue
        visited += 1
        after = board.copy()
        after.push(Move.from_int(int(tree.move[0, c])))
        q = tb2.probe(after)
        assert tree.terminal[0, c] and tree.raw_value[0, c] == float(q.clock_wdl), (after.jfen(), q.describe())
    assert visited >= 2
    # Without the tables the same search values the root by the uniform evaluator's zeros.
    _, plain = search(LION_CAT, algorithm, None)
    assert plain.root_value[0] != 1.0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_capture_into_a_won_table_is_found_below_the_root(tb2: Tablebase, algorithm: str) -> None:
    """Three pieces (no table here): the Lion's capture of the Dog leaves a 2-piece ending the tables call a
    loss for Blue, so the solver proves the root a win through it."""
    jfen = "6c/7/7/7/7/7/7/6d/6L r 0 1"
    board = Board(jfen)
    assert not tb2.holds(board)
    after = board.copy()
    after.push("g1g2")
    assert tb2.probe(after).wdl == LOSS
    _, out = search(jfen, algorithm, tb2, sims=64)
    assert out.action[0] == action(board, Move.from_str("g1g2")) and out.root_value[0] == 1.0
    _, plain = search(jfen, algorithm, None, sims=64)
    assert plain.root_value[0] < 1.0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_cursed_win_is_a_draw(tb2: Tablebase, algorithm: str) -> None:
    """Ten plies left on the clock for a win in 15 without a capture on the way: a draw by rule 12."""
    jfen = "6c/7/7/7/7/7/7/7/L6 r 110 56"
    p = tb2.probe(Board(jfen))
    assert p.wdl == WIN and p.clock_wdl == DRAW
    mcts, out = search(jfen, algorithm, tb2)
    assert out.root_value[0] == 0.0
    tree = mcts.tree
    fc, n = int(tree.first_child[0, ROOT]), int(tree.num_children[0, ROOT])
    proven = [c for c in range(fc, fc + n) if tree.visits[0, c] > 0]
    assert proven and all(tree.terminal[0, c] and tree.raw_value[0, c] == 0.0 for c in proven)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_with_the_switch_off_the_search_is_unchanged(tb2: Tablebase, algorithm: str) -> None:
    """Tables handed to a search whose switch is off are never read: the same outputs as without them."""
    for jfen in (LION_CAT, "6c/7/7/7/7/7/7/6d/6L r 0 1", Board().jfen()):
        cfg = MCTSConfig(algorithm=algorithm, num_simulations=40)
        outs = []
        for tables in (None, tb2.arrays, empty_arrays()):
            mcts = BatchedMCTS(uniform_evaluator, make_policy(cfg), FLAGS, seed=2, tablebase=tables)
            outs.append(mcts.search(GameBatch(1, RULES, start_jfen=jfen), add_noise=True))
        for o in outs[1:]:
            for name in ("policy", "action", "root_value", "visits"):
                np.testing.assert_array_equal(getattr(outs[0], name), getattr(o, name))


def test_the_switch_needs_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = MCTSConfig(tablebase=True)
    with pytest.raises(ValueError, match="mcts.tablebase=true needs the tables"):
        BatchedMCTS(uniform_evaluator, make_policy(cfg), FLAGS, seed=0)
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    assert search_tables(MCTSConfig(), RULES) is None
    with pytest.raises(TablebaseMissingError, match="python -m envs tablebase build"):
        search_tables(cfg, RULES)
    Tablebase.build(RULES, pieces=2).save()
    arrays = search_tables(cfg, RULES)
    assert arrays is not None and int((arrays.table_of >= 0).sum()) == 64

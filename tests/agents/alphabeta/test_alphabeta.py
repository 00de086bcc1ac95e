"""The alpha-beta search finds what a player must find, and its value does not depend on its speed-ups."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.alphabeta.search import MATE, MATE_BOUND, AlphaBeta, SearchLimitError, describe_score, plies_to_result
from envs import Board, Move, RuleSet
from envs import kernels as K
from envs.notation import state_to_jfen
from envs.players import PlayerSpecError, make_player
from envs.tablebase import DRAW, ROOT_ENV, WIN, Material, Tablebase, TablebaseError, TablebaseMissingError
from envs.tablebase.index import set_position


def best(jfen: str, depth: int) -> tuple[str, int]:
    r = AlphaBeta(tt_bits=16).search(Board.from_jfen(jfen), depth=depth)
    assert r.move is not None
    return str(r.move), r.score


def test_enters_the_den_at_once_rather_than_capture() -> None:
    # Red Lion on d8 (beside Blue's den); capturing the Rat on e8 is tempting but slower.
    #   8 . . . L r . .
    move, score = best("7/3Lr2/7/7/7/7/7/7/e6 r 0 1", 3)
    assert move == "d8d9"
    assert score == MATE - 1 and describe_score(score) == "win in 1"


def test_takes_the_safe_capture_not_the_poisoned_one() -> None:
    # Lion d4 takes the Wolf d5 safely; Dog a2 x Cat a3 would lose the Dog to the Elephant on a4.
    #   5 . ~ ~ w ~ ~ .
    #   4 e ~ ~ L ~ ~ .
    #   3 c . . . . . .
    #   2 D . . # . . .
    move, score = best("7/7/7/7/3w3/e2L3/c6/D6/6T r 0 1", 3)
    assert move == "d4d5"
    assert 200 < score < MATE_BOUND


def test_finds_the_only_move_that_stops_a_den_entry() -> None:
    # Blue's Wolf on d2 (Red's trap) enters d1 next ply unless the Cat takes it; the Lion's
    # capture of the Leopard on g8 is a bait.
    move, score = best("7/6p/6L/7/7/7/3C3/3w3/7 r 0 1", 3)
    assert move == "d3d2"
    assert score > 0
    # Any other move loses at once: check the search agrees.
    board = Board.from_jfen("7/6p/6L/7/7/7/3C3/3w3/7 r 0 1")
    board.push("g7g8")
    r = AlphaBeta(tt_bits=16).search(board, depth=2)
    assert str(r.move) == "d2d1" and r.score == MATE - 1


def test_forced_win_in_three_plies() -> None:
    # Lion c8 forks the traps c9 and d8; d8 is guarded by the Cat on e8, c9 is not.
    #   8 . . L # c . .
    board = Board.from_jfen("7/2L1c2/e6/7/7/7/7/7/T6 r 0 1")
    r = AlphaBeta(tt_bits=16).search(board, depth=4)
    assert str(r.move) == "c8c9"
    assert r.score == MATE - 3
    assert plies_to_result(r.score) == 3 and describe_score(r.score) == "win in 3"
    assert [str(m) for m in r.pv][::2] == ["c8c9", "c9d9"]
    # From Blue's side, after c8c9, the score says "loss in 2".
    board.push("c8c9")
    r2 = AlphaBeta(tt_bits=16).search(board, depth=3)
    assert r2.score == -(MATE - 2) and describe_score(r2.score) == "loss in 2"


def _positions() -> list[Board]:
    boards = [Board()]
    rng = np.random.default_rng(7)
    for plies in (6, 14, 24, 40):
        b = Board()
        for _ in range(plies):
            moves = b.legal_move_ints()
            if b.outcome() is not None or len(moves) == 0:
                break
            b.push(Move.from_int(int(moves[rng.integers(len(moves))])))
        boards.append(Board.from_jfen(b.jfen()))
    boards.append(Board.from_jfen("7/2L1c2/e6/7/7/7/7/7/T6 r 0 1"))
    boards.append(Board.from_jfen("7/7/7/7/3w3/e2L3/c6/D6/6T r 0 1"))
    return boards


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_value_does_not_depend_on_table_or_ordering(depth: int) -> None:
    for board in _positions():
        plain = AlphaBeta(tt_bits=16, use_tt=False, use_ordering=False).search(board, depth=depth)
        fast = AlphaBeta(tt_bits=16).search(board, depth=depth)
        tt_only = AlphaBeta(tt_bits=16, use_ordering=False).search(board, depth=depth)
        assert plain.score == fast.score == tt_only.score, board.jfen()
        assert plain.depth == fast.depth


def test_search_leaves_the_board_unchanged_and_respects_limits() -> None:
    board = Board()
    board.push("a3a4")
    before = (board.jfen(), board.hashes.copy())
    ab = AlphaBeta(tt_bits=16)
    r = ab.search(board, nodes=2000)
    assert board.jfen() == before[0] and np.array_equal(board.hashes, before[1])
    assert r.move in board.legal_moves
    assert r.nodes <= 2000 + 64 and r.depth >= 1
    r = ab.search(board, time=0.05)
    assert r.move in board.legal_moves and r.depth >= 1
    with pytest.raises(SearchLimitError):
        ab.search(board)
    with pytest.raises(SearchLimitError, match="depth=0"):
        ab.search(board, depth=0)


def test_repetition_draw_is_seen_in_the_search() -> None:
    # Blue (a lone Cat against an Elephant) can repeat the start position a third time:
    # the search takes the draw (score 0); with repetition off the same move is just lost.
    moves = ["a1a2", "g9g8", "a2a1", "g8g9", "a1a2", "g9g8", "a2a1"]
    for rules, drawn in ((RuleSet(), True), (RuleSet(repetition="off"), False)):
        board = Board.from_jfen("6c/7/7/7/7/7/7/7/E6 r 0 1", rules=rules)
        for m in moves:
            board.push(m)
        r = AlphaBeta(tt_bits=16).search(board, depth=2)
        if drawn:
            assert str(r.move) == "g8g9" and r.score == 0
        else:
            assert r.score < -300


def test_noise_is_seeded_and_rules_follow_the_board() -> None:
    board = Board()
    a = AlphaBeta(tt_bits=16, noise=50, seed=3).search(board, depth=3)
    b = AlphaBeta(tt_bits=16, noise=50, seed=3).search(board, depth=3)
    assert a.move == b.move and a.score == b.score
    variant = Board(rules=RuleSet(rank_order="dog_over_wolf"))
    r = AlphaBeta(tt_bits=16).search(variant, depth=2)
    assert r.move in variant.legal_moves


def test_player_specs() -> None:
    board = Board()
    for spec in [
        "alphabeta",
        "alphabeta:level=beginner",
        "alphabeta:depth=2,noise=10",
        "alphabeta:nodes=500",
        "alphabeta:time=0.01,tt=12",
    ]:
        p = make_player(spec, seed=1)
        assert p.select_move(board) in board.legal_moves
        p.reset()
    expert = make_player("alphabeta:level=expert")
    assert expert.depth == 6
    for bad in ["alphabeta:depth=x", "alphabeta:level=master", "alphabeta:colour=red", "alphabeta:depth=0"]:
        with pytest.raises(PlayerSpecError):
            make_player(bad)


# --- endgame tables -------------------------------------------------------------------------------------
def _games_digest() -> tuple[str, str]:
    """Moves, scores and node counts of seeded games and of endgame searches (no tables)."""
    import hashlib

    h = hashlib.sha256()
    for seed in (1, 2):
        red = make_player("alphabeta:depth=3,noise=20", seed=seed)
        blue = make_player("alphabeta:depth=2,noise=40", seed=seed + 10)
        board = Board()
        for ply in range(80):
            if board.outcome() is not None:
                break
            p = red if ply % 2 == 0 else blue
            m = p.select_move(board)
            r = p.last_result
            h.update(f"{m} {r.score} {r.nodes} {r.depth};".encode())
            board.push(m)
        h.update(board.jfen().encode())
    e = hashlib.sha256()
    for jfen in ENDGAMES:
        r = AlphaBeta(tt_bits=16).search(Board(jfen), depth=5)
        e.update(f"{r.move} {r.score} {r.nodes} {[str(m) for m in r.pv]};".encode())
    return h.hexdigest()[:16], e.hexdigest()[:16]


ENDGAMES = ["6e/7/7/7/7/7/7/7/R5L r 0 1", "7/3e3/7/7/3L3/7/7/2R4/7 b 0 1", "7/7/2t4/7/7/7/7/3C3/2D4 r 5 3"]


def test_without_tables_the_search_is_unchanged() -> None:
    """Golden digests taken before the tables existed: the same games, scores and node counts."""
    assert _games_digest() == ("ed49dbfb3dcd6c74", "27694981c2e1a4f6")


@pytest.fixture(scope="module")
def tables() -> Tablebase:
    return Tablebase.build(RuleSet(), pieces=3, only=[Material.parse(m) for m in ("LR-E", "TC-D", "ER-R")])


def test_tablebase_scores_are_exact(tables: Tablebase) -> None:
    """At depth 1 every child is a table position: the root scores its exact value and plays a best move."""
    rng = np.random.default_rng(8)
    mats = [m for m in tables.materials if m.n_pieces == 3]
    st = np.zeros(K.STATE_LEN, dtype=np.int16)
    checked = 0
    ab = AlphaBeta(tt_bits=16, tablebase=tables)
    while checked < 60:
        m = mats[int(rng.integers(len(mats)))]
        st[:] = 0
        st[K.S_PIECES : K.S_PIECES + 16] = -1
        st[K.S_MOVENO] = 1
        if not set_position(st, m.pieces(), m.n_pieces, int(rng.integers(m.size()))):
            continue
        board = Board(state_to_jfen(st))
        p = tables.probe(board)
        if not p.moves:
            continue
        r = ab.search(board, depth=1)
        want = 0 if p.clock_wdl == DRAW else (MATE - p.dtm if p.clock_wdl == WIN else -(MATE - p.dtm))
        assert r.score == want, (board.jfen(), p.describe(), r)
        assert r.move in p.best_moves, (board.jfen(), r.move, p.best_moves)
        checked += 1
    # A capture into the tables: without them depth 2 sees material, with them the exact win behind it.
    board = Board("6e/7/7/7/7/7/7/6c/R5L r 0 1")  # the Lion g1 takes the Cat g2: Lion and Rat against the Elephant
    with pytest.raises(ValueError, match="has 4 pieces"):
        tables.probe(board)
    plain = AlphaBeta(tt_bits=16).search(board, depth=2)
    r = AlphaBeta(tt_bits=16, tablebase=tables).search(board, depth=2)
    after = board.copy()
    after.push("g1g2")
    q = tables.probe(after)
    assert plies_to_result(plain.score) is None and q.wdl == -1 and q.dtm is not None
    assert str(r.move) == "g1g2" and plies_to_result(r.score) == 1 + q.dtm, (r, q.describe())


def test_tablebase_spec_option(tables: Tablebase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    with pytest.raises(TablebaseMissingError, match="python -m envs tablebase build"):
        make_player("alphabeta:depth=2,tablebase=true")
    with pytest.raises(PlayerSpecError, match="tablebase='yes' must be true or false"):
        make_player("alphabeta:depth=2,tablebase=yes")
    tables.save()
    player = make_player("alphabeta:depth=2,tablebase=true", seed=1)
    assert player.engine.tablebase is not None
    assert make_player("alphabeta:depth=2,tablebase=false").engine.tablebase is None
    board = Board("6e/7/7/7/7/7/7/7/R5L r 0 1")
    move = player.select_move(board)
    assert move in tables.probe(board).best_moves
    with pytest.raises(TablebaseError, match="do not serve"):
        player.select_move(Board("6e/7/7/7/7/7/7/7/R5L r 0 1", rules=RuleSet(trapped_attacker="keeps_rank")))


def test_an_option_given_twice_in_a_spec_is_refused() -> None:
    """`alphabeta:depth=2,depth=3` once took the last value silently."""
    for spec in ("alphabeta:depth=2,depth=3", "alphabeta:depth=2, depth =2", "random:x=1,x=2"):
        with pytest.raises(PlayerSpecError, match="is given twice"):
            make_player(spec)
    assert make_player("alphabeta:depth=2").name == "alphabeta:depth=2"

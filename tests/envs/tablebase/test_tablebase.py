"""The endgame tablebases: right by a plain brute force, consistent with themselves, symmetric, in line
with the alpha-beta search, and their files, errors and command line.

The 2-piece tables and a few 3-piece groups are built in memory here (seconds); the full 3-piece build
is the slow test at the end.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
from numba import njit

from envs import Board, RuleSet
from envs import kernels as K
from envs.notation import state_to_jfen
from envs.rules import F_NO_CAPTURE_LIMIT
from envs.tablebase import (
    DRAW,
    LOSS,
    UNKNOWN,
    WIN,
    Material,
    Tablebase,
    TablebaseError,
    TablebaseFileError,
    TablebaseMissingError,
    TablebaseRulesError,
    materials,
    probe_state,
    probe_states,
)
from envs.tablebase.index import MIRROR_SQUARE, clear_position, material_of_state, position_index, set_position
from envs.tablebase.probe import NOT_A_POSITION, TablebaseArrays, clock_wdl
from envs.tablebase.stats import material_stats
from envs.tablebase.store import ROOT_ENV
from tests.support import ROOT
from tests.support import reference_rules as ref

GROUPS3 = [Material.parse(m) for m in ("LR-E", "RC-R", "TW-L", "ED-C")]
"""3-piece materials built for the fast tests (each with its swap): jumps and rats in the river, rats in
and out of the water, a jumper against a jumper, the Elephant against the Cat."""


@pytest.fixture(scope="module")
def tb3() -> Tablebase:
    return Tablebase.build(RuleSet(), pieces=3, only=GROUPS3)


# --- a plain brute force over the reference rules -------------------------------------------------
def _brute_force(
    rules: ref.Rules, red: str, blue: str
) -> dict[tuple[tuple[int, int], tuple[int, int], str], tuple[int, int]]:
    """(red square, blue square, side) -> (result for the side to move, distance) of every position of
    a Red `red` against a Blue `blue`, draws left out; by repeated scans of the whole set (no counters)."""

    def squares(letter: str) -> list[tuple[int, int]]:
        return [
            (f, r)
            for f in range(7)
            for r in range(9)
            if (f, r) not in ref.DENS.values() and (letter.upper() == "R" or (f, r) not in ref.WATER)
        ]

    succ: dict[tuple, list] = {}
    for rs in squares(red):
        for bs in squares(blue):
            if rs == bs:
                continue
            for side in ("red", "blue"):
                pos = ref.Pos({rs: red.upper(), bs: blue.lower()}, side)
                children = []
                for m in ref.legal_moves(rules, pos):
                    child = ref.play(pos, m)
                    if ref.game_won(child):
                        children.append(None)  # the move wins at once
                    else:
                        at = {p: sq for sq, p in child.board.items()}
                        children.append((at[red.upper()], at[blue.lower()], child.side))
                succ[(rs, bs, side)] = children
    value: dict[tuple, tuple[int, int]] = {k: (LOSS, 0) for k, c in succ.items() if not c}
    d = 1
    while True:
        new = {}
        for k, children in succ.items():
            if k in value:
                continue
            if d % 2 == 1:
                if any(c is None and d == 1 or c is not None and value.get(c) == (LOSS, d - 1) for c in children):
                    new[k] = (WIN, d)
            elif all(c is not None and c in value and value[c][0] == WIN for c in children):
                if max(value[c][1] for c in children) == d - 1:
                    new[k] = (LOSS, d)
        if not new and d > 2 and not any(v[1] == d - 1 for v in value.values()):
            return value
        value.update(new)
        d += 1


def _jfen(red: str, rs: tuple[int, int], blue: str, bs: tuple[int, int], side: str) -> str:
    st = np.zeros(K.STATE_LEN, dtype=np.int16)
    st[rs[1] * 7 + rs[0]] = K.ANIMAL_LETTERS.index(red.upper())
    st[bs[1] * 7 + bs[0]] = -K.ANIMAL_LETTERS.index(blue.upper())
    st[K.S_SIDE] = 0 if side == "red" else 1
    st[K.S_MOVENO] = 1
    return state_to_jfen(st)


BRUTE_CASES = [
    ("R", "E", {}),  # the Rat takes the Elephant, never from the water
    ("E", "R", {"trapped_attacker": "keeps_rank"}),
    ("L", "R", {}),  # a rat in the river blocks the Lion's jumps
    ("L", "R", {"jump_blocking": "enemy_rat"}),
    ("R", "R", {"river_rats": "rats_ignore_water"}),
    ("C", "C", {}),
    ("D", "W", {"rank_order": "dog_over_wolf"}),
    ("T", "E", {}),
]


@pytest.mark.slow
@pytest.mark.parametrize("red,blue,switches", BRUTE_CASES)
def test_two_piece_tables_match_a_plain_brute_force(red: str, blue: str, switches: dict[str, str]) -> None:
    rules = RuleSet(**switches)  # type: ignore[arg-type]
    tb = Tablebase.build(rules, pieces=2)
    truth = _brute_force(ref.Rules.of(rules), red, blue)
    checked = {WIN: 0, DRAW: 0, LOSS: 0}
    for rs in [(f, r) for f in range(7) for r in range(9)]:
        for bs in [(f, r) for f in range(7) for r in range(9)]:
            for side in ("red", "blue"):
                key = (rs, bs, side)
                legal = (
                    rs != bs
                    and all(sq not in ref.DENS.values() for sq in (rs, bs))
                    and (red == "R" or rs not in ref.WATER)
                    and (blue == "R" or bs not in ref.WATER)
                )
                if not legal:
                    continue
                board = Board(_jfen(red, rs, blue, bs, side), rules=rules)
                wdl, dtm, dtz = probe_state(board.state, tb.arrays)
                want = truth.get(key, (DRAW, -1))
                assert (wdl, dtm) == want, f"{board.jfen()}: table {(wdl, dtm)}, brute force {want}"
                assert dtz == dtm  # every capture ends a 2-piece game
                checked[wdl] += 1
    assert checked[WIN] and checked[LOSS]  # the comparison saw both results


# --- consistency ------------------------------------------------------------------------------------
@njit(cache=True)
def _move_values(st: np.ndarray, flags: np.ndarray, tb: TablebaseArrays, out: np.ndarray) -> int:
    """Each legal move's (wdl, dtm, dtz) for the side that plays it, counting the move; returns n."""
    hist = np.zeros((2, K.HIST_WIDTH), dtype=np.int16)
    hashes = np.zeros(3, dtype=np.uint64)
    moves = np.empty(K.MAX_MOVES, dtype=np.int64)
    n = K.generate_moves(st, hist, flags, moves)
    for i in range(n):
        cap = K.make_move(st, hist, hashes, moves[i])
        if K.won_by_last_move(st):
            out[i, 0], out[i, 1], out[i, 2] = WIN, 1, 1
        else:
            wdl, dtm, dtz = probe_state(st, tb)
            out[i, 0] = -wdl
            out[i, 1] = dtm + 1
            out[i, 2] = 1 if cap != 0 else dtz + 1
            if wdl == UNKNOWN:
                out[i, 0] = UNKNOWN
        K.unmake_move(st, hist)
    return n


@njit(cache=True)
def _inconsistent(flags: np.ndarray, tb: TablebaseArrays, t: int, size: int, metric: int) -> int:
    """The first position of table `t` whose value breaks the retrograde rules for `metric` (1 dtm, 2 dtz),
    or -1: a won position has a move to a position lost one ply shorter and none shorter, every move of a
    lost position leads to a won one and the longest is one ply shorter, a draw has no winning move and a
    drawing one, and a position without moves is lost at 0."""
    st = np.zeros(K.STATE_LEN, dtype=np.int16)
    st[K.S_PIECES : K.S_PIECES + 16] = -1
    st[K.S_MOVENO] = 1
    values = np.zeros((K.MAX_MOVES, 3), dtype=np.int64)
    n_p = tb.n_pieces[t]
    for idx in range(size):
        if tb.dtm[tb.offset[t] + idx] == NOT_A_POSITION:
            continue
        if not set_position(st, tb.pieces[t], n_p, idx):
            return idx
        wdl, dtm, dtz = probe_state(st, tb)
        dist = dtm if metric == 1 else dtz
        n = _move_values(st, flags, tb, values)
        clear_position(st)
        best_win = 1 << 20
        longest_loss = -1
        draws = 0
        for i in range(n):
            if values[i, 0] == UNKNOWN:
                return idx
            if values[i, 0] == WIN:
                best_win = min(best_win, values[i, metric])
            elif values[i, 0] == LOSS:
                longest_loss = max(longest_loss, values[i, metric])
            else:
                draws += 1
        if n == 0:
            ok = wdl == LOSS and dist == 0
        elif wdl == WIN:
            ok = best_win == dist
        elif wdl == LOSS:
            ok = best_win == 1 << 20 and draws == 0 and longest_loss == dist
        else:
            ok = wdl == DRAW and best_win == 1 << 20 and draws > 0
        if not ok:
            return idx
    return -1


def _check_consistent(tb: Tablebase, mats: list[Material]) -> None:
    flags = tb.rules.flags()
    for m in mats:
        t = int(tb.arrays.table_of[m.key])
        for metric, name in ((1, "dtm"), (2, "dtz")):
            bad = _inconsistent(flags, tb.arrays, t, m.size(), metric)
            if bad >= 0:
                st = np.zeros(K.STATE_LEN, dtype=np.int16)
                st[K.S_PIECES : K.S_PIECES + 16] = -1
                st[K.S_MOVENO] = 1
                set_position(st, m.pieces(), m.n_pieces, bad)
                pytest.fail(f"{m} {name}: {state_to_jfen(st)} {probe_state(st, tb.arrays)} breaks the retrograde rules")


@pytest.mark.slow
def test_tables_are_consistent_with_themselves(tb3: Tablebase) -> None:
    mats = [m for m in tb3.materials]
    assert len(mats) == 64 + 2 * len(GROUPS3)
    _check_consistent(tb3, mats)


@pytest.mark.slow
@pytest.mark.parametrize(
    "switch",
    [
        "trapped_attacker=keeps_rank",
        "jump_blocking=enemy_rat",
        "river_rats=rats_ignore_water",
        "rank_order=dog_over_wolf",
    ],
)
def test_variant_tables_are_consistent(switch: str) -> None:
    tb = Tablebase.build(RuleSet().with_overrides([switch]), pieces=3, only=GROUPS3[:2])
    _check_consistent(tb, tb.materials)


def _codes(tb: Tablebase, m: Material) -> np.ndarray:
    at = int(tb.arrays.offset[int(tb.arrays.table_of[m.key])])
    return np.asarray(tb.arrays.dtm[at : at + m.size()])


@pytest.mark.slow
def test_the_variants_change_the_tables_they_should() -> None:
    """Each position-only switch reaches the solver and changes some value, except keeps_rank: a piece in
    an enemy trap stands beside the enemy den and wins at once by entering it, so the captures it gains
    never matter (the tables are the same, byte for byte)."""
    only = GROUPS3[:2] + [Material.parse("CD-W")]
    base = Tablebase.build(RuleSet(), pieces=3, only=only)
    for switch in (
        "trapped_attacker=keeps_rank",
        "jump_blocking=enemy_rat",
        "river_rats=rats_ignore_water",
        "rank_order=dog_over_wolf",
    ):
        other = Tablebase.build(RuleSet().with_overrides([switch]), pieces=3, only=only)
        assert other.materials == base.materials
        changed = [str(m) for m in other.materials if not np.array_equal(_codes(other, m), _codes(base, m))]
        if switch == "trapped_attacker=keeps_rank":
            assert not changed
        else:
            assert changed, switch
        if switch == "rank_order=dog_over_wolf":
            assert "D-W" in changed and "CD-W" in changed and "R-E" not in changed


# --- symmetry ----------------------------------------------------------------------------------------
@njit(cache=True)
def _mirror_mismatch(tb: TablebaseArrays, t: int, size: int) -> int:
    """The first position of table `t` whose mirror image is stored apart (first piece on file d) with other
    values, or -1."""
    st = np.zeros(K.STATE_LEN, dtype=np.int16)
    st[K.S_PIECES : K.S_PIECES + 16] = -1
    mirrored = st.copy()
    n_p = tb.n_pieces[t]
    for idx in range(size):
        if not set_position(st, tb.pieces[t], n_p, idx):
            continue
        mirrored[:] = st
        for sq in range(K.N_SQUARES):
            mirrored[MIRROR_SQUARE[sq]] = st[sq]
        for j in range(16):
            if st[K.S_PIECES + j] >= 0:
                mirrored[K.S_PIECES + j] = MIRROR_SQUARE[st[K.S_PIECES + j]]
        other = position_index(mirrored, tb.pieces[t], n_p)
        a, b = tb.offset[t] + idx, tb.offset[t] + other
        if other < 0 or tb.dtm[a] != tb.dtm[b] or tb.dtz[a] != tb.dtz[b]:
            return idx
        clear_position(st)
    return -1


def test_tables_are_invariant_under_the_mirror(tb3: Tablebase) -> None:
    for m in tb3.materials:
        assert _mirror_mismatch(tb3.arrays, int(tb3.arrays.table_of[m.key]), m.size()) == -1, m
    rng = np.random.default_rng(5)
    for board in _random_boards(tb3, rng, 200):
        p, q = tb3.probe(board), tb3.probe(board.mirror())
        assert (p.wdl, p.dtm, p.dtz) == (q.wdl, q.dtm, q.dtz), board.jfen()
        assert sorted(str(m.mirror()) for m in p.best_moves) == sorted(str(m) for m in q.best_moves)


def test_colours_are_symmetric(tb3: Tablebase) -> None:
    """Blue to move is Red to move on the board turned round: the probe agrees on both."""
    rng = np.random.default_rng(6)
    for board in _random_boards(tb3, rng, 100):
        st = np.zeros(K.STATE_LEN, dtype=np.int16)
        for sq in range(K.N_SQUARES):
            st[62 - sq] = -board.state[sq]
        st[K.S_SIDE] = 1 - board.state[K.S_SIDE]
        st[K.S_MOVENO] = 1
        turned = Board(state_to_jfen(st))
        assert probe_state(board.state, tb3.arrays) == probe_state(turned.state, tb3.arrays), board.jfen()


def _random_boards(
    tb: Tablebase, rng: np.random.Generator, n: int, clock: int = 0, mats: Optional[list[Material]] = None
) -> list[Board]:
    """`n` random positions of the materials of `tb` (any side to move), games going on."""
    mats = mats if mats is not None else tb.materials
    out: list[Board] = []
    st = np.zeros(K.STATE_LEN, dtype=np.int16)
    st[K.S_PIECES : K.S_PIECES + 16] = -1
    while len(out) < n:
        m = mats[int(rng.integers(len(mats)))]
        if not set_position(st, m.pieces(), m.n_pieces, int(rng.integers(m.size()))):
            continue
        blue = bool(rng.integers(2))
        board = np.zeros(K.STATE_LEN, dtype=np.int16)
        for sq in range(K.N_SQUARES):
            board[62 - sq if blue else sq] = -st[sq] if blue else st[sq]
        board[K.S_SIDE] = int(blue)
        board[K.S_CLOCK] = clock
        board[K.S_MOVENO] = 1
        clear_position(st)
        out.append(Board(state_to_jfen(board), rules=tb.rules))
    return out


# --- against the alpha-beta search ---------------------------------------------------------------------
def _check_alpha_beta(tb: Tablebase, boards: list[Board], depth: int) -> dict[str, int]:
    """The alpha-beta search (no tables) at `depth` finds every table result within its horizon exactly,
    announces no forced result in a table draw, and any forced result it sees beyond (through its capture
    search) is the table's, no shorter than dtm. Returns how many positions fell in each case."""
    from agents.alphabeta.search import MATE, AlphaBeta, plies_to_result

    ab = AlphaBeta(tt_bits=16)
    seen = {"exact": 0, "beyond": 0, "draw": 0}
    for board in boards:
        p = tb.probe(board)
        if not p.moves:
            continue
        ab.clear()
        r = ab.search(board, depth=depth)
        forced = plies_to_result(r.score)
        if p.wdl == DRAW:
            assert forced is None, (board.jfen(), r)
            seen["draw"] += 1
            continue
        assert p.dtm is not None
        if p.dtm <= depth:
            assert r.score == (MATE - p.dtm if p.wdl == WIN else -(MATE - p.dtm)), (board.jfen(), p.describe(), r)
            seen["exact"] += 1
        else:
            if forced is not None:
                assert p.wdl == (WIN if forced > 0 else LOSS) and abs(forced) >= p.dtm, (board.jfen(), p, r)
            seen["beyond"] += 1
    return seen


def test_agrees_with_the_alpha_beta_forced_results(tb3: Tablebase) -> None:
    seen = _check_alpha_beta(tb3, _random_boards(tb3, np.random.default_rng(11), 300), depth=5)
    assert min(seen.values()) > 10, seen


# --- the no-capture clock -----------------------------------------------------------------------------------
def _clock_result(st: np.ndarray, left: int, flags: np.ndarray, tb: Tablebase, memo: dict) -> int:
    """The side to move's result in `st` with `left` plies before the no-capture rule draws, by plain
    minimax; a capture leads to a 2-piece position decided within a fresh limit when its dtm fits it."""
    key = (st[: K.N_SQUARES].tobytes(), int(st[K.S_SIDE]), left)
    if key in memo:
        return memo[key]
    limit = int(flags[F_NO_CAPTURE_LIMIT])
    hist = np.zeros((1, K.HIST_WIDTH), dtype=np.int16)
    hashes = np.zeros(2, dtype=np.uint64)
    moves = np.empty(K.MAX_MOVES, dtype=np.int64)
    n = K.generate_moves(st, hist, flags, moves)
    result = LOSS if n == 0 else DRAW if left <= 0 else LOSS
    for m in moves[:n] if left > 0 else []:
        child = st.copy()
        child[K.S_PLY] = 0
        cap = K.make_move(child, hist, hashes, int(m))
        if K.won_by_last_move(child):
            value = WIN
        elif cap:
            wdl, dtm, _ = probe_state(child, tb.arrays)
            value = DRAW if wdl == DRAW or dtm > limit else -wdl
        else:
            value = -_clock_result(child, left - 1, flags, tb, memo)
        result = max(result, value)
    memo[key] = result
    return result


def _wins_through_a_capture(tb: Tablebase, count: int) -> list[Board]:
    """Won 3-piece positions whose shortest win is short (dtm <= 9) yet longer than their way to a capture."""
    out = []
    rng = np.random.default_rng(3)
    mats = [m for m in tb.materials if m.n_pieces == 3]
    while len(out) < count:
        board = _random_boards(tb, rng, 1, mats=mats)[0]
        wdl, dtm, dtz = probe_state(board.state, tb.arrays)
        if wdl != DRAW and 3 <= dtm <= 9 and dtz < dtm:
            out.append(board)
    return out


@pytest.mark.slow
def test_the_clock_verdict_matches_a_minimax_under_the_no_capture_rule(tb3: Tablebase) -> None:
    starts = _wins_through_a_capture(tb3, 6)
    for rules in (RuleSet(), RuleSet(no_capture_draw=4)):
        tb = Tablebase(rules, tb3.materials, tb3.arrays, tb3.max_pieces)
        limit = rules.no_capture_draw
        seen = {"fits": 0, "through_capture": 0, "clock_draw": 0, "unknown": 0}
        for start in starts:
            memo: dict = {}
            for left in range(0, min(limit, 10) + 1):
                board = Board(start.jfen(), rules=rules)
                board.state[K.S_CLOCK] = limit - left
                p = tb.probe(board)
                want = _clock_result(board.state, left, board.flags, tb, memo)
                assert p.plies_left == left and p.dtm is not None and p.dtz is not None
                if p.clock_wdl == UNKNOWN:
                    assert limit < int(tb.arrays.clock_exact_from[int(tb.arrays.table_of[start_key(board)])])
                    seen["unknown"] += 1
                    continue
                assert p.clock_wdl == want, (board.jfen(), left, p, want)
                seen["fits" if p.dtm <= left else "through_capture" if p.clock_wdl == p.wdl else "clock_draw"] += 1
                if p.dtm > left and p.clock_wdl == p.wdl:
                    _play_out(board, tb)
        assert seen["fits"] and seen["clock_draw"], seen
        if limit >= 120:  # above every 2-piece distance: the table decides every clock
            assert seen["through_capture"] and not seen["unknown"], seen
        else:
            assert seen["unknown"], seen


def _play_out(board: Board, tb: Tablebase) -> None:
    """Both sides play a best move of the probe until the game ends: the side the clock verdict names wins,
    under the board's own rules (the no-capture limit and repetition counted by the Board)."""
    winner = board.side_to_move if tb.probe(board).clock_wdl == WIN else board.side_to_move.other
    board = Board(board.jfen(), rules=board.rules)
    while board.outcome() is None:
        board.push(tb.probe(board).best_moves[0])
    outcome = board.outcome()
    assert outcome is not None and outcome.winner == winner, (board.jfen(), outcome)


def start_key(board: Board) -> int:
    return Material.parse(str(material_of_state(board.state))).key


def test_clock_wdl_cases() -> None:
    assert clock_wdl(WIN, 5, 3, 117, 120, 0) == WIN  # dtm 5 > 3 plies left, dtz 3 fits
    assert clock_wdl(WIN, 5, 4, 117, 120, 0) == DRAW  # neither fits: a cursed win
    assert clock_wdl(WIN, 3, 3, 117, 120, 0) == WIN
    assert clock_wdl(LOSS, 6, 2, 116, 120, 0) == LOSS
    assert clock_wdl(LOSS, 6, 6, 116, 120, 0) == DRAW  # the clock saves the loser
    assert clock_wdl(LOSS, 0, 0, 500, 120, 0) == LOSS  # no legal move loses whatever the clock
    assert clock_wdl(WIN, 5, 3, 117, 120, 200) == UNKNOWN  # the capture leads to a win longer than a limit
    assert clock_wdl(WIN, 5, 3, 0, 0, 200) == WIN  # no rule
    assert clock_wdl(DRAW, -1, -1, 119, 120, 0) == DRAW


# --- files, the default location, errors -----------------------------------------------------------------
def test_files_are_deterministic_checked_and_memory_mapped(tmp_path: Path) -> None:
    a = Tablebase.build(RuleSet(), pieces=3, only=GROUPS3[:1])
    b = Tablebase.build(RuleSet(), pieces=3, only=GROUPS3[:1])
    path_a, digest_a = a.save(tmp_path / "a")
    path_b, digest_b = b.save(tmp_path / "b")
    assert path_a.read_bytes() == path_b.read_bytes() and digest_a == digest_b
    assert path_a.relative_to(tmp_path / "a").parts == ("standard.strict.any_rat.powerless", "up-to-3-pieces.jtb")
    opened = Tablebase.open(RuleSet(), root=tmp_path / "a")
    assert not opened.arrays.dtm.flags.writeable
    n = sum(m.size() for m in a.materials)
    assert np.array_equal(np.asarray(opened.arrays.dtm), np.asarray(a.arrays.dtm[:n]))
    assert np.array_equal(np.asarray(opened.arrays.dtz), np.asarray(a.arrays.dtz[:n]))
    assert opened.materials == a.materials
    # A flipped byte fails the checksum; a cut file or a foreign one is refused by name.
    data = bytearray(path_a.read_bytes())
    data[-5] ^= 1
    path_a.write_bytes(bytes(data))
    with pytest.raises(TablebaseFileError, match="checksum"):
        Tablebase.open(RuleSet(), root=tmp_path / "a")
    path_a.write_bytes(bytes(data[:-7]))
    with pytest.raises(TablebaseFileError, match="truncated"):
        Tablebase.open(RuleSet(), root=tmp_path / "a")
    path_a.write_bytes(b"not a table")
    with pytest.raises(TablebaseFileError, match="not a tablebase file"):
        Tablebase.open(RuleSet(), root=tmp_path / "a")


def test_missing_tables_say_how_to_build_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    board = Board("6e/7/7/7/7/7/7/7/R6 r 0 1")
    with pytest.raises(TablebaseMissingError, match="python -m envs tablebase build --pieces 3") as e:
        board.probe()
    assert isinstance(e.value, ValueError) and str(tmp_path) in str(e.value)
    keeps = Board("6e/7/7/7/7/7/7/7/R6 r 0 1", rules=RuleSet(trapped_attacker="keeps_rank"))
    with pytest.raises(TablebaseMissingError, match="--rule trapped_attacker=keeps_rank"):
        keeps.probe()
    with pytest.raises(TablebaseRulesError, match="anti_chase"):
        Board(rules=RuleSet(anti_chase="7-3+17-5")).probe()
    # Once built there, the same call finds them (a failed open is not remembered).
    Tablebase.build(RuleSet(), pieces=2).save()
    assert board.probe().wdl == WIN
    with pytest.raises(
        TablebaseMissingError,
        match="hold at most 2; build the 3-piece tables with: python -m envs tablebase build --pieces 3$",
    ):
        Board("6e/7/7/7/7/7/7/7/R5L r 0 1").probe()


def test_probe_refuses_what_the_tables_do_not_hold(tb3: Tablebase) -> None:
    with pytest.raises(TablebaseError, match="has 16 pieces"):
        tb3.probe(Board())
    with pytest.raises(TablebaseError, match="already won"):
        tb3.probe(Board("3R3/7/7/7/7/7/7/7/e6 b 0 1"))
    with pytest.raises(TablebaseMissingError, match="material TL-E is not in these tables"):
        tb3.probe(Board("6e/7/7/7/7/7/7/7/T5L r 0 1"))
    with pytest.raises(
        TablebaseError, match="for trapped_attacker=powerless; the board plays trapped_attacker=keeps_rank"
    ):
        tb3.probe(Board("6e/7/7/7/7/7/7/7/R6 r 0 1", rules=RuleSet(trapped_attacker="keeps_rank")))
    # The history rules do not change the tables: one build serves them all.
    same = Board("6e/7/7/7/7/7/7/7/R6 r 0 1", rules=RuleSet(repetition="off", no_capture_draw=200))
    assert tb3.holds(same) and tb3.probe(same).wdl == WIN
    assert not tb3.holds(Board())


def test_probe_values_and_best_moves(tb3: Tablebase) -> None:
    # The Lion on d8 enters Blue's den at once.
    p = tb3.probe(Board("7/3L3/7/7/7/7/7/7/e6 r 0 1"))
    assert (p.wdl, p.dtm, p.dtz, p.clock_wdl) == (WIN, 1, 1, WIN)
    assert [str(m) for m in p.best_moves] == ["d8d9"]
    assert p.describe() == "win in 1 ply"
    # Each best move of a won position leads to a position lost one ply sooner; of a lost one, the longest.
    rng = np.random.default_rng(9)
    for board in _random_boards(tb3, rng, 100):
        p = tb3.probe(board)
        for m in p.best_moves:
            v = p.moves[m]
            assert v.wdl == p.wdl and v.dtm == p.dtm
            child = board.copy()
            child.push(m)
            if child.outcome() is None:
                q = tb3.probe(child)
                assert q.wdl == -p.wdl and (p.dtm is None or q.dtm == p.dtm - 1)


def test_batch_probe_matches_the_single_probe(tb3: Tablebase) -> None:
    boards = _random_boards(tb3, np.random.default_rng(4), 50, clock=100) + [Board()]
    states = np.stack([b.state for b in boards])
    out = np.zeros((len(boards), 4), dtype=np.int64)
    probe_states(states, tb3.rules.flags(), tb3.arrays, out)
    for b, row in zip(boards, out):
        if b.state[K.S_COUNT] + b.state[K.S_COUNT + 1] > 3:
            assert tuple(row) == (UNKNOWN, -1, -1, UNKNOWN)
            continue
        p = tb3.probe(b)
        assert tuple(row) == (p.wdl, -1 if p.dtm is None else p.dtm, -1 if p.dtz is None else p.dtz, p.clock_wdl)


def test_statistics_count_every_position_once(tb3: Tablebase) -> None:
    for m in (Material.parse("R-E"), Material.parse("C-D"), Material.parse("LR-E")):
        s = material_stats(tb3, m)
        assert s.wins + s.draws + s.losses == s.positions
        if m.n_pieces == 2:  # every placement (no den, no water but for the Rat, not both on one square) once
            free = [61 if a == K.RAT else 49 for _, a in m.pieces()]
            assert s.positions == free[0] * free[1] - 49
        assert s.longest_win is not None and s.longest_win_jfen is not None
        board = Board(s.longest_win_jfen)
        assert tb3.probe(board).dtm == s.longest_win and tb3.probe(board).wdl == WIN


# --- the command line ------------------------------------------------------------------------------------------
def run_cli(*args: str, env_root: Optional[Path] = None) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ)
    if env_root is not None:
        env[ROOT_ENV] = str(env_root)
    return subprocess.run(
        [sys.executable, "-m", "envs", "tablebase", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


@pytest.mark.slow
def test_cli_builds_and_probes(tmp_path: Path) -> None:
    out = run_cli("build", "--pieces", "2", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "100.0%" in out.stderr and "ETA" in out.stderr
    path = tmp_path / "standard.strict.any_rat.powerless" / "up-to-2-pieces.jtb"
    assert f"wrote {path}" in out.stdout and "sha256 " in out.stdout
    probe = run_cli("probe", "7/3L3/7/7/7/7/7/7/e6 r 0 1", "--dir", str(tmp_path), "--moves")
    assert probe.returncode == 0, probe.stderr
    lines = probe.stdout.splitlines()
    assert lines[:5] == ["value: win in 1 ply", "dtm: 1", "dtz: 1", "clock: win (120 plies left)", "best moves: d8d9"]
    assert "d8d9 win dtm 1 dtz 1 clock win" in lines
    stats = run_cli("stats", "--dir", str(tmp_path))
    assert stats.returncode == 0 and stats.stdout.count("\n") == 2 + 64
    missing = run_cli("probe", "7/3L3/7/7/7/7/7/7/e6 r 0 1", "--rule", "trapped_attacker=keeps_rank", env_root=tmp_path)
    assert missing.returncode == 2 and missing.stderr.startswith("error: no tablebase for rules")
    assert "python -m envs tablebase build --pieces 3 --rule trapped_attacker=keeps_rank" in missing.stderr
    for bad in (
        ["build", "--pieces", "5", "--out", str(tmp_path)],
        ["probe", "7/7 r 0 1", "--dir", str(tmp_path)],
        ["build", "--rule", "anti_chase=7-3+17-5", "--out", str(tmp_path)],
        ["build", "--rules", "anti_chase", "--out", str(tmp_path)],
    ):
        r = run_cli(*bad)
        assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, (bad, r.stderr)


# --- the whole 3-piece build ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_full_three_piece_build() -> None:
    tb = Tablebase.build(RuleSet(), pieces=3)
    assert len(tb.materials) == 64 + 448 and tb.materials == materials(2) + materials(3)
    rng = np.random.default_rng(2)
    sample = [tb.materials[int(i)] for i in rng.choice(len(tb.materials), 40, replace=False)]
    _check_consistent(tb, sample)
    for m in sample:
        assert _mirror_mismatch(tb.arrays, int(tb.arrays.table_of[m.key]), m.size()) == -1, m
    three = [m for m in tb.materials if m.n_pieces == 3]
    seen = _check_alpha_beta(tb, _random_boards(tb, rng, 200, mats=three), depth=5)
    assert seen["exact"] > 20 and seen["beyond"] > 20, seen  # draws are rare with 3 pieces (the fast test has them)

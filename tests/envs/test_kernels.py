"""The kernels' fast paths agree with their plain definitions."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from envs import START_JFEN, Board, RuleSet, perft
from envs import kernels as K
from tests.support.perft_positions import CHASE_JFEN, CHASE_LINES, POSITIONS, VARIANTS

VARIANT_SETS = {
    "default": RuleSet(),
    "anti_chase": RuleSet(anti_chase="7-3+17-5"),
    "short_limit_no_repetition": RuleSet(repetition="off", no_capture_draw=40),
    "all_switched": RuleSet(
        rank_order="dog_over_wolf",
        river_rats="rats_ignore_water",
        jump_blocking="enemy_rat",
        trapped_attacker="keeps_rank",
        anti_chase="7-3+17-5",
    ),
}


@njit(cache=True)  # compiled once, not in every test session
def plain_random_games(
    st0: np.ndarray, flags: np.ndarray, n_games: int, max_plies: int, seed: int, results: np.ndarray
) -> int:
    """random_games written the obvious way: outcome(), generate_moves, a uniform pick (same generator)."""
    rng = K.rng_seed(seed)
    st = st0.copy()
    hist = np.zeros((max_plies + 1, K.HIST_WIDTH), dtype=np.int16)
    hashes = np.zeros(max_plies + 2, dtype=np.uint64)
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    total = 0
    for g in range(n_games):
        st[:] = st0
        hashes[0] = K.compute_hash(st)
        res = 3
        for ply in range(max_plies + 1):
            term, winner = K.outcome(st, hist, hashes, flags)
            if term != K.TERM_NONE:
                res = term * 4 + winner
                break
            if ply == max_plies:
                break
            n = K.generate_moves(st, hist, flags, buf)
            K.make_move(st, hist, hashes, buf[K.rng_below(rng, n)])
            total += 1
        results[g] = res
    return total


@pytest.mark.parametrize("name", sorted(VARIANT_SETS))
def test_random_games_match_the_plain_loop(name: str) -> None:
    board = Board(rules=VARIANT_SETS[name])
    fast = np.zeros(300, dtype=np.int64)
    plain = np.zeros(300, dtype=np.int64)
    plies_fast = K.random_games(board.state, board.flags, 300, 400, 7, fast)
    plies_plain = plain_random_games(board.state, board.flags, 300, 400, 7, plain)
    assert plies_fast == plies_plain
    assert np.array_equal(fast, plain)
    terms = set((fast // 4).tolist())
    assert terms <= {K.TERM_DEN, K.TERM_ALL_CAPTURED, K.TERM_NO_MOVES, K.TERM_REPETITION, K.TERM_NO_CAPTURE_LIMIT, 0}


def test_random_games_are_reproducible() -> None:
    board = Board()
    a, b = np.zeros(50, dtype=np.int64), np.zeros(50, dtype=np.int64)
    assert K.random_games(board.state, board.flags, 50, 300, 3, a) == K.random_games(
        board.state, board.flags, 50, 300, 3, b
    )
    assert np.array_equal(a, b)


def test_count_and_generate_agree_with_the_slow_target() -> None:
    """The bitboard generator lists exactly the moves the per-direction `target` allows."""
    board = Board(rules=RuleSet(jump_blocking="enemy_rat", river_rats="rats_ignore_water"))
    rng = np.random.default_rng(5)
    for _ in range(300):
        if board.outcome() is not None:
            break
        st, side = board.state, int(board.state[K.S_SIDE])
        slow = set()
        for a in range(1, 9):
            frm = int(st[K.S_PIECES + 8 * side + a - 1])
            if frm < 0:
                continue
            for d in range(4):
                to = K.target(st, board.flags, side, a, frm, d)
                if to >= 0:
                    slow.add((frm << 6) | to)
        assert set(board.legal_move_ints().tolist()) == slow
        assert K.count_moves(st, board.hist, board.flags) == len(slow)
        assert perft(board, 1) == perft(board, 1, bulk=False) == len(slow)
        moves = sorted(board.legal_moves)
        board.push(moves[int(rng.integers(len(moves)))])
    assert board.ply > 50


def perft_by_make_move(board: Board, depth: int) -> int:
    """perft through the full path the env and the search use: generate_moves, make_move, unmake_move."""
    st, hist, hashes, flags = board.state, board.hist, board.hashes, board.flags
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    n = K.generate_moves(st, hist, flags, buf)
    if depth == 1:
        return n
    total = 0
    for m in buf[:n].tolist():
        K.make_move(st, hist, hashes, m)
        if not K.won_by_last_move(st):
            total += perft_by_make_move(board, depth - 1)
        K.unmake_move(st, hist)
    return total


def perft_positions() -> list[tuple[str, list[str]]]:
    """(JFEN, moves played first): the start, test_perft's hand-made positions and its anti-chase lines."""
    return (
        [(START_JFEN, [])]
        + [(jfen, []) for jfen in POSITIONS.values()]
        + [(CHASE_JFEN, moves) for moves, _, _ in CHASE_LINES.values()]
    )


@pytest.mark.parametrize(
    "variant",
    [
        "default",
        "dog_over_wolf",
        "rats_ignore_water",
        "enemy_rat",
        "keeps_rank",
        "anti_chase",
        "no_repetition",
        "hundred_rounds",
        "all_switched",
    ],
)
def test_perft_fast_path_matches_make_move(variant: str) -> None:
    """perft's own make/unmake (bulk and every node made) counts what make_move/unmake_move count, and leaves the
    position as it was."""
    rules = RuleSet(**VARIANTS[variant])
    for jfen, moves in perft_positions():
        board = Board.from_jfen(jfen, rules=rules)
        for m in moves:
            board.push(m)
        board._ensure_room(4)
        state, ply = board.state.copy(), board.ply
        hist, hashes = board.hist[:ply].copy(), board.hashes[: ply + 1].copy()
        for depth in (1, 2, 3):
            want = perft_by_make_move(board, depth)
            bulk = K.perft(board.state, board.hist, board.hashes, board.flags, depth)
            made = K.perft_full(board.state, board.hist, board.hashes, board.flags, depth)
            assert bulk == made == want, (
                f"{jfen} after {moves} ({variant}), depth {depth}: bulk {bulk}, made {made}, make_move {want}"
            )
            assert np.array_equal(board.state, state)
            assert np.array_equal(board.hist[:ply], hist) and np.array_equal(board.hashes[: ply + 1], hashes)

"""Invariants over many random games (hypothesis draws the rule set and the game)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from envs import START_JFEN, Board, Move, RuleSet, perft
from envs import kernels as K

VARIANT_SETS = [
    RuleSet(),
    RuleSet(rank_order="dog_over_wolf"),
    RuleSet(river_rats="rats_ignore_water"),
    RuleSet(jump_blocking="enemy_rat"),
    RuleSet(trapped_attacker="keeps_rank"),
    RuleSet(anti_chase="7-3+17-5"),
    RuleSet(repetition="off", no_capture_draw=200),
    RuleSet(
        rank_order="dog_over_wolf",
        river_rats="rats_ignore_water",
        jump_blocking="enemy_rat",
        trapped_attacker="keeps_rank",
        anti_chase="7-3+17-5",
    ),
]

rule_sets = hs.sampled_from(VARIANT_SETS)
seeds = hs.integers(min_value=0, max_value=2**32 - 1)


def random_game(rules: RuleSet, seed: int, max_plies: int = 200) -> Board:
    """A random game from the start, stopped at its end or at `max_plies`."""
    rng = random.Random(seed)
    board = Board(rules=rules)
    while board.ply < max_plies and board.outcome() is None:
        moves = sorted(board.legal_move_ints())
        board.push(Move.from_int(rng.choice(moves)))
    return board


def replay(board: Board) -> list[Board]:
    """Every position of `board`'s game, as boards with their history."""
    b = Board.from_jfen(START_JFEN, rules=board.rules)
    out = [b.copy()]
    for m in board.move_stack:
        b.push(m)
        out.append(b.copy())
    return out


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(rules=rule_sets, seed=seeds)
def test_jfen_round_trips_and_state_matches(rules: RuleSet, seed: int) -> None:
    for b in replay(random_game(rules, seed)):
        text = b.jfen()
        parsed = Board.from_jfen(text, rules=rules)
        assert parsed.jfen() == text
        # Everything but the ply counter (a parsed board starts a new history).
        keep = np.ones(K.STATE_LEN, dtype=bool)
        keep[K.S_PLY] = False
        assert np.array_equal(parsed.state[keep], b.state[keep]), text
        assert parsed.zobrist_hash() == b.zobrist_hash()


@settings(max_examples=25, deadline=None)
@given(rules=rule_sets, seed=seeds)
def test_incremental_hash_and_push_pop(rules: RuleSet, seed: int) -> None:
    board = random_game(rules, seed)
    # Pop the whole game back: every position's hash is its recomputed hash.
    while board.move_stack:
        assert board.zobrist_hash() == int(K.compute_hash(board.state))
        after, after_hash = board.state.copy(), board.zobrist_hash()
        move = board.pop()
        before, before_hash = board.state.copy(), board.zobrist_hash()
        board.push(move)
        assert np.array_equal(board.state, after) and board.zobrist_hash() == after_hash
        board.pop()
        assert np.array_equal(board.state, before) and board.zobrist_hash() == before_hash
    assert board.jfen() == START_JFEN and board.ply == 0


@settings(max_examples=25, deadline=None)
@given(rules=rule_sets, seed=seeds)
def test_moves_exist_until_the_end_and_perft_1(rules: RuleSet, seed: int) -> None:
    for b in replay(random_game(rules, seed)):
        n = len(b.legal_moves)
        if b.outcome() is None:
            assert n > 0, b.jfen()
        assert perft(b, 1) == n
        assert K.count_moves(b.state, b.hist, b.flags) == n
        assert K.has_legal_move(b.state, b.hist, b.flags) == (n > 0)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(rules=rule_sets, seed=seeds)
def test_mirror_symmetry(rules: RuleSet, seed: int) -> None:
    """The left-right mirrored game has the mirrored legal moves and the same outcome."""
    game = random_game(rules, seed)
    mirrored = Board().mirror().jfen()
    m_board = Board.from_jfen(mirrored, rules=rules)
    board = Board(rules=rules)
    for move in [*game.move_stack, None]:
        assert {m.mirror() for m in board.legal_moves} == set(m_board.legal_moves), board.jfen()
        assert board.outcome() == m_board.outcome()
        if move is not None:
            board.push(move)
            m_board.push(move.mirror())


# --------------------------------------------------------------------------------------------
# Game counters: every state a push reaches writes a JFEN that parses back, and observes inside the space
# --------------------------------------------------------------------------------------------
PLACEMENTS = [
    "l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L",
    "l6/7/7/7/7/7/7/7/L6",
    "2c4/7/7/1R5/7/7/7/7/4C2",
    "7/e6/7/7/7/7/7/6E/7",
]
NEAR_LIMIT = hs.one_of(hs.integers(0, 200), hs.integers(K.COUNTER_LIMIT - 60, K.COUNTER_LIMIT))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    placement=hs.sampled_from(PLACEMENTS),
    side=hs.sampled_from("rb"),
    clock=NEAR_LIMIT,
    moveno=NEAR_LIMIT.map(lambda n: max(n, 1)),
    draws=hs.booleans(),
    seed=seeds,
)
def test_every_pushed_state_round_trips_through_jfen_and_observes_inside_the_space(
    placement: str, side: str, clock: int, moveno: int, draws: bool, seed: int
) -> None:
    """From positions whose counters are near their limit (30000, JFEN's and the int16 state's), with or without
    the draw rules: a push is refused exactly when a counter is at the limit, and every position reached
    writes a JFEN that parses back to it and gives an observation inside the env's observation space."""
    from envs.board import GameTooLongError
    from envs.encoding import OBS_SHAPE, encode_observation
    from envs.env import JungleEnv

    rules = RuleSet() if draws else RuleSet(repetition="off", no_capture_draw=0)
    board = Board.from_jfen(f"{placement} {side} {clock} {moveno}", rules=rules)
    space = JungleEnv().observation_space
    rng = random.Random(seed)
    obs = np.empty(OBS_SHAPE, np.float32)
    for _ in range(80):
        text = board.jfen()
        assert Board.from_jfen(text, rules=rules).jfen() == text
        encode_observation(board.state, board.hashes, board.flags, obs)
        assert space.contains(obs), text
        moves = sorted(board.legal_move_ints())
        if board.outcome() is not None or not moves:
            break
        move = Move.from_int(rng.choice(moves))
        if board.at_counter_limit():
            try:
                board.push(move)
            except GameTooLongError:
                break
            raise AssertionError(f"a push past the counters' limit was made in {text!r}")
        board.push(move)
    assert max(board.ply, board.halfmove_clock, board.move_number) <= K.COUNTER_LIMIT

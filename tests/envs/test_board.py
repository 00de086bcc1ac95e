"""The Board API: construction, reading, push/pop, copy, moves, outcome, errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from envs import (
    START_JFEN,
    Animal,
    Board,
    IllegalMoveError,
    InvalidMoveError,
    JFENError,
    Move,
    Outcome,
    Piece,
    RuleSet,
    Side,
    Termination,
)


def test_default_board_is_the_start_position() -> None:
    board = Board()
    assert board.jfen() == START_JFEN
    assert board.side_to_move == Side.RED
    assert board.rules == RuleSet()
    assert len(board.legal_moves) == 24
    assert board.outcome() is None


def test_piece_at() -> None:
    board = Board()
    assert board.piece_at("a1") == Piece(Animal.TIGER, Side.RED)
    assert board.piece_at("g9") == Piece(Animal.TIGER, Side.BLUE)
    assert board.piece_at("a3") == Piece(Animal.ELEPHANT, Side.RED)
    assert board.piece_at("d5") is None
    assert str(board.piece_at("c7")) == "p"
    with pytest.raises(ValueError, match="h1"):
        board.piece_at("h1")


def test_legal_moves_membership_and_len() -> None:
    moves = Board().legal_moves
    assert "a3a4" in moves and Move.from_str("a3a4") in moves
    assert "a3a5" not in moves and "nonsense" not in moves and 42 not in moves
    assert len(list(moves)) == len(moves) == 24
    assert all(isinstance(m, Move) for m in moves)


def test_push_pop_round_trip() -> None:
    board = Board()
    before_hash = board.zobrist_hash()
    board.push("a3a4")
    assert board.jfen() == "l5t/1d3c1/r1p1w1e/7/7/E6/2W1P1R/1C3D1/T5L b 1 1"
    assert board.side_to_move == Side.BLUE
    board.push(Move.from_str("g7g6"))
    assert board.move_number == 2
    assert board.pop() == Move.from_str("g7g6")
    assert board.pop() == Move.from_str("a3a4")
    assert board.jfen() == START_JFEN and board.zobrist_hash() == before_hash
    with pytest.raises(IndexError):
        board.pop()


def test_copy_is_independent() -> None:
    board = Board()
    board.push("a3a4")
    twin = board.copy()
    twin.push("g7g6")
    assert board.jfen() != twin.jfen()
    assert board.move_stack == [Move.from_str("a3a4")]
    assert twin.pop() == Move.from_str("g7g6")
    assert twin == board


def test_move_round_trip() -> None:
    for text in ("a3a4", "a4d4", "b3b7", "g9g8"):
        m = Move.from_str(text)
        assert str(m) == text
        assert Move.from_int(m.to_int()) == m
        assert m.mirror().mirror() == m
    assert str(Move.from_str("a4d4").mirror()) == "g4d4"


@pytest.mark.parametrize("text", ["", "a3", "a3a4a5", "a0a1", "h1h2", "a3a3", "A3A4", "3a4a", "a3-a4"])
def test_bad_move_string(text: str) -> None:
    with pytest.raises(InvalidMoveError) as info:
        Move.from_str(text)
    assert repr(text) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_illegal_move_names_the_move() -> None:
    board = Board()
    with pytest.raises(IllegalMoveError, match="a3a5") as info:
        board.push("a3a5")
    assert isinstance(info.value, ValueError)
    with pytest.raises(IllegalMoveError, match="a9"):
        board.push("a9a8")  # a Blue piece while Red is to move
    with pytest.raises(InvalidMoveError):
        board.push("zz")
    assert board.jfen() == START_JFEN


def test_outcome_enum() -> None:
    assert {t.name for t in Termination} == {"DEN", "ALL_CAPTURED", "NO_MOVES", "REPETITION", "NO_CAPTURE_LIMIT"}
    board = Board.from_jfen("7/3L3/7/7/7/7/7/7/6l r 0 1")
    board.push("d8d9")
    outcome = board.outcome()
    assert outcome == Outcome(Side.RED, Termination.DEN)
    assert outcome is not None and outcome.result() == "1-0"
    assert board.is_game_over()


@pytest.mark.parametrize(
    "jfen, fragment",
    [
        ("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5 r 0 1", "rank 1"),  # short rank
        ("l5t/1d3c1/r1p1w1e/7/7/8/E1W1P1R/1C3D1/T5L r 0 1", "rank 4"),  # long rank
        ("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1X/1C3D1/T5L r 0 1", "'X'"),  # unknown letter
        ("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5T r 0 1", "two of one animal"),
        ("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T2L2 r 0 1", "own den"),
        ("l5t/1d3c1/r1p1w1e/7/7/1E5/2W1P1R/1C3D1/T5L r 0 1", "water"),
        ("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1 r 0 1", "9 ranks"),
        ("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L x 0 1", "'x'"),
        ("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r -1 1", "'-1'"),
        ("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 0", "'0'"),
        ("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0", "4 space-separated"),
    ],
)
def test_bad_jfen(jfen: str, fragment: str) -> None:
    with pytest.raises(JFENError) as info:
        Board.from_jfen(jfen)
    assert isinstance(info.value, ValueError)
    assert fragment in str(info.value)
    assert repr(jfen) in str(info.value)


def test_finished_jfen_parses() -> None:
    """RULES.md: a JFEN whose game is over parses, and outcome() reports it."""
    no_blue = Board.from_jfen("7/7/7/7/7/7/7/7/6L b 0 1")
    assert no_blue.outcome() == Outcome(Side.RED, Termination.ALL_CAPTURED)
    in_den = Board.from_jfen("3L3/7/7/7/7/7/7/7/6l b 0 1")
    assert in_den.outcome() == Outcome(Side.RED, Termination.DEN)


def test_rules_travel_with_the_board() -> None:
    rules = RuleSet(rank_order="dog_over_wolf")
    board = Board.from_jfen(START_JFEN, rules=rules)
    assert board.rules is rules and board.copy().rules == rules
    assert board.mirror().rules == rules


def test_mirror() -> None:
    board = Board()
    mirrored = board.mirror()
    assert mirrored.piece_at("g1") == board.piece_at("a1")
    assert {m.mirror() for m in board.legal_moves} == set(mirrored.legal_moves)


def test_a_move_off_the_board_is_refused_when_made() -> None:
    """Move(14, 78) once made a move whose encoding played another square; every field is a square index."""
    for bad in ((14, 78), (-1, 5), (63, 0), (True, 7), (1.0, 8)):
        with pytest.raises(InvalidMoveError, match="must be a square index in 0..62"):
            Move(*bad)  # type: ignore[arg-type]
    assert str(Move(14, 21)) == "a3a4"


CYCLE = ["a1a2", "a9a8", "a2a1", "a8a9"]
"""Two Lions stepping back and forth: with the draw rules off, a game that never ends."""


@pytest.mark.slow
def test_a_game_stops_at_the_counters_limit_and_its_jfen_still_parses() -> None:
    """30000 plies (the limit of the ply count, the clock and the move number): every push after it is refused,
    the last position writes a JFEN that parses back, and the env truncates there with max_plies=None."""
    from envs.board import GameTooLongError
    from envs.env import JungleEnv
    from envs.rules import COUNTER_LIMIT

    rules = RuleSet(repetition="off", no_capture_draw=0)
    board = Board("l6/7/7/7/7/7/7/7/L6 r 0 1", rules=rules)
    for k in range(COUNTER_LIMIT):
        board.push(CYCLE[k % 4])
    assert board.ply == COUNTER_LIMIT and board.at_counter_limit()
    with pytest.raises(GameTooLongError, match="counters stop at 30000"):
        board.push(CYCLE[0])
    assert Board.from_jfen(board.jfen(), rules=rules).jfen() == board.jfen() == "l6/7/7/7/7/7/7/7/L6 r 30000 15001"
    assert board.repetition_count() >= 1 and board.outcome() is None
    env = JungleEnv(rules=rules, max_plies=None, start_jfen="l6/7/7/7/7/7/7/7/L6 r 0 1")
    obs, _ = env.reset()
    for k in range(COUNTER_LIMIT):
        obs, reward, terminated, truncated, info = env.step(env.move_to_action(CYCLE[k % 4]))
        assert env.observation_space.contains(obs)
        if truncated:
            break
    assert (k, truncated, terminated, info["termination"]) == (COUNTER_LIMIT - 1, True, False, "ply_cap")
    assert Board.from_jfen(info["jfen"], rules=rules).jfen() == info["jfen"]


# --- python-chess habits: turn, result(), is_capture(), startpos ---------------------------------------


def test_turn_is_the_side_to_move() -> None:
    board = Board()
    assert board.turn is Side.RED and board.turn == board.side_to_move
    board.push("a3a4")
    assert board.turn is Side.BLUE and board.turn == board.side_to_move


@pytest.mark.parametrize(
    "jfen, rules, move, result",
    [
        ("7/3L3/7/7/7/7/7/7/6l r 0 1", RuleSet(), "d8d9", "1-0"),  # Red's Lion enters Blue's den
        ("6L/7/7/7/7/7/7/3l3/7 b 0 1", RuleSet(), "d2d1", "0-1"),  # Blue's Lion enters Red's den
        ("l6/7/7/7/7/7/7/7/L6 r 119 60", RuleSet(no_capture_draw=120), "a1a2", "1/2-1/2"),  # 120 plies, no capture
    ],
)
def test_result_is_a_star_until_the_end_then_the_outcomes(jfen: str, rules: RuleSet, move: str, result: str) -> None:
    board = Board(jfen, rules=rules)
    assert board.result() == "*"
    board.push(move)
    outcome = board.outcome()
    assert outcome is not None and board.result() == outcome.result() == result


def test_is_capture_answers_for_a_legal_move_and_refuses_an_illegal_one() -> None:
    board = Board("7/7/2cL3/7/7/7/7/7/6l r 0 1")  # Red's Lion d7 beside Blue's Cat c7
    assert board.is_capture("d7c7") and board.is_capture(Move.from_str("d7c7"))
    assert not board.is_capture("d7e7")
    with pytest.raises(IllegalMoveError, match=r"^illegal move 'a1a2' .*: there is no piece on a1$"):
        board.is_capture("a1a2")
    with pytest.raises(InvalidMoveError):
        board.is_capture("d8")
    # A move onto an enemy piece that the rules forbid is no capture: it is refused, as push refuses it.
    river = Board("7/7/7/7/eR5/7/7/7/7 r 0 1")  # Red's Rat in the river b5, Blue's Elephant on the bank a5
    with pytest.raises(IllegalMoveError, match="water and a piece on land"):
        river.is_capture("b5a5")
    assert board.jfen() == "7/7/2cL3/7/7/7/7/7/6l r 0 1"


def test_startpos_names_the_start_position() -> None:
    from envs import STARTPOS

    rules = RuleSet(rank_order="dog_over_wolf")
    assert STARTPOS == "startpos"
    for board in (Board.startpos(), Board(STARTPOS), Board.from_jfen("startpos")):
        assert board.jfen() == START_JFEN and board.rules == RuleSet()
    assert Board.startpos(rules).rules is rules and Board.from_jfen(STARTPOS, rules=rules).rules is rules
    with pytest.raises(JFENError, match="'StartPos'"):
        Board.from_jfen("StartPos")


def _random_game(rules: RuleSet, seed: int, max_plies: int) -> list[Board]:
    """Every position of a random game from the start (a copy of the board at each ply)."""
    import random

    rng = random.Random(seed)
    board, seen = Board(rules=rules), []
    while True:
        seen.append(board.copy())
        moves = sorted(str(m) for m in board.legal_moves)
        if board.ply >= max_plies or board.outcome() is not None or not moves:
            return seen
        board.push(rng.choice(moves))


@settings(max_examples=20, deadline=None)
@given(
    rules=hs.sampled_from([RuleSet(), RuleSet(no_capture_draw=20), RuleSet(anti_chase="7-3+17-5")]),
    seed=hs.integers(0, 2**32 - 1),
)
def test_result_agrees_with_outcome_over_random_games(rules: RuleSet, seed: int) -> None:
    for board in _random_game(rules, seed, max_plies=150):
        outcome = board.outcome()
        assert board.result() == ("*" if outcome is None else outcome.result()), board.jfen()


@pytest.mark.slow
@settings(max_examples=5, deadline=None)
@given(seed=hs.integers(0, 2**32 - 1))
def test_is_capture_is_a_move_that_takes_a_piece(seed: int) -> None:
    for board in _random_game(RuleSet(), seed, max_plies=150):
        pieces = len(board.pieces(Side.RED)) + len(board.pieces(Side.BLUE))
        for move in board.legal_moves:
            capture = board.is_capture(move)
            board.push(move)
            left = len(board.pieces(Side.RED)) + len(board.pieces(Side.BLUE))
            board.pop()
            assert capture == (left == pieces - 1), (board.jfen(), str(move))

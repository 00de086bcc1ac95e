"""Fuzzing the JFEN and move parsers: a clean ValueError or a valid result, never a crash."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as hs

from envs import START_JFEN, Board, Move

JFEN_ALPHABET = "rcdwpteRCDWPTLEl0123456789/ bx-+"


def parse_or_value_error(text: str) -> None:
    try:
        board = Board.from_jfen(text)
    except ValueError as e:
        assert str(e)
        return
    # Parsed: the board is sound and round-trips.
    assert Board.from_jfen(board.jfen()).jfen() == board.jfen()
    assert len(board.legal_moves) >= 0
    board.outcome()


@settings(max_examples=300, deadline=None)
@given(hs.text())
@example("")
@example("\x00")
@example("7/7/7/7/7/7/7/7/7 r 0 1")
@example("7/7/7/7/7/7/7/7/7 r 99999999999999999999 1")
@example("７/7/7/7/7/7/7/7/7 r 0 1")
@example("7/7/7/7/7/7/7/7/7 r ١ 1")
def test_jfen_arbitrary_text(text: str) -> None:
    parse_or_value_error(text)


@settings(max_examples=300, deadline=None)
@given(hs.text(alphabet=JFEN_ALPHABET, max_size=60))
def test_jfen_near_alphabet(text: str) -> None:
    parse_or_value_error(text)


@settings(max_examples=300, deadline=None)
@given(
    hs.lists(
        hs.tuples(hs.integers(0, len(START_JFEN)), hs.integers(0, 2), hs.sampled_from(JFEN_ALPHABET)),
        min_size=1,
        max_size=4,
    )
)
def test_jfen_mutations(edits: list[tuple[int, int, str]]) -> None:
    """Insert, replace or delete characters of the start JFEN."""
    text = START_JFEN
    for pos, kind, ch in edits:
        pos = min(pos, len(text))
        if kind == 0:
            text = text[:pos] + ch + text[pos:]
        elif kind == 1:
            text = text[:pos] + ch + text[pos + 1 :]
        else:
            text = text[:pos] + text[pos + 1 :]
    parse_or_value_error(text)


@settings(max_examples=300, deadline=None)
@given(hs.text(max_size=8) | hs.text(alphabet="abcdefghz0123456789 ", max_size=6))
@example("a3a4")
@example("a1a1")
@example("a3a4\n")
def test_move_parser(text: str) -> None:
    try:
        move = Move.from_str(text)
    except ValueError as e:
        assert repr(text) in str(e)
        return
    assert Move.from_str(str(move)) == move
    assert str(move) == text.strip()
    board = Board()
    try:
        board.push(move)
    except ValueError:
        assert move not in board.legal_moves

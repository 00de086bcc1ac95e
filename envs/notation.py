"""The game's written names: sides, animals, pieces, squares, moves and JFEN positions.

Plain values over `envs.kernels`' encodings, shared by the `Board`, the text board (`envs.render`) and the
endgame tables (`envs.tablebase`), so that none of them imports another to spell a move or a position.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from envs import kernels as K
from envs.rules import COUNTER_LIMIT

START_JFEN = "l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1"

FILE_NAMES = "abcdefg"
RANK_NAMES = "123456789"
SQUARE_NAMES = tuple(f + r for r in RANK_NAMES for f in FILE_NAMES)


class JFENError(ValueError):
    """A malformed or impossible JFEN string."""


class InvalidMoveError(ValueError):
    """A move string that is not of the form `a3a4`."""


class Side(enum.IntEnum):
    RED = K.RED
    BLUE = K.BLUE

    @property
    def other(self) -> "Side":
        return Side(1 - self)


class Animal(enum.IntEnum):
    RAT = K.RAT
    CAT = K.CAT
    DOG = K.DOG
    WOLF = K.WOLF
    LEOPARD = K.LEOPARD
    TIGER = K.TIGER
    LION = K.LION
    ELEPHANT = K.ELEPHANT

    @property
    def letter(self) -> str:
        return K.ANIMAL_LETTERS[self]


@dataclass(frozen=True)
class Piece:
    animal: Animal
    side: Side

    @property
    def letter(self) -> str:
        """JFEN letter: upper case Red, lower case Blue."""
        ch = self.animal.letter
        return ch if self.side == Side.RED else ch.lower()

    @classmethod
    def from_code(cls, code: int) -> "Piece":
        return cls(Animal(abs(code)), Side.RED if code > 0 else Side.BLUE)

    @property
    def code(self) -> int:
        return int(self.animal) if self.side == Side.RED else -int(self.animal)

    def __str__(self) -> str:
        return self.letter


def parse_square(name: str) -> int:
    """`'a1'` -> 0 ... `'g9'` -> 62; ValueError naming the text otherwise."""
    if not isinstance(name, str) or len(name) != 2 or name[0] not in FILE_NAMES or name[1] not in RANK_NAMES:
        raise ValueError(f"not a square: {name!r} (files a-g, ranks 1-9)")
    return K.square_index(FILE_NAMES.index(name[0]), RANK_NAMES.index(name[1]))


@dataclass(frozen=True, order=True)
class Move:
    """A move from one square to another (a jump is written the same way)."""

    from_square: int
    to_square: int

    def __post_init__(self) -> None:
        for name in ("from_square", "to_square"):
            sq = getattr(self, name)
            if isinstance(sq, bool) or not isinstance(sq, (int, np.integer)) or not 0 <= sq < K.N_SQUARES:
                raise InvalidMoveError(
                    f"Move({self.from_square!r}, {self.to_square!r}): {name} must be a square "
                    f"index in 0..{K.N_SQUARES - 1} (a1 = 0, g9 = 62)"
                )

    @classmethod
    def from_str(cls, text: str) -> "Move":
        """Parse `a3a4`; raises InvalidMoveError naming the text."""
        if not isinstance(text, str):
            raise InvalidMoveError(f"a move must be a string like 'a3a4', got {text!r}")
        t = text.strip()
        if len(t) != 4:
            raise InvalidMoveError(f"malformed move {text!r}: expected four characters like 'a3a4'")
        try:
            frm, to = parse_square(t[:2]), parse_square(t[2:])
        except ValueError:
            raise InvalidMoveError(f"malformed move {text!r}: squares are a1..g9") from None
        if frm == to:
            raise InvalidMoveError(f"malformed move {text!r}: from and to are the same square")
        return cls(frm, to)

    @classmethod
    def from_int(cls, m: int) -> "Move":
        return cls(int(m) >> 6, int(m) & 63)

    def to_int(self) -> int:
        """The kernels' encoding: from << 6 | to."""
        return (self.from_square << 6) | self.to_square

    def mirror(self) -> "Move":
        """The left-right mirrored move (file a <-> g)."""
        return Move(mirror_square(self.from_square), mirror_square(self.to_square))

    def __str__(self) -> str:
        return SQUARE_NAMES[self.from_square] + SQUARE_NAMES[self.to_square]

    def __repr__(self) -> str:
        return f"Move.from_str({str(self)!r})"


def mirror_square(sq: int) -> int:
    return (sq // K.N_FILES) * K.N_FILES + (K.N_FILES - 1 - sq % K.N_FILES)


def parse_jfen(text: str) -> np.ndarray:
    """JFEN -> state array; JFENError naming the text and what is wrong."""
    if not isinstance(text, str):
        raise JFENError(f"JFEN must be a string, got {type(text).__name__}")

    def fail(why: str) -> JFENError:
        return JFENError(f"bad JFEN {text!r}: {why}")

    fields = text.split()
    if len(fields) != 4:
        raise fail(f"expected 4 space-separated fields (placement, side, clock, move number), got {len(fields)}")
    placement, side, clock, moveno = fields
    ranks = placement.split("/")
    if len(ranks) != K.N_RANKS:
        raise fail(f"expected 9 ranks separated by '/', got {len(ranks)}")
    st = np.zeros(K.STATE_LEN, dtype=np.int16)
    st[K.S_PIECES : K.S_PIECES + 16] = -1
    for i, row in enumerate(ranks):
        rank = K.N_RANKS - 1 - i
        f = 0
        for ch in row:
            if ch.isdigit() and ch.isascii():
                if ch == "0":
                    raise fail(f"rank {rank + 1} uses '0'; empty runs are 1-7")
                f += int(ch)
                continue
            upper = ch.upper()
            if upper not in K.ANIMAL_LETTERS[1:] or not ch.isascii():
                raise fail(f"unknown letter {ch!r} in rank {rank + 1}")
            if f >= K.N_FILES:
                raise fail(f"rank {rank + 1} ({row!r}) is longer than 7 squares")
            animal = K.ANIMAL_LETTERS.index(upper)
            side_ = K.RED if ch.isupper() else K.BLUE
            sq = K.square_index(f, rank)
            slot = K.S_PIECES + 8 * side_ + animal - 1
            who = f"{'Red' if side_ == K.RED else 'Blue'} {K.ANIMAL_NAMES[animal]}"
            if st[slot] >= 0:
                raise fail(f"two of one animal on a side: a second {who} on {SQUARE_NAMES[sq]}")
            if K.WATER[sq] and animal != K.RAT:
                raise fail(f"{who} in the water on {SQUARE_NAMES[sq]}; only rats swim")
            if sq == K.DEN[side_]:
                raise fail(f"{who} in its own den on {SQUARE_NAMES[sq]}")
            st[sq] = animal if side_ == K.RED else -animal
            st[slot] = sq
            st[K.S_COUNT + side_] += 1
            f += 1
        if f != K.N_FILES:
            raise fail(f"rank {rank + 1} ({row!r}) has {f} squares, not 7")
    if side not in ("r", "b"):
        raise fail(f"side to move {side!r} is not 'r' or 'b'")
    st[K.S_SIDE] = K.RED if side == "r" else K.BLUE
    for name, value, lo in (("plies since capture", clock, 0), ("move number", moveno, 1)):
        if not (value.isascii() and value.isdigit()) or int(value) < lo or int(value) > COUNTER_LIMIT:
            raise fail(f"{name} {value!r} is not an integer in {lo}..{COUNTER_LIMIT}")
    st[K.S_CLOCK] = int(clock)
    st[K.S_MOVENO] = int(moveno)
    return st


def state_to_jfen(st: np.ndarray) -> str:
    rows = []
    for rank in range(K.N_RANKS - 1, -1, -1):
        row, empty = "", 0
        for f in range(K.N_FILES):
            c = int(st[K.square_index(f, rank)])
            if c == 0:
                empty += 1
                continue
            if empty:
                row += str(empty)
                empty = 0
            row += Piece.from_code(c).letter
        rows.append(row + (str(empty) if empty else ""))
    side = "r" if st[K.S_SIDE] == K.RED else "b"
    return f"{'/'.join(rows)} {side} {int(st[K.S_CLOCK])} {int(st[K.S_MOVENO])}"


def square_symbol(st: np.ndarray, sq: int) -> str:
    """One character for a square of a text board: the piece's JFEN letter, else
    `~` water, `*` den, `#` trap, `.` land."""
    c = int(st[sq])
    if c:
        return Piece.from_code(c).letter
    if K.WATER[sq]:
        return "~"
    if sq == int(K.DEN[K.RED]) or sq == int(K.DEN[K.BLUE]):
        return "*"
    if K.TRAP_OWNER[sq] >= 0:
        return "#"
    return "."

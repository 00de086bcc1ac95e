"""Materials and the compact position index of the endgame tablebases.

A table holds the positions of one *material* with its side to move, seen in
the canonical frame (`envs.encoding`): the side to move is "the mover", its
den is canonical d1 and the enemy's canonical d9; Blue to move is Red to move
on the board rotated 180 degrees. So Red {Lion, Rat} against Blue {Elephant}
with Blue to move is the table "mover {Elephant} vs other {Lion, Rat}".

A material is written ``LR-E``: the mover's animals, then the other side's,
each by JFEN letters in animal order (Rat first). Its key, for the kernels,
is ``mover_mask | other_mask << 8`` with bit ``animal - 1`` of a mask set when
that side has that animal.

The index of a position lists the material's pieces in order (the mover's,
then the other side's, each Rat first) and counts in mixed radix over the
squares each piece may stand on: never a den (a piece in its own den is
illegal; one in the enemy den has already won, rule 8), and for all but the
Rat never the water. The left-right mirror is a symmetry of the rules, so
the first piece only ranges over files a-d: a position whose first piece
stands on files e-g is looked up as its mirror image. Two pieces on one
square make an index that is not a position (`NOT_A_POSITION` in the
tables).
"""

from __future__ import annotations

from itertools import combinations
from typing import NamedTuple

import numpy as np
from numba import njit

from envs import kernels as K
from envs.encoding import canonical_square
from envs.kernels import lean

MAX_PIECES = 3
"""The most pieces (both sides together) a table is built for."""
MIRROR_FILES = 4
"""The first piece of an index stands on files a-d (4 files); the rest are mirrors."""


def _square_slots() -> tuple[np.ndarray, ...]:
    """Per kind (0 the Rat, 1 the others): square -> slot (-1 barred) and slot -> square, on the whole
    board and on the mirror half (files a-d)."""
    full_slot = np.full((2, K.N_SQUARES), -1, dtype=np.int64)
    half_slot = np.full((2, K.N_SQUARES), -1, dtype=np.int64)
    full_sq = np.full((2, K.N_SQUARES), -1, dtype=np.int64)
    half_sq = np.full((2, K.N_SQUARES), -1, dtype=np.int64)
    n_full = np.zeros(2, dtype=np.int64)
    n_half = np.zeros(2, dtype=np.int64)
    for kind in (0, 1):
        for sq in range(K.N_SQUARES):
            if sq in (int(K.DEN[0]), int(K.DEN[1])) or (kind == 1 and K.WATER[sq]):
                continue
            full_slot[kind, sq] = n_full[kind]
            full_sq[kind, n_full[kind]] = sq
            n_full[kind] += 1
            if sq % K.N_FILES < MIRROR_FILES:
                half_slot[kind, sq] = n_half[kind]
                half_sq[kind, n_half[kind]] = sq
                n_half[kind] += 1
    return full_slot, half_slot, full_sq, half_sq, n_full, n_half


FULL_SLOT, HALF_SLOT, FULL_SQUARE, HALF_SQUARE, N_FULL, N_HALF = _square_slots()
"""FULL_SLOT[kind, sq], HALF_SLOT[kind, sq]: the slot of a square (-1 barred); FULL_SQUARE /
HALF_SQUARE[kind, slot] the way back; N_FULL / N_HALF[kind] the slot counts (kind 0 the Rat)."""
MIRROR_SQUARE = np.array(
    [(sq // K.N_FILES) * K.N_FILES + K.N_FILES - 1 - sq % K.N_FILES for sq in range(K.N_SQUARES)], dtype=np.int64
)
"""The left-right mirror of each square (file a <-> g)."""


class Material(NamedTuple):
    """The animals of the side to move (`mover`) and of the other side, each in animal order."""

    mover: tuple[int, ...]
    other: tuple[int, ...]

    @property
    def n_pieces(self) -> int:
        return len(self.mover) + len(self.other)

    @property
    def key(self) -> int:
        """``mover_mask | other_mask << 8`` (bit animal - 1), the kernels' name of the material."""
        return sum(1 << (a - 1) for a in self.mover) | sum(1 << (a - 1) for a in self.other) << 8

    @property
    def swapped(self) -> "Material":
        """The same pieces with the other side to move."""
        return Material(self.other, self.mover)

    def pieces(self) -> np.ndarray:
        """int64[n, 2]: (side, animal) of each piece in index order; side 0 the mover, 1 the other."""
        return np.array([(0, a) for a in self.mover] + [(1, a) for a in self.other], dtype=np.int64)

    def size(self) -> int:
        """Index range of the table (the positions, plus the slots where two pieces share a square)."""
        kinds = [0 if a == K.RAT else 1 for _, a in self.pieces()]
        n = int(N_HALF[kinds[0]])
        for k in kinds[1:]:
            n *= int(N_FULL[k])
        return n

    def __str__(self) -> str:
        return "".join(K.ANIMAL_LETTERS[a] for a in self.mover) + "-" + "".join(K.ANIMAL_LETTERS[a] for a in self.other)

    @classmethod
    def parse(cls, text: str) -> "Material":
        """`'LR-E'` (the letters in any order, either case) -> Material; ValueError naming the text."""
        parts = text.strip().upper().split("-")
        animals = []
        for part in parts:
            try:
                animals.append(tuple(sorted(K.ANIMAL_LETTERS.index(ch, 1) for ch in part)))
            except ValueError:
                animals = []
                break
        if len(parts) != 2 or len(animals) != 2 or any(len(set(a)) != len(a) or not a for a in animals):
            raise ValueError(f"bad material {text!r}: expected the mover's and the other side's animals, e.g. 'LR-E'")
        return cls(animals[0], animals[1])


def materials(n_pieces: int) -> list[Material]:
    """Every material of exactly `n_pieces` pieces with at least one a side, in table order:
    by the mover's piece count (most first), then the mover's animals, then the other side's."""
    out = []
    for k in range(n_pieces - 1, 0, -1):
        for mover in combinations(range(1, 9), k):
            for other in combinations(range(1, 9), n_pieces - k):
                out.append(Material(mover, other))
    return out


def material_of_state(st: np.ndarray) -> Material:
    """The material of a kernels' state array, its side to move as the mover."""
    side = int(st[K.S_SIDE])
    own = tuple(a for a in range(1, 9) if st[K.S_PIECES + 8 * side + a - 1] >= 0)
    foe = tuple(a for a in range(1, 9) if st[K.S_PIECES + 8 * (1 - side) + a - 1] >= 0)
    return Material(own, foe)


# --- kernels ------------------------------------------------------------------------------
@lean(inline=True)
def material_key(st: np.ndarray) -> int:
    """`Material.key` of a state array: the side to move's animals in bits 0-7, the other's in 8-15."""
    side = st[K.S_SIDE] & 1
    key = 0
    for a in range(8):
        if st[K.S_PIECES + 8 * side + a] >= 0:
            key |= 1 << a
        if st[K.S_PIECES + 8 * (1 - side) + a] >= 0:
            key |= 1 << (a + 8)
    return key


@lean(inline=True)
def position_index(st: np.ndarray, pieces: np.ndarray, n: int) -> int:
    """Index of the position `st` in the table of its material (`pieces[:n]`, see `Material.pieces`), its
    side to move as the mover; -1 when a piece stands where the index has no slot (a den, the water).

    The caller has checked that `st` holds that material."""
    side = st[K.S_SIDE] & 1
    first = canonical_square(st[K.S_PIECES + 8 * ((side + pieces[0, 0]) & 1) + pieces[0, 1] - 1], side)
    mirror = first % K.N_FILES >= MIRROR_FILES
    idx = 0
    for i in range(n):
        sq = canonical_square(st[K.S_PIECES + 8 * ((side + pieces[i, 0]) & 1) + pieces[i, 1] - 1], side)
        if mirror:
            sq = MIRROR_SQUARE[sq]
        kind = 0 if pieces[i, 1] == K.RAT else 1
        if i == 0:
            slot = HALF_SLOT[kind, sq]
        else:
            slot = FULL_SLOT[kind, sq]
            idx *= N_FULL[kind]
        if slot < 0:
            return -1
        idx += slot
    return idx


@njit(cache=True)
def set_position(st: np.ndarray, pieces: np.ndarray, n: int, idx: int) -> bool:
    """Make `st` the position `idx` of the table `pieces[:n]` with Red as the mover (the canonical frame);
    False, with `st` cleared, when two pieces would share a square.

    `st` must hold no pieces on entry (a fresh state or one `clear_position` emptied); its counters are
    left as they are."""
    for i in range(n - 1, -1, -1):
        kind = 0 if pieces[i, 1] == K.RAT else 1
        if i == 0:
            sq = HALF_SQUARE[kind, idx]
        else:
            radix = N_FULL[kind]
            sq = FULL_SQUARE[kind, idx % radix]
            idx //= radix
        side = pieces[i, 0]
        if st[sq] != 0:
            clear_position(st)
            return False
        st[sq] = pieces[i, 1] if side == K.RED else -pieces[i, 1]
        st[K.S_PIECES + 8 * side + pieces[i, 1] - 1] = sq
        st[K.S_COUNT + side] += 1
    st[K.S_SIDE] = K.RED
    return True


@njit(cache=True)
def clear_position(st: np.ndarray) -> None:
    """Remove every piece of `st` (board, piece lists, counts)."""
    for j in range(16):
        sq = st[K.S_PIECES + j]
        if sq >= 0:
            st[sq] = 0
            st[K.S_PIECES + j] = -1
    st[K.S_COUNT] = 0
    st[K.S_COUNT + 1] = 0

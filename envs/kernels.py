"""The rules of Jungle as numba kernels over small integer arrays.

Everything here is `@njit(cache=True)`; the kernels that never allocate are
compiled without reference counting (`lean`).
The Python layer (`envs.board`, `envs.env`, the agents) calls these; it never
loops per move itself.

Square numbering: ``sq = rank_index * 7 + file_index`` with ``a1 = 0``,
``g1 = 6``, ``a9 = 56``, ``g9 = 62``.

A position is an int16 array of length ``STATE_LEN`` laid out as:

====================  ==================================================
``st[0:63]``          board: 0 empty, +animal Red, -animal Blue
``st[S_SIDE]``        side to move: 0 Red, 1 Blue
``st[S_CLOCK]``       plies since the last capture (JFEN field 3)
``st[S_MOVENO]``      move number (JFEN field 4)
``st[S_PLY]``         plies made since the game's first position; index
                      into the history arrays below
                      (each of the three counters is at most
                      `COUNTER_LIMIT`, 30000: once one of them is there,
                      `counters_full` says so and no move is pushed)
``st[S_PIECES+8*side+animal-1]``  square of that piece or -1
``st[S_COUNT+side]``  number of pieces of that side
====================  ==================================================

Beside it every kernel that needs the game's past takes

* ``hashes``: uint64[cap+1], ``hashes[p]`` the Zobrist hash after ``p`` plies
  (``hashes[st[S_PLY]]`` is the current position's hash);
* ``hist``: int16[cap, 5], one row per ply made: from, to, animal, captured
  board code, clock before the move.

A move is an int: ``from << 6 | to``. Directions are absolute:
0 north (towards rank 9), 1 east (towards file g), 2 south, 3 west.

Move generation works on bitboards: a uint64 whose bit ``sq`` is square
``sq`` (bit 63 unused). Per piece, a table gives the squares its kind may
step or jump to; own pieces, the own den, blocked jumps and uncapturable
victims are masked out, and counting is a popcount (``popcount`` and
``lowest_bit`` are LLVM intrinsics, one instruction each).

Rulings where RULES.md is silent (each has a test in ``tests/envs/test_rules.py``):

* A position already won by rule 8 or 9 (a piece in the enemy den, a side
  with no pieces: such a JFEN parses) has no legal moves and perft 0; a
  position drawn by rule 11 or 12 keeps its moves and ``outcome`` reports
  the draw (the caller stops), as python-chess does for its draw rules.
* Anti-chase: only the side to move's own moves count; "entered a trap"
  means a move whose destination is any of the six traps; for 17-5 the
  squares "visited" are each move's destination plus the first move's
  origin, and the rule needs 17 previous moves of the side in this game's
  history. Moves barred by anti-chase are illegal, so a side whose only
  moves are barred has no legal move and loses (rule 10).
* The pieces a 7-3 "attacked" test considers are the enemy's moves by rules
  1-7 (anti-chase does not limit threats).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from envs.rules import (
    COUNTER_LIMIT,
    F_ANTI_CHASE,
    F_ENEMY_RAT_BLOCKS,
    F_KEEPS_RANK,
    F_NO_CAPTURE_LIMIT,
    F_RANK,
    F_RATS_IGNORE_WATER,
    F_REPETITION_DRAW,
)

# --- the domain, named once ---------------------------------------------------
N_FILES = 7
N_RANKS = 9
N_SQUARES = 63
RED = 0
BLUE = 1
RAT, CAT, DOG, WOLF, LEOPARD, TIGER, LION, ELEPHANT = 1, 2, 3, 4, 5, 6, 7, 8
ANIMAL_LETTERS = ".RCDWPTLE"  # index by animal
ANIMAL_NAMES = ("", "Rat", "Cat", "Dog", "Wolf", "Leopard", "Tiger", "Lion", "Elephant")
NORTH, EAST, SOUTH, WEST = 0, 1, 2, 3
MAX_MOVES = 32  # 8 pieces x 4 directions

DEN = np.array([3, 59], dtype=np.int64)  # d1 (Red's), d9 (Blue's)
TRAPS = ((2, 4, 10), (58, 60, 52))  # c1 e1 d2 (Red's); c9 e9 d8 (Blue's)

# State layout.
S_SIDE = 63
S_CLOCK = 64
S_MOVENO = 65
S_PLY = 66
S_PIECES = 67
S_COUNT = 83
STATE_LEN = 85
HIST_WIDTH = 5

# Termination codes (rules 8-12) and winners.
TERM_NONE = 0
TERM_DEN = 1
TERM_ALL_CAPTURED = 2
TERM_NO_MOVES = 3
TERM_REPETITION = 4
TERM_NO_CAPTURE_LIMIT = 5
DRAW = 2


def square_index(file: int, rank: int) -> int:
    """0-based file and rank to a square index."""
    return rank * N_FILES + file


def _build_tables() -> tuple[np.ndarray, ...]:
    water = np.zeros(N_SQUARES, dtype=np.bool_)
    for r in (3, 4, 5):
        for f in (1, 2, 4, 5):
            water[square_index(f, r)] = True
    trap_owner = np.full(N_SQUARES, -1, dtype=np.int64)
    for side, squares in enumerate(TRAPS):
        for s in squares:
            trap_owner[s] = side
    step = np.full((N_SQUARES, 4), -1, dtype=np.int64)
    jump = np.full((N_SQUARES, 4), -1, dtype=np.int64)
    jump_over = np.full((N_SQUARES, 4, 3), -1, dtype=np.int64)
    deltas = ((0, 1), (1, 0), (0, -1), (-1, 0))
    for sq in range(N_SQUARES):
        f0, r0 = sq % N_FILES, sq // N_FILES
        for d, (df, dr) in enumerate(deltas):
            f, r = f0 + df, r0 + dr
            if not (0 <= f < N_FILES and 0 <= r < N_RANKS):
                continue
            t = square_index(f, r)
            step[sq, d] = t
            if water[sq] or not water[t]:
                continue
            over = []
            while 0 <= f < N_FILES and 0 <= r < N_RANKS and water[square_index(f, r)]:
                over.append(square_index(f, r))
                f, r = f + df, r + dr
            jump[sq, d] = square_index(f, r)
            jump_over[sq, d, : len(over)] = over
    rng = np.random.default_rng(0x4A554E474C45)  # fixed: hashes are stable across runs
    zobrist = rng.integers(1, 2**63, size=(17, N_SQUARES), dtype=np.int64).astype(np.uint64)
    zobrist[8, :] = 0  # the empty square
    zside = np.uint64(rng.integers(1, 2**63, dtype=np.int64))
    return water, trap_owner, step, jump, jump_over, zobrist, np.array([zside], dtype=np.uint64)


WATER, TRAP_OWNER, STEP, JUMP, JUMP_OVER, ZOBRIST, ZSIDE_ARR = _build_tables()
ZSIDE = ZSIDE_ARR[0]

# --- bitboards: bit sq of a uint64 is square sq (63 squares, bit 63 unused) ----------
KIND_RAT, KIND_WALKER, KIND_JUMPER = 0, 1, 2
_W = KIND_WALKER
KIND = np.array([_W, KIND_RAT, _W, _W, _W, _W, KIND_JUMPER, KIND_JUMPER, _W], dtype=np.int64)
"""Movement kind per animal: the Rat swims, Tiger and Lion jump, the rest walk on land."""


def _build_bitboards() -> tuple[np.ndarray, ...]:
    def bb(squares: "list[int] | range | np.ndarray") -> int:
        x = 0
        for q in squares:
            x |= 1 << int(q)
        return x

    bit = np.array([1 << i for i in range(64)], dtype=np.uint64)
    water = bb(np.flatnonzero(WATER))
    move_bb = np.zeros((3, N_SQUARES), dtype=np.uint64)
    jump_over_bb = np.zeros((N_SQUARES, 4), dtype=np.uint64)
    for sq in range(N_SQUARES):
        neigh = bb([t for t in STEP[sq] if t >= 0])
        land = neigh & ~water
        jumps = bb([t for t in JUMP[sq] if t >= 0])
        move_bb[KIND_RAT, sq] = neigh
        move_bb[KIND_WALKER, sq] = land
        move_bb[KIND_JUMPER, sq] = land | jumps
        for d in range(4):
            jump_over_bb[sq, d] = bb([w for w in JUMP_OVER[sq, d] if w >= 0])
    den_bb = np.array([1 << int(DEN[0]), 1 << int(DEN[1])], dtype=np.uint64)
    return bit, move_bb, jump_over_bb, den_bb


BIT, MOVE_BB, JUMP_OVER_BB, DEN_BB = _build_bitboards()
HAS_JUMP: np.ndarray = np.asarray((JUMP >= 0).any(axis=1), dtype=np.bool_)
"""Whether a Lion or Tiger on the square has a river to jump (bool[63])."""


if TYPE_CHECKING:  # what the two intrinsics below look like to callers

    def popcount(x: np.uint64) -> int:
        """Number of set bits of a uint64."""

    def lowest_bit(x: np.uint64) -> int:
        """Index of the lowest set bit of a non-zero uint64."""

else:

    @intrinsic
    def popcount(typingctx, x):
        """Number of set bits of a uint64 (one machine instruction)."""
        sig = types.int64(types.uint64)

        def codegen(context, builder, signature, args):
            return builder.ctpop(args[0])

        return sig, codegen

    @intrinsic
    def lowest_bit(typingctx, x):
        """Index of the lowest set bit of a non-zero uint64."""
        sig = types.int64(types.uint64)

        def codegen(context, builder, signature, args):
            return builder.cttz(args[0], context.get_constant(types.boolean, True))

        return sig, codegen


_F = TypeVar("_F", bound=Callable[..., Any])


def lean(inline: bool = False) -> Callable[[_F], _F]:
    """`njit(cache=True)` for the kernels that never allocate, compiled without
    numba's reference counting.

    With it, every array handed to an inlined helper costs an atomic
    increment and decrement per call that the optimiser cannot always
    prune: about a fifth of the time of the bulk-counting perft before
    perft had its own make and unmake. `inline`
    has LLVM inline the kernel into its callers (numba's `forceinline`):
    the same machine code as numba's own `inline="always"` or better, at a
    fraction of the compile time."""
    options: dict[str, Any] = {"cache": True, "forceinline": inline, "_nrt": False}
    return cast(Callable[[_F], _F], njit(**options))


@lean(inline=True)
def side_to_move(st: np.ndarray) -> int:
    """`st[S_SIDE]` (0 Red, 1 Blue), masked so that the compiler knows the
    indices built from it are non-negative (no negative-index wraparound code)."""
    return st[S_SIDE] & 1


# --- move generation ------------------------------------------------------------
@lean(inline=True)
def can_capture(st: np.ndarray, flags: np.ndarray, side: int, attacker: int, frm: int, victim: int, to: int) -> bool:
    """Whether `side`'s `attacker` on `frm` may take enemy `victim` on `to` (rules 5-7)."""
    if WATER[frm] != WATER[to]:
        if not (flags[F_RATS_IGNORE_WATER] != 0 and attacker == RAT and victim == RAT):
            return False
    if TRAP_OWNER[to] == side:
        return True  # the victim stands in its opponent's trap: rank 0
    if TRAP_OWNER[frm] == 1 - side and flags[F_KEEPS_RANK] == 0:
        return False  # a trapped attacker is powerless
    if attacker == RAT and victim == ELEPHANT:
        return True
    if attacker == ELEPHANT and victim == RAT:
        return False
    return flags[F_RANK + attacker] >= flags[F_RANK + victim]


@lean(inline=True)
def target(st: np.ndarray, flags: np.ndarray, side: int, animal: int, frm: int, d: int) -> int:
    """Landing square of `side`'s `animal` on `frm` moving in direction `d`, or -1.

    Applies rules 1-7 (not the anti-chase rules, which need the history)."""
    to = STEP[frm, d]
    if to < 0:
        return -1
    if WATER[to]:
        if animal != RAT:
            if animal != LION and animal != TIGER:
                return -1
            to = JUMP[frm, d]
            if to < 0:
                return -1
            own_rat = RAT if side == RED else -RAT
            for k in range(3):
                w = JUMP_OVER[frm, d, k]
                if w < 0:
                    break
                c = st[w]
                if c == RAT or c == -RAT:
                    if flags[F_ENEMY_RAT_BLOCKS] == 0 or c != own_rat:
                        return -1
    if to == DEN[side]:
        return -1
    c = st[to]
    if c != 0:
        if (c > 0) == (side == RED):
            return -1
        if not can_capture(st, flags, side, animal, frm, abs(c), to):
            return -1
    return to


@lean()
def is_attacked(st: np.ndarray, flags: np.ndarray, sq: int) -> bool:
    """Whether the piece on `sq` could be captured if it were its enemy's turn."""
    c = st[sq]
    if c == 0:
        return False
    enemy = BLUE if c > 0 else RED
    for a in range(1, 9):
        frm = st[S_PIECES + 8 * enemy + a - 1]
        if frm < 0:
            continue
        for d in range(4):
            if target(st, flags, enemy, a, frm, d) == sq:
                return True
    return False


@lean()
def anti_chase_allows(st: np.ndarray, hist: np.ndarray, flags: np.ndarray, animal: int, frm: int, to: int) -> bool:
    """The anti-chase rules 7-3 and 17-5 for a candidate move of the side to move.

    Only the side to move's own previous moves count (plies ply-2, ply-4, ...).
    "Entered a trap" means a move whose destination is any of the six traps.
    For 17-5 the squares "visited" are those the piece stood on during the 17
    moves: each move's destination plus the first move's origin.
    """
    ply = st[S_PLY]
    # 7-3
    entries = 0
    exempt = False
    for k in range(1, 8):
        p = ply - 2 * k
        if p < 0:
            break
        if TRAP_OWNER[hist[p, 1]] >= 0:
            exempt = True
        if hist[p, 2] == animal and hist[p, 1] == to:
            entries += 1
    if entries >= 3 and not exempt and not is_attacked(st, flags, frm):
        return False
    # 17-5
    if ply - 34 < 0:
        return True
    visited = np.uint64(0)
    for k in range(1, 18):
        p = ply - 2 * k
        if hist[p, 2] != animal:
            return True
        if TRAP_OWNER[hist[p, 1]] >= 0:
            return True
        visited |= BIT[hist[p, 1]]
        if k == 17:
            visited |= BIT[hist[p, 0]]
    return popcount(visited) > 5 or (visited & BIT[to]) == 0


@lean(inline=True)
def counters_full(st: np.ndarray) -> bool:
    """Whether a move from `st` could take a counter past `COUNTER_LIMIT` (the ply, the no-capture clock, or
    the move number when Blue is to move): then no move is made (the int16 state and JFEN both hold 30000;
    a game this long is cut there, as a ply cap would)."""
    return (
        st[S_PLY] >= COUNTER_LIMIT
        or st[S_CLOCK] >= COUNTER_LIMIT
        or (st[S_SIDE] == BLUE and st[S_MOVENO] >= COUNTER_LIMIT)
    )


@lean(inline=True)
def game_won(st: np.ndarray) -> bool:
    """Whether the game is already won by rule 8 (a piece in the enemy den) or 9 (a side has no pieces).

    Such a position is final: it has no legal moves (a careful arbiter's
    reading of "wins at once"; RULES.md lets such a JFEN parse)."""
    return st[DEN[BLUE]] > 0 or st[DEN[RED]] < 0 or st[S_COUNT + RED] == 0 or st[S_COUNT + BLUE] == 0


@lean(inline=True)
def occupancy(st: np.ndarray, side: int) -> np.uint64:
    """Bitboard of `side`'s pieces, from the piece list."""
    occ = np.uint64(0)
    base = S_PIECES + 8 * side
    for i in range(8):
        sq = st[base + i]
        if sq >= 0:
            occ |= BIT[sq]
    return occ


@lean(inline=True)
def jump_blockers(st: np.ndarray, flags: np.ndarray, side: int) -> np.uint64:
    """Bitboard of the rats that block `side`'s jumps (only those in water can be flown over)."""
    blockers = np.uint64(0)
    enemy_rat = st[S_PIECES + 8 * (1 - side)]
    if enemy_rat >= 0:
        blockers |= BIT[enemy_rat]
    if flags[F_ENEMY_RAT_BLOCKS] == 0:
        own_rat = st[S_PIECES + 8 * side]
        if own_rat >= 0:
            blockers |= BIT[own_rat]
    return blockers


@lean(inline=True)
def piece_targets(
    st: np.ndarray,
    flags: np.ndarray,
    side: int,
    animal: int,
    frm: int,
    own: np.uint64,
    enemy: np.uint64,
    blockers: np.uint64,
) -> np.uint64:
    """Bitboard of the squares `side`'s `animal` on `frm` may move to by rules 1-7.

    `own` is the mover's occupancy with its own den added, `enemy` the
    enemy's occupancy, `blockers` from `jump_blockers`. The anti-chase rules
    are not applied here (they need the history)."""
    kind = KIND[animal]
    cand = MOVE_BB[kind, frm] & ~own
    if kind == KIND_JUMPER and HAS_JUMP[frm] and blockers != 0:
        for d in range(4):
            t = JUMP[frm, d]
            if t >= 0 and (JUMP_OVER_BB[frm, d] & blockers) != 0:
                cand &= ~BIT[t]
    victims = cand & enemy
    while victims != 0:
        q = lowest_bit(victims)
        victims &= victims - np.uint64(1)
        if not can_capture(st, flags, side, animal, frm, abs(st[q]), q):
            cand &= ~BIT[q]
    return cand


@lean()
def _generate(st: np.ndarray, hist: np.ndarray, flags: np.ndarray, out: np.ndarray) -> int:
    """`generate_moves` without the game-over test (the caller knows the game goes on)."""
    side = side_to_move(st)
    own = occupancy(st, side) | DEN_BB[side]
    enemy = occupancy(st, 1 - side)
    blockers = jump_blockers(st, flags, side)
    chase = flags[F_ANTI_CHASE] != 0
    n = 0
    base = S_PIECES + 8 * side
    for a in range(1, 9):
        frm = st[base + a - 1]
        if frm < 0:
            continue
        cand = piece_targets(st, flags, side, a, frm, own, enemy, blockers)
        while cand != 0:
            t = lowest_bit(cand)
            cand &= cand - np.uint64(1)
            if chase and not anti_chase_allows(st, hist, flags, a, frm, t):
                continue
            out[n] = (frm << 6) | t
            n += 1
    return n


@lean()
def _count(st: np.ndarray, hist: np.ndarray, flags: np.ndarray) -> int:
    """`count_moves` without the game-over test."""
    side = side_to_move(st)
    own = occupancy(st, side) | DEN_BB[side]
    enemy = occupancy(st, 1 - side)
    blockers = jump_blockers(st, flags, side)
    chase = flags[F_ANTI_CHASE] != 0
    n = 0
    base = S_PIECES + 8 * side
    for a in range(1, 9):
        frm = st[base + a - 1]
        if frm < 0:
            continue
        cand = piece_targets(st, flags, side, a, frm, own, enemy, blockers)
        if not chase:
            n += popcount(cand)
            continue
        while cand != 0:
            t = lowest_bit(cand)
            cand &= cand - np.uint64(1)
            if anti_chase_allows(st, hist, flags, a, frm, t):
                n += 1
    return n


@lean()
def generate_moves(st: np.ndarray, hist: np.ndarray, flags: np.ndarray, out: np.ndarray) -> int:
    """Write the legal moves of the side to move into `out[:n]`; return n.

    Order: by animal (Rat first), then destination square (a1 first). `out` needs
    room for MAX_MOVES. A position already won (rules 8-9) has none."""
    if game_won(st):
        return 0
    return _generate(st, hist, flags, out)


@lean()
def count_moves(st: np.ndarray, hist: np.ndarray, flags: np.ndarray) -> int:
    """Number of legal moves of the side to move (no buffer; bitboard popcounts)."""
    if game_won(st):
        return 0
    return _count(st, hist, flags)


@lean()
def has_legal_move(st: np.ndarray, hist: np.ndarray, flags: np.ndarray) -> bool:
    """Whether the side to move has a legal move (none once the game is won)."""
    if game_won(st):
        return False
    side = side_to_move(st)
    if flags[F_ANTI_CHASE] != 0:
        return _count(st, hist, flags) > 0
    own = occupancy(st, side) | DEN_BB[side]
    enemy = occupancy(st, 1 - side)
    blockers = jump_blockers(st, flags, side)
    base = S_PIECES + 8 * side
    for a in range(1, 9):
        frm = st[base + a - 1]
        if frm >= 0 and piece_targets(st, flags, side, a, frm, own, enemy, blockers) != 0:
            return True
    return False


@lean(inline=True)
def _piece_cands(st: np.ndarray, flags: np.ndarray, cands: np.ndarray, own: np.uint64, enemy: np.uint64) -> int:
    """Per-animal target bitboards of the side to move into `cands[8]` (rules 1-7); returns the move count.

    `cands[animal - 1]` is 0 for a captured animal. `own` and `enemy` are the
    occupancies of the side to move and of its enemy (kept up to date by the
    caller, cheaper than `occupancy` at every node)."""
    side = side_to_move(st)
    own = own | DEN_BB[side]
    blockers = jump_blockers(st, flags, side)
    base = S_PIECES + 8 * side
    total = 0
    for a in range(1, 9):
        frm = st[base + a - 1]
        c = np.uint64(0)
        if frm >= 0:
            c = piece_targets(st, flags, side, a, frm, own, enemy, blockers)
        cands[a - 1] = c
        total += popcount(c)
    return total


# --- making and unmaking moves ------------------------------------------------------
@lean()
def compute_hash(st: np.ndarray) -> np.uint64:
    """Zobrist hash of the placement and the side to move (counters excluded)."""
    h = np.uint64(0)
    for sq in range(N_SQUARES):
        c = st[sq]
        if c != 0:
            h ^= ZOBRIST[c + 8, sq]
    if st[S_SIDE] == BLUE:
        h ^= ZSIDE
    return h


@lean()
def make_move(st: np.ndarray, hist: np.ndarray, hashes: np.ndarray, m: int) -> int:
    """Play move `m` (assumed legal); return the captured board code (0 if none).

    The caller keeps `hist` and `hashes` large enough for one more ply."""
    frm = m >> 6
    to = m & 63
    side = side_to_move(st)
    c = st[frm]
    a = abs(c)
    cap = st[to]
    ply = st[S_PLY]
    hist[ply, 0] = frm
    hist[ply, 1] = to
    hist[ply, 2] = a
    hist[ply, 3] = cap
    hist[ply, 4] = st[S_CLOCK]
    h = hashes[ply] ^ ZOBRIST[c + 8, frm] ^ ZOBRIST[c + 8, to] ^ ZSIDE
    if cap != 0:
        h ^= ZOBRIST[cap + 8, to]
        st[S_PIECES + 8 * (1 - side) + abs(cap) - 1] = -1
        st[S_COUNT + 1 - side] -= 1
        st[S_CLOCK] = 0
    else:
        st[S_CLOCK] += 1
    st[to] = c
    st[frm] = 0
    st[S_PIECES + 8 * side + a - 1] = to
    if side == BLUE:
        st[S_MOVENO] += 1
    st[S_SIDE] = 1 - side
    st[S_PLY] = ply + 1
    hashes[ply + 1] = h
    return cap


@lean()
def unmake_move(st: np.ndarray, hist: np.ndarray) -> None:
    """Take back the last move recorded in `hist`."""
    ply = st[S_PLY] - 1
    frm = hist[ply, 0]
    to = hist[ply, 1]
    a = hist[ply, 2]
    cap = hist[ply, 3]
    side = 1 - side_to_move(st)
    c = st[to]
    st[frm] = c
    st[to] = cap
    st[S_PIECES + 8 * side + a - 1] = frm
    if cap != 0:
        st[S_PIECES + 8 * (1 - side) + abs(cap) - 1] = to
        st[S_COUNT + 1 - side] += 1
    st[S_CLOCK] = hist[ply, 4]
    if side == BLUE:
        st[S_MOVENO] -= 1
    st[S_SIDE] = side
    st[S_PLY] = ply


# --- game end -----------------------------------------------------------------------
@lean()
def won_by_last_move(st: np.ndarray) -> bool:
    """Whether the side that just moved has won by rule 8 (den) or 9 (all captured)."""
    mover = 1 - side_to_move(st)
    den = st[DEN[1 - mover]]
    if den != 0 and (den > 0) == (mover == RED):
        return True
    return st[S_COUNT + 1 - mover] == 0


@lean()
def repetition_count(st: np.ndarray, hashes: np.ndarray) -> int:
    """How many times the current position has occurred in the game so far.

    Only positions since the last capture can match (a capture changes the
    material for good), and only those with the same side to move."""
    ply = st[S_PLY]
    h = hashes[ply]
    first = ply - st[S_CLOCK]
    if first < 0:
        first = 0
    n = 0
    p = ply
    while p >= first:
        if hashes[p] == h:
            n += 1
        p -= 2
    return n


@lean()
def _won(st: np.ndarray) -> tuple:
    """(TERM_DEN or TERM_ALL_CAPTURED, winner) when rule 8 or 9 has ended the game, else (TERM_NONE, -1)."""
    if st[DEN[BLUE]] > 0:
        return TERM_DEN, RED
    if st[DEN[RED]] < 0:
        return TERM_DEN, BLUE
    if st[S_COUNT + BLUE] == 0:
        return TERM_ALL_CAPTURED, RED
    if st[S_COUNT + RED] == 0:
        return TERM_ALL_CAPTURED, BLUE
    return TERM_NONE, -1


@lean()
def _drawn(st: np.ndarray, hashes: np.ndarray, flags: np.ndarray) -> int:
    """TERM_REPETITION (rule 11) or TERM_NO_CAPTURE_LIMIT (rule 12) when the position is drawn, else TERM_NONE."""
    if flags[F_REPETITION_DRAW] != 0 and repetition_count(st, hashes) >= 3:
        return TERM_REPETITION
    limit = flags[F_NO_CAPTURE_LIMIT]
    if limit > 0 and st[S_CLOCK] >= limit:
        return TERM_NO_CAPTURE_LIMIT
    return TERM_NONE


@lean()
def outcome(st: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray) -> tuple:
    """(termination, winner) of the current position; (TERM_NONE, -1) while it goes on.

    winner is RED, BLUE or DRAW. Wins (rules 8-10) come before draws
    (11, then 12)."""
    term, winner = _won(st)
    if term != TERM_NONE:
        return term, winner
    if not has_legal_move(st, hist, flags):
        return TERM_NO_MOVES, 1 - st[S_SIDE]
    draw = _drawn(st, hashes, flags)
    if draw != TERM_NONE:
        return draw, DRAW
    return TERM_NONE, -1


@lean()
def outcome_and_moves(
    st: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, out: np.ndarray
) -> tuple:
    """`outcome` and the legal moves at once: (termination, winner, n) with the moves in `out[:n]`.

    For callers that need both (the env's step, the search's expansion): the
    moves are generated once, for rule 10 and for the caller. n is 0 when
    rule 8, 9 or 10 ended the game; a drawn position (11, 12) still reports
    its moves, which the caller should not play."""
    term, winner = _won(st)
    if term != TERM_NONE:
        return term, winner, 0
    n = _generate(st, hist, flags, out)
    if n == 0:
        return TERM_NO_MOVES, 1 - st[S_SIDE], 0
    draw = _drawn(st, hashes, flags)
    if draw != TERM_NONE:
        return draw, DRAW, n
    return TERM_NONE, -1, n


# --- perft ---------------------------------------------------------------------------
# Perft has its own make and unmake (`_play`, `_unplay`): they keep the board,
# the piece list and counts and the side to move, and the history rows and ply
# only under anti-chase, which reads them; never the hash, clock or move
# number, which perft does not read. Moves come straight from the per-animal
# target bitboards of `_piece_cands`, one row of `cands` per ply, and the
# occupancies travel down the recursion instead of being rebuilt at each node.
@lean()
def _chase_filter(st: np.ndarray, hist: np.ndarray, flags: np.ndarray, cands: np.ndarray) -> int:
    """Clear from the per-animal targets `cands[8]` the moves the anti-chase rules bar; return the moves left."""
    base = S_PIECES + 8 * side_to_move(st)
    n = 0
    for i in range(8):
        kept = cands[i]
        rest = kept
        while rest != 0:
            t = lowest_bit(rest)
            rest &= rest - np.uint64(1)
            if not anti_chase_allows(st, hist, flags, i + 1, st[base + i], t):
                kept &= ~BIT[t]
        cands[i] = kept
        n += popcount(kept)
    return n


@lean(inline=True)
def _legal_targets(
    st: np.ndarray, hist: np.ndarray, flags: np.ndarray, row: np.ndarray, own: np.uint64, enemy: np.uint64, chase: bool
) -> int:
    """The legal targets of each animal of the side to move into `row[8]` (see `_piece_cands`), the
    anti-chase rules applied when `chase`; returns the number of moves."""
    n = _piece_cands(st, flags, row, own, enemy)
    if chase:
        n = _chase_filter(st, hist, flags, row)
    return n


@lean(inline=True)
def _play(st: np.ndarray, hist: np.ndarray, chase: bool, animal: int, frm: int, to: int) -> int:
    """Perft's make: the side to move's `animal` goes from `frm` to `to`; returns the captured code (0 if none)."""
    side = side_to_move(st)
    foe = 1 - side
    cap = st[to]
    if cap != 0:
        st[S_PIECES + 8 * foe + abs(cap) - 1] = -1
        st[S_COUNT + foe] -= 1
    st[to] = st[frm]
    st[frm] = 0
    st[S_PIECES + 8 * side + animal - 1] = to
    st[S_SIDE] = foe
    if chase:
        ply = st[S_PLY]
        hist[ply, 0] = frm
        hist[ply, 1] = to
        hist[ply, 2] = animal
        st[S_PLY] = ply + 1
    return cap


@lean(inline=True)
def _unplay(st: np.ndarray, chase: bool, animal: int, frm: int, to: int, cap: int) -> None:
    """Perft's unmake of `_play(..., animal, frm, to)` that captured `cap`."""
    foe = side_to_move(st)
    side = 1 - foe
    st[frm] = st[to]
    st[to] = cap
    st[S_PIECES + 8 * side + animal - 1] = frm
    if cap != 0:
        st[S_PIECES + 8 * foe + abs(cap) - 1] = to
        st[S_COUNT + foe] += 1
    st[S_SIDE] = side
    if chase:
        st[S_PLY] -= 1


@lean()
def _perft(
    st: np.ndarray,
    hist: np.ndarray,
    flags: np.ndarray,
    cands: np.ndarray,
    depth: int,
    bulk: bool,
    own: np.uint64,
    enemy: np.uint64,
) -> int:
    """perft (depth >= 1) of a position whose game goes on.

    `own` and `enemy` are the occupancies of the side to move and of its
    enemy; `cands[depth]` receives this ply's targets. `bulk` counts the last
    ply by popcounts instead of making its moves, in the loop of the ply
    before (into `cands[0]`), which spares a call per counted node."""
    row = cands[depth]
    chase = flags[F_ANTI_CHASE] != 0
    n = _legal_targets(st, hist, flags, row, own, enemy, chase)
    if bulk and depth == 1:
        return n
    side = side_to_move(st)
    enemy_den = DEN[1 - side]
    base = S_PIECES + 8 * side
    total = 0
    for i in range(8):
        targets = row[i]
        frm = st[base + i]
        while targets != 0:
            to = lowest_bit(targets)
            targets &= targets - np.uint64(1)
            cap = _play(st, hist, chase, i + 1, frm, to)
            if depth == 1:
                total += 1
            elif to != enemy_den and st[S_COUNT + 1 - side] != 0:  # a win (rule 8, 9) ends the line
                child_own = enemy & ~BIT[to]
                child_enemy = own ^ BIT[frm] ^ BIT[to]
                if bulk and depth == 2:
                    total += _legal_targets(st, hist, flags, cands[0], child_own, child_enemy, chase)
                else:
                    total += _perft(st, hist, flags, cands, depth - 1, bulk, child_own, child_enemy)
            _unplay(st, chase, i + 1, frm, to, cap)
    return total


@njit(cache=True)
def _perft_root(st: np.ndarray, hist: np.ndarray, flags: np.ndarray, depth: int, bulk: bool) -> int:
    """`_perft` from a position whose game goes on (depth >= 1), with its buffers."""
    cands = np.empty((depth + 1, 8), dtype=np.uint64)
    side = side_to_move(st)
    return _perft(st, hist, flags, cands, depth, bulk, occupancy(st, side), occupancy(st, 1 - side))


@njit(cache=True)
def perft(st: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, depth: int) -> int:
    """Leaf count of the legal move tree of `depth` plies (RULES.md's perft).

    A move that wins (den, all captured) ends its line: it counts at the last
    ply and contributes nothing earlier; a won position counts 0. Bulk-counts
    the last ply (popcounts, no moves made). The caller makes room for
    `depth` more plies in `hist` (anti-chase records the moves there);
    `hashes` is not touched. `st` is left as it was."""
    if depth <= 0:
        return 1
    if game_won(st):
        return 0
    return _perft_root(st, hist, flags, depth, True)


@njit(cache=True)
def perft_full(st: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, depth: int) -> int:
    """Like `perft` but makes and unmakes every node, the last ply included."""
    if depth <= 0:
        return 1
    if game_won(st):
        return 0
    return _perft_root(st, hist, flags, depth, False)


@njit(cache=True)
def perft_divide(
    st: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    depth: int,
    out_moves: np.ndarray,
    out_counts: np.ndarray,
) -> int:
    """Per-move subtree counts at the root; returns the number of root moves."""
    n = generate_moves(st, hist, flags, out_moves)
    for i in range(n):
        make_move(st, hist, hashes, out_moves[i])
        if depth <= 1:
            out_counts[i] = 1
        elif won_by_last_move(st):
            out_counts[i] = 0
        else:
            out_counts[i] = perft(st, hist, hashes, flags, depth - 1)
        unmake_move(st, hist)
    return n


# --- random play ----------------------------------------------------------------------
@njit(cache=True, inline="always")
def rng_seed(seed: int) -> np.ndarray:
    """State uint64[1] of the kernels' private random generator (xorshift64*), from `seed` (0 <= seed < 2**63).

    Private, so that random play never touches numba's global np.random
    state; fixed, so that a seed gives the same games everywhere."""
    x = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
    state = np.empty(1, dtype=np.uint64)
    state[0] = x if x != 0 else np.uint64(1)
    return state


@lean(inline=True)
def rng_below(state: np.ndarray, n: int) -> int:
    """A uniform integer in [0, n) for 0 < n < 2**32 from the generator `state`, advanced."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    r = ((x * np.uint64(0x2545F4914F6CDD1D)) >> np.uint64(32)) * np.uint64(n) >> np.uint64(32)
    return int(np.int64(r))  # signed, so that callers' int arithmetic stays integer


@lean(inline=True)
def _nth_move(st: np.ndarray, cands: np.ndarray, r: int) -> int:
    """The `r`-th move in generation order of the targets in `cands` (see `_piece_cands`)."""
    base = S_PIECES + 8 * st[S_SIDE]
    for i in range(8):
        c = cands[i]
        k = popcount(c)
        if r < k:
            for _ in range(r):
                c &= c - np.uint64(1)
            return (st[base + i] << 6) | lowest_bit(c)
        r -= k
    return -1


REP_TABLE = 4096  # slots of the repetition pre-filter in random_games


@njit(cache=True)
def random_games(
    st0: np.ndarray, flags: np.ndarray, n_games: int, max_plies: int, seed: int, results: np.ndarray
) -> int:
    """Play `n_games` uniformly random games from `st0`; return plies played in all.

    `results[g]` = termination * 4 + winner (winner 3 when the ply cap hit).
    Moves are drawn with `rng_below` from `rng_seed(seed)`: the move with that
    index in `generate_moves` order.
    The game's end is judged exactly as `outcome` does, in its order; a
    counting table of hash slots since the last capture spares the exact
    repetition scan unless the slot has been reached three times."""
    rng = rng_seed(seed)
    st = st0.copy()
    base = st0[S_PLY]
    hist = np.zeros((max_plies + base + 1, HIST_WIDTH), dtype=np.int16)
    hashes = np.zeros(max_plies + base + 2, dtype=np.uint64)
    buf = np.empty(MAX_MOVES, dtype=np.int64)
    cands = np.empty(8, dtype=np.uint64)
    seen = np.zeros(REP_TABLE, dtype=np.int32)
    mask = np.uint64(REP_TABLE - 1)
    chase = flags[F_ANTI_CHASE] != 0
    repetition = flags[F_REPETITION_DRAW] != 0
    limit = flags[F_NO_CAPTURE_LIMIT]
    total = 0
    won0 = game_won(st0)
    for g in range(n_games):
        st[:] = st0
        hashes[base] = compute_hash(st)
        occ_red, occ_blue = occupancy(st, RED), occupancy(st, BLUE)
        window = base  # first ply of the positions that can still repeat
        seen[hashes[base] & mask] += 1
        res = 3
        won = won0
        while True:
            if won:
                term, winner = outcome(st, hist, hashes, flags)
                res = term * 4 + winner
                break
            # Draw the move only once the game is known to go on (as `outcome` then a pick).
            if chase:
                n = _generate(st, hist, flags, buf)
            else:
                red = st[S_SIDE] == RED
                n = _piece_cands(st, flags, cands, occ_red if red else occ_blue, occ_blue if red else occ_red)
            if n == 0:
                res = TERM_NO_MOVES * 4 + 1 - st[S_SIDE]
                break
            ply = st[S_PLY]
            if repetition and seen[hashes[ply] & mask] >= 3 and repetition_count(st, hashes) >= 3:
                res = TERM_REPETITION * 4 + DRAW
                break
            if limit > 0 and st[S_CLOCK] >= limit:
                res = TERM_NO_CAPTURE_LIMIT * 4 + DRAW
                break
            if ply - base == max_plies:
                break
            r = rng_below(rng, n)
            m = buf[r] if chase else _nth_move(st, cands, r)
            side = st[S_SIDE]
            frm, to = m >> 6, m & 63
            moved = BIT[frm] | BIT[to]
            if side == RED:
                occ_red ^= moved
            else:
                occ_blue ^= moved
            if make_move(st, hist, hashes, m) != 0:
                if side == RED:
                    occ_blue ^= BIT[to]
                else:
                    occ_red ^= BIT[to]
                won = st[S_COUNT + 1 - side] == 0
                for p in range(window, ply + 1):
                    seen[hashes[p] & mask] -= 1
                window = ply + 1
            if to == DEN[1 - side]:
                won = True
            seen[hashes[ply + 1] & mask] += 1
            total += 1
        for p in range(window, st[S_PLY] + 1):
            seen[hashes[p] & mask] -= 1
        results[g] = res
    return total

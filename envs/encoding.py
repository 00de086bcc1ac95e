"""Actions and observations in the side-to-move's (canonical) frame.

Canonical frame: the board as the side to move sees it. For Red it is the
board itself; for Blue it is the board rotated 180 degrees, which maps the
terrain and the start position onto themselves. A canonical square is
``csq = sq`` for Red and ``csq = 62 - sq`` for Blue, so the mover's own den is
always canonical d1 (csq 3) and the enemy den canonical d9 (csq 59).

Actions (the one encode/decode pair, `move_to_action` / `action_to_move`)::

    action = csq_from * 4 + cdir          0 <= action < 252

with ``cdir`` 0 forward (towards the enemy den), 1 right, 2 back, 3 left as
the mover sees it. A jump is the direction of the jump. For Blue the
absolute direction is ``(cdir + 2) % 4``.

Observation planes ``[N_PLANES, 9, 7]`` float32, indexed ``[plane, crank,
cfile]`` with ``csq = crank * 7 + cfile`` (row 0 is the mover's back rank):

====  =====================================================================
0-7   the mover's Rat, Cat, Dog, Wolf, Leopard, Tiger, Lion, Elephant
      (1 on the square where it stands)
8-15  the opponent's pieces in the same order
16    water
17    the mover's traps (canonical c1 e1 d2)
18    the opponent's traps (canonical c9 e9 d8)
19    the mover's den (canonical d1)
20    the opponent's den (canonical d9)
21    plies since the last capture / the no-capture limit (constant plane,
      capped at 1; the limit counts as 120 when the rule is off)
22    (occurrences of this position so far - 1) / 2, capped at 1
      (constant plane: 0, 0.5, 1)
23    1 when Blue is to move (the real colour; constant plane)
24-31 the rule set (`envs.rules.RuleSet`), one constant plane a field, 0 under
      the default rules, so a network can play several rule sets (as KataGo
      reads Go's rules):
24    1 under ``rank_order=dog_over_wolf``
25    1 under ``river_rats=rats_ignore_water``
26    1 under ``jump_blocking=enemy_rat``
27    1 under ``trapped_attacker=keeps_rank``
28    1 under ``repetition=off``
29    a longer no-capture limit: ``1 - 120 / limit`` for a limit above 120,
      1 when the rule is off (``no_capture_draw=0``), else 0
30    a shorter no-capture limit: ``1 - limit / 120`` for a limit below 120
      (the rule on), else 0
31    1 under ``anti_chase=7-3+17-5``
====  =====================================================================

Planes 24-31 are read from the `flags` that `encode_observation` takes
(`rule_planes` gives their values), so equal rule sets give
equal inputs and every field that changes play changes one plane; the
no-capture limit takes two planes so that every limit (1 to the largest)
gives its own pair of values in [0, 1]. Planes 0-23 are those of networks
made before the rule planes, which read only those (`LEGACY_PLANES`).

The left-right mirror (file a <-> g) is a symmetry of the rules; in the
canonical frame it maps ``cfile -> 6 - cfile`` and swaps directions 1 and 3
(`mirror_action`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from envs import kernels as K
from envs.rules import (
    F_ANTI_CHASE,
    F_DOG_OVER_WOLF,
    F_ENEMY_RAT_BLOCKS,
    F_KEEPS_RANK,
    F_NO_CAPTURE_LIMIT,
    F_RATS_IGNORE_WATER,
    F_REPETITION_DRAW,
)

N_ACTIONS = 252
RULE_FIRST_PLANE = 24
"""The first of the rule planes (24-31, module doc)."""
N_RULE_PLANES = 8
LEGACY_PLANES = RULE_FIRST_PLANE
"""Planes of the observation before the rule planes: what a network of that time reads (planes 0-23)."""
N_PLANES = RULE_FIRST_PLANE + N_RULE_PLANES
DEFAULT_NO_CAPTURE_LIMIT = 120
"""The no-capture limit that planes 29-30 measure from (RULES.md's default), and that plane 21 divides
by when the rule is off."""
OBS_SHAPE = (N_PLANES, K.N_RANKS, K.N_FILES)


@njit(cache=True, inline="always")
def canonical_square(sq: int, side: int) -> int:
    return sq if side == K.RED else 62 - sq


@njit(cache=True)
def move_to_action(m: int, side: int) -> int:
    """Kernel move (from << 6 | to) played by `side` -> action index."""
    frm = m >> 6
    to = m & 63
    df = to % 7 - frm % 7
    dr = to // 7 - frm // 7
    if dr > 0:
        d = K.NORTH
    elif dr < 0:
        d = K.SOUTH
    elif df > 0:
        d = K.EAST
    else:
        d = K.WEST
    if side == K.BLUE:
        return (62 - frm) * 4 + (d + 2) % 4
    return frm * 4 + d


@njit(cache=True)
def action_to_move(st: np.ndarray, action: int) -> int:
    """Action index -> kernel move for the side to move in `st`, or -1 if the
    action leaves the board. The move is geometric (a jump when the first
    square is water and the piece is not a rat); legality is not checked."""
    side = st[K.S_SIDE]
    csq = action // 4
    cdir = action % 4
    if side == K.BLUE:
        frm = 62 - csq
        d = (cdir + 2) % 4
    else:
        frm = csq
        d = cdir
    to = K.STEP[frm, d]
    if to < 0:
        return -1
    if K.WATER[to] and abs(st[frm]) != K.RAT and K.JUMP[frm, d] >= 0:
        to = K.JUMP[frm, d]
    return (frm << 6) | to


@njit(cache=True)
def legal_action_mask(st: np.ndarray, hist: np.ndarray, flags: np.ndarray, out: np.ndarray) -> int:
    """Fill bool `out[252]` with the legal actions; return how many."""
    out[:] = False
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    n = K.generate_moves(st, hist, flags, buf)
    side = st[K.S_SIDE]
    for i in range(n):
        out[move_to_action(buf[i], side)] = True
    return n


def _terrain_planes() -> np.ndarray:
    """Planes 16-20 (water, traps, dens) in the canonical frame: the same for both sides,
    since the 180-degree rotation maps the terrain onto itself and each side's traps onto the other's."""
    t = np.zeros((5, K.N_RANKS, K.N_FILES), dtype=np.float32)
    for sq in range(K.N_SQUARES):
        r, f = divmod(sq, K.N_FILES)
        t[0, r, f] = K.WATER[sq]
        if K.TRAP_OWNER[sq] >= 0:
            t[1 if K.TRAP_OWNER[sq] == K.RED else 2, r, f] = 1.0
    t[3, 0, 3] = 1.0
    t[4, 8, 3] = 1.0
    return t


TERRAIN_PLANES = _terrain_planes()
TERRAIN_FIRST_PLANE = 16
"""The plane that holds `TERRAIN_PLANES[0]` in every observation."""
_TERRAIN_END = TERRAIN_FIRST_PLANE + len(TERRAIN_PLANES)


@njit(cache=True, inline="always")
def _fill_plane(out: np.ndarray, plane: int, value: float) -> None:
    """out[plane, :, :] = value, as loops (numba's slice fill is several times slower here)."""
    for r in range(K.N_RANKS):
        for f in range(K.N_FILES):
            out[plane, r, f] = value


@njit(cache=True, inline="always")
def rule_value(flags: np.ndarray, k: int) -> float:
    """The value of rule plane ``RULE_FIRST_PLANE + k`` (module doc) under the kernels' `flags`
    (`envs.rules.RuleSet.flags`)."""
    if k == 0:
        return 1.0 if flags[F_DOG_OVER_WOLF] else 0.0
    if k == 1:
        return 1.0 if flags[F_RATS_IGNORE_WATER] else 0.0
    if k == 2:
        return 1.0 if flags[F_ENEMY_RAT_BLOCKS] else 0.0
    if k == 3:
        return 1.0 if flags[F_KEEPS_RANK] else 0.0
    if k == 4:
        return 0.0 if flags[F_REPETITION_DRAW] else 1.0
    limit = flags[F_NO_CAPTURE_LIMIT]
    if k == 5:
        return 1.0 if limit <= 0 else max(0.0, 1.0 - DEFAULT_NO_CAPTURE_LIMIT / limit)
    if k == 6:
        return 0.0 if limit <= 0 else max(0.0, 1.0 - limit / DEFAULT_NO_CAPTURE_LIMIT)
    return 1.0 if flags[F_ANTI_CHASE] else 0.0


def rule_planes(flags: np.ndarray) -> np.ndarray:
    """float32 [8]: the values of rule planes 24-31 under the kernels' `flags` (`envs.rules.RuleSet.flags`)."""
    return np.array([rule_value(flags, k) for k in range(N_RULE_PLANES)], np.float32)


@njit(cache=True)
def encode_observation(st: np.ndarray, hashes: np.ndarray, flags: np.ndarray, out: np.ndarray) -> None:
    """Fill float32 `out[N_PLANES, 9, 7]` for the side to move (see module doc).

    Pieces are read from the piece list, the terrain planes copied from
    `TERRAIN_PLANES` (the vector env calls this for thousands of games a step)."""
    side = st[K.S_SIDE]
    out[:TERRAIN_FIRST_PLANE] = 0.0  # the piece planes
    out[TERRAIN_FIRST_PLANE:_TERRAIN_END] = TERRAIN_PLANES
    for owner in range(2):
        plane0 = 0 if owner == side else 8
        base = K.S_PIECES + 8 * owner
        for a in range(8):
            sq = st[base + a]
            if sq >= 0:
                csq = canonical_square(sq, side)
                out[plane0 + a, csq // 7, csq % 7] = 1.0
    limit = flags[F_NO_CAPTURE_LIMIT]
    if limit <= 0:
        limit = DEFAULT_NO_CAPTURE_LIMIT
    _fill_plane(out, 21, min(st[K.S_CLOCK] / limit, 1.0))
    reps = K.repetition_count(st, hashes)
    _fill_plane(out, 22, min((reps - 1) / 2.0, 1.0))
    _fill_plane(out, 23, 1.0 if side == K.BLUE else 0.0)
    for k in range(N_RULE_PLANES):
        _fill_plane(out, RULE_FIRST_PLANE + k, rule_value(flags, k))


# Left-right mirror of an action index (canonical frame).
def _mirror_table() -> np.ndarray:
    t = np.empty(N_ACTIONS, dtype=np.int64)
    for a in range(N_ACTIONS):
        csq, cdir = divmod(a, 4)
        r, f = divmod(csq, 7)
        mdir = {0: 0, 1: 3, 2: 2, 3: 1}[cdir]
        t[a] = (r * 7 + (6 - f)) * 4 + mdir
    return t


MIRROR_ACTION = _mirror_table()


def mirror_action(action: int) -> int:
    """The action that mirrors `action` left-right in the canonical frame."""
    return int(MIRROR_ACTION[action])

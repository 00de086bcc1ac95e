"""The tables in memory and the numba probe over the kernels' state array.

A `TablebaseArrays` is every table of a rule set in a few flat arrays (the
files' memory maps when read from disk), so that numba kernels (the solver,
the alpha-beta search, and any batched caller) probe a position without the
Python layer:

    wdl, dtm, dtz = probe_state(st, tb)                  # one state array
    wdl, dtm, dtz, clock = probe_clock(st, flags, tb)    # and the no-capture rule's verdict
    probe_states(states, flags, tb, out)                 # [B, STATE_LEN] -> out[B, 4]

Values are from the side to move: `WIN`, `DRAW`, `LOSS`, or `UNKNOWN` when
the position is not in the tables (more pieces than built, a game already
won by rules 8-9). `dtm` is the plies to the end under optimal play (the
winner shortest, the loser longest; -1 for a draw). `dtz` is the plies to
the next capture or the end on the line that keeps the result, under the
same rule (-1 for a draw): what the no-capture rule measures, see
`clock_wdl`.

One byte per position and metric: 0 a draw, `NOT_A_POSITION` for an index
where two pieces share a square, otherwise the distance plus one. A DTM
position is won when its distance is odd (the mover makes the last move),
lost when it is even.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from envs import kernels as K
from envs.kernels import lean
from envs.rules import F_NO_CAPTURE_LIMIT
from envs.tablebase.index import MAX_PIECES, material_key, position_index

WIN, DRAW, LOSS, UNKNOWN = 1, 0, -1, -2
DRAW_CODE = 0
NOT_A_POSITION = 255
MAX_DISTANCE = NOT_A_POSITION - 2
"""The longest distance a byte stores (code = distance + 1 < NOT_A_POSITION)."""
N_KEYS = 1 << 16


class TablebaseArrays(NamedTuple):
    """Every table of one rule set as flat arrays; numba kernels take it as one argument."""

    table_of: np.ndarray
    """int32[65536]: material key (`index.material_key`) -> table number, -1 when not built."""
    offset: np.ndarray
    """int64[T]: where each table starts in `dtm` and `dtz`."""
    pieces: np.ndarray
    """int64[T, MAX_PIECES, 2]: each table's pieces (`Material.pieces`), padded."""
    n_pieces: np.ndarray
    """int64[T]: each table's piece count."""
    dtm: np.ndarray
    """uint8[total]: distance to the end, coded (module docstring)."""
    dtz: np.ndarray
    """uint8[total]: distance to the next capture or the end, coded alike."""
    clock_exact_from: np.ndarray
    """int64[T]: the smallest no-capture limit from which each table's `dtz` decides the clock
    exactly (the longest distance of the smaller tables its captures lead to; 0 when they end the
    game), see `clock_wdl`."""


def readonly(tb: TablebaseArrays) -> TablebaseArrays:
    """Read-only views of the arrays: one numba type for tables built in memory and memory-mapped ones."""
    views = []
    for a in tb:
        v = np.asarray(a).view()
        v.flags.writeable = False
        views.append(v)
    return TablebaseArrays(*views)


def assemble(
    pieces_list: list[np.ndarray], sizes: list[int], exact_from: list[int], dtm: np.ndarray, dtz: np.ndarray
) -> TablebaseArrays:
    """The tables of per-table lists (pieces as `Material.pieces`, index sizes, `clock_exact_from`)
    whose coded bytes lie one after the other in `dtm` and `dtz`; read-only."""
    t = len(pieces_list)
    table_of = np.full(N_KEYS, -1, dtype=np.int32)
    pieces = np.zeros((max(t, 1), MAX_PIECES, 2), dtype=np.int64)
    n_pieces = np.zeros(max(t, 1), dtype=np.int64)
    offset = np.zeros(max(t, 1), dtype=np.int64)
    exact = np.zeros(max(t, 1), dtype=np.int64)
    at = 0
    for i, p in enumerate(pieces_list):
        key = 0
        for side, animal in p:
            key |= 1 << (int(animal) - 1 + 8 * int(side))
        table_of[key] = i
        pieces[i, : len(p)] = p
        n_pieces[i] = len(p)
        offset[i] = at
        exact[i] = exact_from[i]
        at += sizes[i]
    if len(dtm) < at or len(dtz) < at:
        raise ValueError(f"tables of {at} positions need as many bytes, got {len(dtm)} and {len(dtz)}")
    if t == 0:
        dtm, dtz = np.zeros(1, dtype=np.uint8), np.zeros(1, dtype=np.uint8)
    return readonly(TablebaseArrays(table_of, offset, pieces, n_pieces, dtm, dtz, exact))


def empty_arrays() -> TablebaseArrays:
    """No tables at all (every probe answers UNKNOWN), read-only like a loaded set."""
    return assemble([], [], [], np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.uint8))


@lean(inline=True)
def table_entry(st: np.ndarray, tb: TablebaseArrays) -> tuple:
    """(table, position) of the state `st` in `tb`, its side to move as the mover; (-1, -1) when
    the tables do not hold it (too many pieces, a material not built, a game won by rules 8-9)."""
    if st[K.S_COUNT] + st[K.S_COUNT + 1] > MAX_PIECES:
        return -1, -1
    t = tb.table_of[material_key(st)]
    if t < 0:
        return -1, -1
    idx = position_index(st, tb.pieces[t], tb.n_pieces[t])
    if idx < 0:
        return -1, -1
    return t, tb.offset[t] + idx


@lean(inline=True)
def probe_state(st: np.ndarray, tb: TablebaseArrays) -> tuple:
    """(wdl, dtm, dtz) of the position `st` for its side to move (module docstring); (UNKNOWN, -1, -1)
    when the tables do not hold it. History rules are not applied: see `clock_wdl` for the
    no-capture rule."""
    t, at = table_entry(st, tb)
    if t < 0:
        return UNKNOWN, -1, -1
    code = np.int64(tb.dtm[at])
    if code == NOT_A_POSITION:
        return UNKNOWN, -1, -1
    if code == DRAW_CODE:
        return DRAW, -1, -1
    dtm = code - 1
    dtz = np.int64(tb.dtz[at]) - 1
    return (WIN if dtm % 2 == 1 else LOSS), dtm, dtz


@lean(inline=True)
def probe_clock(st: np.ndarray, flags: np.ndarray, tb: TablebaseArrays) -> tuple:
    """(wdl, dtm, dtz, wdl under the no-capture rule of `flags` at the clock of `st`, `clock_wdl`); all
    of them UNKNOWN or -1 when the tables do not hold `st`."""
    t, at = table_entry(st, tb)
    if t < 0:
        return UNKNOWN, -1, -1, UNKNOWN
    wdl, dtm, dtz = probe_state(st, tb)
    return wdl, dtm, dtz, clock_wdl(wdl, dtm, dtz, st[K.S_CLOCK], flags[F_NO_CAPTURE_LIMIT], tb.clock_exact_from[t])


@njit(cache=True)
def probe_states(states: np.ndarray, flags: np.ndarray, tb: TablebaseArrays, out: np.ndarray) -> None:
    """`probe_clock` of each row of `states` [B, STATE_LEN] into `out` [B, 4]: (wdl, dtm, dtz, clock wdl)."""
    for b in range(states.shape[0]):
        wdl, dtm, dtz, clock = probe_clock(states[b], flags, tb)
        out[b, 0] = wdl
        out[b, 1] = dtm
        out[b, 2] = dtz
        out[b, 3] = clock


@lean(inline=True)
def clock_wdl(wdl: int, dtm: int, dtz: int, clock: int, limit: int, exact_from: int) -> int:
    """The result under the no-capture rule (`limit` plies, 0 none) of a table result `wdl` with
    distances `dtm` and `dtz`, `clock` plies after the last capture; UNKNOWN when the table cannot
    tell (below).

    The plies left are ``limit - clock``. A result whose `dtm` fits them stands (no line of that
    length meets the limit), and so does a position with no legal move (lost whatever the clock).
    Otherwise the winner must reach a capture or the end within them: `dtz` is the fewest plies to
    one against the best defence, so ``dtz > limit - clock`` is a draw by the clock (a "cursed" win,
    a saved loss) and ``dtz <= limit - clock`` keeps the result, provided the smaller table the
    capture leads to is itself decided within a fresh `limit`: ``limit >= exact_from``
    (`TablebaseArrays.clock_exact_from`); below that, UNKNOWN."""
    if limit <= 0 or wdl == DRAW or wdl == UNKNOWN or dtm == 0:
        return wdl
    left = limit - clock
    if dtm <= left:
        return wdl
    if dtz > left:
        return DRAW
    return wdl if limit >= exact_from else UNKNOWN

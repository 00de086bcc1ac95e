"""The retrograde solver: win/draw/loss and distances of every position of a material group.

A *group* is a material and the same pieces with the other side to move
(``LR-E`` and ``E-LR``; ``L-L`` alone): a move without capture leads from one
table of the group to the other, a capture to a smaller table solved before
(or ends the game). The solver

1. expands every position once with the rules kernels (`generate_moves`,
   `make_move`, `won_by_last_move`): a move that ends the game (rule 8 den,
   rule 9 last capture) or captures (into a smaller table, probed) is an
   *exit* with a known value; any other move is an edge to a position of the
   group;
2. inverts the edges (each position's predecessors, a CSR array);
3. resolves the positions level by level, level d holding those decided at
   distance d: a position with no legal move is lost at 0 (rule 10); a
   position is won at d when a move reaches a position lost at d - 1 (or an
   exit wins at d), lost at d when every move reaches a won position and the
   longest of them is d - 1 (counters of moves not yet known to lose). What
   is never resolved is a draw: a cycle that no side can force its way out
   of.

Step 3 runs twice on the same edges. For the distance to the end (dtm) an
exit costs the capture plus the smaller table's distance; for the distance
to the next capture or the end (dtz) every exit costs one ply: the capture
is where the no-capture clock starts again.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np
from numba import njit

from envs import kernels as K
from envs.rules import RuleSet
from envs.tablebase.errors import TablebaseRulesError
from envs.tablebase.index import MAX_PIECES, Material, clear_position, materials, position_index, set_position
from envs.tablebase.probe import (
    DRAW_CODE,
    LOSS,
    MAX_DISTANCE,
    NOT_A_POSITION,
    UNKNOWN,
    WIN,
    TablebaseArrays,
    assemble,
    empty_arrays,
    probe_state,
)

MAX_GROUP_MOVES = 8
"""The most legal moves of a mover with at most two pieces (four directions each)."""
ERR_SUBTABLE = -1
ERR_TOO_LONG = -2
ERR_INDEX = -3


@njit(cache=True)
def expand(
    flags: np.ndarray,
    sub: TablebaseArrays,
    pieces_a: np.ndarray,
    size_a: int,
    pieces_b: np.ndarray,
    size_b: int,
    n_moves: np.ndarray,
    child: np.ndarray,
    n_quiet: np.ndarray,
    exit_win: np.ndarray,
    exit_loss: np.ndarray,
    exit_draw: np.ndarray,
) -> int:
    """Step 1 for the group of tables A (`pieces_a`, positions 0..size_a-1) and B (positions after
    them; `size_b` 0 when B is A itself, a material facing its own copy).

    Per position: `n_moves` (-1 not a position), the quiet moves' targets `child[:, :n_quiet]` (group
    positions), and the exits: `exit_win[0/1]` the shortest exit win by dtm / by dtz (0 none),
    `exit_loss[0/1]` the longest exit loss (0 none), `exit_draw` an exit to a drawn position.
    Returns the longest distance of a won or lost position a capture leads to (0 when none does),
    ERR_SUBTABLE when a capture leads to a table `sub` does not hold, or ERR_INDEX when a move leads
    to a placement the index has no slot for (a rules kernel and the index disagreeing)."""
    st = np.zeros(K.STATE_LEN, dtype=np.int16)
    st[K.S_PIECES : K.S_PIECES + 16] = -1
    st[K.S_MOVENO] = 1
    hist = np.zeros((2, K.HIST_WIDTH), dtype=np.int16)
    hashes = np.zeros(3, dtype=np.uint64)
    moves = np.empty(K.MAX_MOVES, dtype=np.int64)
    n_a = pieces_a.shape[0]
    total = size_a + size_b
    longest_exit = 0
    for g in range(total):
        in_a = g < size_a
        pieces = pieces_a if in_a else pieces_b
        partner = pieces_b if in_a and size_b > 0 else pieces_a
        partner_base = size_a if in_a and size_b > 0 else 0
        if not set_position(st, pieces, n_a, g if in_a else g - size_a):
            n_moves[g] = -1
            continue
        n = K.generate_moves(st, hist, flags, moves)
        n_moves[g] = n
        q = 0
        for i in range(n):
            cap = K.make_move(st, hist, hashes, moves[i])
            if K.won_by_last_move(st):
                exit_win[g, 0] = 1
                exit_win[g, 1] = 1
            elif cap != 0:
                wdl, dtm, _ = probe_state(st, sub)
                if wdl == UNKNOWN:
                    return ERR_SUBTABLE
                longest_exit = max(longest_exit, dtm)
                if wdl == LOSS:
                    if exit_win[g, 0] == 0 or dtm + 1 < exit_win[g, 0]:
                        exit_win[g, 0] = dtm + 1
                    exit_win[g, 1] = 1
                elif wdl == WIN:
                    exit_loss[g, 0] = max(exit_loss[g, 0], dtm + 1)
                    exit_loss[g, 1] = 1
                else:
                    exit_draw[g] = True
            else:
                idx = position_index(st, partner, n_a)
                if idx < 0:
                    return ERR_INDEX
                child[g, q] = partner_base + idx
                q += 1
            K.unmake_move(st, hist)
        n_quiet[g] = q
        clear_position(st)
    return longest_exit


@njit(cache=True)
def predecessors(child: np.ndarray, n_quiet: np.ndarray) -> tuple:
    """Step 2: (start int64[N+1], preds int32[E]): the predecessors of position p are
    ``preds[start[p]:start[p + 1]]``, in increasing order (a move listed once per edge)."""
    total = n_quiet.shape[0]
    start = np.zeros(total + 1, dtype=np.int64)
    for g in range(total):
        for k in range(n_quiet[g]):
            start[child[g, k] + 1] += 1
    for p in range(total):
        start[p + 1] += start[p]
    fill = start[:-1].copy()
    preds = np.empty(start[total], dtype=np.int32)
    for g in range(total):
        for k in range(n_quiet[g]):
            c = child[g, k]
            preds[fill[c]] = g
            fill[c] += 1
    return start, preds


@njit(cache=True)
def resolve(
    n_moves: np.ndarray,
    n_quiet: np.ndarray,
    start: np.ndarray,
    preds: np.ndarray,
    exit_win: np.ndarray,
    exit_loss: np.ndarray,
    exit_draw: np.ndarray,
    dist: np.ndarray,
    won: np.ndarray,
) -> int:
    """Step 3 with exits at the given distances: `dist[p]` the distance of each position (-1 a draw or
    not a position), `won[p]` whether the mover wins. Returns the longest distance, or ERR_TOO_LONG past
    MAX_DISTANCE."""
    total = n_moves.shape[0]
    counter = n_quiet.astype(np.int64)
    head = np.full(MAX_DISTANCE + 2, -1, dtype=np.int64)
    nxt = np.full(total, -1, dtype=np.int64)
    order = np.empty(total, dtype=np.int64)
    n_order = 0
    last = 0  # the highest level a bucket holds
    for g in range(total):
        dist[g] = -1
        won[g] = False
        if n_moves[g] < 0:
            continue
        if n_moves[g] == 0:
            dist[g] = 0
            order[n_order] = g
            n_order += 1
            continue
        at = 0
        if exit_win[g] > 0:
            at = exit_win[g]
        elif n_quiet[g] == 0 and not exit_draw[g]:
            at = exit_loss[g]
        if at > MAX_DISTANCE:
            return ERR_TOO_LONG
        if at > 0:
            nxt[g] = head[at]
            head[at] = g
            last = max(last, at)
    begin, end = 0, n_order
    longest = 0
    d = 1
    while end > begin or d <= last:
        if d > MAX_DISTANCE:
            return ERR_TOO_LONG
        g = head[d]
        while g >= 0:
            if dist[g] < 0:
                dist[g] = d
                won[g] = exit_win[g] > 0
                order[n_order] = g
                n_order += 1
            g = nxt[g]
        for i in range(begin, end):
            p = order[i]
            for j in range(start[p], start[p + 1]):
                q = preds[j]
                if dist[q] >= 0:
                    continue
                if not won[p]:
                    dist[q] = d
                    won[q] = True
                    order[n_order] = q
                    n_order += 1
                    continue
                counter[q] -= 1
                if counter[q] == 0 and exit_win[q] == 0 and not exit_draw[q]:
                    at = max(d, exit_loss[q])
                    if at == d:
                        dist[q] = d
                        order[n_order] = q
                        n_order += 1
                    elif at > MAX_DISTANCE:
                        return ERR_TOO_LONG
                    else:
                        nxt[q] = head[at]
                        head[at] = q
                        last = max(last, at)
        if n_order > end:
            longest = d
        begin, end = end, n_order
        d += 1
    return longest


@njit(cache=True)
def encode(n_moves: np.ndarray, dist: np.ndarray, out: np.ndarray) -> None:
    """The table bytes: NOT_A_POSITION, DRAW_CODE for an unresolved position, else distance + 1."""
    for g in range(n_moves.shape[0]):
        if n_moves[g] < 0:
            out[g] = NOT_A_POSITION
        elif dist[g] < 0:
            out[g] = DRAW_CODE
        else:
            out[g] = dist[g] + 1


class SolverError(RuntimeError):
    """The solver met what it cannot store (a distance past MAX_DISTANCE) or lacks a smaller table."""


class Solved(NamedTuple):
    """One solved table: coded dtm and dtz (`probe`'s byte codes) and its `clock_exact_from`."""

    dtm: np.ndarray
    dtz: np.ndarray
    clock_exact_from: int


def solve_group(rules: RuleSet, sub: TablebaseArrays, material: Material) -> dict[Material, Solved]:
    """The tables of `material` and of its swap (the same pieces, the other side to move).

    `rules` must be position-only (`check_rules`); `sub` holds every table a capture can lead to."""
    flags = rules.flags()
    swapped = material.swapped
    mats = [material] if swapped == material else [material, swapped]
    sizes = [m.size() for m in mats]
    total = sum(sizes)
    n_moves = np.zeros(total, dtype=np.int8)
    child = np.zeros((total, MAX_GROUP_MOVES), dtype=np.int32)
    n_quiet = np.zeros(total, dtype=np.int8)
    exit_win = np.zeros((total, 2), dtype=np.int64)
    exit_loss = np.zeros((total, 2), dtype=np.int64)
    exit_draw = np.zeros(total, dtype=np.bool_)
    pieces = [m.pieces() for m in mats]
    longest_exit = expand(
        flags,
        sub,
        pieces[0],
        sizes[0],
        pieces[-1],
        sizes[1] if len(mats) > 1 else 0,
        n_moves,
        child,
        n_quiet,
        exit_win,
        exit_loss,
        exit_draw,
    )
    if longest_exit == ERR_SUBTABLE:
        raise SolverError(f"material {material}: a capture leads to a table that is not built")
    if longest_exit == ERR_INDEX:
        raise SolverError(f"material {material}: a move leads to a placement the index does not hold")
    start, preds = predecessors(child, n_quiet)
    coded = []
    dist = np.empty(total, dtype=np.int64)
    won = np.empty(total, dtype=np.bool_)
    results = []
    for metric in (0, 1):
        longest = resolve(
            n_moves,
            n_quiet,
            start,
            preds,
            exit_win[:, metric].copy(),
            exit_loss[:, metric].copy(),
            exit_draw,
            dist,
            won,
        )
        if longest == ERR_TOO_LONG:
            raise SolverError(f"material {material}: a distance beyond {MAX_DISTANCE} plies does not fit the format")
        out = np.empty(total, dtype=np.uint8)
        encode(n_moves, dist, out)
        coded.append(out)
        results.append((won.copy(), dist >= 0))
    if not (np.array_equal(results[0][0], results[1][0]) and np.array_equal(results[0][1], results[1][1])):
        raise SolverError(f"material {material}: dtm and dtz disagree on a result (a solver bug)")
    solved = {}
    at = 0
    for m, size in zip(mats, sizes):
        solved[m] = Solved(coded[0][at : at + size], coded[1][at : at + size], int(longest_exit))
        at += size
    return solved


def check_rules(rules: RuleSet) -> None:
    """Refuse the rules a table cannot represent (TablebaseRulesError naming the rule).

    The tables hold what the position alone decides. The anti-chase rules make a move's legality depend
    on the moves before it, so no table is built for them. Repetition (rule 11) and the no-capture limit
    (rule 12) only add draws that depend on the history: the tables ignore the first and answer for the
    second through `dtz` (`probe.clock_wdl`), so they are built once for every setting of both."""
    if rules.anti_chase != "off":
        raise TablebaseRulesError(
            f"no tablebase for anti_chase={rules.anti_chase!r}: the anti-chase rules make "
            "the legal moves depend on the game's history"
        )


Progress = Callable[[int, int], None]
"""Called as progress(positions_done, positions_total) while a build runs."""


def build_arrays(
    rules: RuleSet, pieces: int, only: Optional[list[Material]] = None, progress: Optional[Progress] = None
) -> tuple[list[Material], TablebaseArrays]:
    """Solve every material of 2..`pieces` pieces (of `pieces` pieces: only the groups of `only`, when
    given); returns the materials in table order and their tables.

    Deterministic: the same rules give the same bytes."""
    check_rules(rules)
    if not 2 <= pieces <= MAX_PIECES:
        raise ValueError(f"tablebase pieces={pieces} must be in 2..{MAX_PIECES}")
    wanted: list[list[Material]] = []
    for n in range(2, pieces + 1):
        mats = materials(n)
        if only is not None and n == pieces:
            keep = {m for m in only} | {m.swapped for m in only}
            unknown = sorted(str(m) for m in keep if m.n_pieces != n)
            if unknown:
                raise ValueError(f"materials {', '.join(unknown)} do not have {n} pieces")
            mats = [m for m in mats if m in keep]
        wanted.append(mats)
    total = sum(m.size() for mats in wanted for m in mats)
    done = 0
    order: list[Material] = []
    tables: dict[Material, Solved] = {}
    sub = empty_arrays()
    for mats in wanted:
        for m in mats:
            if m in tables:
                continue
            group = solve_group(rules, sub, m)
            tables.update(group)
            done += sum(x.size() for x in group)
            if progress is not None:
                progress(done, total)
        order.extend(mats)
        sub = _arrays(order, tables)
    return order, sub


def _arrays(order: list[Material], tables: dict[Material, Solved]) -> TablebaseArrays:
    return assemble(
        [m.pieces() for m in order],
        [m.size() for m in order],
        [tables[m].clock_exact_from for m in order],
        np.concatenate([tables[m].dtm for m in order]),
        np.concatenate([tables[m].dtz for m in order]),
    )

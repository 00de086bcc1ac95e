"""Alpha-beta search for Jungle: a fast scripted baseline in numba kernels.

Negamax with principal-variation search (null windows after the first move),
iterative deepening, a transposition table keyed by the Zobrist hash, move
ordering (den entries, hash move, captures by victim/attacker rank, killer and
history heuristics), a capture quiescence search and terminal scores that
prefer faster wins. Repetition (rule 11) and the no-capture limit (rule 12)
are scored as draws inside the search using the game's hash history. With
endgame tables (`AlphaBeta(tablebase=...)`, off by default) every position
below the root that they hold scores exactly (`tablebase_score`).

Score convention: every score is **from the side to move** at the root, in
evaluation units where a Dog is worth `PIECE_VALUE[3]` = 300. Scores with
``abs(score) > MATE_BOUND`` are forced results: ``MATE - score`` plies to a
win (``score > 0``) or ``MATE + score`` plies to a loss (``score < 0``); see
`plies_to_result` and `describe_score`. So entering the den now scores
``MATE - 1`` ("win in 1").

    from envs import Board
    result = AlphaBeta().search(Board(), depth=4)
    result.move, result.score, describe_score(result.score)

The kernels are `@njit(cache=True)`; `AlphaBeta` is a thin Python wrapper
that owns the transposition table and copies the board into search arrays.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

import numba
import numpy as np
from numba import njit, objmode, types

from envs import kernels as K
from envs.board import Board
from envs.kernels import (
    DEN,
    ELEPHANT,
    MAX_MOVES,
    N_SQUARES,
    RAT,
    S_CLOCK,
    S_PIECES,
    S_PLY,
    S_SIDE,
    generate_moves,
    has_legal_move,
    is_attacked,
    make_move,
    repetition_count,
    unmake_move,
    won_by_last_move,
)
from envs.notation import Move
from envs.players import StopSignal
from envs.rules import F_NO_CAPTURE_LIMIT, F_RANK, F_REPETITION_DRAW, RuleSet
from envs.tablebase import DRAW, UNKNOWN, WIN, Tablebase, TablebaseArrays, TablebaseError, empty_arrays, probe_clock

# --- scores -------------------------------------------------------------------------
MAX_PLY = 64
"""Deepest ply from the root the search (quiescence included) ever reaches."""
MATE = 30000
"""Score of a win at the root itself; a win n plies ahead scores MATE - n."""
MATE_BOUND = MATE - 1000
"""abs(score) above this is a forced win or loss."""
INF = 32000
EVAL_LIMIT = 20000

# Evaluation weights (a Dog is 300). Indexed by rank 0..8, so the dog_over_wolf
# variant values the animals by their rank in that rule set.
PIECE_VALUE = np.array([0, 250, 200, 300, 400, 500, 800, 900, 1000], dtype=np.int64)
RAT_VS_ELEPHANT = 150
"""A Rat is worth more while the enemy Elephant lives (it is the Elephant's only threat)."""
ELEPHANT_VS_RAT = 100
"""An Elephant is worth less while the enemy Rat lives."""
ADVANCE = np.array([0, 6, 3, 4, 5, 6, 9, 9, 7], dtype=np.int64)
"""Per animal: bonus per square nearer the enemy den (Manhattan distance)."""
RAID_UNATTACKED = np.array([0, 1500, 90], dtype=np.int64)
"""Indexed by distance to the enemy den (1: in a trap beside it, 2: one step from
such a trap): bonus for a piece there that no enemy piece can capture."""
TEMPO = 15

# Move ordering keys.
_ORDER_DEN = 1 << 30
_ORDER_HASH = 1 << 29
_ORDER_CAPTURE = 1 << 28
_ORDER_KILLER = 1 << 27
_HISTORY_MAX = 1 << 24

# Transposition table entries: tt_info[i] = (move, score, depth, bound).
TT_EXACT, TT_LOWER, TT_UPPER = 1, 2, 3

# Control array slots.
C_NODES = 0
C_NODE_LIMIT = 1  # 0: none
C_STOP = 2
C_SELDEPTH = 3
C_USE_TT = 4
C_ORDERING = 5
C_NOISE = 6  # evaluation noise amplitude, 0: none
C_NOISE_KEY = 7  # int64 view of the noise key
C_TIME_LIMITED = 8
C_TABLEBASE = 9  # 1: score the positions the tables hold from them
C_LEN = 10
TIME_CHECK_NODES = 1024
"""The clock is read once every this many nodes."""


def _distance_table() -> np.ndarray:
    d = np.zeros((2, N_SQUARES), dtype=np.int64)
    for side in range(2):
        den = int(DEN[side])
        for sq in range(N_SQUARES):
            d[side, sq] = abs(sq % 7 - den % 7) + abs(sq // 7 - den // 7)
    return d


DEN_DISTANCE = _distance_table()
"""DEN_DISTANCE[side, sq]: Manhattan distance from sq to `side`'s den."""


class Workspace(NamedTuple):
    """Arrays one search works in (allocated once per `AlphaBeta`)."""

    tt_keys: np.ndarray  # uint64[T]
    tt_info: np.ndarray  # int32[T, 4] move, score, depth, bound
    killers: np.ndarray  # int64[MAX_PLY, 2]
    history: np.ndarray  # int64[2, 4096] by side, from*64+to
    moves: np.ndarray  # int64[MAX_PLY, MAX_MOVES]
    order: np.ndarray  # int64[MAX_PLY, MAX_MOVES]
    pv: np.ndarray  # int64[MAX_PLY, MAX_PLY] triangular PV table
    pv_len: np.ndarray  # int64[MAX_PLY]
    ctl: np.ndarray  # int64[C_LEN]
    deadline: np.ndarray  # float64[1], perf_counter() seconds; used when ctl[C_TIME_LIMITED]


def new_workspace(tt_bits: int = 20) -> Workspace:
    """Fresh search arrays with a 2**tt_bits-entry transposition table."""
    size = 1 << tt_bits
    return Workspace(
        tt_keys=np.zeros(size, dtype=np.uint64),
        tt_info=np.zeros((size, 4), dtype=np.int32),
        killers=np.zeros((MAX_PLY, 2), dtype=np.int64),
        history=np.zeros((2, 4096), dtype=np.int64),
        moves=np.zeros((MAX_PLY, MAX_MOVES), dtype=np.int64),
        order=np.zeros((MAX_PLY, MAX_MOVES), dtype=np.int64),
        pv=np.zeros((MAX_PLY, MAX_PLY), dtype=np.int64),
        pv_len=np.zeros(MAX_PLY, dtype=np.int64),
        ctl=np.zeros(C_LEN, dtype=np.int64),
        deadline=np.zeros(1, dtype=np.float64),
    )


# The recursive kernels get explicit signatures (and their recursive calls no
# literal arguments): numba would otherwise compile specialisations for literal
# arguments, which fail to link when read back from the on-disk cache.
_WS = numba.typeof(new_workspace(4))
_ST = types.int16[::1]
_HIST = types.int16[:, ::1]
_HASHES = types.uint64[::1]
_FLAGS = types.int64[::1]
NO_TABLES = empty_arrays()
"""The tables of a search without tablebase: none (read-only arrays, the type of loaded ones)."""
_TB = numba.typeof(NO_TABLES)
_QUIESCE_SIG = types.int64(_ST, _HIST, _HASHES, _FLAGS, _WS, _TB, types.int64, types.int64, types.int64)
_NEGAMAX_SIG = types.int64(
    _ST, _HIST, _HASHES, _FLAGS, _WS, _TB, types.int64, types.int64, types.int64, types.int64, types.boolean
)
NO_SCORE = INF + 1
"""`tablebase_score` of a position the tables do not decide."""


# --- evaluation ------------------------------------------------------------------------
@njit(cache=True)
def evaluate(st: np.ndarray, flags: np.ndarray, h: np.uint64, noise: int, noise_key: np.uint64) -> int:
    """Static value of the position from the side to move (a Dog = 300).

    Material weighted by rank (a Rat is worth more while the enemy Elephant
    lives, an Elephant less while the enemy Rat lives), advancement toward the
    enemy den, raiders on or next to the traps around the enemy den that no
    enemy piece can capture, and a tempo bonus. `noise` > 0 adds a value in
    [-noise, noise] drawn from the hash `h` and `noise_key`, so one position
    keeps one value within a search."""
    score = 0
    for side in range(2):
        enemy = 1 - side
        side_score = 0
        for a in range(1, 9):
            sq = st[S_PIECES + 8 * side + a - 1]
            if sq < 0:
                continue
            v = PIECE_VALUE[flags[F_RANK + a]]
            if a == RAT and st[S_PIECES + 8 * enemy + ELEPHANT - 1] >= 0:
                v += RAT_VS_ELEPHANT
            elif a == ELEPHANT and st[S_PIECES + 8 * enemy + RAT - 1] >= 0:
                v -= ELEPHANT_VS_RAT
            d = DEN_DISTANCE[enemy, sq]
            v += ADVANCE[a] * (11 - d)
            if d <= 2 and not is_attacked(st, flags, sq):
                v += RAID_UNATTACKED[d]
            side_score += v
        if side == 0:
            score += side_score
        else:
            score -= side_score
    if st[S_SIDE] != 0:
        score = -score
    score += TEMPO
    if noise > 0:
        x = (h ^ noise_key) * np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(29)
        score += int(x % np.uint64(2 * noise + 1)) - noise
    if score > EVAL_LIMIT:
        score = EVAL_LIMIT
    elif score < -EVAL_LIMIT:
        score = -EVAL_LIMIT
    return score


# --- helpers -------------------------------------------------------------------------
@njit(cache=True)
def _now() -> float:
    with objmode(t="float64"):
        t = _time.perf_counter()
    return t


@njit(cache=True)
def _tick(ws: Workspace) -> bool:
    """Count a node; return True when the search must stop (node or time limit)."""
    ctl = ws.ctl
    ctl[C_NODES] += 1
    if ctl[C_STOP] != 0:
        return True
    if ctl[C_NODE_LIMIT] > 0 and ctl[C_NODES] >= ctl[C_NODE_LIMIT]:
        ctl[C_STOP] = 1
        return True
    if ctl[C_TIME_LIMITED] != 0 and ctl[C_NODES] % TIME_CHECK_NODES == 0:
        if _now() >= ws.deadline[0]:
            ctl[C_STOP] = 1
            return True
    return False


@njit(cache=True, inline="always")
def _draw_or_loss(st: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, ply: int) -> int:
    """Score of a position a move has just reached, if the rules end the game there.

    Returns 1 for "game goes on", else the score from the side to move: a
    draw (0) by repetition or the no-capture limit, unless the side has no
    legal move, which loses first (wins come before draws). The win by the
    move just made is scored by the caller."""
    clock = st[S_CLOCK]
    drawn = False
    limit = flags[F_NO_CAPTURE_LIMIT]
    if limit > 0 and clock >= limit:
        drawn = True
    elif clock >= 8 and flags[F_REPETITION_DRAW] != 0 and repetition_count(st, hashes) >= 3:
        drawn = True
    if not drawn:
        return 1
    if not has_legal_move(st, hist, flags):
        return -(MATE - ply)
    return 0


@njit(cache=True)
def tablebase_score(st: np.ndarray, flags: np.ndarray, tb: TablebaseArrays, ply: int) -> int:
    """The tables' exact score of a position `ply` plies below the root, from its side to move; NO_SCORE
    when they do not hold it or cannot tell its result under the no-capture rule.

    A win (loss) scores as ending `dtm` plies on, the tables' shortest win (longest loss); when the
    clock forbids that line but a capture in time keeps the result (`clock_wdl`), the true line is
    longer and `dtm` is its lower bound. A cursed win or a saved loss is a draw (0). Repetition is not
    seen past this position (the winner's shortest line never repeats)."""
    wdl, dtm, _, clock = probe_clock(st, flags, tb)
    if wdl == UNKNOWN or clock == UNKNOWN:
        return NO_SCORE
    if clock == DRAW:
        return 0
    return MATE - (ply + dtm) if clock == WIN else -(MATE - (ply + dtm))


@njit(cache=True, inline="always")
def _to_tt(score: int, ply: int) -> int:
    if score > MATE_BOUND:
        return score + ply
    if score < -MATE_BOUND:
        return score - ply
    return score


@njit(cache=True, inline="always")
def _from_tt(score: int, ply: int) -> int:
    if score > MATE_BOUND:
        return score - ply
    if score < -MATE_BOUND:
        return score + ply
    return score


@njit(cache=True, inline="always")
def _pick(ws: Workspace, ply: int, i: int, n: int) -> int:
    """Swap the best-ordered move of [i, n) to i (selection sort, one step)."""
    order = ws.order
    moves = ws.moves
    best = i
    for j in range(i + 1, n):
        if order[ply, j] > order[ply, best]:
            best = j
    if best != i:
        t = order[ply, i]
        order[ply, i] = order[ply, best]
        order[ply, best] = t
        t = moves[ply, i]
        moves[ply, i] = moves[ply, best]
        moves[ply, best] = t
    return moves[ply, i]


@njit(cache=True, inline="always")
def _capture_key(st: np.ndarray, flags: np.ndarray, frm: int, to: int) -> int:
    """Most valuable victim first, then least valuable attacker (by rank)."""
    return flags[F_RANK + abs(st[to])] * 16 - flags[F_RANK + abs(st[frm])]


@njit(cache=True)
def _order_moves(st: np.ndarray, flags: np.ndarray, ws: Workspace, ply: int, n: int, hash_move: int) -> None:
    side = st[S_SIDE]
    enemy_den = DEN[1 - side]
    for i in range(n):
        m = ws.moves[ply, i]
        frm = m >> 6
        to = m & 63
        if to == enemy_den:
            key = _ORDER_DEN
        elif m == hash_move:
            key = _ORDER_HASH
        elif st[to] != 0:
            key = _ORDER_CAPTURE + _capture_key(st, flags, frm, to)
        elif m == ws.killers[ply, 0]:
            key = _ORDER_KILLER + 1
        elif m == ws.killers[ply, 1]:
            key = _ORDER_KILLER
        else:
            key = ws.history[side, frm * 64 + to]
        ws.order[ply, i] = key


@njit(cache=True)
def _reward_quiet(ws: Workspace, side: int, ply: int, m: int, depth: int) -> None:
    """A quiet move caused a cut-off: make it a killer and raise its history."""
    if ws.killers[ply, 0] != m:
        ws.killers[ply, 1] = ws.killers[ply, 0]
        ws.killers[ply, 0] = m
    k = (m >> 6) * 64 + (m & 63)
    ws.history[side, k] += depth * depth
    if ws.history[side, k] > _HISTORY_MAX:
        for s in range(2):
            for j in range(4096):
                ws.history[s, j] //= 2


@njit(cache=True, inline="always")
def _update_pv(ws: Workspace, ply: int, m: int) -> None:
    ws.pv[ply, ply] = m
    for j in range(ply + 1, ws.pv_len[ply + 1]):
        ws.pv[ply, j] = ws.pv[ply + 1, j]
    ws.pv_len[ply] = max(ws.pv_len[ply + 1], ply + 1)


# --- search --------------------------------------------------------------------------------
@njit(_QUIESCE_SIG, cache=True)
def quiesce(
    st: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    ws: Workspace,
    tb: TablebaseArrays,
    ply: int,
    alpha: int,
    beta: int,
) -> int:
    """Capture search: stand pat on the evaluation or try captures and den entries.

    Value from the side to move, fail-soft within (alpha, beta)."""
    ws.pv_len[ply] = ply
    if ply > ws.ctl[C_SELDEPTH]:
        ws.ctl[C_SELDEPTH] = ply
    ended = _draw_or_loss(st, hist, hashes, flags, ply)
    if ended != 1:
        return ended
    if ws.ctl[C_TABLEBASE] != 0:
        exact = tablebase_score(st, flags, tb, ply)
        if exact != NO_SCORE:
            return exact
    best = evaluate(st, flags, hashes[st[S_PLY]], ws.ctl[C_NOISE], np.uint64(ws.ctl[C_NOISE_KEY]))
    if best >= beta or ply >= MAX_PLY - 1:
        return best
    if best > alpha:
        alpha = best
    side = st[S_SIDE]
    enemy_den = DEN[1 - side]
    n_all = generate_moves(st, hist, flags, ws.moves[ply])
    if n_all == 0:
        return -(MATE - ply)
    n = 0
    for i in range(n_all):
        m = ws.moves[ply, i]
        to = m & 63
        if to == enemy_den or st[to] != 0:
            ws.moves[ply, n] = m
            ws.order[ply, n] = _ORDER_DEN if to == enemy_den else _capture_key(st, flags, m >> 6, to)
            n += 1
    for i in range(n):
        m = _pick(ws, ply, i, n)
        make_move(st, hist, hashes, m)
        stop = _tick(ws)
        if won_by_last_move(st):
            ws.pv_len[ply + 1] = ply + 1
            s = MATE - (ply + 1)
        elif stop:
            s = 0
        else:
            s = -quiesce(st, hist, hashes, flags, ws, tb, ply + 1, -beta, -alpha)
        unmake_move(st, hist)
        if ws.ctl[C_STOP] != 0:
            return 0
        if s > best:
            best = s
            if s > alpha:
                alpha = s
                _update_pv(ws, ply, m)
                if s >= beta:
                    break
    return best


@njit(_NEGAMAX_SIG, cache=True)
def negamax(
    st: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    ws: Workspace,
    tb: TablebaseArrays,
    depth: int,
    ply: int,
    alpha: int,
    beta: int,
    pv_node: bool,
) -> int:
    """Principal-variation search of `depth` plies; value from the side to move.

    Fail-soft: the value is exact inside (alpha, beta), a bound outside. The
    caller has scored a win by the move that reached this position."""
    if depth <= 0:
        return quiesce(st, hist, hashes, flags, ws, tb, ply, alpha, beta)
    ws.pv_len[ply] = ply
    ctl = ws.ctl
    if ply > 0:
        ended = _draw_or_loss(st, hist, hashes, flags, ply)
        if ended != 1:
            return ended
        if ctl[C_TABLEBASE] != 0:
            exact = tablebase_score(st, flags, tb, ply)
            if exact != NO_SCORE:
                return exact
    use_tt = ctl[C_USE_TT] != 0
    h = hashes[st[S_PLY]]
    mask = np.uint64(ws.tt_keys.shape[0] - 1)
    idx = np.int64(h & mask)
    hash_move = 0
    if use_tt and ws.tt_keys[idx] == h:
        hash_move = ws.tt_info[idx, 0]
        if not pv_node and ws.tt_info[idx, 2] >= depth:
            s = _from_tt(int(ws.tt_info[idx, 1]), ply)
            bound = ws.tt_info[idx, 3]
            if bound == TT_EXACT or (bound == TT_LOWER and s >= beta) or (bound == TT_UPPER and s <= alpha):
                return s
    n = generate_moves(st, hist, flags, ws.moves[ply])
    if n == 0:
        return -(MATE - ply)  # rule 10: no legal move loses
    ordering = ctl[C_ORDERING] != 0
    if ordering:
        _order_moves(st, flags, ws, ply, n, hash_move)
    side = st[S_SIDE]
    alpha0 = alpha
    best = -INF
    not_pv = ply < 0  # False, as a run-time value: a literal here breaks numba's cache of this recursion
    best_move = 0
    for i in range(n):
        m = _pick(ws, ply, i, n) if ordering else ws.moves[ply, i]
        cap = make_move(st, hist, hashes, m)
        stop = _tick(ws)
        if won_by_last_move(st):
            ws.pv_len[ply + 1] = ply + 1
            s = MATE - (ply + 1)
        elif stop:
            s = 0
        elif i == 0:
            s = -negamax(st, hist, hashes, flags, ws, tb, depth - 1, ply + 1, -beta, -alpha, pv_node)
        else:
            s = -negamax(st, hist, hashes, flags, ws, tb, depth - 1, ply + 1, -alpha - 1, -alpha, not_pv)
            if alpha < s < beta and ctl[C_STOP] == 0:
                s = -negamax(st, hist, hashes, flags, ws, tb, depth - 1, ply + 1, -beta, -alpha, not not_pv)
        unmake_move(st, hist)
        if ctl[C_STOP] != 0:
            return 0
        if s > best:
            best = s
            best_move = m
            if s > alpha:
                alpha = s
                _update_pv(ws, ply, m)
                if s >= beta:
                    if cap == 0 and ordering:
                        _reward_quiet(ws, side, ply, m, depth)
                    break
    if use_tt and (ws.tt_keys[idx] != h or depth >= ws.tt_info[idx, 2] - 1):
        ws.tt_keys[idx] = h
        ws.tt_info[idx, 0] = best_move
        ws.tt_info[idx, 1] = _to_tt(best, ply)
        ws.tt_info[idx, 2] = depth
        ws.tt_info[idx, 3] = TT_LOWER if best >= beta else (TT_EXACT if best > alpha0 else TT_UPPER)
    return best


@njit(cache=True, nogil=True)  # without the GIL: a thread that stops the search (StopSignal) runs meanwhile
def iterative_deepening(
    st: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    ws: Workspace,
    tb: TablebaseArrays,
    max_depth: int,
    out_pv: np.ndarray,
) -> tuple:
    """Search depths 1, 2, ... `max_depth` until a limit in `ws.ctl` stops it.

    Returns (move, score, depth, pv_length) of the deepest completed
    iteration (score from the side to move); the PV goes to `out_pv`. An
    iteration cut short by a limit is discarded, except that the first one
    always yields a move. Stops early once a forced result lies within the
    searched depth (a deeper search cannot change it)."""
    best_move = 0
    best_score = 0
    done = 0
    pv_n = 0
    root = max_depth - max_depth  # 0, as a run-time value (see _NEGAMAX_SIG)
    for d in range(1, max_depth + 1):
        s = negamax(st, hist, hashes, flags, ws, tb, d, root, -INF, INF, root == 0)
        if ws.ctl[C_STOP] != 0 and done > 0:
            break
        if ws.pv_len[0] > 0:
            best_move = ws.pv[0, 0]
            pv_n = ws.pv_len[0]
            for j in range(pv_n):
                out_pv[j] = ws.pv[0, j]
        best_score = s
        done = d
        if ws.ctl[C_STOP] != 0:
            break
        if abs(s) > MATE_BOUND and MATE - abs(s) <= d:
            break
    if best_move == 0:
        n = generate_moves(st, hist, flags, ws.moves[0])
        if n > 0:
            best_move = ws.moves[0, 0]
    return best_move, best_score, done, pv_n


# --- Python API --------------------------------------------------------------------------
def plies_to_result(score: int) -> Optional[int]:
    """Plies to the forced end a score announces: n > 0 win in n plies, -n loss in n; None if not forced."""
    if score > MATE_BOUND:
        return MATE - score
    if score < -MATE_BOUND:
        return -(MATE + score)
    return None


def describe_score(score: int) -> str:
    """`'win in 3'`, `'loss in 2'` (plies, side to move's view) or `'+120'` (a Dog = 300)."""
    n = plies_to_result(score)
    if n is None:
        return f"{score:+d}"
    return f"win in {n}" if n > 0 else f"loss in {-n}"


@dataclass(frozen=True)
class SearchResult:
    """What one search found. `score` is from the side to move (see the module docstring)."""

    move: Optional[Move]
    """Best move (None only when the position has no legal move)."""
    score: int
    """Value for the side to move; |score| > MATE_BOUND announces a forced win/loss."""
    depth: int
    """Deepest fully completed iteration."""
    nodes: int
    """Positions visited (moves made), quiescence included."""
    pv: list[Move] = field(default_factory=list)
    """Principal variation, starting with `move`."""
    seconds: float = 0.0

    @property
    def plies_to_result(self) -> Optional[int]:
        return plies_to_result(self.score)

    def __str__(self) -> str:
        pv = " ".join(str(m) for m in self.pv)
        return (
            f"depth {self.depth} score {describe_score(self.score)} nodes {self.nodes} time {self.seconds:.3f}s pv {pv}"
        )


class SearchLimitError(ValueError):
    """A bad search limit (negative depth, nodes or time)."""


class AlphaBeta:
    """The alpha-beta searcher; keeps its transposition table between searches.

    `noise` (evaluation units, a Dog = 300) adds a deterministic per-position
    offset in [-noise, noise] keyed by a number drawn from `seed` at each
    search, so seeded games differ yet replay exactly. `use_tt` and
    `use_ordering` exist for testing (the value at a fixed depth does not
    depend on them). `tablebase`: endgame tables that score the positions
    they hold below the root exactly (`tablebase_score`); they must serve
    the boards' rules."""

    def __init__(
        self,
        rules: Optional[RuleSet] = None,
        *,
        tt_bits: int = 20,
        noise: int = 0,
        seed: Optional[int] = None,
        use_tt: bool = True,
        use_ordering: bool = True,
        tablebase: Optional[Tablebase] = None,
    ) -> None:
        if not 4 <= tt_bits <= 28:
            raise SearchLimitError(f"tt_bits={tt_bits} must be in 4..28")
        if noise < 0:
            raise SearchLimitError(f"noise={noise} must be >= 0")
        self.rules = rules if rules is not None else RuleSet()
        self.flags = self.rules.flags()
        self.noise = int(noise)
        self.rng = np.random.default_rng(seed)
        self.ws = new_workspace(tt_bits)
        self._used = False  # whether a search has written to the tables since they were cleared
        self.ws.ctl[C_USE_TT] = int(use_tt)
        self.ws.ctl[C_ORDERING] = int(use_ordering)
        self.tablebase = tablebase
        self.ws.ctl[C_TABLEBASE] = int(tablebase is not None)
        if tablebase is not None and not tablebase.serves(self.rules):
            raise TablebaseError(f"the tables at {tablebase.path} do not serve the search's rules {self.rules}")

    def clear(self) -> None:
        """Forget the transposition table, killers and history (a new game)."""
        if not self._used:
            return
        self._used = False
        self.ws.tt_keys[:] = 0
        self.ws.tt_info[:] = 0
        self.ws.killers[:] = 0
        self.ws.history[:] = 0

    def search(
        self,
        board: Board,
        depth: Optional[int] = None,
        nodes: Optional[int] = None,
        time: Optional[float] = None,
        *,
        stop: Optional[StopSignal] = None,
    ) -> SearchResult:
        """Search `board` (left unchanged) within the given limits; at least one must be set, or `stop`.

        depth: plies of full-width search (quiescence beyond); nodes: stop
        after about this many positions; time: seconds (checked every
        TIME_CHECK_NODES nodes; results then depend on the machine's speed);
        stop: another thread's signal to end the search at its next node (the
        deepest completed iteration's move is played, as for the other limits).
        Without `depth`, iterative deepening runs to MAX_PLY - 16."""
        if depth is None and nodes is None and time is None and stop is None:
            raise SearchLimitError("give at least one of depth, nodes, time or stop")
        if depth is not None and not 1 <= depth <= MAX_PLY - 16:
            raise SearchLimitError(f"depth={depth} must be in 1..{MAX_PLY - 16}")
        if nodes is not None and nodes <= 0:
            raise SearchLimitError(f"nodes={nodes} must be positive")
        if time is not None and not time > 0:
            raise SearchLimitError(f"time={time} must be positive seconds")
        t0 = _time.perf_counter()
        self._used = True
        if board.rules != self.rules:
            if self.tablebase is not None and not self.tablebase.serves(board.rules):
                raise TablebaseError(
                    f"the tables at {self.tablebase.path} do not serve the board's rules {board.rules}"
                )
            self.rules = board.rules
            self.flags = board.rules.flags()
            self.clear()
        ply = board.ply
        st = board.state.copy()
        hist = np.zeros((ply + MAX_PLY + 2, K.HIST_WIDTH), dtype=np.int16)
        hist[:ply] = board.hist[:ply]
        hashes = np.zeros(ply + MAX_PLY + 3, dtype=np.uint64)
        hashes[: ply + 1] = board.hashes[: ply + 1]
        ctl = self.ws.ctl
        ctl[C_NODES] = 0
        ctl[C_STOP] = 0
        ctl[C_SELDEPTH] = 0
        ctl[C_NODE_LIMIT] = int(nodes) if nodes is not None else 0
        ctl[C_NOISE] = self.noise
        ctl[C_NOISE_KEY] = int(self.rng.integers(0, 2**63 - 1)) if self.noise > 0 else 0
        ctl[C_TIME_LIMITED] = int(time is not None)
        self.ws.deadline[0] = t0 + (time if time is not None else 0.0)
        self.ws.killers[:] = 0
        if stop is not None:  # after C_STOP is cleared: a stop sent before this line still ends the search
            stop.on_set(self._stop_now)
        out_pv = np.zeros(MAX_PLY, dtype=np.int64)
        max_depth = depth if depth is not None else MAX_PLY - 16
        tables = self.tablebase.arrays if self.tablebase is not None else NO_TABLES
        m, score, done, pv_n = iterative_deepening(st, hist, hashes, self.flags, self.ws, tables, max_depth, out_pv)
        move = Move.from_int(int(m)) if m != 0 else None
        pv = [Move.from_int(int(x)) for x in out_pv[:pv_n]]
        if move is not None and (not pv or pv[0] != move):
            pv = [move]
        return SearchResult(
            move=move,
            score=int(score),
            depth=int(done),
            nodes=int(ctl[C_NODES]),
            pv=pv,
            seconds=_time.perf_counter() - t0,
        )

    def _stop_now(self) -> None:
        """End the running search at its next node (called from another thread)."""
        self.ws.ctl[C_STOP] = 1


def search_position(jfen: str, depth: int, rules: Optional[RuleSet] = None) -> SearchResult:
    """One-off search of a JFEN position (a fresh table); handy in notebooks and tests."""
    return AlphaBeta(rules, tt_bits=16).search(Board.from_jfen(jfen, rules=rules), depth=depth)


__all__ = [
    "AlphaBeta",
    "MATE",
    "MATE_BOUND",
    "SearchLimitError",
    "SearchResult",
    "describe_score",
    "evaluate",
    "iterative_deepening",
    "negamax",
    "plies_to_result",
    "quiesce",
    "search_position",
    "tablebase_score",
]

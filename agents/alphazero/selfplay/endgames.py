"""The endgame tables in training: self-play adjudication, value rescoring, and the value head's accuracy on them.

    verdicts = table_verdicts(games.state[idx], flags, tb)     # int64 [len(idx)]: WIN / DRAW / LOSS / UNKNOWN
    exact = game_table_values(first, hist, plies, flags, tb)   # each position of a game, the same
    report = value_accuracy(evaluator, rules, tables, positions=1000, seed=0)
    report.tags()                                              # {"tablebase_accuracy": ..., "tablebase_mae_2": ...}

A verdict is the tables' result for the side to move under the no-capture
rule at the position's clock (`envs.tablebase.probe_clock`'s last value: a
cursed win is a draw), UNKNOWN where the tables do not hold the position or
cannot tell. The tables are those of the rules' default location
(`envs.tablebase.default_tablebase`, built with ``python -m envs tablebase
build``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
from numba import njit

from envs import kernels as K
from envs.encoding import N_ACTIONS, OBS_SHAPE, encode_observation, legal_action_mask
from envs.rules import RuleSet
from envs.tablebase import (
    DRAW,
    UNKNOWN,
    WIN,
    Tablebase,
    TablebaseArrays,
    TablebaseError,
    TablebaseFileError,
    default_tablebase,
)
from envs.tablebase.index import set_position
from envs.tablebase.probe import probe_clock, probe_states

log = logging.getLogger(__name__)


def table_verdicts(states: np.ndarray, flags: np.ndarray, tb: TablebaseArrays) -> np.ndarray:
    """int64 [B]: the tables' verdict (module docstring) of each row of `states` [B, STATE_LEN]."""
    states = np.ascontiguousarray(states)
    out = np.zeros((states.shape[0], 4), dtype=np.int64)
    probe_states(states, flags, tb, out)
    return out[:, 3].copy()


def table_winner(verdict: int, side_to_move: int) -> int:
    """The kernels' winner (RED, BLUE or DRAW) of a position whose verdict for `side_to_move` is `verdict`
    (WIN, DRAW or LOSS)."""
    if verdict == DRAW:
        return int(K.DRAW)
    return int(side_to_move) if verdict == WIN else 1 - int(side_to_move)


@njit(cache=True)
def _replay_verdicts(
    first: np.ndarray, moves: np.ndarray, flags: np.ndarray, tb: TablebaseArrays, out: np.ndarray
) -> None:
    st = first.copy()
    plies = out.shape[0]
    hist = np.zeros((plies + 1, K.HIST_WIDTH), dtype=np.int16)
    hashes = np.zeros(plies + 2, dtype=np.uint64)
    for p in range(plies):
        out[p] = probe_clock(st, flags, tb)[3]
        K.make_move(st, hist, hashes, (int(moves[p, 0]) << 6) | int(moves[p, 1]))


def game_table_values(
    first: np.ndarray, hist: np.ndarray, plies: int, flags: np.ndarray, tb: TablebaseArrays
) -> np.ndarray:
    """int64 [plies]: the verdict of each position of a game that started from `first` (a state) and whose
    moves are `hist[:plies]` (the kernels' history rows), before each move."""
    out = np.full(plies, UNKNOWN, dtype=np.int64)
    if plies:
        _replay_verdicts(np.ascontiguousarray(first), np.ascontiguousarray(hist[:plies]), flags, tb, out)
    return out


def rescore(values: np.ndarray, verdicts: np.ndarray) -> int:
    """Replace `values` (float32 [n], each from its position's side to move) by the exact ones where the
    tables know them (`verdicts` [n]: +1 won, 0 drawn, -1 lost); returns how many were replaced."""
    known = verdicts != UNKNOWN
    values[known] = verdicts[known].astype(values.dtype)
    return int(known.sum())


_SAID: set[str] = set()


def tables_if_built(rules: RuleSet) -> Optional[Tablebase]:
    """The tables of `rules` in the default location, or None when they are not built (or cannot serve
    these rules, or their file is damaged), said once per process in one log line naming the command that
    builds them: a warning for a damaged file, which a run that did not ask for the tables passes over."""
    try:
        return default_tablebase(rules)
    except TablebaseError as e:
        if str(e) not in _SAID:
            _SAID.add(str(e))
            level = logging.WARNING if isinstance(e, TablebaseFileError) else logging.INFO
            log.log(level, "eval/tablebase_* not logged: %s", e)
        return None


@dataclass
class ValueAccuracy:
    """The value head against the tables on random table positions, per piece count and over all."""

    positions: dict[int, int] = field(default_factory=dict)
    """Positions measured, by piece count."""
    accuracy: dict[int, float] = field(default_factory=dict)
    """Share whose value falls in the third of [-1, 1] of its result: above 1/3 for a win, within 1/3 of 0
    for a draw, below -1/3 for a loss."""
    sign: dict[int, float] = field(default_factory=dict)
    """Share of the won and lost positions whose value has the result's sign (NaN without any)."""
    mae: dict[int, float] = field(default_factory=dict)
    """Mean absolute error of the value against the exact one (+1, 0, -1)."""

    def tags(self) -> dict[str, float]:
        """TensorBoard scalars (under ``eval/``): ``tablebase_accuracy``, ``tablebase_sign``,
        ``tablebase_mae`` over all positions, and the same with ``_<pieces>`` per piece count."""
        out: dict[str, float] = {}
        total = sum(self.positions.values())
        for name, per in (("accuracy", self.accuracy), ("sign", self.sign), ("mae", self.mae)):
            for n, v in per.items():
                out[f"tablebase_{name}_{n}"] = v
            if total:
                weights = {n: self.positions[n] for n in per if not np.isnan(per[n])}
                w = sum(weights.values())
                out[f"tablebase_{name}"] = (sum(per[n] * k for n, k in weights.items()) / w) if w else float("nan")
        return out


def random_table_positions(tables: Tablebase, pieces: int, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(states int16 [count, STATE_LEN], verdicts int64 [count]) of `count` random positions of `pieces`
    pieces the tables hold, each material drawn by its number of index entries, Red to move at clock 0,
    from `seed`; fewer when the tables hold no such material."""
    mats = [m for m in tables.materials if m.n_pieces == pieces]
    states = np.zeros((count, K.STATE_LEN), dtype=np.int16)
    if not mats:
        return states[:0], np.zeros(0, dtype=np.int64)
    rng = np.random.default_rng(seed)
    sizes = np.array([m.size() for m in mats], dtype=np.float64)
    st = np.zeros(K.STATE_LEN, dtype=np.int16)
    flags = tables.rules.flags()
    got = 0
    while got < count:
        m = mats[int(rng.choice(len(mats), p=sizes / sizes.sum()))]
        st[:] = 0
        st[K.S_PIECES : K.S_PIECES + 16] = -1
        st[K.S_MOVENO] = 1
        if not set_position(st, m.pieces(), m.n_pieces, int(rng.integers(m.size()))) or K.game_won(st):
            continue
        if probe_clock(st, flags, tables.arrays)[3] == UNKNOWN:
            continue
        states[got] = st
        got += 1
    return states, table_verdicts(states, flags, tables.arrays)


def value_accuracy(
    evaluator: Any, rules: RuleSet, tables: Tablebase, positions: int = 1000, seed: int = 0, batch: int = 256
) -> ValueAccuracy:
    """The value head of `evaluator` (``(obs, mask) -> (logits, values)``, an `agents.alphazero.search.Evaluator`)
    on `positions` random positions per piece count the tables hold (`random_table_positions`)."""
    flags = rules.flags()
    report = ValueAccuracy()
    for pieces in sorted({m.n_pieces for m in tables.materials}):
        states, exact = random_table_positions(tables, pieces, positions, seed + pieces)
        if not len(states):
            continue
        values = np.zeros(len(states), dtype=np.float64)
        obs = np.zeros((len(states),) + OBS_SHAPE, dtype=np.float32)
        mask = np.zeros((len(states), N_ACTIONS), dtype=np.bool_)
        hist = np.zeros((1, K.HIST_WIDTH), dtype=np.int16)
        hashes = np.zeros(2, dtype=np.uint64)
        for i, st in enumerate(states):
            hashes[0] = K.compute_hash(st)
            encode_observation(st, hashes, flags, obs[i])
            legal_action_mask(st, hist, flags, mask[i])
        for lo in range(0, len(states), batch):
            _, v = evaluator(obs[lo : lo + batch], mask[lo : lo + batch])
            values[lo : lo + batch] = np.clip(np.asarray(v, dtype=np.float64).reshape(-1), -1.0, 1.0)
        third = np.where(values > 1 / 3, WIN, np.where(values < -1 / 3, -1, DRAW))
        decisive = exact != DRAW
        report.positions[pieces] = len(states)
        report.accuracy[pieces] = float(np.mean(third == exact))
        report.sign[pieces] = (
            float(np.mean(np.sign(values[decisive]) == exact[decisive])) if decisive.any() else float("nan")
        )
        report.mae[pieces] = float(np.mean(np.abs(values - exact)))
    return report

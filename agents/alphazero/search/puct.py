"""AlphaZero's search: PUCT selection everywhere, Dirichlet noise on the root priors, a visit-count move.

Self-play exploration (a game's `add_noise`): the root priors are mixed with
Dirichlet noise for the search, and during the first ``temperature_plies``
plies of a game the move is drawn from the root visits N^(1/T). Without
noise the search is deterministic and plays the most visited child (ties:
the higher Q, then the first generated). Policy target: the root visit
distribution. Root value: the mean of the root's simulations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from agents.alphazero.search.config import SearchParams
from agents.alphazero.search.policy import RootPolicy
from agents.alphazero.search.search import simulate, simulate_lanes
from agents.alphazero.search.selection import select_puct
from agents.alphazero.search.tree import ROOT, UNVISITED, Lanes, Leaves, Roots, Tree, Work, child_q, root_visits
from envs import kernels as K
from envs.tablebase.probe import TablebaseArrays


@njit(cache=True)
def simulate_puct(
    tree: Tree,
    work: Work,
    roots: Roots,
    leaves: Leaves,
    flags: np.ndarray,
    params: SearchParams,
    tb: TablebaseArrays,
    idx: np.ndarray,
    steps: int,
    uniform: bool,
) -> int:
    """`search.simulate` with PUCT selection at the root and below it (the cached entry point)."""
    return simulate(tree, work, roots, leaves, flags, params, tb, idx, steps, uniform, select_puct, select_puct)


@njit(cache=True)
def simulate_puct_lanes(
    tree: Tree,
    work: Work,
    roots: Roots,
    leaves: Leaves,
    lanes: Lanes,
    flags: np.ndarray,
    params: SearchParams,
    tb: TablebaseArrays,
    idx: np.ndarray,
    width: int,
) -> int:
    """`search.simulate_lanes` (several leaves per game and network call, virtual loss) with this
    algorithm's selection functions (the cached entry point)."""
    return simulate_lanes(tree, work, roots, leaves, lanes, flags, params, tb, idx, width, select_puct, select_puct)


@njit(cache=True)
def mix_root_noise(tree: Tree, idx: np.ndarray, noise: np.ndarray, fraction: float, saved: np.ndarray) -> None:
    """Root priors := (1 - fraction) * prior + fraction * Dirichlet noise (`noise` holds Gamma
    draws, normalised here over the legal children); the clean priors go to `saved`."""
    for i in range(idx.shape[0]):
        b = idx[i]
        fc = tree.first_child[b, ROOT]
        if fc == UNVISITED:
            continue
        n = tree.num_children[b, ROOT]
        z = 0.0
        for j in range(n):
            z += noise[b, j]
        for j in range(n):
            saved[b, j] = tree.prior[b, fc + j]
            eta = noise[b, j] / z if z > 0 else 1.0 / n
            tree.prior[b, fc + j] = (1.0 - fraction) * saved[b, j] + fraction * eta


@njit(cache=True)
def restore_root_priors(tree: Tree, idx: np.ndarray, saved: np.ndarray) -> None:
    """Undo `mix_root_noise`: the clean priors back from `saved` (kept subtrees must not carry noise)."""
    for i in range(idx.shape[0]):
        b = idx[i]
        fc = tree.first_child[b, ROOT]
        if fc == UNVISITED:
            continue
        for j in range(tree.num_children[b, ROOT]):
            tree.prior[b, fc + j] = saved[b, j]


@njit(cache=True)
def puct_outputs(
    tree: Tree,
    idx: np.ndarray,
    temperature: np.ndarray,
    u: np.ndarray,
    policy: np.ndarray,
    action: np.ndarray,
    value: np.ndarray,
    visits: np.ndarray,
) -> None:
    """Per searched game `b`: `policy[b]` the root visit distribution (the priors before any visit),
    `action[b]` drawn from N^(1/T) with the uniform draw `u[b]` when `temperature[b] > 0`, else the
    most visited (ties: higher Q, then the first generated); `value[b]` the root's mean value (side to
    move); `visits[b]` the root children's visits."""
    weights = np.empty(K.MAX_MOVES, dtype=np.float64)
    for i in range(idx.shape[0]):
        b = idx[i]
        fc = tree.first_child[b, ROOT]
        if fc == UNVISITED:
            continue
        value[b] = tree.value_sum[b, ROOT] / max(tree.visits[b, ROOT], 1)
        n = tree.num_children[b, ROOT]
        sum_n = root_visits(tree, b, visits[b])
        for j in range(n):
            c = fc + j
            p = tree.visits[b, c] / sum_n if sum_n > 0 else tree.prior[b, c]
            policy[b, tree.action[b, c]] = p
        best = 0
        if temperature[b] > 0 and sum_n > 0:
            top_n = 0
            for j in range(n):
                top_n = max(top_n, tree.visits[b, fc + j])
            z = 0.0
            for j in range(n):
                weights[j] = (tree.visits[b, fc + j] / top_n) ** (1.0 / temperature[b])
                z += weights[j]
            r = u[b] * z
            best = n - 1
            acc = 0.0
            for j in range(n):
                acc += weights[j]
                if r < acc and weights[j] > 0:
                    best = j
                    break
        else:
            best_key0 = -1.0
            best_key1 = -1e30
            for j in range(n):
                c = fc + j
                v = tree.visits[b, c]
                key0 = float(v) if sum_n > 0 else tree.prior[b, c]
                key1 = child_q(tree, b, c) if v > 0 else -2.0
                if key0 > best_key0 or (key0 == best_key0 and key1 > best_key1):
                    best_key0 = key0
                    best_key1 = key1
                    best = j
        action[b] = tree.action[b, fc + best]


class Puct(RootPolicy):
    """AlphaZero's root policy for `BatchedMCTS`: Dirichlet noise and a move temperature per game slot."""

    name = "puct"
    simulate = staticmethod(simulate_puct)
    simulate_lanes = staticmethod(simulate_puct_lanes)

    def allocate(self, n: int) -> None:
        """Room for `n` game slots."""
        self._mixed = np.zeros(n, dtype=np.bool_)
        """Games whose root priors take (or, once the root is evaluated, hold) Dirichlet noise this search."""
        self._noise = np.zeros((n, K.MAX_MOVES), dtype=np.float64)
        self._saved = np.zeros((n, K.MAX_MOVES), dtype=np.float32)
        self._temperature = np.zeros(n, dtype=np.float64)
        self._u = np.zeros(n, dtype=np.float64)

    noise_width = K.MAX_MOVES + 1

    def fill_noise(self, rng: np.random.Generator, searches: int) -> np.ndarray:
        """Per search: MAX_MOVES Gamma(alpha) draws (the Dirichlet noise before normalising; 1 when alpha
        is 0), then the uniform draw of the move."""
        alpha = self.config.puct.dirichlet_alpha
        rows = np.ones((searches, self.noise_width), dtype=np.float64)
        for r in range(searches):  # the draws interleave as the searches take them
            if alpha > 0:
                rows[r, : K.MAX_MOVES] = rng.gamma(alpha, size=K.MAX_MOVES)
            rows[r, K.MAX_MOVES] = rng.random()
        return rows

    def draw_noise(self, games: Any, idx: np.ndarray, noisy: np.ndarray, rows: np.ndarray, roots: Roots) -> None:
        """The noisy games' Dirichlet (Gamma) draws and move draws from their rows, and their temperature."""
        cfg = self.config.puct
        self._temperature[idx] = 0.0
        self._u[idx] = 0.0
        self._noise[noisy] = rows[noisy, : K.MAX_MOVES]
        self._u[noisy] = rows[noisy, K.MAX_MOVES]
        self._temperature[noisy] = np.where(games.state[noisy, K.S_PLY] < cfg.temperature_plies, cfg.temperature, 0.0)
        self._mixed[idx] = False
        self._mixed[noisy] = cfg.dirichlet_fraction > 0

    def after_root_evaluation(self, tree: Tree, roots: Roots, idx: np.ndarray) -> None:
        """Mix the noise into the (now expanded) root priors of the noisy games of `idx`."""
        mix_root_noise(tree, idx[self._mixed[idx]], self._noise, self.config.puct.dirichlet_fraction, self._saved)

    def outputs(self, tree: Tree, roots: Roots, params: SearchParams, idx: np.ndarray, out: Any) -> None:
        """Clean root priors back, then the targets, moves, values and visits into `out` (a SearchOutput)."""
        mixed = idx[self._mixed[idx]]
        restore_root_priors(tree, mixed, self._saved)
        self._mixed[mixed] = False
        puct_outputs(tree, idx, self._temperature, self._u, out.policy, out.action, out.root_value, out.visits)

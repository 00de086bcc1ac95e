"""Gumbel AlphaZero's search (Danihelka et al., "Policy improvement by planning with Gumbel", ICLR 2022).

At the root, Gumbel-top-k sampling of the actions and sequential halving of
the simulation budget among them (`selection.select_gumbel_root`); inside the
tree the deterministic selection `selection.select_gumbel_interior`. The
move: among the children most visited in this search, the largest
g + log prior + sigma(completed Q). Policy target: the improved policy pi'
at the root. Root value: pi''s expected completed Q (the mean of the
simulations would weigh the actions sequential halving dropped). Without
noise (g = 0) the search is deterministic.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from agents.alphazero.search.config import MCTSConfig, SearchParams
from agents.alphazero.search.policy import RootPolicy
from agents.alphazero.search.search import simulate, simulate_lanes, simulate_rounds
from agents.alphazero.search.selection import (
    considered_visits_table,
    gumbel_root_round,
    improved_policy,
    select_gumbel_interior,
    select_gumbel_root,
)
from agents.alphazero.search.tree import ROOT, UNVISITED, Lanes, Leaves, Roots, Tree, Work, root_visits
from envs import kernels as K
from envs.tablebase.probe import TablebaseArrays


@njit(cache=True)
def simulate_gumbel(
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
    """`search.simulate` with sequential halving at the root and Gumbel selection below (the cached entry point)."""
    return simulate(
        tree, work, roots, leaves, flags, params, tb, idx, steps, uniform, select_gumbel_root, select_gumbel_interior
    )


@njit(cache=True)
def simulate_gumbel_lanes(
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
    return simulate_lanes(
        tree, work, roots, leaves, lanes, flags, params, tb, idx, width, select_gumbel_root, select_gumbel_interior
    )


@njit(cache=True)
def simulate_gumbel_rounds(
    tree: Tree,
    work: Work,
    roots: Roots,
    leaves: Leaves,
    lanes: Lanes,
    flags: np.ndarray,
    params: SearchParams,
    tb: TablebaseArrays,
    idx: np.ndarray,
    picks: np.ndarray,
) -> int:
    """`search.simulate_rounds` with sequential halving's order-free runs (`selection.gumbel_root_round`):
    the simulations of a run that visits every child it could, or the Gumbel-top-k's first visits, share
    one network call (the cached entry point)."""
    return simulate_rounds(
        tree,
        work,
        roots,
        leaves,
        lanes,
        flags,
        params,
        tb,
        idx,
        picks,
        gumbel_root_round,
        select_gumbel_root,
        select_gumbel_interior,
    )


@njit(cache=True)
def gumbel_outputs(
    tree: Tree,
    roots: Roots,
    params: SearchParams,
    idx: np.ndarray,
    policy: np.ndarray,
    action: np.ndarray,
    value: np.ndarray,
    visits: np.ndarray,
) -> None:
    """Per searched game `b`: `policy[b]` = pi' at the root; `action[b]` the child with the largest
    g + log prior + sigma among those most visited in this search; `value[b]` = sum pi' * completed Q
    (side to move); `visits[b]` the root children's visits."""
    qhat = np.empty(K.MAX_MOVES, dtype=np.float64)
    logits = np.empty(K.MAX_MOVES, dtype=np.float64)
    probs = np.empty(K.MAX_MOVES, dtype=np.float64)
    for i in range(idx.shape[0]):
        b = idx[i]
        fc = tree.first_child[b, ROOT]
        if fc == UNVISITED:
            continue
        n = tree.num_children[b, ROOT]
        root_visits(tree, b, visits[b])
        improved_policy(tree, b, ROOT, params, qhat, logits, probs)
        max_new = -1
        for j in range(n):
            max_new = max(max_new, tree.visits[b, fc + j] - roots.base_visits[b, j])
        best = 0
        best_score = -1e30
        improved_value = 0.0
        for j in range(n):
            policy[b, tree.action[b, fc + j]] = probs[j]
            improved_value += probs[j] * qhat[j]
            if tree.visits[b, fc + j] - roots.base_visits[b, j] == max_new:
                score = roots.gumbel[b, j] + logits[j]
                if score > best_score:
                    best_score = score
                    best = j
        value[b] = improved_value
        action[b] = tree.action[b, fc + best]


class Gumbel(RootPolicy):
    """Gumbel AlphaZero's root policy for `BatchedMCTS`: Gumbel noise (kept in `Roots`), the halving schedule."""

    name = "gumbel"
    simulate = staticmethod(simulate_gumbel)
    simulate_lanes = staticmethod(simulate_gumbel_lanes)
    simulate_rounds = staticmethod(simulate_gumbel_rounds)

    def __init__(self, config: MCTSConfig) -> None:
        super().__init__(config)
        self._tables: dict[int, np.ndarray] = {}
        """Sequential-halving tables by simulation count."""

    noise_width = K.MAX_MOVES

    def round_width(self) -> int:
        """The sampled root actions: a run of sequential halving visits each of them once at most."""
        return self.config.gumbel.max_actions

    def fill_noise(self, rng: np.random.Generator, searches: int) -> np.ndarray:
        """g ~ Gumbel(0, 1) per root child (MAX_MOVES a search)."""
        return rng.gumbel(size=(searches, K.MAX_MOVES))

    def allocate(self, n: int) -> None:
        self._noisy = np.zeros(n, dtype=np.bool_)
        """Whether each slot's search in progress was begun with noise (`draw_noise`)."""

    def draw_noise(self, games: Any, idx: np.ndarray, noisy: np.ndarray, rows: np.ndarray, roots: Roots) -> None:
        """The noisy games' Gumbel noise from their rows; 0 for the others."""
        roots.gumbel[idx] = 0.0
        roots.gumbel[noisy] = rows[noisy]
        self._noisy[idx] = False
        self._noisy[noisy] = True

    def after_root_evaluation(self, tree: Tree, roots: Roots, idx: np.ndarray) -> None:
        """Row b of the schedule: sequential halving for game b's simulation count and its number of
        sampled root actions (min(gumbel.max_actions, legal moves)); the noisy roots' floor of the prior
        (`GumbelConfig.root_uniform`)."""
        if self.config.gumbel.root_uniform > 0:
            self._floor_priors(tree, roots, idx[self._noisy[idx]])
        considered = np.minimum(self.config.gumbel.max_actions, tree.num_children[idx, ROOT])
        sims = roots.sims_target[idx]
        for count in np.unique(sims).tolist():
            sel = sims == count
            table = self._table(int(count))
            roots.schedule[idx[sel], : table.shape[1]] = table[considered[sel]]

    def _floor_priors(self, tree: Tree, roots: Roots, idx: np.ndarray) -> None:
        """Add log((1 - w) p + w / n) - log p to the Gumbel noise of each root child of the games `idx`
        (p its prior, n the root's children, w `root_uniform`): the root's selection and move, which rank
        g + log p + sigma, then rank by the floored prior; the improved policy reads the prior alone."""
        if not len(idx):
            return
        w = self.config.gumbel.root_uniform
        n = tree.num_children[idx, ROOT].astype(np.int64)
        j = np.arange(K.MAX_MOVES)
        valid = j[None, :] < n[:, None]
        nodes = np.minimum(tree.first_child[idx, ROOT].astype(np.int64)[:, None] + j, tree.prior.shape[1] - 1)
        prior = tree.prior[idx[:, None], nodes].astype(np.float64)
        floored = (1.0 - w) * prior + w / np.maximum(n, 1)[:, None]
        shift = np.log(floored) - np.log(np.maximum(prior, 1e-30))
        roots.gumbel[idx] += np.where(valid, shift, 0.0)

    def _table(self, sims: int) -> np.ndarray:
        if sims not in self._tables:
            self._tables[sims] = considered_visits_table(self.config.gumbel.max_actions, sims)
        return self._tables[sims]

    def outputs(self, tree: Tree, roots: Roots, params: SearchParams, idx: np.ndarray, out: Any) -> None:
        """Targets, moves, values and visits into `out` (a SearchOutput)."""
        gumbel_outputs(tree, roots, params, idx, out.policy, out.action, out.root_value, out.visits)

"""What a search algorithm gives the driver: `RootPolicy`, the base of `puct.Puct` and `gumbel.Gumbel`."""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.alphazero.search.base import SearchOutput
from agents.alphazero.search.config import MCTSConfig, SearchParams
from agents.alphazero.search.tree import Lanes, Leaves, Roots, Tree, Work
from envs.tablebase.probe import TablebaseArrays


class RootPolicy:
    """One search algorithm as `BatchedMCTS` uses it: its exploration noise, its simulation kernel and
    its root outputs, under the search settings it carries (`config`). A subclass sets `name` and
    `simulate` (its cached `search.simulate` entry point, which fixes its selection functions) and
    fills in `fill_noise`, `draw_noise` and `outputs`."""

    name = ""

    def __init__(self, config: MCTSConfig) -> None:
        self.config = config
        self.taken = False
        """Whether a `BatchedMCTS` searches with this policy (its per-slot state serves that one alone)."""

    def shares_calls(self, rounds: bool = True) -> bool:
        """Whether `BatchedMCTS` (with `rounds`) lets simulations that cannot see each other's evaluations
        share an evaluator call: an algorithm with such runs (`simulate_rounds`), one leaf per
        simulation step (no `leaf_batch`)."""
        return rounds and self.simulate_rounds is not None and self.config.leaf_batch == 1

    def round_width(self) -> int:
        """Most leaves one game's `simulate_rounds` queues for one evaluator call."""
        return 1

    def leaves_per_call(self, rounds: bool = True) -> int:
        """Most leaves one game's search queues for one evaluator call: `round_width` when the runs share
        calls (`shares_calls`), else `leaf_batch`."""
        return self.round_width() if self.shares_calls(rounds) else self.config.leaf_batch

    def allocate(self, n: int) -> None:
        """Room for `n` game slots (none needed by default)."""

    noise_width = 1
    """Numbers of exploration noise one game's search takes (a row of `fill_noise`)."""

    def fill_noise(self, rng: np.random.Generator, searches: int) -> np.ndarray:
        """float64 [searches, noise_width]: the noise of one game's next `searches` noisy searches, drawn
        from its generator in the order the searches take them (so drawing ahead changes no draw)."""
        raise NotImplementedError

    def draw_noise(self, games: Any, idx: np.ndarray, noisy: np.ndarray, rows: np.ndarray, roots: Roots) -> None:
        """Set up the exploration noise of the searches of the games `idx` that begin now: the games
        `noisy` (a subset) take row `rows[b]` (float64 [B, noise_width], from `fill_noise`), the others
        none. Other games' searches may be in progress: touch only the rows of `idx`. Whole-batch array
        operations, no loop over the games."""
        raise NotImplementedError

    def simulate(
        self,
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
        """`steps` simulation steps (`search.simulate` with this algorithm's selection functions)."""
        raise NotImplementedError

    def simulate_lanes(
        self,
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
        """Up to `width` leaves per game for one evaluator call, apart by virtual loss
        (`search.simulate_lanes` with this algorithm's selection functions)."""
        raise NotImplementedError

    simulate_rounds: Any = None
    """For an algorithm whose root can name simulations that do not depend on each other's evaluations:
    ``simulate_rounds(tree, work, roots, leaves, lanes, flags, params, tb, idx, picks) -> k``, the leaves of
    as many of them as it can for one evaluator call (`search.simulate_rounds`); None: one per game."""

    def after_root_evaluation(self, tree: Tree, roots: Roots, idx: np.ndarray) -> None:
        """Set up the roots of the games `idx` once their children and priors are known (nothing by
        default)."""

    def outputs(self, tree: Tree, roots: Roots, params: SearchParams, idx: np.ndarray, out: SearchOutput) -> None:
        """Write the targets, moves, root values and visits of the finished searches of the games `idx`
        into their rows of `out`."""
        raise NotImplementedError

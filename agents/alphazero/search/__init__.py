"""Batched Monte Carlo tree search for Jungle: PUCT and Gumbel AlphaZero over flat numba arrays.

One `BatchedMCTS` searches B games at once (one tree per game, the games of an
`envs.batch.GameBatch`). A simulation step selects one leaf per active game, expands it
with the rules kernels, and makes ONE evaluator call for all the leaves that
need the network; terminal leaves (and finished or inactive games) skip it.

Value convention (the only one in this package): **a value is from the view of
the side to move in the position it belongs to**, in [-1, 1] (+1: the side to
move wins). Every ply flips the sign, so a backup negates the value at each
step up the path. Terminal nodes (den, all captured, no moves, repetition,
no-capture limit: the kernels' `outcome` order) hold their exact value.
Repetition is judged on the game's hash history plus the path.

The modules, in the order of mctx's split:

* `base`      the shared types: `Evaluator`, `SearchOutput`, the uniform evaluator
* `config`    `MCTSConfig` (the Hydra group ``configs/mcts/``): the common fields and a node per
              algorithm (`PuctConfig`, `GumbelConfig`), and the constants the kernels read
* `tree`      the arrays (`Tree`, per-game scratch), named sentinels, reset / reroot / find_child
* `selection` selection maths per algorithm: PUCT, completed Q, sigma, Gumbel interior and root
              selection, the sequential-halving schedule
* `search`    the select / expand / evaluate / backup loop, taking the selection functions as arguments
* `policy`    `RootPolicy`, what an algorithm gives the driver
* `puct`, `gumbel`  each algorithm: its cached loop entry point, root noise, targets and moves
* `driver`    `BatchedMCTS`, the stateful driver (evaluator calls, per-game generators, subtree reuse)

This package picks the algorithm by name (`make_policy`); the driver searches with the policy it is given:

    games = GameBatch(64, RuleSet())
    mcts = BatchedMCTS(uniform_evaluator, make_policy(MCTSConfig(algorithm="gumbel")), games.flags, seed=0)
    out = mcts.search(games)                    # out.policy [64, 252], out.action [64]
"""

from agents.alphazero.search.base import Evaluator, SearchOutput, UniformEvaluator, uniform_evaluator
from agents.alphazero.search.config import (
    ALGORITHMS,
    GumbelConfig,
    MCTSConfig,
    MCTSConfigError,
    PuctConfig,
    SearchParams,
    migrate_flat_mcts,
)
from agents.alphazero.search.driver import BatchedMCTS, search_tables
from agents.alphazero.search.gumbel import Gumbel
from agents.alphazero.search.policy import RootPolicy
from agents.alphazero.search.puct import Puct
from agents.alphazero.search.selection import considered_visits
from agents.alphazero.search.tree import NO_PARENT, ROOT, UNVISITED, Tree

ROOT_POLICIES: dict[str, type[RootPolicy]] = {"puct": Puct, "gumbel": Gumbel}
"""Root policy of each `MCTSConfig.algorithm`."""


def make_policy(config: MCTSConfig) -> RootPolicy:
    """The root policy `config.algorithm` names, carrying `config`: what a `BatchedMCTS` searches with
    (a new one for each, since it keeps per-slot state)."""
    return ROOT_POLICIES[config.algorithm](config)


def shares_calls(config: MCTSConfig, rounds: bool = True) -> bool:
    """Whether `BatchedMCTS` (with `rounds`) lets simulations that cannot see each other's evaluations
    share an evaluator call under `config` (`RootPolicy.shares_calls`)."""
    return make_policy(config).shares_calls(rounds)


def leaves_per_call(config: MCTSConfig, rounds: bool = True) -> int:
    """Most leaves one game's search queues for one evaluator call under `config`
    (`RootPolicy.leaves_per_call`)."""
    return make_policy(config).leaves_per_call(rounds)


__all__ = [
    "ALGORITHMS",
    "GumbelConfig",
    "MCTSConfig",
    "MCTSConfigError",
    "PuctConfig",
    "SearchParams",
    "migrate_flat_mcts",
    "ROOT_POLICIES",
    "BatchedMCTS",
    "Evaluator",
    "RootPolicy",
    "SearchOutput",
    "UniformEvaluator",
    "uniform_evaluator",
    "considered_visits",
    "leaves_per_call",
    "make_policy",
    "shares_calls",
    "NO_PARENT",
    "ROOT",
    "UNVISITED",
    "Tree",
    "search_tables",
]

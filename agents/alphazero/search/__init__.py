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

* `config`    `MCTSConfig` (the Hydra group ``configs/mcts/``) and the constants the kernels read
* `tree`      the arrays (`Tree`, per-game scratch), named sentinels, reset / reroot / find_child
* `selection` selection maths per algorithm: PUCT, completed Q, sigma, Gumbel interior and root
              selection, the sequential-halving schedule
* `search`    the select / expand / evaluate / backup loop, taking the selection functions as arguments
* `policy`    `RootPolicy`, what an algorithm gives the driver
* `puct`, `gumbel`  each algorithm: its cached loop entry point, root noise, targets and moves
* `driver`    `BatchedMCTS`, the stateful driver (evaluator calls, per-game generators, subtree reuse)

    games = GameBatch(64, RuleSet())
    mcts = BatchedMCTS(uniform_evaluator, MCTSConfig(algorithm="gumbel"), games.flags, seed=0)
    out = mcts.search(games)                    # out.policy [64, 252], out.action [64]
"""

from agents.alphazero.search.config import ALGORITHMS, MCTSConfig, MCTSConfigError, SearchParams
from agents.alphazero.search.driver import ROOT_POLICIES, BatchedMCTS, Evaluator, SearchOutput, uniform_evaluator
from agents.alphazero.search.policy import RootPolicy
from agents.alphazero.search.selection import considered_visits
from agents.alphazero.search.tree import NO_PARENT, ROOT, UNVISITED, Tree

__all__ = [
    "ALGORITHMS", "MCTSConfig", "MCTSConfigError", "SearchParams", "ROOT_POLICIES", "BatchedMCTS", "Evaluator",
    "RootPolicy", "SearchOutput", "uniform_evaluator", "considered_visits", "NO_PARENT", "ROOT", "UNVISITED", "Tree",
]

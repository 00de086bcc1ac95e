"""Settings of the tree search: `MCTSConfig` (group ``configs/mcts/``), a node per algorithm, the kernels' constants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple

from envs.config import ConfigError, check_choice, check_range, config_kwargs, shown
from envs.encoding import N_ACTIONS
from envs.rules import COUNTER_LIMIT

ALGORITHMS = ("puct", "gumbel")
"""Search algorithms by name (`search.ROOT_POLICIES` maps each to its selection rules and outputs)."""


class MCTSConfigError(ConfigError):
    """An unknown or invalid search setting."""


MAX_SIMULATIONS = 100_000
"""The most simulations one search makes (a game's tree holds about 2 KB per simulation)."""
MAX_LEAF_BATCH = 256
"""The most leaves one game's search evaluates per network call."""


class SearchParams(NamedTuple):
    """The numbers the numba kernels read, typed once (float64, int64, bool) so each kernel compiles once."""

    c_puct: float
    fpu_reduction: float
    c_visit: float
    c_scale: float
    max_depth: int
    decisive: bool
    solver: bool
    draw_value: float
    tablebase: bool


@dataclass
class PuctConfig:
    """Settings of AlphaZero's PUCT search (the node ``mcts.puct``; read when ``mcts.algorithm=puct``)."""

    c_puct: float = 1.25
    """PUCT exploration constant; >= 0."""
    dirichlet_alpha: float = 0.3
    """Concentration of the Dirichlet noise on the root priors (self-play only); >= 0."""
    dirichlet_fraction: float = 0.25
    """Weight of the noise in the root priors (self-play only), in [0, 1]."""
    fpu_reduction: float = 0.25
    """First-play urgency: an unvisited child is valued at the parent's value minus
    this times the square root of the prior mass already visited; any finite number."""
    temperature: float = 1.0
    """Visit-count temperature for the move played in the first plies (self-play only); >= 0."""
    temperature_plies: int = 20
    """Plies of the game (from its start) played with the temperature; later moves are the most visited.
    0 to `envs.rules.COUNTER_LIMIT`."""

    def __post_init__(self) -> None:
        check_range(
            self,
            "mcts.puct",
            MCTSConfigError,
            temperature_plies=(0, COUNTER_LIMIT),
            c_puct=(0, None),
            dirichlet_alpha=(0, None),
            temperature=(0, None),
            dirichlet_fraction=(0, 1),
            fpu_reduction=(None, None),
        )


@dataclass
class GumbelConfig:
    """Settings of Gumbel AlphaZero's search (the node ``mcts.gumbel``; read when ``mcts.algorithm=gumbel``)."""

    max_actions: int = 16
    """Root actions sampled by Gumbel-top-k, halved each phase of sequential halving; 1 to 252."""
    c_visit: float = 50.0
    """c_visit of sigma(q) = (c_visit + max N) * c_scale * q01; >= 0."""
    c_scale: float = 1.0
    """c_scale of sigma(q); >= 0."""
    root_uniform: float = 0.0
    """Weight of the uniform policy mixed into the prior at a root searched with noise (self-play): its
    Gumbel-top-k samples, and sequential halving ranks, the legal moves by
    g + log((1 - w) prior + w / moves) + sigma(q), so a move the network gives almost nothing is still
    searched now and then; the improved-policy target stays on the network's own prior. 0 (off) to 1."""

    def __post_init__(self) -> None:
        check_range(
            self,
            "mcts.gumbel",
            MCTSConfigError,
            max_actions=(1, N_ACTIONS),
            c_visit=(0, None),
            c_scale=(0, None),
            root_uniform=(0, 1),
        )


NODES: dict[str, type] = {"puct": PuctConfig, "gumbel": GumbelConfig}
"""The node of each algorithm's own settings in `MCTSConfig`, by field name."""

FLAT_KEYS: dict[str, tuple[str, str]] = {
    **{
        key: ("puct", key)
        for key in (
            "c_puct",
            "dirichlet_alpha",
            "dirichlet_fraction",
            "fpu_reduction",
            "temperature",
            "temperature_plies",
        )
    },
    **{f"gumbel_{key}": ("gumbel", key) for key in ("max_actions", "c_visit", "c_scale")},
}
"""Keys of the earlier flat layout of the search settings (``mcts.c_puct``, ``mcts.gumbel_max_actions``) and
where each now sits (``mcts.puct.c_puct``, ``mcts.gumbel.max_actions``); configs stored in checkpoints
before the split still hold them."""


def migrate_flat_mcts(values: Mapping[str, Any]) -> dict[str, Any]:
    """A search node (``mcts``) with the keys of the earlier flat layout (`FLAT_KEYS`) moved into their
    algorithm's node, so that a config stored by an earlier version reads as it meant; a key given both
    ways takes the flat value. Everything else (unknown keys, a node that is not a mapping) is kept as it
    is, for the schema to check."""
    out = dict(values)
    for key, (node, name) in FLAT_KEYS.items():
        if key in out and isinstance(out.get(node, {}), Mapping):
            out[node] = {**out.get(node, {}), name: out.pop(key)}
    return out


@dataclass
class MCTSConfig:
    """Settings of the tree search (the Hydra group ``configs/mcts/``): the common fields, and a node per
    algorithm (`puct`, `gumbel`) of which `algorithm` names the one read."""

    algorithm: str = "gumbel"
    """Root policy: ``puct`` (AlphaZero) or ``gumbel`` (Gumbel AlphaZero)."""
    num_simulations: int = 32
    """New simulations per search (reused subtrees come on top); 0 to `MAX_SIMULATIONS`."""
    reuse_tree: bool = True
    """Keep the subtree of the move played for the next search."""
    max_depth: int = 256
    """Longest path from the root; a deeper leaf is evaluated without being expanded. 1 to
    `envs.rules.COUNTER_LIMIT`."""
    decisive_moves: bool = True
    """A leaf (not the root) whose side to move can win at once (enter the den, take the last
    piece) is a proven win: exact value +1, no network call (the "decisive moves" enhancement of
    Teytaud & Teytaud, 2010). Exact tactics then reach one ply further at almost no cost."""
    leaf_batch: int = 1
    """Leaves one game selects per network call, kept apart by virtual loss (each path counts as a
    visit lost for the side choosing it until its evaluation is backed up). 1: one leaf per game per
    call, the self-play default; 8-16 serve single-game searches (the checkpoint player,
    the play page, equal-time matches), whose one-position network calls are slow. 1 to `MAX_LEAF_BATCH`."""
    solver: bool = True
    """MCTS-solver (Winands et al., 2008): exact results climb the tree. A node with a child lost for
    the opponent is a proven win; a node whose children are all proven is proven with the best of
    them (a loss when all win for the opponent). Proven nodes are searched no further, their exact
    value is their Q, and the move played is a proven win when there is one and never a proven loss
    while another move is open; the root value is then exact."""

    tablebase: bool = False
    """Endgame tables as proven results: a position below the root that the built tables hold
    (``python -m envs tablebase build``) is terminal with its exact value under the no-capture rule
    at its clock (a cursed win is a draw), no network call, and the solver climbs from it; a root
    the tables hold plays the table's best move. The tables of the rules' default location are
    opened (`envs.tablebase.default_tablebase`): a missing build is an error naming the command."""
    draw_value: float = 0.0
    """Value of a drawn end (repetition, no-capture limit) for the side to move at the root: 0 by the
    rules; below 0 a contempt for draws, the searching side steers away from repetitions unless every
    other move looks worse than the draw (self-play sets it from ``train.selfplay.draw_contempt``); in [-1, 1].
    Each search's draws are valued for its own root side, so while it is not 0 no subtree is kept
    from one move to the next (`reuse_tree` has no effect)."""
    puct: PuctConfig = field(default_factory=PuctConfig)
    """PUCT's own settings (``mcts.puct.c_puct``, ...), read when `algorithm` is ``puct``."""
    gumbel: GumbelConfig = field(default_factory=GumbelConfig)
    """Gumbel's own settings (``mcts.gumbel.max_actions``, ...), read when `algorithm` is ``gumbel``."""

    def __post_init__(self) -> None:
        check_choice(self, "mcts", MCTSConfigError, algorithm=ALGORITHMS)
        check_range(
            self,
            "mcts",
            MCTSConfigError,
            num_simulations=(0, MAX_SIMULATIONS),
            max_depth=(1, COUNTER_LIMIT),
            leaf_batch=(1, MAX_LEAF_BATCH),
            draw_value=(-1, 1),
        )
        for name, node in NODES.items():
            if not isinstance(getattr(self, name), node):
                raise MCTSConfigError(f"mcts.{name} must be a {node.__name__}, got {shown(getattr(self, name))}")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "MCTSConfig":
        """Build from a mapping (a Hydra node, a stored config's ``mcts``, nested or in the earlier flat
        layout: `migrate_flat_mcts`); unknown keys are errors (``name`` is ignored)."""
        kwargs = config_kwargs(cls, migrate_flat_mcts(values), "mcts", MCTSConfigError)
        for name, node in NODES.items():
            if isinstance(kwargs.get(name), Mapping):
                kwargs[name] = node(**config_kwargs(node, kwargs[name], f"mcts.{name}", MCTSConfigError))
        return cls(**kwargs)

    def params(self) -> SearchParams:
        """The constants the kernels read."""
        return SearchParams(
            c_puct=float(self.puct.c_puct),
            fpu_reduction=float(self.puct.fpu_reduction),
            c_visit=float(self.gumbel.c_visit),
            c_scale=float(self.gumbel.c_scale),
            max_depth=int(self.max_depth),
            decisive=bool(self.decisive_moves),
            solver=bool(self.solver),
            draw_value=float(self.draw_value),
            tablebase=bool(self.tablebase),
        )

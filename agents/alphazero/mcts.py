"""Batched Monte Carlo tree search for Jungle: PUCT and Gumbel AlphaZero over flat numba arrays.

One `BatchedMCTS` searches B games at once (one tree per game, the games of a
`GameBatch`). A simulation step selects one leaf per active game, expands it
with the rules kernels, and makes ONE evaluator call for all the leaves that
need the network; terminal leaves (and finished or inactive games) skip it.

Value convention (the only one in this module): **a value is from the view of
the side to move in the position it belongs to**, in [-1, 1] (+1: the side to
move wins). A node's ``value_sum`` and ``raw_value`` are from the view of the
side to move AT that node; its parent, where the other side is to move, sees
``Q(parent, child) = -value_sum[child] / visits[child]``. Every ply flips the
sign, so a backup negates the value at each step up the path.

The tree of game ``b`` lives in the rows ``[b, :]`` of flat arrays (`Tree`):
node ``ROOT`` (0) is the position being searched, the children of a node are
the contiguous range ``first_child .. first_child + num_children - 1`` (one
per legal move, in the kernels' generation order), and ``first_child`` is
``UNVISITED`` until the node is first reached and expanded. Terminal nodes
(den, all captured, no moves, repetition, no-capture limit: the kernels'
`outcome` order) hold their exact value in ``raw_value``. Repetition is judged
on the game's hash history plus the path: the search keeps, per game, a copy of
the game's ``hist``/``hashes`` that the path's moves are written after.

Root policies (`MCTSConfig.algorithm`):

* ``puct`` — AlphaZero: PUCT selection with Dirichlet noise on the root priors,
  first-play urgency (unvisited children get the parent's value minus
  ``fpu_reduction * sqrt(visited prior mass)``), the move drawn from the root
  visit counts with a temperature for the first plies, then the most visited.
  Policy target: the root visit distribution.
* ``gumbel`` — Gumbel AlphaZero (Danihelka et al., "Policy improvement by
  planning with Gumbel", ICLR 2022): Gumbel-top-k sampling of the root actions
  and sequential halving of the simulation budget among them; inside the tree
  the deterministic selection ``argmax(pi' - N / (1 + sum N))`` with the
  completed-Q improved policy ``pi' = softmax(log prior + sigma(completed Q))``,
  ``sigma(q) = (c_visit + max N) * c_scale * (q + 1) / 2`` (values lie in
  [-1, 1], so the min-max normalisation of the paper is the fixed map to [0, 1]).
  Policy target: ``pi'`` at the root.

Determinism: game slot ``b`` draws its noise from its own generator (seeded from
``(seed, b)`` or by `BatchedMCTS.reseed`), so a game's search does not depend on
the other games of the batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Optional

import numpy as np
from numba import njit

from envs import kernels as K
from envs.config import config_kwargs
from envs.encoding import N_ACTIONS, OBS_SHAPE, encode_observation, legal_action_mask, move_to_action

Evaluator = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""(obs float32 [n, 24, 9, 7], mask bool [n, 252]) -> (logits float32 [n, 252], value float32 [n]).

The value is from the view of the side to move in each position, in [-1, 1].
Logits of illegal actions are ignored (the search reads only legal ones). The
arrays passed in are buffers reused by the next call: copy them to keep them."""

ROOT = 0
"""Index of the root node in every game's tree."""
UNVISITED = -1
"""``first_child`` of a node never reached by a simulation (no children yet)."""
NO_PARENT = -1
"""``parent`` of the root."""

PUCT = 0
GUMBEL = 1
ALGORITHMS = {"puct": PUCT, "gumbel": GUMBEL}

# Indices into the float64 parameter vector the kernels read.
P_ALGORITHM = 0
P_C_PUCT = 1
P_FPU_REDUCTION = 2
P_C_VISIT = 3
P_C_SCALE = 4
P_MAX_DEPTH = 5
P_DECISIVE = 6
N_PARAMS = 7

# What `expand` found at a leaf.
LEAF_TERMINAL = 0  # the game is over there: exact value, no network
LEAF_EXPANDED = 1  # children allocated now: the network gives priors and a value
LEAF_EVALUATE = 2  # no room or too deep to expand: the network gives a value only


class MCTSConfigError(ValueError):
    """An unknown or invalid search setting."""


@dataclass
class MCTSConfig:
    """Settings of the tree search (the Hydra group ``configs/mcts/``)."""

    algorithm: str = "gumbel"
    """Root policy: ``puct`` (AlphaZero) or ``gumbel`` (Gumbel AlphaZero)."""
    num_simulations: int = 32
    """New simulations per search (reused subtrees come on top)."""
    c_puct: float = 1.25
    """PUCT exploration constant (puct)."""
    dirichlet_alpha: float = 0.3
    """Concentration of the Dirichlet noise on the root priors (puct, self-play only)."""
    dirichlet_fraction: float = 0.25
    """Weight of the noise in the root priors (puct, self-play only)."""
    fpu_reduction: float = 0.25
    """First-play urgency: an unvisited child is valued at the parent's value minus
    this times the square root of the prior mass already visited (puct)."""
    temperature: float = 1.0
    """Visit-count temperature for the move played in the first plies (puct, self-play only)."""
    temperature_plies: int = 20
    """Plies of the game (from its start) played with the temperature; later moves are the most visited."""
    gumbel_max_actions: int = 16
    """Root actions sampled by Gumbel-top-k, halved each phase of sequential halving (gumbel)."""
    gumbel_c_visit: float = 50.0
    """c_visit of sigma(q) = (c_visit + max N) * c_scale * q01 (gumbel)."""
    gumbel_c_scale: float = 1.0
    """c_scale of sigma(q) (gumbel)."""
    reuse_tree: bool = True
    """Keep the subtree of the move played for the next search."""
    max_depth: int = 256
    """Longest path from the root; a deeper leaf is evaluated without being expanded."""
    decisive_moves: bool = True
    """A leaf (not the root) whose side to move can win at once (enter the den, take the last
    piece) is a proven win: exact value +1, no network call (the "decisive moves" enhancement of
    Teytaud & Teytaud, 2010). Exact tactics then reach one ply further at almost no cost."""

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise MCTSConfigError(f"mcts algorithm {self.algorithm!r} is not one of {', '.join(ALGORITHMS)}")
        for name in ("num_simulations", "temperature_plies", "gumbel_max_actions", "max_depth"):
            if int(getattr(self, name)) < (1 if name in ("gumbel_max_actions", "max_depth") else 0):
                raise MCTSConfigError(f"mcts {name}={getattr(self, name)!r} is out of range")
        for name in ("c_puct", "dirichlet_alpha", "temperature", "gumbel_c_visit", "gumbel_c_scale"):
            if not float(getattr(self, name)) >= 0:
                raise MCTSConfigError(f"mcts {name}={getattr(self, name)!r} must be >= 0")
        if not 0.0 <= float(self.dirichlet_fraction) <= 1.0:
            raise MCTSConfigError(f"mcts dirichlet_fraction={self.dirichlet_fraction!r} must lie in [0, 1]")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "MCTSConfig":
        """Build from a mapping (a Hydra node); unknown keys are errors (``name`` is ignored)."""
        return cls(**config_kwargs(cls, values, "mcts", MCTSConfigError))

    def params(self) -> np.ndarray:
        """The float64[N_PARAMS] vector the kernels read."""
        p = np.zeros(N_PARAMS, dtype=np.float64)
        p[P_ALGORITHM] = ALGORITHMS[self.algorithm]
        p[P_C_PUCT] = self.c_puct
        p[P_FPU_REDUCTION] = self.fpu_reduction
        p[P_C_VISIT] = self.gumbel_c_visit
        p[P_C_SCALE] = self.gumbel_c_scale
        p[P_MAX_DEPTH] = self.max_depth
        p[P_DECISIVE] = 1.0 if self.decisive_moves else 0.0
        return p


@dataclass
class SearchOutput:
    """Result of one `BatchedMCTS.search` for B games (rows of inactive games are zero, action -1)."""

    policy: np.ndarray
    """float32 [B, 252]: training target (PUCT: visit distribution; Gumbel: completed-Q improved policy); 0 off the legal actions."""
    action: np.ndarray
    """int64 [B]: the action to play (canonical index), -1 for inactive games."""
    root_value: np.ndarray
    """float32 [B]: the root's value from the side to move's view (PUCT: mean of the simulations; Gumbel:
    expected completed Q under the improved policy)."""
    visits: np.ndarray
    """int32 [B, 252]: visits of the root's children (reused ones included)."""


def uniform_evaluator(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zero logits (uniform priors over the legal actions) and zero values; `BatchedMCTS`
    recognises it and runs the whole search inside numba."""
    n = obs.shape[0]
    return np.zeros((n, N_ACTIONS), dtype=np.float32), np.zeros(n, dtype=np.float32)


class Tree(NamedTuple):
    """The search trees of B games, N nodes each (see the module docstring)."""

    parent: np.ndarray  # int32 [B, N]
    action: np.ndarray  # int16 [B, N]: canonical action (in the parent's frame) leading here
    move: np.ndarray  # int16 [B, N]: kernel move leading here
    first_child: np.ndarray  # int32 [B, N]: UNVISITED until expanded
    num_children: np.ndarray  # int16 [B, N]
    visits: np.ndarray  # int32 [B, N]
    value_sum: np.ndarray  # float32 [B, N]: side to move at the node
    prior: np.ndarray  # float32 [B, N]: P(action leading here) from the parent's policy
    raw_value: np.ndarray  # float32 [B, N]: evaluator's (or the exact terminal) value, side to move at the node
    terminal: np.ndarray  # bool [B, N]
    num_nodes: np.ndarray  # int32 [B]


class Work(NamedTuple):
    """Per-game scratch of the search."""

    root_state: np.ndarray  # int16 [B, STATE_LEN]: the position searched
    leaf_state: np.ndarray  # int16 [B, STATE_LEN]: position at the end of the current path
    hist: np.ndarray  # int16 [B, H, 5]: game history, then the path's moves
    hashes: np.ndarray  # uint64 [B, H + 1]
    path: np.ndarray  # int32 [B, max_depth + 1]: nodes from the root to the leaf
    depth: np.ndarray  # int32 [B]: length of the current path in plies
    leaf_status: np.ndarray  # int8 [B]: LEAF_* of the leaf awaiting the evaluator


def new_tree(n_games: int, max_nodes: int) -> Tree:
    shape = (n_games, max_nodes)
    tree = Tree(
        parent=np.full(shape, NO_PARENT, dtype=np.int32),
        action=np.zeros(shape, dtype=np.int16),
        move=np.zeros(shape, dtype=np.int16),
        first_child=np.full(shape, UNVISITED, dtype=np.int32),
        num_children=np.zeros(shape, dtype=np.int16),
        visits=np.zeros(shape, dtype=np.int32),
        value_sum=np.zeros(shape, dtype=np.float32),
        prior=np.zeros(shape, dtype=np.float32),
        raw_value=np.zeros(shape, dtype=np.float32),
        terminal=np.zeros(shape, dtype=np.bool_),
        num_nodes=np.ones(n_games, dtype=np.int32),
    )
    return tree


# --- tree kernels ------------------------------------------------------------------------
@njit(cache=True)
def reset_tree(tree: Tree, b: int) -> None:
    """Empty game `b`'s tree: an unvisited root only."""
    tree.parent[b, ROOT] = NO_PARENT
    tree.first_child[b, ROOT] = UNVISITED
    tree.num_children[b, ROOT] = 0
    tree.visits[b, ROOT] = 0
    tree.value_sum[b, ROOT] = 0.0
    tree.prior[b, ROOT] = 1.0
    tree.raw_value[b, ROOT] = 0.0
    tree.terminal[b, ROOT] = False
    tree.num_nodes[b] = 1


@njit(cache=True, inline="always")
def child_q(tree: Tree, b: int, c: int) -> float:
    """Q of child `c` from its parent's side to move (the negated mean of the child)."""
    return -tree.value_sum[b, c] / tree.visits[b, c]


@njit(cache=True)
def completed_q(tree: Tree, b: int, node: int, out: np.ndarray) -> int:
    """`out[j]` = completed Q of the j-th child of `node` (parent's view); returns the children's max visits.

    A visited child has its mean value; an unvisited one gets the node's
    mixed value v_mix: its raw value mixed with the prior-weighted Q of the
    visited children (Gumbel AlphaZero, appendix D)."""
    fc = tree.first_child[b, node]
    n = tree.num_children[b, node]
    sum_n = 0
    max_n = 0
    sum_p = 0.0
    sum_pq = 0.0
    for j in range(n):
        c = fc + j
        v = tree.visits[b, c]
        if v > 0:
            sum_n += v
            if v > max_n:
                max_n = v
            p = max(tree.prior[b, c], 1e-30)
            sum_p += p
            sum_pq += p * child_q(tree, b, c)
    v_mix = tree.raw_value[b, node]
    if sum_n > 0:
        v_mix = (v_mix + sum_n * (sum_pq / sum_p)) / (1.0 + sum_n)
    for j in range(n):
        c = fc + j
        out[j] = child_q(tree, b, c) if tree.visits[b, c] > 0 else v_mix
    return max_n


@njit(cache=True)
def completed_sigma(tree: Tree, b: int, node: int, params: np.ndarray, out: np.ndarray) -> None:
    """`out[j]` = sigma(completed Q) = (c_visit + max N) * c_scale * (q + 1) / 2 for the j-th child of `node`."""
    max_n = completed_q(tree, b, node, out)
    scale = (params[P_C_VISIT] + max_n) * params[P_C_SCALE] * 0.5
    for j in range(tree.num_children[b, node]):
        out[j] = scale * (out[j] + 1.0)


@njit(cache=True)
def select_puct(tree: Tree, b: int, node: int, params: np.ndarray) -> int:
    """The child maximising Q + c_puct * P * sqrt(sum N) / (1 + N), unvisited children at the FPU value."""
    fc = tree.first_child[b, node]
    n = tree.num_children[b, node]
    sum_n = 0
    visited_p = 0.0
    for j in range(n):
        v = tree.visits[b, fc + j]
        if v > 0:
            sum_n += v
            visited_p += tree.prior[b, fc + j]
    parent_q = tree.value_sum[b, node] / max(tree.visits[b, node], 1)
    fpu = parent_q - params[P_FPU_REDUCTION] * math.sqrt(visited_p)
    explore = params[P_C_PUCT] * math.sqrt(max(sum_n, 1))
    best = fc
    best_score = -1e30
    for j in range(n):
        c = fc + j
        v = tree.visits[b, c]
        q = child_q(tree, b, c) if v > 0 else fpu
        score = q + explore * tree.prior[b, c] / (1.0 + v)
        if score > best_score:
            best_score = score
            best = c
    return best


@njit(cache=True)
def select_gumbel_interior(tree: Tree, b: int, node: int, params: np.ndarray) -> int:
    """Deterministic Gumbel selection: argmax over children of pi'(a) - N(a) / (1 + sum N), with
    pi' = softmax(log prior + sigma(completed Q)).

    All unvisited children share the completed Q v_mix and N = 0, so among
    them only the largest prior can win: one exp for them all."""
    fc = tree.first_child[b, node]
    n = tree.num_children[b, node]
    sum_n = 0
    max_n = 0
    sum_p = 0.0
    sum_pq = 0.0
    best_unvisited = -1
    best_unvisited_p = -1.0
    unvisited_p = 0.0
    top_q = -2.0
    for j in range(n):
        c = fc + j
        v = tree.visits[b, c]
        p = tree.prior[b, c]
        if v > 0:
            q = child_q(tree, b, c)
            sum_n += v
            if v > max_n:
                max_n = v
            sum_p += max(p, 1e-30)
            sum_pq += max(p, 1e-30) * q
            if q > top_q:
                top_q = q
        else:
            unvisited_p += p
            if p > best_unvisited_p:
                best_unvisited_p = p
                best_unvisited = c
    v_mix = tree.raw_value[b, node]
    if sum_n > 0:
        v_mix = (v_mix + sum_n * (sum_pq / sum_p)) / (1.0 + sum_n)
    if best_unvisited >= 0 and v_mix > top_q:
        top_q = v_mix
    scale = (params[P_C_VISIT] + max_n) * params[P_C_SCALE] * 0.5
    # pi'(a) = prior(a) * exp(scale * (q(a) - top_q)) / z
    e_unvisited = math.exp(scale * (v_mix - top_q))
    z = unvisited_p * e_unvisited
    for j in range(n):
        c = fc + j
        if tree.visits[b, c] > 0:
            z += tree.prior[b, c] * math.exp(scale * (child_q(tree, b, c) - top_q))
    best = best_unvisited
    best_score = -1e30
    if best_unvisited >= 0:
        best_score = best_unvisited_p * e_unvisited / z
    inv = 1.0 / (1.0 + sum_n)
    for j in range(n):
        c = fc + j
        v = tree.visits[b, c]
        if v > 0:
            score = tree.prior[b, c] * math.exp(scale * (child_q(tree, b, c) - top_q)) / z - v * inv
            if score > best_score:
                best_score = score
                best = c
    return best


@njit(cache=True)
def select_gumbel_root(
    tree: Tree, b: int, params: np.ndarray, schedule: np.ndarray, gumbel: np.ndarray,
    base_visits: np.ndarray, sim: int, sigma: np.ndarray,
) -> int:
    """Sequential halving at the root: among the children whose visits in this search equal
    the phase's target count `schedule[b, sim]`, the one with the largest g + log prior +
    sigma(completed Q).

    The first visits go to the Gumbel-top-k actions (all have 0 visits, the
    largest scores come first), then the better half of them, and so on."""
    fc = tree.first_child[b, ROOT]
    n = tree.num_children[b, ROOT]
    target = schedule[b, min(sim, schedule.shape[1] - 1)]
    completed_sigma(tree, b, ROOT, params, sigma)
    best = -1
    best_score = -1e30
    fallback = fc
    fallback_n = 1 << 30
    for j in range(n):
        c = fc + j
        new = tree.visits[b, c] - base_visits[b, j]
        if new < fallback_n:
            fallback_n = new
            fallback = c
        if new != target:
            continue
        score = gumbel[b, j] + math.log(max(tree.prior[b, c], 1e-30)) + sigma[j]
        if score > best_score:
            best_score = score
            best = c
    return best if best >= 0 else fallback


@njit(cache=True)
def select_leaf(
    tree: Tree, work: Work, b: int, params: np.ndarray, schedule: np.ndarray, gumbel: np.ndarray,
    base_visits: np.ndarray, sim: int, sigma: np.ndarray,
) -> int:
    """Walk from the root to a leaf (unvisited, terminal or at the depth limit), playing the
    path's moves on `work.leaf_state`; the path goes to `work.path[b]`. Returns the leaf."""
    st = work.leaf_state[b]
    st[:] = work.root_state[b]
    hist = work.hist[b]
    hashes = work.hashes[b]
    max_depth = int(params[P_MAX_DEPTH])
    gumbel_algo = params[P_ALGORITHM] == GUMBEL
    node = ROOT
    depth = 0
    work.path[b, 0] = ROOT
    while (not tree.terminal[b, node]) and tree.first_child[b, node] != UNVISITED and depth < max_depth:
        if gumbel_algo:
            if node == ROOT:
                node = select_gumbel_root(tree, b, params, schedule, gumbel, base_visits, sim, sigma)
            else:
                node = select_gumbel_interior(tree, b, node, params)
        else:
            node = select_puct(tree, b, node, params)
        K.make_move(st, hist, hashes, tree.move[b, node])
        depth += 1
        work.path[b, depth] = node
    work.depth[b] = depth
    return node


@njit(cache=True)
def has_decisive_move(st: np.ndarray, moves: np.ndarray, n: int) -> bool:
    """Whether one of `moves[:n]` (legal, side to move in `st`) wins at once: den entry or last capture."""
    side = st[K.S_SIDE]
    enemy_den = K.DEN[1 - side]
    last_piece = st[K.S_COUNT + 1 - side] == 1
    for j in range(n):
        to = moves[j] & 63
        if to == enemy_den or (last_piece and st[to] != 0):
            return True
    return False


@njit(cache=True)
def expand(tree: Tree, work: Work, b: int, node: int, flags: np.ndarray, buf: np.ndarray,
           decisive: bool = False) -> int:
    """Expand leaf `node` of game `b` (position `work.leaf_state[b]`); return a LEAF_* code.

    Judges the end of the game first (`kernels.outcome_and_moves`); a
    terminal node keeps its exact value (side to move's view) in raw_value.
    With `decisive`, a non-root node whose side to move can win at once is
    terminal too, value +1 (a proven win, not a game end).
    Children get uniform priors until the evaluator's arrive."""
    if tree.terminal[b, node]:
        return LEAF_TERMINAL
    if tree.first_child[b, node] != UNVISITED:
        return LEAF_EVALUATE  # stopped by the depth limit
    st = work.leaf_state[b]
    term, winner, n = K.outcome_and_moves(st, work.hist[b], work.hashes[b], flags, buf)
    over = term != K.TERM_NONE
    value = 0.0
    if over and winner != K.DRAW:
        value = 1.0 if winner == st[K.S_SIDE] else -1.0
    elif not over and decisive and node != ROOT and has_decisive_move(st, buf, n):
        value, over = 1.0, True
    if over:
        tree.terminal[b, node] = True
        tree.raw_value[b, node] = value
        return LEAF_TERMINAL
    fc = tree.num_nodes[b]
    if fc + n > tree.visits.shape[1]:
        return LEAF_EVALUATE
    tree.num_nodes[b] = fc + n
    tree.first_child[b, node] = fc
    tree.num_children[b, node] = n
    side = st[K.S_SIDE]
    p = 1.0 / n
    for j in range(n):
        c = fc + j
        tree.parent[b, c] = node
        tree.move[b, c] = buf[j]
        tree.action[b, c] = move_to_action(buf[j], side)
        tree.first_child[b, c] = UNVISITED
        tree.num_children[b, c] = 0
        tree.visits[b, c] = 0
        tree.value_sum[b, c] = 0.0
        tree.prior[b, c] = p
        tree.raw_value[b, c] = 0.0
        tree.terminal[b, c] = False
    return LEAF_EXPANDED


@njit(cache=True)
def backup(tree: Tree, work: Work, b: int, value: float) -> None:
    """Add `value` (side to move at the leaf) along game `b`'s path, negated at each ply up."""
    v = value
    for d in range(work.depth[b], -1, -1):
        node = work.path[b, d]
        tree.visits[b, node] += 1
        tree.value_sum[b, node] += v
        v = -v


@njit(cache=True)
def simulate(
    tree: Tree, work: Work, flags: np.ndarray, params: np.ndarray, idx: np.ndarray, root_only: bool,
    uniform: bool, schedule: np.ndarray, gumbel: np.ndarray, base_visits: np.ndarray, sims_done: np.ndarray,
    sims_target: np.ndarray, obs_out: np.ndarray, mask_out: np.ndarray, leaf_games: np.ndarray,
) -> int:
    """One simulation step for the games `idx`: select, expand, and back up what needs no network.

    Leaves that need the evaluator are written to `obs_out[k]`, `mask_out[k]`
    with their game in `leaf_games[k]`; returns k (always 0 when `uniform`:
    those leaves get uniform priors and value 0 here). With `root_only`,
    only games whose root is unvisited take part (the root evaluation);
    otherwise games that have run their `sims_target` simulations sit out."""
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    sigma = np.empty(K.MAX_MOVES, dtype=np.float64)
    k = 0
    for i in range(idx.shape[0]):
        b = idx[i]
        if root_only:
            if tree.first_child[b, ROOT] != UNVISITED:
                continue
            work.leaf_state[b, :] = work.root_state[b]
            work.depth[b] = 0
            work.path[b, 0] = ROOT
            leaf = ROOT
        else:
            if sims_done[b] >= sims_target[b]:
                continue
            leaf = select_leaf(tree, work, b, params, schedule, gumbel, base_visits, sims_done[b], sigma)
            sims_done[b] += 1
        status = expand(tree, work, b, leaf, flags, buf, params[P_DECISIVE] != 0.0)
        if status == LEAF_TERMINAL:
            backup(tree, work, b, tree.raw_value[b, leaf])
            continue
        if uniform:
            backup(tree, work, b, 0.0)
            continue
        work.leaf_status[b] = status
        encode_observation(work.leaf_state[b], work.hashes[b], flags, obs_out[k])
        if status == LEAF_EXPANDED:
            mask_out[k, :] = False
            fc = tree.first_child[b, leaf]
            for j in range(tree.num_children[b, leaf]):
                mask_out[k, tree.action[b, fc + j]] = True
        else:
            legal_action_mask(work.leaf_state[b], work.hist[b], flags, mask_out[k])
        leaf_games[k] = b
        k += 1
    return k


@njit(cache=True)
def apply_evaluations(
    tree: Tree, work: Work, logits: np.ndarray, values: np.ndarray, leaf_games: np.ndarray, k: int
) -> None:
    """Priors (softmax of the legal logits) and values of the evaluated leaves, then their backups."""
    for r in range(k):
        b = leaf_games[r]
        leaf = work.path[b, work.depth[b]]
        if work.leaf_status[b] == LEAF_EXPANDED:
            fc = tree.first_child[b, leaf]
            n = tree.num_children[b, leaf]
            top = -1e30
            for j in range(n):
                x = logits[r, tree.action[b, fc + j]]
                if x > top:
                    top = x
            z = 0.0
            for j in range(n):
                z += math.exp(logits[r, tree.action[b, fc + j]] - top)
            for j in range(n):
                tree.prior[b, fc + j] = math.exp(logits[r, tree.action[b, fc + j]] - top) / z
        v = min(max(float(values[r]), -1.0), 1.0)
        if work.leaf_status[b] == LEAF_EXPANDED:
            tree.raw_value[b, leaf] = v
        backup(tree, work, b, v)


@njit(cache=True)
def run_uniform(
    tree: Tree, work: Work, flags: np.ndarray, params: np.ndarray, idx: np.ndarray, n_steps: int,
    schedule: np.ndarray, gumbel: np.ndarray, base_visits: np.ndarray, sims_done: np.ndarray,
    sims_target: np.ndarray, obs_out: np.ndarray, mask_out: np.ndarray, leaf_games: np.ndarray,
) -> None:
    """All `n_steps` simulation steps with the uniform evaluator, without leaving numba."""
    for _ in range(n_steps):
        simulate(tree, work, flags, params, idx, False, True, schedule, gumbel, base_visits, sims_done,
                 sims_target, obs_out, mask_out, leaf_games)


@njit(cache=True)
def prepare_roots(
    tree: Tree, work: Work, state: np.ndarray, hist: np.ndarray, hashes: np.ndarray, idx: np.ndarray,
    root_ply: np.ndarray, root_hash: np.ndarray, nodes_needed: int,
) -> None:
    """Copy each game's position and history into the search; keep its tree only if it was
    built for this very position (ply and hash) and has room for this search."""
    for i in range(idx.shape[0]):
        b = idx[i]
        ply = state[b, K.S_PLY]
        work.root_state[b, :] = state[b]
        work.hist[b, :ply] = hist[b, :ply]
        work.hashes[b, : ply + 1] = hashes[b, : ply + 1]
        if (root_ply[b] != ply or root_hash[b] != hashes[b, ply]
                or tree.num_nodes[b] + nodes_needed > tree.visits.shape[1]):
            reset_tree(tree, b)
            root_ply[b] = ply
            root_hash[b] = hashes[b, ply]


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
    for i in range(idx.shape[0]):
        b = idx[i]
        fc = tree.first_child[b, ROOT]
        if fc == UNVISITED:
            continue
        for j in range(tree.num_children[b, ROOT]):
            tree.prior[b, fc + j] = saved[b, j]


@njit(cache=True)
def record_base_visits(tree: Tree, idx: np.ndarray, base_visits: np.ndarray) -> None:
    """Visits of the root's children before this search's simulations (reused ones)."""
    for i in range(idx.shape[0]):
        b = idx[i]
        fc = tree.first_child[b, ROOT]
        for j in range(tree.num_children[b, ROOT]):
            base_visits[b, j] = tree.visits[b, fc + j]


@njit(cache=True)
def root_outputs(
    tree: Tree, params: np.ndarray, idx: np.ndarray, gumbel: np.ndarray, base_visits: np.ndarray,
    temperature: np.ndarray, u: np.ndarray, policy: np.ndarray, action: np.ndarray, value: np.ndarray,
    visits: np.ndarray,
) -> None:
    """Policy targets, chosen actions, root values and child visits of the searched games.

    PUCT: target = visit distribution; action drawn from N^(1/T) when
    `temperature[b] > 0` (with the uniform draw `u[b]`), else the most visited
    (ties: higher Q, then the first generated). Gumbel: target = softmax(log prior +
    sigma(completed Q)); action = among the children most visited in this
    search, the largest g + log prior + sigma.

    Root value (side to move): PUCT the root's mean value; Gumbel the improved
    policy's expected completed Q (the mean would weigh the actions sequential
    halving dropped)."""
    sigma = np.empty(K.MAX_MOVES, dtype=np.float64)
    weights = np.empty(K.MAX_MOVES, dtype=np.float64)
    qhat = np.empty(K.MAX_MOVES, dtype=np.float64)
    gumbel_algo = params[P_ALGORITHM] == GUMBEL
    for i in range(idx.shape[0]):
        b = idx[i]
        fc = tree.first_child[b, ROOT]
        if fc == UNVISITED:
            continue
        n = tree.num_children[b, ROOT]
        value[b] = tree.value_sum[b, ROOT] / max(tree.visits[b, ROOT], 1)
        sum_n = 0
        for j in range(n):
            c = fc + j
            visits[b, tree.action[b, c]] = tree.visits[b, c]
            sum_n += tree.visits[b, c]
        best = 0
        if gumbel_algo:
            completed_q(tree, b, ROOT, qhat)
            completed_sigma(tree, b, ROOT, params, sigma)
            top = -1e30
            max_new = -1
            for j in range(n):
                sigma[j] += math.log(max(tree.prior[b, fc + j], 1e-30))
                if sigma[j] > top:
                    top = sigma[j]
                new = tree.visits[b, fc + j] - base_visits[b, j]
                if new > max_new:
                    max_new = new
            z = 0.0
            for j in range(n):
                weights[j] = math.exp(sigma[j] - top)
                z += weights[j]
            best_score = -1e30
            improved_value = 0.0
            for j in range(n):
                policy[b, tree.action[b, fc + j]] = weights[j] / z
                improved_value += weights[j] / z * qhat[j]
                if tree.visits[b, fc + j] - base_visits[b, j] == max_new:
                    score = gumbel[b, j] + sigma[j]
                    if score > best_score:
                        best_score = score
                        best = j
            value[b] = improved_value
        else:
            for j in range(n):
                c = fc + j
                p = tree.visits[b, c] / sum_n if sum_n > 0 else tree.prior[b, c]
                policy[b, tree.action[b, c]] = p
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


@njit(cache=True)
def find_child(tree: Tree, b: int, action: int) -> int:
    """The root child reached by `action`, or -1."""
    fc = tree.first_child[b, ROOT]
    if fc == UNVISITED:
        return -1
    for j in range(tree.num_children[b, ROOT]):
        if tree.action[b, fc + j] == action:
            return fc + j
    return -1


@njit(cache=True)
def reroot(tree: Tree, b: int, new_root: int, order: np.ndarray, new_index: np.ndarray) -> None:
    """Make the subtree under `new_root` game `b`'s whole tree, packed from index ROOT.

    Nodes are renumbered breadth-first so that children stay contiguous;
    `order`/`new_index` are scratch int32 [N]."""
    n_old = tree.num_nodes[b]
    # Breadth-first list of the kept nodes, children ranges kept together.
    order[0] = new_root
    count = 1
    head = 0
    while head < count:
        o = order[head]
        head += 1
        fc = tree.first_child[b, o]
        if fc != UNVISITED:
            for j in range(tree.num_children[b, o]):
                order[count] = fc + j
                count += 1
    for k in range(n_old):
        new_index[k] = -1
    for k in range(count):
        new_index[order[k]] = k
    # A node's new slot may hold a node not moved yet: permute each field through a copy.
    _permute(tree.parent[b], order, count)
    _permute(tree.action[b], order, count)
    _permute(tree.move[b], order, count)
    _permute(tree.first_child[b], order, count)
    _permute(tree.num_children[b], order, count)
    _permute(tree.visits[b], order, count)
    _permute(tree.value_sum[b], order, count)
    _permute(tree.prior[b], order, count)
    _permute(tree.raw_value[b], order, count)
    _permute(tree.terminal[b], order, count)
    for k in range(count):
        p = tree.parent[b, k]
        tree.parent[b, k] = NO_PARENT if k == ROOT else new_index[p]
        fc = tree.first_child[b, k]
        if fc != UNVISITED:
            tree.first_child[b, k] = new_index[fc]
    tree.num_nodes[b] = count


@njit(cache=True)
def _permute(a: np.ndarray, order: np.ndarray, count: int) -> None:
    """a[:count] := a[order[:count]]."""
    tmp = a[order[:count]].copy()
    a[:count] = tmp


def _default_nodes(sims: int) -> int:
    """Nodes per game: room for the children of two searches' worth of expansions."""
    return max(2 * (sims + 1) * K.MAX_MOVES, 4 * K.MAX_MOVES)


def considered_visits(max_considered: int, num_simulations: int) -> np.ndarray:
    """Sequential halving schedule: entry i is the visit count (within this search) of the
    actions the root may pick at simulation i, when `max_considered` actions are sampled."""
    if max_considered <= 1:
        return np.arange(num_simulations, dtype=np.int32)
    log2max = int(math.ceil(math.log2(max_considered)))
    seq: list[int] = []
    visits = [0] * max_considered
    considered = max_considered
    while len(seq) < num_simulations:
        extra = max(1, int(num_simulations / (log2max * considered)))
        for _ in range(extra):
            seq.extend(visits[:considered])
            for i in range(considered):
                visits[i] += 1
        considered = max(2, considered // 2)
    return np.asarray(seq[:num_simulations], dtype=np.int32)


def considered_visits_table(max_actions: int, num_simulations: int) -> np.ndarray:
    """int32 [max_actions + 1, max(num_simulations, 1)]: row m = schedule with m actions sampled."""
    sims = max(num_simulations, 1)
    table = np.zeros((max_actions + 1, sims), dtype=np.int32)
    for m in range(1, max_actions + 1):
        table[m] = considered_visits(m, sims)
    return table


class BatchedMCTS:
    """Tree search over the B games of a `GameBatch`, one tree per game slot.

    `search` runs the simulations of all active games in lockstep (one
    evaluator call per simulation step) and returns targets and moves;
    `advance` keeps the subtree of the move played (call it after
    `GameBatch.play`, or with action -1 after a reset). A tree that does not
    match its game's current position is discarded by the next search.

    `n_games` fixes the number of slots now (needed for `reseed` before the
    first search; otherwise the first GameBatch decides). `max_nodes` fixes the
    nodes per game; by default it is room for two searches' expansions and
    grows when a search asks for more simulations than the config's.
    """

    def __init__(self, evaluator: Evaluator, config: MCTSConfig, flags: np.ndarray, *, seed: int,
                 n_games: Optional[int] = None, max_nodes: Optional[int] = None) -> None:
        self.evaluator = evaluator
        self.config = config
        self.flags = np.asarray(flags, dtype=np.int64)
        self.seed = int(seed)
        self.params = config.params()
        self._n = n_games
        self._max_nodes = max_nodes
        self.max_nodes = int(max_nodes) if max_nodes is not None else _default_nodes(config.num_simulations)
        """Nodes per game's tree."""
        self._tables: dict[int, np.ndarray] = {}
        self._cap = -1
        if n_games is not None:
            self._allocate(n_games)

    # -- set-up ----------------------------------------------------------------------
    def _allocate(self, n: int) -> None:
        self._n = n
        self.tree = new_tree(n, self.max_nodes)
        self._rngs = [np.random.default_rng([self.seed, b]) for b in range(n)]
        self._root_ply = np.full(n, -1, dtype=np.int64)
        self._root_hash = np.zeros(n, dtype=np.uint64)
        self._obs = np.zeros((n,) + OBS_SHAPE, dtype=np.float32)
        self._mask = np.zeros((n, N_ACTIONS), dtype=np.bool_)
        self._leaf_games = np.zeros(n, dtype=np.int64)
        self._gumbel = np.zeros((n, K.MAX_MOVES), dtype=np.float64)
        self._noise = np.zeros((n, K.MAX_MOVES), dtype=np.float64)
        self._saved = np.zeros((n, K.MAX_MOVES), dtype=np.float32)
        self._base = np.zeros((n, K.MAX_MOVES), dtype=np.int32)
        self._sims_done = np.zeros(n, dtype=np.int32)
        self._order = np.zeros(self.max_nodes, dtype=np.int32)
        self._new_index = np.zeros(self.max_nodes, dtype=np.int32)

    def _grow(self, sims: int) -> None:
        """Make room for searches of `sims` simulations (unless max_nodes was fixed), keeping the trees."""
        nodes = _default_nodes(sims)
        if self._max_nodes is not None or nodes <= self.max_nodes:
            return
        if self._n is None:
            self.max_nodes = nodes
            return
        old = self.tree
        self.tree = new_tree(old.visits.shape[0], nodes)
        for new, kept in zip(self.tree, old):
            if kept.ndim == 2:
                new[:, : kept.shape[1]] = kept
            else:
                new[:] = kept
        self.max_nodes = nodes
        self._order = np.zeros(nodes, dtype=np.int32)
        self._new_index = np.zeros(nodes, dtype=np.int32)

    def _ensure_work(self, games: Any) -> None:
        if self._n is None:
            self._allocate(games.n)
        if games.n != self._n:
            raise ValueError(f"this search holds {self._n} game slots, the GameBatch has {games.n}")
        cap = games.hist.shape[1]
        if cap != self._cap:
            n = int(games.n)
            depth = self.config.max_depth
            self.work = Work(
                root_state=np.zeros((n, K.STATE_LEN), dtype=np.int16),
                leaf_state=np.zeros((n, K.STATE_LEN), dtype=np.int16),
                hist=np.zeros((n, cap + depth + 1, K.HIST_WIDTH), dtype=np.int16),
                hashes=np.zeros((n, cap + depth + 2), dtype=np.uint64),
                path=np.zeros((n, depth + 1), dtype=np.int32),
                depth=np.zeros(n, dtype=np.int32),
                leaf_status=np.zeros(n, dtype=np.int8),
            )
            self._cap = cap
            self._root_ply[:] = -1  # the trees' positions were in the old arrays

    def _table(self, sims: int) -> np.ndarray:
        if sims not in self._tables:
            self._tables[sims] = considered_visits_table(self.config.gumbel_max_actions, sims)
        return self._tables[sims]

    def reseed(self, game_index: int, seed: int) -> None:
        """Give slot `game_index` a fresh generator from `seed` (a new game's own seed)."""
        if self._n is None:
            raise ValueError("reseed before the first search needs n_games at construction")
        self._rngs[game_index] = np.random.default_rng(seed)

    # -- searching ---------------------------------------------------------------------
    def search(self, games: Any, active: Optional[np.ndarray] = None, *, add_noise: Any = True,
               num_simulations: Any = None) -> SearchOutput:
        """Search the active, unfinished games of `games` (default: all unfinished) in lockstep.

        `add_noise` (a bool, or bool [B] per game) switches on self-play
        exploration (PUCT: Dirichlet noise and the visit temperature for the
        first plies; Gumbel: Gumbel noise); without it a game's search is
        deterministic. `num_simulations` (an int, or int [B] per game)
        overrides the config's count: games with fewer simulations sit out the
        last steps, so cheap playout-capped searches share the evaluator
        batches of the full ones."""
        cfg = self.config
        self._ensure_work(games)
        n = self._n
        assert n is not None
        sims = np.broadcast_to(np.asarray(cfg.num_simulations if num_simulations is None else num_simulations,
                                          dtype=np.int64), (n,)).astype(np.int32)
        noise = np.broadcast_to(np.asarray(add_noise, dtype=np.bool_), (n,))
        act = ~games.done if active is None else (np.asarray(active, dtype=np.bool_) & ~games.done)
        idx = np.flatnonzero(act).astype(np.int64)
        out = SearchOutput(
            policy=np.zeros((n, N_ACTIONS), dtype=np.float32),
            action=np.full(n, -1, dtype=np.int64),
            root_value=np.zeros(n, dtype=np.float32),
            visits=np.zeros((n, N_ACTIONS), dtype=np.int32),
        )
        if len(idx) == 0:
            return out
        if sims[idx].min() < 0:
            raise ValueError(f"num_simulations must be >= 0, got {sims[idx].min()}")
        max_sims = int(sims[idx].max())
        self._grow(max_sims)
        tree, work = self.tree, self.work
        prepare_roots(tree, work, games.state, games.hist, games.hashes, idx, self._root_ply, self._root_hash,
                      (max_sims + 1) * K.MAX_MOVES)
        gumbel_algo = cfg.algorithm == "gumbel"
        temperature = np.zeros(n, dtype=np.float64)
        u = np.zeros(n, dtype=np.float64)
        self._gumbel[idx] = 0.0
        for b in idx[noise[idx]].tolist():
            rng = self._rngs[b]
            if gumbel_algo:
                self._gumbel[b] = rng.gumbel(size=K.MAX_MOVES)
            else:
                self._noise[b] = rng.gamma(cfg.dirichlet_alpha, size=K.MAX_MOVES) if cfg.dirichlet_alpha > 0 else 1.0
                u[b] = rng.random()
                if games.state[b, K.S_PLY] < cfg.temperature_plies:
                    temperature[b] = cfg.temperature
        uniform = self.evaluator is uniform_evaluator
        schedule = np.zeros((n, max(max_sims, 1)), dtype=np.int32)
        # The root's own evaluation (for a root not kept from the previous search).
        self._step(idx, True, uniform, schedule, sims)
        noisy = idx[noise[idx]] if not gumbel_algo and cfg.dirichlet_fraction > 0 else idx[:0]
        mix_root_noise(tree, noisy, self._noise, cfg.dirichlet_fraction, self._saved)
        if gumbel_algo:
            self._fill_schedule(schedule, idx, sims)
        record_base_visits(tree, idx, self._base)
        self._sims_done[idx] = 0
        if uniform:
            run_uniform(tree, work, self.flags, self.params, idx, max_sims, schedule, self._gumbel, self._base,
                        self._sims_done, sims, self._obs, self._mask, self._leaf_games)
        else:
            for _ in range(max_sims):
                self._step(idx, False, False, schedule, sims)
        restore_root_priors(tree, noisy, self._saved)
        root_outputs(tree, self.params, idx, self._gumbel, self._base, temperature, u, out.policy, out.action,
                     out.root_value, out.visits)
        return out

    def _fill_schedule(self, schedule: np.ndarray, idx: np.ndarray, sims: np.ndarray) -> None:
        """Row b = sequential-halving schedule of game b: its simulation count and its number of
        Gumbel-sampled root actions (min(gumbel_max_actions, legal moves))."""
        considered = np.minimum(self.config.gumbel_max_actions, self.tree.num_children[idx, ROOT])
        for count in np.unique(sims[idx]).tolist():
            sel = sims[idx] == count
            table = self._table(int(count))
            schedule[idx[sel], : table.shape[1]] = table[considered[sel]]

    def _step(self, idx: np.ndarray, root_only: bool, uniform: bool, schedule: np.ndarray, sims: np.ndarray) -> None:
        k = simulate(self.tree, self.work, self.flags, self.params, idx, root_only, uniform, schedule, self._gumbel,
                     self._base, self._sims_done, sims, self._obs, self._mask, self._leaf_games)
        if k == 0:
            return
        logits, values = self.evaluator(self._obs[:k], self._mask[:k])
        logits = np.ascontiguousarray(logits, dtype=np.float32)
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        if logits.shape != (k, N_ACTIONS) or values.shape != (k,):
            raise ValueError(f"evaluator returned logits {logits.shape} and values {values.shape} for {k} positions; "
                             f"expected ({k}, {N_ACTIONS}) and ({k},)")
        apply_evaluations(self.tree, self.work, logits, values, self._leaf_games, k)

    def advance(self, game_index: int, action: int) -> None:
        """Move game `game_index`'s root to the child of `action` (just played), keeping its
        subtree when `reuse_tree`; action -1 (or an unknown action) clears the tree."""
        if self._n is None:
            return
        b = int(game_index)
        tree = self.tree
        child = find_child(tree, b, int(action)) if action >= 0 else -1
        if child < 0 or not self.config.reuse_tree or self._root_ply[b] < 0:
            reset_tree(tree, b)
            self._root_ply[b] = -1
            return
        st = self.work.root_state[b].copy()
        ply = int(st[K.S_PLY])
        K.make_move(st, self.work.hist[b], self.work.hashes[b], int(tree.move[b, child]))
        self.work.root_state[b] = st
        self._root_ply[b] = ply + 1
        self._root_hash[b] = self.work.hashes[b, ply + 1]
        reroot(tree, b, child, self._order, self._new_index)
        if tree.terminal[b, ROOT]:
            reset_tree(tree, b)  # a proven win (decisive move) is searched afresh as the root

    def root_visits(self, game_index: int) -> int:
        """Visits of game `game_index`'s root (including those of a kept subtree)."""
        return 0 if self._n is None else int(self.tree.visits[game_index, ROOT])

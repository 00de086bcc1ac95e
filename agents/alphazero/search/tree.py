"""The search's arrays: B trees in flat numba arrays (`Tree`), per-game scratch, and the tree kernels.

The tree of game ``b`` lives in the rows ``[b, :]``: node ``ROOT`` is the
position being searched, the children of a node are the contiguous range
``first_child .. first_child + num_children - 1`` (one per legal move, in the
kernels' generation order), and ``first_child`` is ``UNVISITED`` until the node
is first reached and expanded. A node's ``value_sum`` and ``raw_value`` are
from the view of the side to move AT that node; its parent sees
``Q(parent, child) = -value_sum[child] / visits[child]`` (`child_q`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from envs import kernels as K
from envs.kernels import lean

ROOT = 0
"""Index of the root node in every game's tree."""
UNVISITED = -1
"""``first_child`` of a node never reached by a simulation (no children yet)."""
NO_PARENT = -1
"""``parent`` of the root."""


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
    terminal: np.ndarray  # bool [B, N]: game over there, or a proven result (decisive moves, solver)
    num_nodes: np.ndarray  # int32 [B]


class Work(NamedTuple):
    """Per-game scratch of the search: the positions and the path of the current simulation."""

    root_state: np.ndarray  # int16 [B, STATE_LEN]: the position searched
    leaf_state: np.ndarray  # int16 [B, STATE_LEN]: position at the end of the current path
    hist: np.ndarray  # int16 [B, H, 5]: game history, then the path's moves
    hashes: np.ndarray  # uint64 [B, H + 1]
    path: np.ndarray  # int32 [B, max_depth + 1]: nodes from the root to the leaf
    depth: np.ndarray  # int32 [B]: length of the current path in plies
    leaf_status: np.ndarray  # int8 [B]: LEAF_* (search.py) of the leaf awaiting the evaluator
    draw_value: np.ndarray  # float64 [B]: a drawn end's worth to the root's side to move in this search


class Roots(NamedTuple):
    """What the root selection of one search reads besides the tree (rows of games not searched are stale)."""

    gumbel: np.ndarray  # float64 [B, MAX_MOVES]: Gumbel noise of the root's j-th child (0 without noise)
    base_visits: np.ndarray  # int32 [B, MAX_MOVES]: visits of the root's j-th child before this search
    schedule: np.ndarray  # int32 [B, S]: sequential halving, visits (this search) of the pickable children
    sims_done: np.ndarray  # int32 [B]: simulations of this search so far
    sims_target: np.ndarray  # int32 [B]: simulations this search runs
    sigma: np.ndarray  # float64 [MAX_MOVES]: scratch of the root selection


class Leaves(NamedTuple):
    """The leaves of one simulation step that need the evaluator: rows 0..k-1."""

    obs: np.ndarray  # float32 [B, 32, 9, 7]
    mask: np.ndarray  # bool [B, 252]
    game: np.ndarray  # int64 [B]: the game whose path ends at the leaf


class Lanes(NamedTuple):
    """Paths of the leaves awaiting the evaluator when games select several per call (row r: leaf row r)."""

    path: np.ndarray  # int32 [R, max_depth + 1]: nodes from the root to the leaf
    depth: np.ndarray  # int32 [R]
    status: np.ndarray  # int8 [R]: LEAF_* (search.py) of the leaf


def new_tree(n_games: int, max_nodes: int) -> Tree:
    """B = `n_games` empty trees (an unvisited root each) with room for `max_nodes` nodes."""
    shape = (n_games, max_nodes)
    return Tree(
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


NODE_BYTES = 4 + 2 + 2 + 4 + 2 + 4 + 4 + 4 + 4 + 1
"""Bytes of one node of a `Tree` (its ten per-node arrays)."""


def default_nodes(sims: int) -> int:
    """Nodes per game: room for the children of two searches' worth of expansions."""
    return max(2 * (sims + 1) * K.MAX_MOVES, 4 * K.MAX_MOVES)


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


@lean(inline=True)
def child_q(tree: Tree, b: int, c: int) -> float:
    """Q of child `c` from its parent's side to move: the negated mean of its simulations (exact for a
    terminal or proven child, whose value sum is its exact value times its visits); needs a visit."""
    return -tree.value_sum[b, c] / tree.visits[b, c]


@njit(cache=True)
def root_visits(tree: Tree, b: int, visits: np.ndarray) -> int:
    """`visits[a]` = visits of the root child of action `a` (int32 [252]); returns their sum."""
    fc = tree.first_child[b, ROOT]
    sum_n = 0
    for j in range(tree.num_children[b, ROOT]):
        c = fc + j
        visits[tree.action[b, c]] = tree.visits[b, c]
        sum_n += tree.visits[b, c]
    return sum_n


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


@njit(cache=True)
def advance_trees(
    tree: Tree,
    work: Work,
    root_ply: np.ndarray,
    root_hash: np.ndarray,
    idx: np.ndarray,
    actions: np.ndarray,
    keep: bool,
    order: np.ndarray,
    new_index: np.ndarray,
) -> None:
    """Move the root of each game `b` of `idx` to its child of `actions[b]` (the move just played).

    With `keep` and a tree built for the position before the move (``root_ply[b] >= 0``), the
    child's subtree becomes the tree (`reroot`) and the search's copy of the position
    (`work.root_state`, history, hashes) follows the move; a proven root (a decisive move) is
    emptied to be searched afresh. Otherwise (action -1, an action without a child, no `keep`)
    the tree is emptied and ``root_ply[b] = -1`` (no position). `order`/`new_index`: scratch int32 [N]."""
    for i in range(idx.shape[0]):
        b = idx[i]
        child = find_child(tree, b, actions[b]) if actions[b] >= 0 else -1
        if child < 0 or not keep or root_ply[b] < 0:
            reset_tree(tree, b)
            root_ply[b] = -1
            continue
        ply = work.root_state[b, K.S_PLY]
        K.make_move(work.root_state[b], work.hist[b], work.hashes[b], tree.move[b, child])
        root_ply[b] = ply + 1
        root_hash[b] = work.hashes[b, ply + 1]
        reroot(tree, b, child, order, new_index)
        if tree.terminal[b, ROOT]:
            reset_tree(tree, b)

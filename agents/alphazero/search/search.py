"""The search loop: select a leaf per game, expand it, queue it for the evaluator or back up its value.

`simulate` is generic in its selection rules: it takes the root's and the
interior nodes' selection functions (see `selection`) as arguments, and numba
compiles one specialised copy per pair. Two numba facts shape how:

* A jitted function whose arguments include other jitted functions cannot
  be cached on disk (numba keys such a signature by the functions'
  addresses: every process would compile it again and add cache files). So
  each algorithm module defines one ``@njit(cache=True)`` entry point that
  calls `simulate` with its functions fixed (`puct.simulate_puct`,
  `gumbel.simulate_gumbel`); the entry point's signature holds arrays only,
  and it caches with `simulate` compiled into it.
* A function value passed at run time to a function that is not inlined is
  a pointer to a Python object ("dynamic globals"), which also stops the
  caching. `simulate` and `select_leaf` are therefore inlined at numba's
  level (``inline="always"``): the selection functions are then constants
  of the entry point, called directly, with no flag branched on per node.

A new algorithm (a solver, another root rule) is a new pair of selection
functions and one such entry point; the loop stays as it is.

The kernels called per node or per simulation that never allocate (the
selection functions, `expand`, the backups) are compiled without reference
counting (`envs.kernels.lean`), and `queue_leaf` is inlined like the loop:
otherwise every array of the `Tree`, `Work` and `Roots` tuples handed to a
call costs an atomic increment and decrement, about a fifth of the
search's time.

numba checks only an entry point's own file before loading its cached code,
which holds this loop and the selection functions too; `envs.numba_cache`
(run when `agents` is imported) drops the cache when any of their sources
changed.

Values are from the side to move at the node they belong to; `backup`
negates at each ply up the path.

``flags`` is int64 [B, N_FLAGS] throughout: row ``b`` holds game ``b``'s rule
flags (`envs.rules.RuleSet.flags`), so the games of one search may play
different rule sets.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from agents.alphazero.search.config import SearchParams
from agents.alphazero.search.tree import ROOT, UNVISITED, Lanes, Leaves, Roots, Tree, Work, reset_tree
from envs import kernels as K
from envs.encoding import encode_observation, legal_action_mask, move_to_action
from envs.kernels import lean
from envs.rules import F_NO_CAPTURE_LIMIT
from envs.tablebase.probe import DRAW, LOSS, UNKNOWN, WIN, TablebaseArrays, probe_clock

# What `expand` found at a leaf.
LEAF_TERMINAL = 0  # the game is over there: exact value, no network
LEAF_EXPANDED = 1  # children allocated now: the network gives priors and a value
LEAF_EVALUATE = 2  # no room or too deep to expand: the network gives a value only


@njit(inline="always")
def select_leaf(
    tree: Tree,
    work: Work,
    roots: Roots,
    b: int,
    params: SearchParams,
    select_root: Any,
    select_interior: Any,
    first: int,
) -> int:
    """Walk from the root to a leaf (unvisited, terminal or at the depth limit), choosing children with
    `select_root` at the root (or going to its child `first`, when that is not -1) and `select_interior`
    below it and playing the path's moves on `work.leaf_state`; the path goes to `work.path[b]`.
    Returns the leaf."""
    st = work.leaf_state[b]
    st[:] = work.root_state[b]
    hist = work.hist[b]
    hashes = work.hashes[b]
    node = ROOT
    depth = 0
    work.path[b, 0] = ROOT
    while (not tree.terminal[b, node]) and tree.first_child[b, node] != UNVISITED and depth < params.max_depth:
        if depth == 0:
            node = first if first >= 0 else select_root(tree, roots, b, node, params)
        else:
            node = select_interior(tree, roots, b, node, params)
        K.make_move(st, hist, hashes, tree.move[b, node])
        depth += 1
        work.path[b, depth] = node
    work.depth[b] = depth
    return node


@lean()
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


@lean()
def expand(
    tree: Tree,
    work: Work,
    b: int,
    node: int,
    flags: np.ndarray,
    buf: np.ndarray,
    tb: TablebaseArrays,
    decisive: bool = False,
    tablebase: bool = False,
) -> int:
    """Expand leaf `node` of game `b` (position `work.leaf_state[b]`); return a LEAF_* code.

    Judges the end of the game first (`kernels.outcome_and_moves`); a
    terminal node keeps its exact value (side to move's view) in raw_value.
    A draw is worth `work.draw_value[b]` to the root's side to move (0 by the rules).
    With `decisive`, a non-root node whose side to move can win at once is
    terminal too, value +1 (a proven win, not a game end). With `tablebase`, so
    is a non-root node the tables `tb` hold, with its result under the
    no-capture rule at its clock (`probe_clock`; a draw valued as above, and a
    position the clock leaves UNKNOWN is searched on).
    Children get uniform priors until the evaluator's arrive."""
    if tree.terminal[b, node]:
        return LEAF_TERMINAL
    if tree.first_child[b, node] != UNVISITED:
        return LEAF_EVALUATE  # stopped by the depth limit
    st = work.leaf_state[b]
    term, winner, n = K.outcome_and_moves(st, work.hist[b], work.hashes[b], flags[b], buf)
    over = term != K.TERM_NONE
    value = 0.0
    draw_value = work.draw_value[b]
    if over and winner != K.DRAW:
        value = 1.0 if winner == st[K.S_SIDE] else -1.0
    elif over and draw_value != 0.0:
        value = draw_value if st[K.S_SIDE] == work.root_state[b, K.S_SIDE] else -draw_value
    elif not over and decisive and node != ROOT and has_decisive_move(st, buf, n):
        value, over = 1.0, True
    elif not over and tablebase and node != ROOT:
        clock = probe_clock(st, flags[b], tb)[3]
        if clock == WIN or clock == LOSS:
            value, over = float(clock), True
        elif clock == DRAW:
            over = True
            value = draw_value if st[K.S_SIDE] == work.root_state[b, K.S_SIDE] else -draw_value
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


@lean()
def backup_path(tree: Tree, b: int, path: np.ndarray, depth: int, value: float) -> None:
    """Add `value` (side to move at the leaf) along `path[:depth + 1]` of game `b`, negated at each ply up."""
    v = value
    for d in range(depth, -1, -1):
        node = path[d]
        tree.visits[b, node] += 1
        tree.value_sum[b, node] += v
        v = -v


@lean()
def backup(tree: Tree, work: Work, b: int, value: float) -> None:
    """Add `value` (side to move at the leaf) along game `b`'s current path, negated at each ply up."""
    backup_path(tree, b, work.path[b], work.depth[b], value)


@lean()
def add_virtual_loss(tree: Tree, b: int, path: np.ndarray, depth: int, sign: int) -> None:
    """Count a pending simulation down `path[:depth + 1]` as a visit lost for every side choosing on it
    (``sign=1``), or take it back (``sign=-1``): each node's value_sum, from its own side to move, gains
    `sign`, so its parent's Q of it drops by about 1 / visits until the evaluation is backed up."""
    for d in range(depth + 1):
        node = path[d]
        tree.visits[b, node] += sign
        if d > 0:
            tree.value_sum[b, node] += sign


@lean()
def prove_path(tree: Tree, work: Work, b: int) -> None:
    """MCTS-solver step after game `b`'s path ended at a terminal (or proven) leaf: climb while the
    node just proven settles its parent.

    A parent (side to move there: the opposite of its child's) is proven a win (+1) by a child lost
    for the child's side to move (raw value -1); otherwise it is proven only when every child is,
    with the best of their results for it, max(-raw value). A proven node is marked terminal with
    its exact value, and its value sum is set to that value times its visits, so the search stops
    there and its Q is exact. The root is never
    marked (it must still choose a move): `solver_outputs` reads its children."""
    for d in range(work.depth[b], 1, -1):
        c = work.path[b, d]
        if not tree.terminal[b, c]:
            return
        p = work.path[b, d - 1]
        if tree.raw_value[b, c] == -1.0:
            value = 1.0
        else:
            fc = tree.first_child[b, p]
            value = -2.0
            for j in range(tree.num_children[b, p]):
                s = fc + j
                if not tree.terminal[b, s]:
                    return
                value = max(value, -float(tree.raw_value[b, s]))
        tree.terminal[b, p] = True
        tree.raw_value[b, p] = value
        # Its mean becomes the exact value (every later simulation stops here and adds that value),
        # so `child_q` reads it with no branch for proven nodes.
        tree.value_sum[b, p] = value * tree.visits[b, p]


@njit(cache=True)
def solver_outputs(tree: Tree, idx: np.ndarray, action: np.ndarray, value: np.ndarray) -> None:
    """Correct the root policy's move and value by the root children's proven results, per game of `idx`.

    A proven win is played when there is one (one that ends the game at once first, then the most
    visited), value +1; with every child
    proven, the best is played and the value is exact; a chosen move that is a proven loss gives way
    to the most visited open one (ties: the higher prior). Values are from the side to move at the root."""
    for i in range(idx.shape[0]):
        b = idx[i]
        fc = tree.first_child[b, ROOT]
        if fc == UNVISITED:
            continue
        best_proven = -1
        best_q = -2.0
        best_open = -1
        all_proven = True
        chosen_lost = False
        for j in range(tree.num_children[b, ROOT]):
            c = fc + j
            if tree.terminal[b, c]:
                q = -float(tree.raw_value[b, c])
                # Ties: a move that ends the game at once (a terminal never expanded) before one proven
                # deeper, then the most visited.
                better = q > best_q
                if not better and q == best_q:
                    now, then = tree.first_child[b, c] == UNVISITED, tree.first_child[b, best_proven] == UNVISITED
                    better = (now and not then) or (now == then and tree.visits[b, c] > tree.visits[b, best_proven])
                if better:
                    best_q = q
                    best_proven = c
                if q == -1.0 and tree.action[b, c] == action[b]:
                    chosen_lost = True
            else:
                all_proven = False
                if (
                    best_open < 0
                    or tree.visits[b, c] > tree.visits[b, best_open]
                    or (tree.visits[b, c] == tree.visits[b, best_open] and tree.prior[b, c] > tree.prior[b, best_open])
                ):
                    best_open = c
        if best_proven >= 0 and (best_q == 1.0 or all_proven):
            action[b] = tree.action[b, best_proven]
            value[b] = best_q
        elif chosen_lost and best_open >= 0:
            action[b] = tree.action[b, best_open]


@njit(inline="always")
def expand_leaf(
    tree: Tree,
    work: Work,
    b: int,
    leaf: int,
    flags: np.ndarray,
    params: SearchParams,
    buf: np.ndarray,
    tb: TablebaseArrays,
) -> int:
    """`expand` game `b`'s leaf (the end of its current path); a terminal one is backed up at once (and
    proven with the solver). Returns the LEAF_* code."""
    status = expand(tree, work, b, leaf, flags, buf, tb, params.decisive, params.tablebase)
    if status == LEAF_TERMINAL:
        backup(tree, work, b, tree.raw_value[b, leaf])
        if params.solver:
            prove_path(tree, work, b)
    return status


@njit(inline="always")
def queue_leaf(
    tree: Tree,
    work: Work,
    leaves: Leaves,
    b: int,
    leaf: int,
    flags: np.ndarray,
    params: SearchParams,
    buf: np.ndarray,
    uniform: bool,
    k: int,
    tb: TablebaseArrays,
) -> int:
    """Expand game `b`'s leaf (the end of its path); back up what needs no network (a terminal leaf;
    every leaf when `uniform`: value 0, priors uniform), else write its observation and mask to row `k`
    of `leaves`. Returns the number of rows queued so far."""
    status = expand_leaf(tree, work, b, leaf, flags, params, buf, tb)
    if status == LEAF_TERMINAL:
        return k
    if uniform:
        backup(tree, work, b, 0.0)
        return k
    work.leaf_status[b] = status
    write_leaf(tree, work, leaves, b, leaf, status, flags, k)
    return k + 1


@njit(cache=True)
def write_leaf(
    tree: Tree, work: Work, leaves: Leaves, b: int, leaf: int, status: int, flags: np.ndarray, k: int
) -> None:
    """Row `k` of `leaves`: the observation and legal mask of game `b`'s leaf (position `work.leaf_state[b]`)."""
    encode_observation(work.leaf_state[b], work.hashes[b], flags[b], leaves.obs[k])
    if status == LEAF_EXPANDED:
        leaves.mask[k, :] = False
        fc = tree.first_child[b, leaf]
        for j in range(tree.num_children[b, leaf]):
            leaves.mask[k, tree.action[b, fc + j]] = True
    else:
        legal_action_mask(work.leaf_state[b], work.hist[b], flags[b], leaves.mask[k])
    leaves.game[k] = b


@njit(inline="always")
def simulate(
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
    select_root: Any,
    select_interior: Any,
) -> int:
    """`steps` simulation steps for the games `idx`: each game that has not run its
    ``roots.sims_target`` simulations selects a leaf and expands it (`queue_leaf`).

    Returns k, the leaves of the last step queued in `leaves` for the
    evaluator (always 0 when `uniform`). With a real evaluator call it with
    ``steps=1``: the queued leaves need their evaluations (`apply_evaluations`)
    before the next step."""
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    k = 0
    for _ in range(steps):
        k = 0
        for i in range(idx.shape[0]):
            b = idx[i]
            if roots.sims_done[b] >= roots.sims_target[b]:
                continue
            leaf = select_leaf(tree, work, roots, b, params, select_root, select_interior, -1)
            roots.sims_done[b] += 1
            k = queue_leaf(tree, work, leaves, b, leaf, flags, params, buf, uniform, k, tb)
    return k


@njit(inline="always")
def simulate_lanes(
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
    select_root: Any,
    select_interior: Any,
) -> int:
    """One evaluator call's worth of leaves: up to `width` simulations per game of `idx`, their paths
    kept apart by virtual loss (`add_virtual_loss`), leaves queued in `leaves`/`lanes` rows 0..k-1.

    A game stops adding leaves when it has run ``roots.sims_target`` simulations or when a path runs
    into a leaf still awaiting its evaluation (that simulation is dropped, not counted). Terminal
    leaves are backed up at once (and proven with the solver). Returns k; each queued leaf needs
    `apply_lane_evaluations` before the next call."""
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    k = 0
    for i in range(idx.shape[0]):
        b = idx[i]
        first = k
        for _ in range(width):
            if roots.sims_done[b] >= roots.sims_target[b]:
                break
            leaf = select_leaf(tree, work, roots, b, params, select_root, select_interior, -1)
            if path_meets_pending(work, lanes, b, first, k):
                break
            roots.sims_done[b] += 1
            if queue_lane(tree, work, leaves, lanes, b, leaf, flags, params, buf, k, tb) > k:
                add_virtual_loss(tree, b, lanes.path[k], lanes.depth[k], 1)
                k += 1
    return k


@njit(inline="always")
def queue_lane(
    tree: Tree,
    work: Work,
    leaves: Leaves,
    lanes: Lanes,
    b: int,
    leaf: int,
    flags: np.ndarray,
    params: SearchParams,
    buf: np.ndarray,
    k: int,
    tb: TablebaseArrays,
) -> int:
    """Expand game `b`'s leaf (the end of its current path): a terminal one is backed up at once (and
    proven with the solver), any other is queued in row `k` of `leaves` with its path in `lanes`.
    Returns the rows queued so far."""
    status = expand_leaf(tree, work, b, leaf, flags, params, buf, tb)
    if status == LEAF_TERMINAL:
        return k
    depth = work.depth[b]
    lanes.path[k, : depth + 1] = work.path[b, : depth + 1]
    lanes.depth[k] = depth
    lanes.status[k] = status
    write_leaf(tree, work, leaves, b, leaf, status, flags, k)
    return k + 1


@njit(inline="always")
def simulate_rounds(
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
    root_round: Any,
    select_root: Any,
    select_interior: Any,
) -> int:
    """One evaluator call's worth of leaves, with the same results as one simulation per game and call.

    For each game of `idx` that has simulations left, `root_round` names the root's children that its
    next simulations visit whatever the order in which they are backed up (`picks[b, :count]`, each
    its own subtree, so no simulation sees another's evaluation); the game queues one leaf below each.
    A game whose next visit depends on the last evaluation (count 0) queues one simulation as
    `simulate` would. Terminal leaves are backed up at once. Returns k, the rows queued in
    `leaves`/`lanes`; each needs `apply_lane_evaluations` (without virtual loss) before the next call."""
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    k = 0
    for i in range(idx.shape[0]):
        b = idx[i]
        if roots.sims_done[b] >= roots.sims_target[b]:
            continue
        count = root_round(tree, roots, b, params, picks[b])
        if count == 0:  # one simulation, the root choosing after the last evaluation
            picks[b, 0] = -1
            count = 1
        for j in range(count):
            leaf = select_leaf(tree, work, roots, b, params, select_root, select_interior, picks[b, j])
            roots.sims_done[b] += 1
            k = queue_lane(tree, work, leaves, lanes, b, leaf, flags, params, buf, k, tb)
    return k


@njit(cache=True)
def path_meets_pending(work: Work, lanes: Lanes, b: int, first: int, k: int) -> bool:
    """Whether game `b`'s current path passes through a leaf of lanes rows `first`..k-1 (awaiting evaluation)."""
    for r in range(first, k):
        pending = lanes.path[r, lanes.depth[r]]
        for d in range(work.depth[b] + 1):
            if work.path[b, d] == pending:
                return True
    return False


@njit(cache=True)
def set_priors(tree: Tree, b: int, leaf: int, logits: np.ndarray, r: int) -> None:
    """Priors of `leaf`'s children: the softmax of row `r` of `logits` over their actions."""
    fc = tree.first_child[b, leaf]
    n = tree.num_children[b, leaf]
    top = -1e30
    for j in range(n):
        x = logits[r, tree.action[b, fc + j]]
        top = max(top, x)
    z = 0.0
    for j in range(n):
        z += math.exp(logits[r, tree.action[b, fc + j]] - top)
    for j in range(n):
        tree.prior[b, fc + j] = math.exp(logits[r, tree.action[b, fc + j]] - top) / z


@njit(cache=True)
def apply_lane_evaluations(
    tree: Tree, leaves: Leaves, lanes: Lanes, logits: np.ndarray, values: np.ndarray, k: int, virtual_loss: bool = True
) -> None:
    """Priors and values of the `k` leaves queued by `simulate_lanes` or `simulate_rounds`, each backed up
    along its path (with `virtual_loss`, as `simulate_lanes` queues them, the path's virtual loss is
    taken back first)."""
    for r in range(k):
        b = leaves.game[r]
        depth = lanes.depth[r]
        leaf = lanes.path[r, depth]
        v = min(max(float(values[r]), -1.0), 1.0)
        if lanes.status[r] == LEAF_EXPANDED:
            set_priors(tree, b, leaf, logits, r)
            tree.raw_value[b, leaf] = v
        if virtual_loss:
            add_virtual_loss(tree, b, lanes.path[r], depth, -1)
        backup_path(tree, b, lanes.path[r], depth, v)


@njit(cache=True)
def evaluate_roots(
    tree: Tree,
    work: Work,
    leaves: Leaves,
    flags: np.ndarray,
    params: SearchParams,
    tb: TablebaseArrays,
    idx: np.ndarray,
    uniform: bool,
) -> int:
    """The root's own evaluation, for the games of `idx` whose root is unvisited (not kept from the
    previous search): expanded and queued like any leaf. Returns the rows queued in `leaves`."""
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    k = 0
    for i in range(idx.shape[0]):
        b = idx[i]
        if tree.first_child[b, ROOT] != UNVISITED:
            continue
        work.leaf_state[b, :] = work.root_state[b]
        work.depth[b] = 0
        work.path[b, 0] = ROOT
        k = queue_leaf(tree, work, leaves, b, ROOT, flags, params, buf, uniform, k, tb)
    return k


@njit(cache=True)
def apply_evaluations(tree: Tree, work: Work, leaves: Leaves, logits: np.ndarray, values: np.ndarray, k: int) -> None:
    """Priors (softmax of the legal logits) and values of the `k` queued leaves, then their backups."""
    for r in range(k):
        b = leaves.game[r]
        leaf = work.path[b, work.depth[b]]
        if work.leaf_status[b] == LEAF_EXPANDED:
            set_priors(tree, b, leaf, logits, r)
        v = min(max(float(values[r]), -1.0), 1.0)
        if work.leaf_status[b] == LEAF_EXPANDED:
            tree.raw_value[b, leaf] = v
        backup(tree, work, b, v)


@njit(cache=True)
def prepare_roots(
    tree: Tree,
    work: Work,
    state: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    idx: np.ndarray,
    root_ply: np.ndarray,
    root_hash: np.ndarray,
    nodes_needed: int,
) -> None:
    """Copy each game's position and history into the search; keep its tree only if it was
    built for this very position (ply and hash) and has room for this search."""
    for i in range(idx.shape[0]):
        b = idx[i]
        ply = state[b, K.S_PLY]
        work.root_state[b, :] = state[b]
        work.hist[b, :ply] = hist[b, :ply]
        work.hashes[b, : ply + 1] = hashes[b, : ply + 1]
        if (
            root_ply[b] != ply
            or root_hash[b] != hashes[b, ply]
            or tree.num_nodes[b] + nodes_needed > tree.visits.shape[1]
        ):
            reset_tree(tree, b)
            root_ply[b] = ply
            root_hash[b] = hashes[b, ply]


@njit(cache=True)
def record_base_visits(tree: Tree, idx: np.ndarray, base_visits: np.ndarray) -> None:
    """Visits of the root's children before this search's simulations (reused ones)."""
    for i in range(idx.shape[0]):
        b = idx[i]
        fc = tree.first_child[b, ROOT]
        for j in range(tree.num_children[b, ROOT]):
            base_visits[b, j] = tree.visits[b, fc + j]


@njit(cache=True)
def tablebase_outputs(
    tree: Tree,
    work: Work,
    flags: np.ndarray,
    tb: TablebaseArrays,
    idx: np.ndarray,
    action: np.ndarray,
    value: np.ndarray,
) -> None:
    """The tables' move and exact value for the games of `idx` whose root position they hold with a known
    result under the no-capture rule (`probe_clock`); other games keep the search's.

    The move is the best root child by the tables' order (`envs.tablebase.TablebaseProbe.best_moves`):
    the result under the clock, then the table result, then the quickest win or the longest loss, by
    dtm, or by dtz when the clock leaves fewer plies than dtm; ties go to the first generated. A search
    alone, even with every child proven, could keep choosing among equal wins and never make progress.
    The value is the root's result (a draw: the search's `work.draw_value`), from its side to move."""
    for i in range(idx.shape[0]):
        b = idx[i]
        st = work.leaf_state[b]
        st[:] = work.root_state[b]
        fl = flags[b]
        wdl, dtm, _, clock = probe_clock(st, fl, tb)
        fc = tree.first_child[b, ROOT]
        if clock == UNKNOWN or fc == UNVISITED:
            continue
        left = fl[F_NO_CAPTURE_LIMIT] - st[K.S_CLOCK]
        by_dtz = fl[F_NO_CAPTURE_LIMIT] > 0 and wdl != DRAW and dtm > left
        hist = work.hist[b]
        hashes = work.hashes[b]
        best = -1
        best_key = (-9, -9, -1 << 30)
        for j in range(tree.num_children[b, ROOT]):
            c = fc + j
            cap = K.make_move(st, hist, hashes, tree.move[b, c])
            if K.won_by_last_move(st):
                key = (WIN, WIN, -1)
            else:
                c_wdl, c_dtm, c_dtz, c_clock = probe_clock(st, fl, tb)
                m_wdl = -c_wdl if c_wdl != UNKNOWN else UNKNOWN
                m_clock = -c_clock if c_clock != UNKNOWN else m_wdl
                d = (1 if cap else c_dtz + 1) if by_dtz else c_dtm + 1
                dist = 0 if m_wdl == DRAW or m_wdl == UNKNOWN else (-d if m_wdl == WIN else d)
                key = (m_clock, m_wdl, dist)
            K.unmake_move(st, hist)
            if key > best_key:
                best_key = key
                best = c
        if best >= 0:
            action[b] = tree.action[b, best]
            value[b] = work.draw_value[b] if clock == DRAW else float(clock)

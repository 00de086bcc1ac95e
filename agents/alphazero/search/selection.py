"""Selection maths of the search: which child a simulation descends into, for PUCT and Gumbel AlphaZero.

Every selection function has the signature ``select(tree, roots, b, node,
params) -> child`` (a node index), so the search loop (`search.simulate`)
takes one for the root and one for the nodes below it. Values follow the
tree's convention: Q of a child is from its parent's side to move.

* `select_puct` — AlphaZero: argmax of Q + c_puct * P * sqrt(sum N) / (1 + N),
  unvisited children at the first-play-urgency value.
* `select_gumbel_interior` — Gumbel AlphaZero's deterministic selection
  argmax(pi' - N / (1 + sum N)), with the completed-Q improved policy
  ``pi' = softmax(log prior + sigma(completed Q))`` (`improved_policy`).
* `select_gumbel_root` — sequential halving among the Gumbel-top-k root
  actions (`considered_visits` is its schedule).

``sigma(q) = (c_visit + max N) * c_scale * (q + 1) / 2``: values lie in
[-1, 1], so the min-max normalisation of the paper is the fixed map to [0, 1].
"""

from __future__ import annotations

import math

import numpy as np

from agents.alphazero.search.config import SearchParams
from agents.alphazero.search.tree import ROOT, Roots, Tree, child_q
from envs.kernels import lean


@lean()
def select_puct(tree: Tree, roots: Roots, b: int, node: int, params: SearchParams) -> int:
    """The child maximising Q + c_puct * P * sqrt(sum N) / (1 + N), unvisited children at the FPU value
    (the node's mean value minus fpu_reduction * sqrt(prior mass of the visited children)); with the
    solver a child proven lost for the chooser is taken only when all are."""
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
    fpu = parent_q - params.fpu_reduction * math.sqrt(visited_p)
    explore = params.c_puct * math.sqrt(max(sum_n, 1))
    best = _puct_argmax(tree, b, fc, n, fpu, explore, False)
    if params.solver and tree.terminal[b, best] and tree.raw_value[b, best] == 1.0:
        # The best score is a proven loss for the chooser: look again without them (rare, so the
        # common pass has no per-child check).
        best = _puct_argmax(tree, b, fc, n, fpu, explore, True)
    return best


@lean(inline=True)
def _puct_argmax(tree: Tree, b: int, fc: int, n: int, fpu: float, explore: float, skip_lost: bool) -> int:
    """The child of `fc .. fc + n - 1` with the largest PUCT score; with `skip_lost` a child proven lost
    for the chooser only when every child is one."""
    best = fc
    best_score = -1e30
    for j in range(n):
        c = fc + j
        v = tree.visits[b, c]
        q = child_q(tree, b, c) if v > 0 else fpu
        score = q + explore * tree.prior[b, c] / (1.0 + v)
        if skip_lost and tree.terminal[b, c] and tree.raw_value[b, c] == 1.0:
            score = -1e29
        if score > best_score:
            best_score = score
            best = c
    return best


@lean()
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


@lean()
def completed_sigma(tree: Tree, b: int, node: int, params: SearchParams, out: np.ndarray) -> None:
    """`out[j]` = sigma(completed Q) = (c_visit + max N) * c_scale * (q + 1) / 2 for the j-th child of `node`."""
    max_n = completed_q(tree, b, node, out)
    scale = (params.c_visit + max_n) * params.c_scale * 0.5
    for j in range(tree.num_children[b, node]):
        out[j] = scale * (out[j] + 1.0)


@lean()
def improved_policy(
    tree: Tree, b: int, node: int, params: SearchParams, qhat: np.ndarray, logits: np.ndarray, probs: np.ndarray
) -> None:
    """For the j-th child of `node`: `qhat[j]` its completed Q, `logits[j]` = log prior + sigma(completed Q),
    `probs[j]` = pi'(j), the softmax of the logits (Gumbel AlphaZero's improved policy)."""
    n = tree.num_children[b, node]
    fc = tree.first_child[b, node]
    completed_q(tree, b, node, qhat)
    completed_sigma(tree, b, node, params, logits)
    top = -1e30
    for j in range(n):
        logits[j] += math.log(max(tree.prior[b, fc + j], 1e-30))
        if logits[j] > top:
            top = logits[j]
    z = 0.0
    for j in range(n):
        probs[j] = math.exp(logits[j] - top)
        z += probs[j]
    for j in range(n):
        probs[j] = probs[j] / z


@lean()
def select_gumbel_interior(tree: Tree, roots: Roots, b: int, node: int, params: SearchParams) -> int:
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
    scale = (params.c_visit + max_n) * params.c_scale * 0.5
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


@lean(inline=True)
def gumbel_root_score(tree: Tree, roots: Roots, b: int, c: int, j: int, sigma: float) -> float:
    """g + log prior + sigma of root child `c` (the j-th) of game `b`: what sequential halving ranks."""
    return roots.gumbel[b, j] + math.log(max(tree.prior[b, c], 1e-30)) + sigma


@lean()
def select_gumbel_root(tree: Tree, roots: Roots, b: int, node: int, params: SearchParams) -> int:
    """Sequential halving at the root (`node` is ROOT): among the children whose visits in this search
    equal the phase's target count ``roots.schedule[b, sims_done]``, the one with the largest
    g + log prior + sigma(completed Q); the least visited child if none has the target count.

    The first visits go to the Gumbel-top-k actions (all have 0 visits in this
    search, the largest scores come first), then the better half of them, and
    so on."""
    fc = tree.first_child[b, ROOT]
    n = tree.num_children[b, ROOT]
    schedule = roots.schedule
    target = schedule[b, min(roots.sims_done[b], schedule.shape[1] - 1)]
    sigma = roots.sigma
    completed_sigma(tree, b, ROOT, params, sigma)
    best = -1
    best_score = -1e30
    fallback = fc
    fallback_n = 1 << 30
    for j in range(n):
        c = fc + j
        new = tree.visits[b, c] - roots.base_visits[b, j]
        if new < fallback_n:
            fallback_n = new
            fallback = c
        if new != target:
            continue
        score = gumbel_root_score(tree, roots, b, c, j, sigma[j])
        if score > best_score:
            best_score = score
            best = c
    return best if best >= 0 else fallback


@lean()
def gumbel_root_round(tree: Tree, roots: Roots, b: int, params: SearchParams, picks: np.ndarray) -> int:
    """The root children that game `b`'s next simulations visit whatever their evaluations: their number,
    and their nodes in `picks[:count]` in the order `select_gumbel_root` takes them (in child order when
    the run takes every child at its target); 0 when the next visit depends on an evaluation still to
    come.

    The schedule's next run of r equal targets t visits r distinct children (a visit lifts a child past
    t), each in its own subtree, so none of these simulations sees another's leaf. Which children
    `select_gumbel_root` picks one by one depends on the backups only through sigma(completed Q): a
    visited child keeps its Q while the run lasts, and max N moves as each pick lifts it; only an
    unvisited child's Q (v_mix, the mix of its siblings' values) moves with the evaluations. So the
    picks are known ahead when exactly r children are at t (the run takes them all), or when the
    children at t are all visited, or all unvisited (then they share one sigma: the ranking is
    g + log prior). Children at t both visited (kept from the previous move's search) and unvisited,
    more of them than r, give 0: those simulations run one per call."""
    s = roots.sims_done[b]
    schedule = roots.schedule
    end = min(roots.sims_target[b], schedule.shape[1])
    if s + 1 >= end:
        return 0
    target = schedule[b, s]
    run = 1
    while s + run < end and schedule[b, s + run] == target:
        run += 1
    if run < 2:
        return 0
    fc = tree.first_child[b, ROOT]
    n = tree.num_children[b, ROOT]
    count = 0
    unvisited = 0
    for j in range(n):
        c = fc + j
        if tree.visits[b, c] - roots.base_visits[b, j] == target:
            picks[count] = c
            count += 1
            if tree.visits[b, c] == 0:
                unvisited += 1
    if count == run:  # the run takes them all, in whatever order
        return count
    if count < run or 0 < unvisited < count:
        return 0
    q = roots.sigma
    max_n = completed_q(tree, b, ROOT, q)
    for r in range(run):
        scale = (params.c_visit + max_n) * params.c_scale * 0.5
        best = -1
        best_score = -1e30
        for i in range(r, count):  # picks[r:count] stay in child order: ties go to the first, as there
            j = picks[i] - fc
            score = gumbel_root_score(tree, roots, b, picks[i], j, scale * (q[j] + 1.0))
            if score > best_score:
                best_score = score
                best = i
        chosen = picks[best]
        for i in range(best, r, -1):
            picks[i] = picks[i - 1]
        picks[r] = chosen
        max_n = max(max_n, tree.visits[b, chosen] + 1)
    return run


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

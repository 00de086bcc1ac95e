"""Selection maths of the search on small hand-built trees, against a plain numpy reference.

Each case builds a `Tree` by hand (a root, its children, sometimes a second
level) with chosen visits, value sums and priors, and checks the numba
selection functions of `agents.alphazero.search.selection` against the
formulas written out in numpy: the PUCT score and its first-play urgency,
completed Q and its mixed value, sigma, the improved policy, Gumbel's interior
and root selection, and the sequential-halving schedule.
"""

from __future__ import annotations

import numpy as np
import pytest

from agents.alphazero.search import ROOT, UNVISITED, GumbelConfig, MCTSConfig, PuctConfig, considered_visits
from agents.alphazero.search.selection import (
    completed_q,
    completed_sigma,
    gumbel_root_round,
    improved_policy,
    select_gumbel_interior,
    select_gumbel_root,
    select_puct,
)
from agents.alphazero.search.tree import Roots, Tree, new_tree
from envs import kernels as K

PARAMS = MCTSConfig(
    puct=PuctConfig(c_puct=1.7, fpu_reduction=0.3), gumbel=GumbelConfig(c_visit=50.0, c_scale=0.8)
).params()


# --- building trees ---------------------------------------------------------------------
def add_children(tree: Tree, node: int, visits, value_sum, prior) -> list[int]:
    """Give `node` children with these statistics (each child's value sum is from its own side to move)."""
    n = len(visits)
    fc = int(tree.num_nodes[0])
    tree.first_child[0, node] = fc
    tree.num_children[0, node] = n
    kids = list(range(fc, fc + n))
    for j, c in enumerate(kids):
        tree.parent[0, c] = node
        tree.action[0, c] = j
        tree.visits[0, c] = visits[j]
        tree.value_sum[0, c] = value_sum[j]
        tree.prior[0, c] = prior[j]
        tree.first_child[0, c] = UNVISITED
    tree.num_nodes[0] = fc + n
    return kids


def random_node(rng: np.random.Generator, n: int, unvisited: float = 0.4):
    """Visits (some zero), value sums consistent with them (|mean| <= 1) and priors summing to 1."""
    visits = rng.integers(1, 30, size=n) * (rng.random(n) >= unvisited)
    value_sum = (rng.uniform(-1, 1, size=n) * visits).astype(np.float32)
    prior = rng.dirichlet(np.full(n, 0.7)).astype(np.float32)
    return visits.astype(np.int32), value_sum, prior


def tree_with_root(rng: np.random.Generator, n: int, unvisited: float = 0.4) -> Tree:
    tree = new_tree(1, 4 * K.MAX_MOVES)
    visits, value_sum, prior = random_node(rng, n, unvisited)
    add_children(tree, ROOT, visits, value_sum, prior)
    tree.visits[0, ROOT] = 1 + int(visits.sum())
    tree.value_sum[0, ROOT] = np.float32(rng.uniform(-1, 1) * tree.visits[0, ROOT])
    tree.raw_value[0, ROOT] = np.float32(rng.uniform(-1, 1))
    return tree


def stats(tree: Tree, node: int):
    """float64 arrays of `node`'s children: visits, value sums (child's view), priors."""
    fc, n = int(tree.first_child[0, node]), int(tree.num_children[0, node])
    kids = slice(fc, fc + n)
    return (
        tree.visits[0, kids].astype(np.float64),
        tree.value_sum[0, kids].astype(np.float64),
        tree.prior[0, kids].astype(np.float64),
        fc,
    )


def no_roots(schedule=None, base=None, gumbel=None, sims_done: int = 0) -> Roots:
    return Roots(
        gumbel=np.zeros((1, K.MAX_MOVES)) if gumbel is None else gumbel,
        base_visits=np.zeros((1, K.MAX_MOVES), dtype=np.int32) if base is None else base,
        schedule=np.zeros((1, 1), dtype=np.int32) if schedule is None else schedule,
        sims_done=np.full(1, sims_done, dtype=np.int32),
        sims_target=np.full(1, 100, dtype=np.int32),
        sigma=np.zeros(K.MAX_MOVES),
    )


# --- the numpy reference ------------------------------------------------------------------
def q_of(visits, value_sum):
    """Q from the parent's view of the visited children (NaN for the others)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(visits > 0, -value_sum / visits, np.nan)


def ref_puct_scores(tree: Tree, node: int, c_puct: float, fpu_reduction: float) -> np.ndarray:
    visits, value_sum, prior, _ = stats(tree, node)
    visited = visits > 0
    parent_q = float(tree.value_sum[0, node]) / max(int(tree.visits[0, node]), 1)
    fpu = parent_q - fpu_reduction * np.sqrt(prior[visited].sum())
    q = np.where(visited, q_of(visits, value_sum), fpu)
    return q + c_puct * np.sqrt(max(visits.sum(), 1)) * prior / (1 + visits)


def ref_completed_q(tree: Tree, node: int) -> np.ndarray:
    visits, value_sum, prior, _ = stats(tree, node)
    visited = visits > 0
    q = q_of(visits, value_sum)
    v_mix = float(tree.raw_value[0, node])
    if visited.any():
        p = np.maximum(prior[visited], 1e-30)
        weighted = (p * q[visited]).sum() / p.sum()
        v_mix = (v_mix + visits.sum() * weighted) / (1 + visits.sum())
    return np.where(visited, q, v_mix)


def ref_sigma(tree: Tree, node: int, c_visit: float, c_scale: float) -> np.ndarray:
    visits = stats(tree, node)[0]
    return (c_visit + visits.max()) * c_scale * (ref_completed_q(tree, node) + 1) / 2


def ref_improved_policy(tree: Tree, node: int, c_visit: float, c_scale: float) -> tuple[np.ndarray, np.ndarray]:
    prior = stats(tree, node)[2]
    logits = np.log(np.maximum(prior, 1e-30)) + ref_sigma(tree, node, c_visit, c_scale)
    e = np.exp(logits - logits.max())
    return logits, e / e.sum()


# --- PUCT -------------------------------------------------------------------------------------
def test_puct_picks_the_best_score_with_first_play_urgency() -> None:
    """Random trees, each under a sweep of c_puct and the FPU reduction: the choice must flip exactly where
    the formula's argmax does (a sweep crosses the decision boundaries that one setting would miss)."""
    rng = np.random.default_rng(0)
    for case in range(30):
        tree = tree_with_root(rng, int(rng.integers(1, 20)), unvisited=[0.0, 0.4, 1.0][case % 3])
        fc = int(tree.first_child[0, ROOT])
        for c_puct in np.linspace(0.0, 4.0, 21):
            for fpu_reduction in (0.0, 0.25, 1.0):
                params = MCTSConfig(puct=PuctConfig(c_puct=float(c_puct), fpu_reduction=fpu_reduction)).params()
                scores = ref_puct_scores(tree, ROOT, params.c_puct, params.fpu_reduction)
                got = select_puct(tree, no_roots(), 0, ROOT, params) - fc
                assert scores[got] == pytest.approx(scores.max(), rel=1e-6, abs=1e-9), (case, c_puct)


def test_puct_by_hand() -> None:
    """Three children: one visited often and good, one visited once and bad, one unvisited with a large prior."""
    tree = new_tree(1, 16)
    # Child values are from the child's side to move: -6 over 10 visits is Q = +0.6 for the parent.
    add_children(tree, ROOT, visits=[10, 1, 0], value_sum=[-6.0, 0.5, 0.0], prior=[0.3, 0.2, 0.5])
    tree.visits[0, ROOT], tree.value_sum[0, ROOT] = 12, 4.0
    fpu = 4.0 / 12 - 0.3 * np.sqrt(0.5)
    explore = 1.7 * np.sqrt(11)
    expected = [0.6 + explore * 0.3 / 11, -0.5 + explore * 0.2 / 2, fpu + explore * 0.5]
    np.testing.assert_allclose(ref_puct_scores(tree, ROOT, 1.7, 0.3), expected, rtol=1e-6)  # float32 priors
    assert select_puct(tree, no_roots(), 0, ROOT, PARAMS) == 1 + int(np.argmax(expected)) == 3
    # With a larger first-play reduction the unvisited child loses to the proven good one.
    strict = MCTSConfig(puct=PuctConfig(c_puct=1.7, fpu_reduction=5.0)).params()
    assert select_puct(tree, no_roots(), 0, ROOT, strict) == 1


def test_puct_choice_flips_where_the_scores_tie() -> None:
    """Two visited children: the formula's scores tie at one c_puct; just below it the better-valued child
    is chosen, just above it the less visited one with the larger prior."""
    tree = new_tree(1, 16)
    add_children(tree, ROOT, visits=[10, 2, 3], value_sum=[-6.0, 0.2, 1.5], prior=[0.2, 0.5, 0.3])
    tree.visits[0, ROOT], tree.value_sum[0, ROOT] = 16, 5.0

    def gap(c: float) -> float:  # score of child 1 minus child 2, linear in c_puct
        scores = ref_puct_scores(tree, ROOT, c, 0.25)
        return float(scores[0] - scores[1])

    c_tie = gap(0.0) / (gap(0.0) - gap(1.0))
    assert 1.0 < c_tie < 1.5
    for c, chosen in ((c_tie * (1 - 1e-4), 1), (c_tie * (1 + 1e-4), 2)):
        params = MCTSConfig(puct=PuctConfig(c_puct=c, fpu_reduction=0.25)).params()
        assert int(np.argmax(ref_puct_scores(tree, ROOT, c, 0.25))) + 1 == chosen
        assert select_puct(tree, no_roots(), 0, ROOT, params) == chosen


def test_puct_below_the_root_reads_its_own_node() -> None:
    rng = np.random.default_rng(1)
    tree = tree_with_root(rng, 5, unvisited=0.0)
    node = int(tree.first_child[0, ROOT]) + 2
    visits, value_sum, prior = random_node(rng, 7)
    add_children(tree, node, visits, value_sum, prior)
    tree.visits[0, node] = 1 + int(visits.sum())
    tree.value_sum[0, node] = np.float32(0.3 * tree.visits[0, node])
    scores = ref_puct_scores(tree, node, PARAMS.c_puct, PARAMS.fpu_reduction)
    assert select_puct(tree, no_roots(), 0, node, PARAMS) == int(tree.first_child[0, node]) + int(np.argmax(scores))


# --- completed Q, sigma, improved policy --------------------------------------------------------
@pytest.mark.parametrize("unvisited", (0.0, 0.5, 1.0))
def test_completed_q_sigma_and_improved_policy_match_the_formulas(unvisited: float) -> None:
    rng = np.random.default_rng(2)
    out = np.zeros(K.MAX_MOVES)
    qhat, logits, probs = np.zeros(K.MAX_MOVES), np.zeros(K.MAX_MOVES), np.zeros(K.MAX_MOVES)
    for _ in range(40):
        n = int(rng.integers(1, 25))
        tree = tree_with_root(rng, n, unvisited)
        max_n = completed_q(tree, 0, ROOT, out)
        assert max_n == stats(tree, ROOT)[0].max()
        np.testing.assert_allclose(out[:n], ref_completed_q(tree, ROOT), rtol=1e-6, atol=1e-7)
        completed_sigma(tree, 0, ROOT, PARAMS, out)
        np.testing.assert_allclose(out[:n], ref_sigma(tree, ROOT, PARAMS.c_visit, PARAMS.c_scale), rtol=1e-6)
        improved_policy(tree, 0, ROOT, PARAMS, qhat, logits, probs)
        ref_logits, ref_probs = ref_improved_policy(tree, ROOT, PARAMS.c_visit, PARAMS.c_scale)
        np.testing.assert_allclose(qhat[:n], ref_completed_q(tree, ROOT), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(logits[:n], ref_logits, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(probs[:n], ref_probs, rtol=1e-6, atol=1e-9)
        assert probs[:n].sum() == pytest.approx(1.0)


def test_completed_q_by_hand() -> None:
    """Visited children keep their Q; unvisited ones get v_mix = (raw + sum N * prior-weighted Q) / (1 + sum N)."""
    tree = new_tree(1, 16)
    add_children(tree, ROOT, visits=[3, 1, 0, 0], value_sum=[-1.5, 0.25, 0.0, 0.0], prior=[0.4, 0.1, 0.3, 0.2])
    tree.raw_value[0, ROOT] = 0.2
    q_visited = np.array([0.5, -0.25])
    v_mix = (0.2 + 4 * (0.4 * 0.5 + 0.1 * -0.25) / 0.5) / 5
    out = np.zeros(K.MAX_MOVES)
    assert completed_q(tree, 0, ROOT, out) == 3
    np.testing.assert_allclose(out[:4], [*q_visited, v_mix, v_mix], rtol=1e-6)
    completed_sigma(tree, 0, ROOT, PARAMS, out)
    np.testing.assert_allclose(out[:4], (50 + 3) * 0.8 * (np.array([*q_visited, v_mix, v_mix]) + 1) / 2, rtol=1e-6)


# --- Gumbel ---------------------------------------------------------------------------------------
def test_gumbel_interior_selection_is_argmax_of_improved_policy_minus_visit_share() -> None:
    """Random trees under a sweep of sigma's scale (how far Q moves pi' away from the prior)."""
    rng = np.random.default_rng(3)
    for case in range(30):
        n = int(rng.integers(1, 25))
        tree = tree_with_root(rng, n, unvisited=[0.0, 0.4, 0.8, 1.0][case % 4])
        visits = stats(tree, ROOT)[0]
        for c_scale in np.linspace(0.0, 0.2, 11):
            for c_visit in (0.0, 50.0):
                params = MCTSConfig(gumbel=GumbelConfig(c_visit=c_visit, c_scale=float(c_scale))).params()
                _, pi = ref_improved_policy(tree, ROOT, params.c_visit, params.c_scale)
                score = pi - visits / (1 + visits.sum())
                got = select_gumbel_interior(tree, no_roots(), 0, ROOT, params) - int(tree.first_child[0, ROOT])
                assert score[got] == pytest.approx(score.max(), rel=1e-6, abs=1e-9), (case, c_scale, c_visit)


def test_gumbel_root_follows_the_halving_schedule() -> None:
    """Only children with exactly the phase's visit count may be picked; among them g + logits + sigma wins."""
    rng = np.random.default_rng(4)
    for case in range(80):
        n = int(rng.integers(2, 20))
        tree = tree_with_root(rng, n, unvisited=0.3)
        visits, _, prior, fc = stats(tree, ROOT)
        base = np.zeros((1, K.MAX_MOVES), dtype=np.int32)
        base[0, :n] = np.minimum(visits, rng.integers(0, 3, size=n))  # visits kept from an earlier search
        if case % 8 == 1:  # the first visits of a search: nothing new yet, kept visits on some children
            base[0, :n] = visits
        new = visits - base[0, :n]
        gumbel = np.zeros((1, K.MAX_MOVES))
        gumbel[0, :n] = rng.gumbel(size=n)
        target = int(rng.choice(new)) if case % 4 else 10**6  # every fourth case: nobody has the target count
        schedule = np.array([[0, target]], dtype=np.int32)
        roots = no_roots(schedule=schedule, base=base, gumbel=gumbel, sims_done=1)
        got = select_gumbel_root(tree, roots, 0, ROOT, PARAMS) - fc
        if case % 4:
            score = (
                gumbel[0, :n] + np.log(np.maximum(prior, 1e-30)) + ref_sigma(tree, ROOT, PARAMS.c_visit, PARAMS.c_scale)
            )
            score[new != target] = -np.inf
            assert got == int(np.argmax(score)), case
        else:
            assert got == int(np.argmin(new)), case  # the fallback: the least visited in this search


def test_gumbel_root_round_names_the_picks_whatever_the_backups() -> None:
    """`gumbel_root_round` names the children that `select_gumbel_root` picks one by one through a run of
    the schedule, whatever values their simulations back up in between; it names none where that is
    not decided yet (fewer children at the target than the run, one simulation left, or more children
    at the target than the run, some visited and some not)."""
    rng = np.random.default_rng(8)
    named = 0
    for case in range(120):
        n = int(rng.integers(2, 24))
        tree = tree_with_root(rng, n, unvisited=1.0 if case % 3 == 0 else 0.3)
        visits = stats(tree, ROOT)[0].astype(np.int32)
        base = np.zeros((1, K.MAX_MOVES), dtype=np.int32)
        if case % 2:  # the first run: kept visits only
            base[0, :n] = visits
            target = 0
        else:
            base[0, :n] = np.minimum(visits, rng.integers(0, 3, size=n))
            target = int(rng.choice(visits - base[0, :n]))
        at_target = int(np.sum(visits - base[0, :n] == target))
        visited = visits[visits - base[0, :n] == target] > 0
        mixed = 0 < int(visited.sum()) < at_target
        run = int(rng.integers(1, at_target + 2))  # sometimes longer than the children at the target
        schedule = np.array([[target] * run + [target + 1]], dtype=np.int32)
        gumbel = np.zeros((1, K.MAX_MOVES))
        gumbel[0, :n] = rng.gumbel(size=n) if case % 5 else 0.0
        roots = no_roots(schedule=schedule, base=base, gumbel=gumbel)
        roots.sims_target[0] = run + 1
        picks = np.zeros(K.MAX_MOVES, dtype=np.int32)
        count = gumbel_root_round(tree, roots, 0, PARAMS, picks)
        if run < 2 or at_target < run or (mixed and at_target > run):
            assert count == 0, case
            continue
        assert count == run, case
        named += 1
        one_by_one = Tree(*[a.copy() for a in tree])
        taken = []
        for _ in range(run):
            c = select_gumbel_root(one_by_one, roots, 0, ROOT, PARAMS)
            taken.append(c)
            one_by_one.visits[0, c] += 1  # its simulation backs up some value
            one_by_one.value_sum[0, c] += np.float32(rng.uniform(-1, 1))
            roots.sims_done[0] += 1
        if at_target == run:  # every child at the target: named in child order
            assert sorted(taken) == picks[:run].tolist(), case
        else:  # named in the order they are taken
            assert taken == picks[:run].tolist(), case
    assert named >= 30


def test_sequential_halving_schedule() -> None:
    # 4 sampled actions get 2 visits each, then the best 2 share the rest.
    assert considered_visits(4, 16).tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert considered_visits(1, 5).tolist() == [0, 1, 2, 3, 4]
    for m in (2, 3, 7, 16):
        for sims in (m, 3 * m, 50, 200):
            seq = considered_visits(m, sims)
            assert len(seq) == sims and seq[:m].tolist() == [0] * m  # every sampled action is tried first
            per_level = np.bincount(seq)
            assert per_level[0] == m and np.all(np.diff(per_level) <= 0)  # never more actions at a later level
            assert per_level[-1] >= 1 and (sims < 2 * m or per_level[-2] >= 2)  # at least two remain to the end

"""Batched MCTS: sign conventions in both colours, targets, terminals, batching and subtree reuse
(the selection maths alone: tests/agents/alphazero/search/test_selection.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from agents.alphazero.search import (
    ROOT,
    ROOT_POLICIES,
    UNVISITED,
    BatchedMCTS,
    GumbelConfig,
    MCTSConfig,
    MCTSConfigError,
    PuctConfig,
    make_policy,
    migrate_flat_mcts,
    uniform_evaluator,
)
from envs import Board, Move, RuleSet
from envs import kernels as K
from envs.batch import GameBatch
from envs.encoding import move_to_action
from tests.support.evaluators import counted, linear_evaluator

RULES = RuleSet()
FLAGS = RULES.flags()
ALGORITHMS = ("puct", "gumbel")

# Red Elephant on d8 enters Blue's den d9 in one.
DEN_IN_ONE = "7/3E3/6e/7/7/7/7/7/7 r 0 1"
# Blue's Rat stands on d2, next to Red's den: every Red move but the capture Ed3xd2 (a trapped
# rat may be taken even by the Elephant) lets Blue enter d1 next ply.
STOP_DEN_ENTRY = "6e/7/7/7/C6/7/3E3/3r3/7 r 0 1"


def rotate(jfen: str) -> str:
    """The position turned 180 degrees with colours swapped: the same game for the other side."""
    placement, side, clock, moveno = jfen.split()
    rows = placement.split("/")
    rotated = "/".join(row[::-1].swapcase() for row in reversed(rows))
    return f"{rotated} {'b' if side == 'r' else 'r'} {clock} {moveno}"


def rotate_move(move: str) -> str:
    files = "abcdefg"

    def sq(s: str) -> str:
        return files[6 - files.index(s[0])] + str(10 - int(s[1]))

    return sq(move[:2]) + sq(move[2:])


def action_of(jfen: str, move: str) -> int:
    board = Board.from_jfen(jfen)
    return int(move_to_action(Move.from_str(move).to_int(), int(board.side_to_move)))


def search_one(
    jfen: str,
    algorithm: str,
    sims: int,
    *,
    evaluator=uniform_evaluator,
    add_noise: bool = False,
    seed: int = 0,
    rounds: bool = True,
    **config,
):
    games = GameBatch(1, RULES, start_jfen=jfen)
    mcts = BatchedMCTS(
        evaluator,
        make_policy(MCTSConfig(algorithm=algorithm, num_simulations=sims, **config)),
        FLAGS,
        seed=seed,
        rounds=rounds,
    )
    return games, mcts, mcts.search(games, add_noise=add_noise)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("colour", ("red", "blue"))
def test_enters_the_den_in_one(algorithm: str, colour: str) -> None:
    jfen, move = DEN_IN_ONE, "d8d9"
    if colour == "blue":
        jfen, move = rotate(DEN_IN_ONE), rotate_move(move)
    assert Board.from_jfen(jfen).side_to_move.name.lower() == colour
    for noise in (False, True):
        _, _, out = search_one(jfen, algorithm, 48, add_noise=noise, seed=3)
        # With noise PUCT draws its move from the visits (temperature): the target must still prefer the den.
        assert out.policy[0].argmax() == action_of(jfen, move), (algorithm, colour, noise)
        if not noise:
            assert out.action[0] == action_of(jfen, move), (algorithm, colour)
        assert out.root_value[0] > 0.5  # the side to move is winning


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("colour", ("red", "blue"))
def test_stops_the_opponent_entering_the_den(algorithm: str, colour: str) -> None:
    jfen, move = STOP_DEN_ENTRY, "d3d2"
    if colour == "blue":
        jfen, move = rotate(STOP_DEN_ENTRY), rotate_move(move)
    board = Board.from_jfen(jfen)
    assert board.side_to_move.name.lower() == colour
    # The rules confirm the trap: after any other move the opponent can enter the den.
    for m in board.legal_moves:
        if str(m) != move:
            board.push(m)
            assert _has_den_entry(board), str(m)
            board.pop()
    _, _, out = search_one(jfen, algorithm, 200)
    assert out.action[0] == action_of(jfen, move), (algorithm, colour)


def _has_den_entry(board: Board) -> bool:
    for m in board.legal_moves:
        board.push(m)
        over = board.outcome()
        board.pop()
        if over is not None and over.termination.name == "DEN":
            return True
    return False


def test_gumbel_policy_is_a_distribution_over_legal_actions() -> None:
    games = GameBatch(3, RULES)
    for i, moves in enumerate(([], ["a3a4"], ["a3a4", "g7g6", "g3g4"])):
        for m in moves:
            games.play(i, action_of_state(games, i, m))
    mcts = BatchedMCTS(
        linear_evaluator(), make_policy(MCTSConfig(algorithm="gumbel", num_simulations=24)), FLAGS, seed=1
    )
    out = mcts.search(games)
    mask = games.masks()
    np.testing.assert_allclose(out.policy.sum(axis=1), 1.0, atol=1e-5)
    assert np.all(out.policy[~mask] == 0)
    assert np.all(out.policy[mask] > 0)
    assert all(mask[i, out.action[i]] for i in range(3))


def action_of_state(games: GameBatch, i: int, move: str) -> int:
    return int(move_to_action(Move.from_str(move).to_int(), games.side_to_move(i)))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_root_visits_sum_to_the_simulations(algorithm: str) -> None:
    for sims in (1, 7, 50):
        games, _, out = search_one(Board().jfen(), algorithm, sims, evaluator=linear_evaluator(), add_noise=True)
        assert out.visits[0].sum() == sims
        if algorithm == "puct":
            np.testing.assert_allclose(out.policy[0], out.visits[0] / sims, atol=1e-6)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_game_searches_the_same_alone_and_beside_others(algorithm: str) -> None:
    cfg = MCTSConfig(algorithm=algorithm, num_simulations=40)
    ev = linear_evaluator(2)
    alone = GameBatch(1, RULES)
    mcts_alone = BatchedMCTS(ev, make_policy(cfg), FLAGS, seed=5, n_games=1)
    mcts_alone.reseed(0, 77)
    crowd = GameBatch(3, RULES)
    for i, m in ((0, "a3a4"), (1, "g3g4"), (1, "a7a6")):
        crowd.play(i, action_of_state(crowd, i, m))
    mcts_crowd = BatchedMCTS(ev, make_policy(cfg), FLAGS, seed=9, n_games=3)
    mcts_crowd.reseed(2, 77)
    for _ in range(3):  # several moves: noise, temperature and reuse stay per game
        a = mcts_alone.search(alone)
        c = mcts_crowd.search(crowd)
        np.testing.assert_array_equal(a.visits[0], c.visits[2])
        np.testing.assert_array_equal(a.policy[0], c.policy[2])
        assert a.action[0] == c.action[2]
        for games, mcts, out in ((alone, mcts_alone, a), (crowd, mcts_crowd, c)):
            for i in range(games.n):
                games.play(i, int(out.action[i]))
                mcts.advance(i, int(out.action[i]))


def material_evaluator(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Uniform priors; value = material balance plus advancement, from the side to move (planes 0-7 its pieces)."""
    ranks = np.arange(1, 9)
    balance = obs[:, 0:8].sum(axis=(2, 3)) @ ranks - obs[:, 8:16].sum(axis=(2, 3)) @ ranks
    rows = np.arange(9)[None, None, :, None]
    advance = (obs[:, 0:8] * rows).sum(axis=(1, 2, 3)) - (obs[:, 8:16] * (8 - rows)).sum(axis=(1, 2, 3))
    return np.zeros((len(obs), 252), np.float32), np.tanh(0.1 * balance + 0.02 * advance).astype(np.float32)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_material_evaluator_beats_random_play_in_both_colours(algorithm: str) -> None:
    """End to end: values from the side to move, backed up with alternating signs, make a winning player."""
    n = 8
    games = GameBatch(n, RULES, max_plies=300)
    mcts = BatchedMCTS(
        material_evaluator, make_policy(MCTSConfig(algorithm=algorithm, num_simulations=40)), FLAGS, seed=1
    )
    searcher_side = np.arange(n) % 2  # Red in even games, Blue in odd ones
    rng = np.random.default_rng(0)
    while not games.done.all():
        mine = ~games.done & (games.state[:, K.S_SIDE] == searcher_side)
        out = mcts.search(games, active=mine, add_noise=False)
        for i in np.flatnonzero(~games.done):
            a = int(out.action[i]) if mine[i] else int(rng.choice(np.flatnonzero(games.masks(i)[0])))
            games.play(i, a)
            mcts.advance(i, a)
    assert [int(games.winner[i]) for i in range(n)] == searcher_side.tolist()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_per_game_simulations_and_noise_match_separate_searches(algorithm: str) -> None:
    """Playout caps: a cheap noiseless search beside a full noisy one, in the same lockstep batches."""
    cfg = MCTSConfig(algorithm=algorithm, num_simulations=30)
    ev = linear_evaluator(3)
    games = GameBatch(2, RULES)
    games.play(1, action_of_state(games, 1, "a3a4"))
    mixed = BatchedMCTS(ev, make_policy(cfg), FLAGS, seed=4, n_games=2)
    out = mixed.search(games, add_noise=np.array([False, True]), num_simulations=np.array([5, 30]))
    assert out.visits.sum(axis=1).tolist() == [5, 30]
    for i, (noise, sims) in enumerate(((False, 5), (True, 30))):
        ref = BatchedMCTS(ev, make_policy(cfg), FLAGS, seed=4, n_games=2).search(
            games, active=np.arange(2) == i, add_noise=noise, num_simulations=sims
        )
        np.testing.assert_array_equal(ref.visits[i], out.visits[i])
        np.testing.assert_array_equal(ref.policy[i], out.policy[i])
        assert ref.action[i] == out.action[i]


def test_only_new_nonterminal_leaves_reach_the_evaluator() -> None:
    """One row per expansion: terminal leaves, finished games and inactive games never reach the network."""
    rows: list[int] = []

    def counting(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows.append(len(obs))
        assert mask.any(axis=1).all()  # every position sent has legal moves: none is over
        return uniform_evaluator(obs, mask)

    games = GameBatch(3, RULES)
    games.reset(0, DEN_IN_ONE)
    games.reset(1, DEN_IN_ONE)
    games.play(1, action_of_state(games, 1, "d8d9"))  # finished
    mcts = BatchedMCTS(counting, make_policy(MCTSConfig(algorithm="puct", num_simulations=30)), FLAGS, seed=0)
    mcts.search(games, active=np.array([True, True, False]), add_noise=False)
    t = mcts.tree
    expanded = int((t.first_child[0, : t.num_nodes[0]] != UNVISITED).sum())
    den = _child(mcts, ROOT, action_of(DEN_IN_ONE, "d8d9"))
    assert t.visits[0, den] > 1  # the terminal child was visited again and again, without the network
    assert sum(rows) == expanded < 31
    assert max(rows) == 1  # only game 0 was ever sent


def test_finished_and_inactive_games_are_skipped() -> None:
    games = GameBatch(3, RULES)
    games.reset(1, "7/3E3/6e/7/7/7/7/7/7 r 0 1")
    games.play(1, action_of_state(games, 1, "d8d9"))
    assert games.done[1]
    mcts = BatchedMCTS(uniform_evaluator, make_policy(MCTSConfig(num_simulations=8)), FLAGS, seed=0)
    out = mcts.search(games, active=np.array([True, True, False]))
    assert out.action.tolist()[1:] == [-1, -1]
    assert out.action[0] >= 0
    assert np.all(out.policy[1:] == 0) and np.all(out.visits[1:] == 0)


def _child(mcts: BatchedMCTS, node: int, action: int) -> int:
    t = mcts.tree
    fc = t.first_child[0, node]
    assert fc != UNVISITED
    for c in range(fc, fc + t.num_children[0, node]):
        if t.action[0, c] == action:
            return int(c)
    raise AssertionError(f"no child with action {action}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_terminal_values_are_exact_in_the_tree(algorithm: str) -> None:
    # Den entry: the child is terminal, lost for its side to move.
    games, mcts, _ = search_one(DEN_IN_ONE, algorithm, 16)
    c = _child(mcts, ROOT, action_of(DEN_IN_ONE, "d8d9"))
    assert mcts.tree.terminal[0, c] and mcts.tree.raw_value[0, c] == -1.0
    assert mcts.tree.value_sum[0, c] == -mcts.tree.visits[0, c]
    # No-capture limit: at 119 plies without capture every quiet move draws, a capture does not.
    jfen = "7/7/7/7/7/7/7/2Ee3/7 r 119 80"
    games, mcts, _ = search_one(jfen, algorithm, 16)
    t = mcts.tree
    fc = t.first_child[0, ROOT]
    assert t.num_children[0, ROOT] == 4
    for c in range(fc, fc + t.num_children[0, ROOT]):
        assert t.terminal[0, c]
        # Capturing the last piece (a trapped Elephant) wins; every quiet move draws.
        capture = t.action[0, c] == action_of(jfen, "c2d2")
        assert t.raw_value[0, c] == (-1.0 if capture else 0.0)
    # No legal move: the Dog on a8 walls in Blue's last piece, a Rat in the corner (the Cat holds b9).
    jfen = "rC5/7/D6/7/7/7/7/7/7 r 0 1"
    games, mcts, out = search_one(jfen, algorithm, 32, solver=False)
    c = _child(mcts, ROOT, action_of(jfen, "a7a8"))
    assert mcts.tree.terminal[0, c] and mcts.tree.raw_value[0, c] == -1.0
    assert out.action[0] in (action_of(jfen, "a7a8"), action_of(jfen, "b9a9"))  # b9a9 takes the last piece
    # With the solver the move is a proven win too (Cb9-b8 wins in two: both Rat moves are taken).
    games, mcts, out = search_one(jfen, algorithm, 32)
    c = _child(mcts, ROOT, int(out.action[0]))
    assert mcts.tree.terminal[0, c] and mcts.tree.raw_value[0, c] == -1.0 and out.root_value[0] == 1.0


def test_repetition_is_judged_on_game_history_plus_path() -> None:
    # Elephants shuffle: after these 6 plies, Red a4a3 then Blue g6g7 repeats the start position a third time.
    shuffle = ["a3a4", "g7g6", "a4a3", "g6g7", "a3a4", "g7g6"]
    games = GameBatch(1, RULES)
    for m in shuffle:
        games.play(0, action_of_state(games, 0, m))
    board = games.board(0)
    board.push("a4a3")
    board.push("g6g7")
    assert board.outcome() is not None and board.outcome().termination.name == "REPETITION"
    mcts = BatchedMCTS(
        uniform_evaluator, make_policy(MCTSConfig(algorithm="puct", num_simulations=3000)), FLAGS, seed=0
    )
    mcts.search(games, add_noise=False)
    c = _child(mcts, ROOT, action_of_state(games, 0, "a4a3"))
    assert not mcts.tree.terminal[0, c]
    grand = _child(mcts, c, int(move_to_action(Move.from_str("g6g7").to_int(), 1)))
    assert mcts.tree.visits[0, grand] > 0
    assert mcts.tree.terminal[0, grand] and mcts.tree.raw_value[0, grand] == 0.0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_subtree_reuse_keeps_the_visits_of_the_chosen_child(algorithm: str) -> None:
    games = GameBatch(1, RULES)
    mcts = BatchedMCTS(
        linear_evaluator(), make_policy(MCTSConfig(algorithm=algorithm, num_simulations=64)), FLAGS, seed=0
    )
    out = mcts.search(games, add_noise=False)
    a = int(out.action[0])
    kept = int(out.visits[0, a])
    assert kept > 1
    games.play(0, a)
    mcts.advance(0, a)
    assert mcts.root_visits(0) == kept
    out2 = mcts.search(games, add_noise=False, num_simulations=10)
    # The kept root was evaluated once; its children hold the rest, plus the 10 new simulations.
    assert out2.visits[0].sum() == kept - 1 + 10
    # Without reuse the tree starts afresh.
    mcts_fresh = BatchedMCTS(
        linear_evaluator(),
        make_policy(MCTSConfig(algorithm=algorithm, num_simulations=64, reuse_tree=False)),
        FLAGS,
        seed=0,
    )
    games = GameBatch(1, RULES)
    out = mcts_fresh.search(games, add_noise=False)
    games.play(0, int(out.action[0]))
    mcts_fresh.advance(0, int(out.action[0]))
    assert mcts_fresh.search(games, num_simulations=10).visits[0].sum() == 10


def test_trees_grow_for_longer_searches() -> None:
    games = GameBatch(2, RULES)
    mcts = BatchedMCTS(uniform_evaluator, make_policy(MCTSConfig(algorithm="puct", num_simulations=4)), FLAGS, seed=0)
    small = mcts.max_nodes
    out = mcts.search(games, num_simulations=400, add_noise=False)
    assert out.visits.sum(axis=1).tolist() == [400, 400]
    assert mcts.max_nodes > small and mcts.tree.num_nodes.min() > small  # expanded beyond the first size


def check_tree(mcts: BatchedMCTS, b: int) -> None:
    """Structural invariants of game b's tree (links, visit counts, exact terminal sums, priors)."""
    t = mcts.tree
    n = int(t.num_nodes[b])
    assert t.parent[b, ROOT] == -1
    for k in range(n):
        v = int(t.visits[b, k])
        assert abs(float(t.value_sum[b, k])) <= v + 1e-3
        fc = int(t.first_child[b, k])
        if t.terminal[b, k] and fc != UNVISITED:
            # Proven by the solver: the exact value its children justify; searched no further since.
            kids = range(fc, fc + int(t.num_children[b, k]))
            results = [-float(t.raw_value[b, c]) for c in kids if t.terminal[b, c]]
            assert 1.0 in results or (len(results) == len(kids) and t.raw_value[b, k] == max(results))
            assert t.raw_value[b, k] == (1.0 if 1.0 in results else max(results))
            assert v >= 1 + sum(int(t.visits[b, c]) for c in kids)
            assert np.isclose(t.value_sum[b, k], v * t.raw_value[b, k], atol=1e-3)  # its Q is exact
            continue
        if t.terminal[b, k]:
            assert np.isclose(t.value_sum[b, k], v * t.raw_value[b, k], atol=1e-3)
            continue
        if fc == UNVISITED:
            assert v == 0  # reached means expanded (nothing here hits the depth or size limits)
            continue
        kids = range(fc, fc + int(t.num_children[b, k]))
        assert fc > k and fc + len(kids) <= n
        assert all(t.parent[b, c] == k for c in kids)
        assert v == 1 + sum(int(t.visits[b, c]) for c in kids)
        assert np.isclose(sum(float(t.prior[b, c]) for c in kids), 1.0, atol=1e-4)
        assert len({int(t.action[b, c]) for c in kids}) == len(kids)


@pytest.mark.slow
@pytest.mark.parametrize("leaf_batch", [1, 8])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_tree_invariants_hold_through_play_and_reuse(algorithm: str, leaf_batch: int) -> None:
    """Also with several leaves per game and call: every virtual loss is taken back."""
    games = GameBatch(4, RULES, max_plies=30)
    mcts = BatchedMCTS(
        linear_evaluator(4),
        make_policy(MCTSConfig(algorithm=algorithm, num_simulations=24, leaf_batch=leaf_batch)),
        FLAGS,
        seed=2,
    )
    while not games.done.all():
        out = mcts.search(games)
        for i in np.flatnonzero(~games.done):
            check_tree(mcts, int(i))
            assert mcts.root_visits(int(i)) >= 25
            games.play(int(i), int(out.action[i]))
            mcts.advance(int(i), int(out.action[i]))
            check_tree(mcts, int(i))


def test_a_stale_tree_is_discarded() -> None:
    games = GameBatch(1, RULES)
    mcts = BatchedMCTS(uniform_evaluator, make_policy(MCTSConfig(algorithm="puct", num_simulations=20)), FLAGS, seed=0)
    out = mcts.search(games)
    games.play(0, int(out.action[0]))  # no advance: the tree no longer matches the game
    assert mcts.search(games).visits[0].sum() == 20


def test_bad_config_is_refused() -> None:
    with pytest.raises(MCTSConfigError, match="algorithm"):
        MCTSConfig(algorithm="alphabeta")
    with pytest.raises(MCTSConfigError, match="simulations_typo"):
        MCTSConfig.from_dict({"num_simulations_typo": 3})


FLAT = {
    "algorithm": "puct",
    "num_simulations": 24,
    "c_puct": 2.0,
    "dirichlet_alpha": 0.5,
    "dirichlet_fraction": 0.1,
    "fpu_reduction": 0.0,
    "temperature": 0.5,
    "temperature_plies": 6,
    "gumbel_max_actions": 4,
    "gumbel_c_visit": 40.0,
    "gumbel_c_scale": 0.3,
    "reuse_tree": False,
    "leaf_batch": 2,
}
"""A search node in the flat layout that configs stored before the split by algorithm hold."""
NESTED = MCTSConfig(
    algorithm="puct",
    num_simulations=24,
    reuse_tree=False,
    leaf_batch=2,
    puct=PuctConfig(
        c_puct=2.0, dirichlet_alpha=0.5, dirichlet_fraction=0.1, fpu_reduction=0.0, temperature=0.5, temperature_plies=6
    ),
    gumbel=GumbelConfig(max_actions=4, c_visit=40.0, c_scale=0.3),
)


def test_the_flat_keys_of_a_stored_config_are_read_into_their_nodes() -> None:
    """Configs stored by earlier versions (checkpoints, the shipped networks) read as they meant; the nested
    layout reads back from `asdict` (what the workers carry)."""
    assert MCTSConfig.from_dict(FLAT) == NESTED
    assert MCTSConfig.from_dict(dataclasses.asdict(NESTED)) == NESTED
    assert migrate_flat_mcts(FLAT)["gumbel"] == {"max_actions": 4, "c_visit": 40.0, "c_scale": 0.3}
    # A flat key given beside its node (a dict of the nested layout with an old key set on top) wins.
    assert MCTSConfig.from_dict(dict(dataclasses.asdict(NESTED), gumbel_max_actions=8)).gumbel.max_actions == 8


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: MCTSConfig(puct=PuctConfig(c_puct=-1.0)), "mcts.puct.c_puct=-1.0 must be >= 0"),
        (lambda: GumbelConfig(max_actions=0), "mcts.gumbel.max_actions=0 must lie in [1, 252]"),
        (lambda: MCTSConfig.from_dict({"gumbel_max_actions": 300}), "mcts.gumbel.max_actions=300 must lie in [1, 252]"),
        (
            lambda: MCTSConfig.from_dict({"gumbel": {"max_action": 3}}),
            "unknown mcts.gumbel key(s) max_action (did you mean max_actions?)",
        ),
        (lambda: MCTSConfig.from_dict({"gumbel_max_action": 3}), "unknown mcts key(s) gumbel_max_action"),
        (lambda: MCTSConfig(puct={"c_puct": 2.0}), "mcts.puct must be a PuctConfig"),  # type: ignore[arg-type]
        (lambda: GumbelConfig(root_uniform=1.5), "mcts.gumbel.root_uniform=1.5 must lie in [0, 1]"),
    ],
)
def test_a_bad_value_names_its_node(build: Any, words: str) -> None:
    with pytest.raises(MCTSConfigError) as e:
        build()
    assert words in str(e.value)


def test_the_caller_hands_the_search_its_policy() -> None:
    """`make_policy` picks the algorithm by name; a policy serves one search (it keeps per-slot state)."""
    policy = make_policy(MCTSConfig(algorithm="puct"))
    assert isinstance(policy, ROOT_POLICIES["puct"]) and policy.config.algorithm == "puct"
    BatchedMCTS(uniform_evaluator, policy, FLAGS, seed=0)
    with pytest.raises(ValueError, match="already serves another BatchedMCTS"):
        BatchedMCTS(uniform_evaluator, policy, FLAGS, seed=0)
    with pytest.raises(TypeError, match="make_policy"):
        BatchedMCTS(uniform_evaluator, MCTSConfig(), FLAGS, seed=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_an_evaluator_marked_runs_in_kernels_is_never_called(algorithm: str) -> None:
    """The marker, not the object, sends a search into numba: another evaluator carrying it searches as the
    uniform one does without being called; the uniform one behind a wrapper is called."""

    class Marked:
        runs_in_kernels = True

        def __call__(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            raise AssertionError("an evaluator that runs in the kernels was called")

    sizes: list[int] = []
    outs = []
    for evaluator in (uniform_evaluator, Marked(), counted(uniform_evaluator, sizes)):
        games = GameBatch(3, RULES)
        mcts = BatchedMCTS(evaluator, make_policy(MCTSConfig(algorithm=algorithm, num_simulations=12)), FLAGS, seed=2)
        outs.append(mcts.search(games))
    for out in outs[1:]:
        np.testing.assert_array_equal(out.visits, outs[0].visits)
        np.testing.assert_array_equal(out.action, outs[0].action)
    assert sum(sizes) > 0


@pytest.mark.parametrize("colour", ("red", "blue"))
def test_decisive_moves_prove_wins_one_ply_early(colour: str) -> None:
    """With decisive moves, a child after which the opponent can enter the den is a proven loss
    after one visit: exact value, no expansion; without them it is an ordinary leaf."""
    jfen, safe = STOP_DEN_ENTRY, "d3d2"
    if colour == "blue":
        jfen, safe = rotate(STOP_DEN_ENTRY), rotate_move(safe)
    n_moves = len(Board.from_jfen(jfen).legal_moves)
    for decisive in (True, False):
        games = GameBatch(1, RULES, start_jfen=jfen)
        # The solver would prove those children from their den-entering replies too: off, to see decisive moves alone.
        config = MCTSConfig(algorithm="puct", num_simulations=2 * n_moves, decisive_moves=decisive, solver=False)
        mcts = BatchedMCTS(uniform_evaluator, make_policy(config), FLAGS, seed=0)
        out = mcts.search(games, add_noise=False)
        tree = mcts.tree
        fc, n = tree.first_child[0, ROOT], tree.num_children[0, ROOT]
        checked = 0
        for c in range(fc, fc + n):
            move = str(Move.from_int(int(tree.move[0, c])))
            if tree.visits[0, c] == 0:
                continue
            checked += 1
            if move == safe:
                assert not tree.terminal[0, c]
            else:
                # The opponent, to move at c, can enter the den: a proven win for it.
                assert tree.terminal[0, c] == decisive, (move, decisive)
                if decisive:
                    assert tree.raw_value[0, c] == 1.0
        assert checked >= 3
        if decisive:
            assert out.action[0] == action_of(jfen, safe)


# Red to move loses by force: Blue's Lion walks d3-d2-d1 and Red's Elephant on a9 needs three moves to d9.
LOST_IN_FOUR = "E6/7/7/7/7/7/3l3/7/7 r 0 1"
# Red to move wins by force: the Lion goes d7-d8, then enters d9; Blue's Elephant on a1 is three moves from d1.
WON_IN_THREE = "7/7/3L3/7/7/7/7/7/e6 r 0 1"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("colour", ("red", "blue"))
def test_solver_proves_a_forced_win_and_plays_it(algorithm: str, colour: str) -> None:
    """Mate in two: the winning first move is proven (its Blue node lost whatever Blue plays), played,
    and the root value is exactly +1; without the solver the value is only an average."""
    jfen, move = WON_IN_THREE, "d7d8"
    if colour == "blue":
        jfen, move = rotate(jfen), rotate_move(move)
    assert Board.from_jfen(jfen).side_to_move.name.lower() == colour
    _, mcts, out = search_one(jfen, algorithm, 300)
    c = _child(mcts, ROOT, action_of(jfen, move))
    assert mcts.tree.terminal[0, c] and mcts.tree.raw_value[0, c] == -1.0
    assert out.action[0] == action_of(jfen, move)
    assert out.root_value[0] == 1.0
    _, plain, plain_out = search_one(jfen, algorithm, 300, solver=False)
    assert not plain.tree.terminal[0, _child(plain, ROOT, action_of(jfen, move))]
    assert plain_out.root_value[0] < 1.0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("colour", ("red", "blue"))
def test_solver_proves_a_forced_loss(algorithm: str, colour: str) -> None:
    """Every move loses (the opponent's Lion is two steps from the den, nothing can stop it): each root
    child is proven won for the opponent and the root value is exactly -1."""
    jfen = LOST_IN_FOUR if colour == "red" else rotate(LOST_IN_FOUR)
    _, mcts, out = search_one(jfen, algorithm, 400)
    tree = mcts.tree
    fc, n = tree.first_child[0, ROOT], tree.num_children[0, ROOT]
    assert all(tree.terminal[0, c] and tree.raw_value[0, c] == 1.0 for c in range(fc, fc + n))
    assert out.root_value[0] == -1.0
    _, _, plain_out = search_one(jfen, algorithm, 400, solver=False)
    assert plain_out.root_value[0] > -1.0


def test_solver_off_searches_as_before() -> None:
    """The solver changes nothing in a search that proves nothing: same visits, targets and moves."""
    ev = linear_evaluator(2)
    a = search_one(Board().jfen(), "gumbel", 64, evaluator=ev, add_noise=True, seed=5)
    b = search_one(Board().jfen(), "gumbel", 64, evaluator=ev, add_noise=True, seed=5, solver=False)
    assert not a[1].tree.terminal[0, : a[1].tree.num_nodes[0]].any()
    np.testing.assert_array_equal(a[2].visits, b[2].visits)
    np.testing.assert_array_equal(a[2].policy, b[2].policy)
    assert a[2].action[0] == b[2].action[0]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("colour", ("red", "blue"))
def test_leaf_batching_finds_the_same_tactics_with_fewer_network_calls(algorithm: str, colour: str) -> None:
    """With 8 leaves per network call (virtual loss) a single game still enters the den in one and stops
    the opponent's den entry, runs exactly its simulations, and calls the network far less often than
    one simulation per call (Gumbel's order-free rounds off)."""
    for position, move in ((DEN_IN_ONE, "d8d9"), (STOP_DEN_ENTRY, "d3d2")):
        jfen = position if colour == "red" else rotate(position)
        move = move if colour == "red" else rotate_move(move)
        for leaf_batch in (1, 8):
            evaluator = linear_evaluator(3)

            def at_most(obs: np.ndarray, mask: np.ndarray, lb: int = leaf_batch, evaluator=evaluator):
                assert len(obs) <= lb
                return evaluator(obs, mask)

            games, mcts, out = search_one(jfen, algorithm, 160, evaluator=at_most, leaf_batch=leaf_batch, rounds=False)
            assert out.action[0] == action_of(jfen, move), (position, leaf_batch)
            chosen = Move.from_int(int(mcts.tree.move[0, _child(mcts, ROOT, int(out.action[0]))]))
            assert Board.from_jfen(jfen).is_legal(chosen)
            assert mcts.root_visits(0) == 161  # the root's own evaluation plus every simulation
            check_tree(mcts, 0)
    # Away from forced lines (where most simulations end in proven nodes and need no network):
    _, _, one = search_one(Board().jfen(), algorithm, 160, evaluator=counted_evaluator(calls := {}, 1), rounds=False)
    _, _, eight = search_one(Board().jfen(), algorithm, 160, evaluator=counted_evaluator(calls, 8), leaf_batch=8)
    assert calls[8] * 4 <= calls[1], calls


def counted_evaluator(calls: dict, key: int):
    """`linear_evaluator(3)` counting its calls in `calls[key]`."""
    evaluator = linear_evaluator(3)
    calls[key] = 0

    def counted(obs: np.ndarray, mask: np.ndarray):
        calls[key] += 1
        return evaluator(obs, mask)

    return counted


@pytest.mark.parametrize("colour", ("red", "blue"))
@pytest.mark.parametrize("draw_value", (-0.5, 0.0, 0.5))
def test_draws_are_worth_draw_value_to_the_root_side(colour: str, draw_value: float) -> None:
    # At 119 plies without capture every quiet move draws; the capture of the last piece wins.
    jfen, capture = "7/7/7/7/7/7/7/2Ee3/7 r 119 80", "c2d2"
    if colour == "blue":
        jfen, capture = rotate(jfen), rotate_move(capture)
    games = GameBatch(1, RULES, start_jfen=jfen)
    config = MCTSConfig(algorithm="puct", num_simulations=16, draw_value=draw_value)
    mcts = BatchedMCTS(uniform_evaluator, make_policy(config), FLAGS, seed=0)
    out = mcts.search(games, add_noise=False)
    t = mcts.tree
    fc = t.first_child[0, ROOT]
    for c in range(fc, fc + t.num_children[0, ROOT]):
        assert t.terminal[0, c]
        # Raw values are from the child's side to move, the root side's opponent.
        won = t.action[0, c] == action_of(jfen, capture)
        assert t.raw_value[0, c] == pytest.approx(-1.0 if won else -draw_value)
    assert out.action[0] == action_of(jfen, capture)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_draw_contempt_steers_away_from_a_repetition_and_draw_seeking_into_it(algorithm: str) -> None:
    # After these 7 plies Blue's g6g7 would repeat the start position a third time (a draw).
    shuffle = ["a3a4", "g7g6", "a4a3", "g6g7", "a3a4", "g7g6", "a4a3"]
    games = GameBatch(1, RULES)
    for m in shuffle:
        games.play(0, action_of_state(games, 0, m))
    repeat = action_of_state(games, 0, "g6g7")
    chosen = {}
    for draw_value in (-0.5, 0.5):
        # Gumbel considers every root move (there are fewer than 64), so the repetition is among them.
        config = MCTSConfig(
            algorithm=algorithm, num_simulations=200, gumbel=GumbelConfig(max_actions=64), draw_value=draw_value
        )
        mcts = BatchedMCTS(uniform_evaluator, make_policy(config), FLAGS, seed=0)
        out = mcts.search(games, add_noise=False)
        c = _child(mcts, ROOT, repeat)
        assert mcts.tree.terminal[0, c] and mcts.tree.raw_value[0, c] == pytest.approx(-draw_value)
        chosen[draw_value] = int(out.action[0])
    assert chosen[-0.5] != repeat and chosen[0.5] == repeat


def test_a_draw_value_keeps_no_subtree_across_moves() -> None:
    # Draws valued for Red's search would mislead Blue's: with a draw value the next search starts afresh.
    games = GameBatch(1, RULES)
    mcts = BatchedMCTS(linear_evaluator(), make_policy(MCTSConfig(num_simulations=32, draw_value=-0.2)), FLAGS, seed=0)
    out = mcts.search(games, add_noise=False)
    a = int(out.action[0])
    assert out.visits[0, a] > 1
    games.play(0, a)
    mcts.advance(0, a)
    assert mcts.search(games, num_simulations=10).visits[0].sum() == 10
    with pytest.raises(MCTSConfigError, match="draw_value"):
        MCTSConfig(draw_value=-2.0)


def _selfplay_trace(mcts: BatchedMCTS, games: GameBatch, plies: int) -> tuple[np.ndarray, ...]:
    """Actions, policies, root values and visits of `plies` noisy searches of every game, each move
    played and its subtree kept."""
    actions, policies, values, visits = [], [], [], []
    for _ in range(plies):
        out = mcts.search(games)
        actions.append(out.action.copy())
        policies.append(out.policy.copy())
        values.append(out.root_value.copy())
        visits.append(out.visits.copy())
        live = np.flatnonzero(~games.done)
        games.play_many(out.action)  # -1 (finished games) plays nothing
        mcts.advance_many(live, out.action)
    return tuple(np.array(x) for x in (actions, policies, values, visits))


@pytest.mark.slow
@pytest.mark.parametrize("sims,max_actions", [(16, 16), (32, 4), (24, 8), (64, 16), (5, 16)])
def test_gumbel_rounds_are_the_searches_of_one_simulation_per_call(sims: int, max_actions: int) -> None:
    """Gumbel's order-free runs share evaluator calls (`BatchedMCTS.rounds`): over noisy self-play with
    subtree reuse, every move, target, value and visit count equals that of the one-simulation-per-call
    loop, with fewer and larger calls."""
    config = MCTSConfig(algorithm="gumbel", num_simulations=sims, gumbel=GumbelConfig(max_actions=max_actions))
    traces, calls = [], []
    for rounds in (False, True):
        ev = linear_evaluator(4)
        sizes: list[int] = []

        def counted(obs: np.ndarray, mask: np.ndarray, ev=ev, sizes=sizes) -> tuple[np.ndarray, np.ndarray]:
            sizes.append(len(obs))
            return ev(obs, mask)

        games = GameBatch(6, RULES)
        mcts = BatchedMCTS(counted, make_policy(config), FLAGS, seed=11, rounds=rounds)
        assert mcts.rounds == rounds
        traces.append(_selfplay_trace(mcts, games, 24))
        calls.append(sizes)
    for one, shared in zip(*traces):
        np.testing.assert_array_equal(one, shared)
    assert sum(calls[0]) == sum(calls[1])  # the same leaves reach the evaluator
    assert len(calls[1]) < len(calls[0])
    if sims == max_actions:  # every first visit in one call: about one call a move
        assert len(calls[1]) <= 3 * 24


def test_gumbel_rounds_need_one_simulation_per_call_elsewhere() -> None:
    """PUCT and leaf batching keep their own loops."""

    def rounds(config: MCTSConfig, **kw: Any) -> bool:
        return BatchedMCTS(uniform_evaluator, make_policy(config), FLAGS, seed=0, **kw).rounds

    assert not rounds(MCTSConfig(algorithm="puct"))
    assert not rounds(MCTSConfig(algorithm="gumbel", leaf_batch=4))
    assert not rounds(MCTSConfig(algorithm="gumbel"), rounds=False)


@pytest.mark.parametrize("algorithm,rounds", [("gumbel", True), ("gumbel", False), ("puct", False)])
def test_searches_begun_apart_share_calls_and_are_the_searches_alone(algorithm: str, rounds: bool) -> None:
    """`begin`/`step`: a search begun while another is under way shares its evaluator calls, and each is
    the search `search` runs (same noise from the slot's generator, same tree, same outputs)."""
    config = MCTSConfig(algorithm=algorithm, num_simulations=16, gumbel=GumbelConfig(max_actions=8))
    games = GameBatch(3, RULES)
    lockstep = BatchedMCTS(linear_evaluator(2), make_policy(config), FLAGS, seed=4, rounds=rounds)
    expected = lockstep.search(games, add_noise=True, num_simulations=np.array([16, 10, 4]))

    sizes: list[int] = []
    mcts = BatchedMCTS(counted(linear_evaluator(2), sizes), make_policy(config), FLAGS, seed=4, rounds=rounds)
    mcts.begin(games, np.array([0]), add_noise=True)
    assert mcts.step().size == 0 and mcts.step().size == 0 and mcts.searching.tolist() == [True, False, False]
    first = len(sizes)
    mcts.begin(games, np.array([1, 2]), add_noise=True, num_simulations=np.array([16, 10, 4]))
    finished: list[int] = []
    while mcts.searching.any():
        finished += mcts.step().tolist()
    assert sorted(finished) == [0, 1, 2]
    assert max(sizes[first + 1 :]) >= 2  # after the new roots' call, the three searches' leaves share calls
    out = mcts.results(np.arange(3))
    for name in ("policy", "action", "root_value", "visits"):
        np.testing.assert_array_equal(getattr(out, name), getattr(expected, name), err_msg=name)


def test_begin_and_step_refuse_what_would_corrupt_a_search() -> None:
    games = GameBatch(2, RULES)
    mcts = BatchedMCTS(
        linear_evaluator(1), make_policy(MCTSConfig(algorithm="gumbel", num_simulations=8)), FLAGS, seed=0
    )
    assert mcts.step().size == 0  # nothing under way
    mcts.begin(games, np.array([0]))
    with pytest.raises(ValueError, match="already searching"):
        mcts.begin(games, np.array([0]))
    with pytest.raises(ValueError, match="searching"):
        mcts.advance(0, 3)
    with pytest.raises(ValueError, match="not finished"):
        mcts.results(np.array([0]))
    with pytest.raises(RuntimeError, match="still searching"):
        mcts.search(games)
    with pytest.raises(ValueError, match=r"in \[0, 2\)"):
        mcts.begin(games, np.array([2]))
    while mcts.searching.any():
        mcts.step()
    assert mcts.results(np.array([0])).action[0] >= 0


# The start position five plies after the last capture: under a no-capture limit of 6 every move draws.
CLOCK_5 = "l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 5 3"
SHORT = RuleSet(no_capture_draw=6)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_each_game_is_searched_under_its_own_rules(algorithm: str) -> None:
    """A search over a batch mixing rule sets gives each game the search of a batch playing its rules alone;
    a slot whose game changes rules at the same position starts a new tree."""
    cfg = MCTSConfig(algorithm=algorithm, num_simulations=24)
    ev = linear_evaluator(3)
    rules_of = [RULES, SHORT, RuleSet(rank_order="dog_over_wolf")]
    games = GameBatch(3, RULES, start_jfen=CLOCK_5)
    for i, r in enumerate(rules_of):
        games.reset(i, rules=r)
    mcts = BatchedMCTS(ev, make_policy(cfg), FLAGS, seed=4, n_games=3)
    out = mcts.search(games, add_noise=False)
    for i, r in enumerate(rules_of):
        alone = GameBatch(3, r, start_jfen=CLOCK_5)
        ref = BatchedMCTS(ev, make_policy(cfg), r.flags(), seed=4, n_games=3).search(
            alone, active=np.arange(3) == i, add_noise=False
        )
        np.testing.assert_array_equal(ref.visits[i], out.visits[i])
        np.testing.assert_array_equal(ref.policy[i], out.policy[i])
        assert (ref.action[i], ref.root_value[i]) == (out.action[i], out.root_value[i])
    assert out.root_value[1] != out.root_value[0]  # every move draws under the short limit
    games.reset(0, rules=SHORT)  # the same position (ply and hash): the default rules' tree must go
    again = mcts.search(games, active=np.arange(3) == 0, add_noise=False)
    np.testing.assert_array_equal(again.visits[0], out.visits[1])
    assert again.root_value[0] == out.root_value[1]


def _shuffled_to_a_repetition(n: int) -> tuple[GameBatch, int]:
    """`n` games where Blue's g6g7 would repeat the start position a third time (a draw), and that action."""
    games = GameBatch(n, RULES)
    for i in range(n):
        for m in ["a3a4", "g7g6", "a4a3", "g6g7", "a3a4", "g7g6", "a4a3"]:
            games.play(i, action_of_state(games, i, m))
    return games, action_of_state(games, 0, "g6g7")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_draw_value_per_game_searches_as_the_config_would(algorithm: str) -> None:
    # One batch, contempt in game 0 and draw seeking in game 1: each search is the one its draw value alone gives.
    games, repeat = _shuffled_to_a_repetition(2)
    per_game = np.array([-0.5, 0.5])
    config = MCTSConfig(algorithm=algorithm, num_simulations=200, gumbel=GumbelConfig(max_actions=64))
    mixed = BatchedMCTS(uniform_evaluator, make_policy(config), FLAGS, seed=0)
    out = mixed.search(games, add_noise=False, draw_value=per_game)
    for b, value in enumerate(per_game):
        alone = BatchedMCTS(
            uniform_evaluator, make_policy(dataclasses.replace(config, draw_value=float(value))), FLAGS, seed=0
        )
        ref = alone.search(games, add_noise=False)
        np.testing.assert_array_equal(out.visits[b], ref.visits[b])
        assert out.root_value[b] == pytest.approx(ref.root_value[b])
    c = _child(mixed, ROOT, repeat)  # game 0's: from its side to move, Red, the draw is worth +0.5
    assert mixed.tree.terminal[0, c] and mixed.tree.raw_value[0, c] == pytest.approx(0.5)
    assert out.action[0] != repeat and out.action[1] == repeat
    with pytest.raises(ValueError, match="draw_value"):
        mixed.search(games, draw_value=np.array([0.0, 1.5]))


def test_a_subtree_is_kept_only_where_the_draw_values_agree() -> None:
    # The tree after a move serves the next search when its drawn ends are worth the same to both searches:
    # no draw value in either (game 0), or a draw value d for one side and -d for the other (game 1, the
    # same zero-sum game); a contempt on one side only (game 2) starts the next search afresh.
    games = GameBatch(3, RULES)
    config = MCTSConfig(algorithm="gumbel", num_simulations=32, gumbel=GumbelConfig(max_actions=4))
    mcts = BatchedMCTS(linear_evaluator(), make_policy(config), FLAGS, seed=0)
    out = mcts.search(games, add_noise=False, draw_value=np.array([0.0, -0.2, -0.2]))
    actions = out.action.copy()
    assert (out.visits[np.arange(3), actions] > 1).all()
    for i in range(3):
        games.play(i, int(actions[i]))
    mcts.advance_many(np.arange(3), actions)
    again = mcts.search(games, add_noise=False, num_simulations=10, draw_value=np.array([0.0, 0.2, 0.0]))
    sums = again.visits.sum(axis=1)
    assert sums[0] > 10 and sums[1] > 10 and sums[2] == 10


def test_a_draw_value_keeps_its_subtree_when_the_turn_comes_back() -> None:
    # A player with a contempt for draws searches each of its positions with the same draw value: the tree
    # after its move and the reply (two advances) serves it, as does the same position searched again.
    games = GameBatch(1, RULES)
    config = MCTSConfig(algorithm="gumbel", num_simulations=32, gumbel=GumbelConfig(max_actions=4))
    mcts = BatchedMCTS(linear_evaluator(), make_policy(config), FLAGS, seed=0)
    out = mcts.search(games, add_noise=False, draw_value=-0.2)
    assert mcts.search(games, add_noise=False, num_simulations=10, draw_value=-0.2).visits[0].sum() == 42
    for _ in range(2):
        a = int(out.action[0])
        games.play(0, a)
        mcts.advance(0, a)
        out = mcts.search(games, add_noise=False, num_simulations=32, draw_value=0.2 if _ == 0 else -0.2)
    assert out.visits[0].sum() > 32
    fresh = mcts.search(games, add_noise=False, num_simulations=10, draw_value=0.0)
    assert fresh.visits[0].sum() == 10


def two_move_evaluator(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A prior on two legal moves of each position (logits 30 and 20, every other move 0: a prior of about
    1e-13 each), value 0."""
    logits = np.zeros(mask.shape, dtype=np.float32)
    for row, legal in enumerate(mask):
        first, second = np.flatnonzero(legal)[:2]
        logits[row, first], logits[row, second] = 30.0, 20.0
    return logits, np.zeros(len(mask), dtype=np.float32)


def _root_searches(root_uniform: float, add_noise: bool, n: int = 32) -> tuple[GameBatch, Any]:
    games = GameBatch(n, RULES)
    cfg = MCTSConfig(
        algorithm="gumbel", num_simulations=4, gumbel=GumbelConfig(max_actions=2, root_uniform=root_uniform)
    )
    return games, BatchedMCTS(two_move_evaluator, make_policy(cfg), FLAGS, seed=3).search(games, add_noise=add_noise)


def test_a_root_uniform_floor_searches_the_moves_the_prior_gives_nothing() -> None:
    """Gumbel-top-2 over a prior with two strong moves never samples a third; mixed with the uniform policy
    at noisy roots it does. The improved-policy target is the network's prior with sigma(completed Q) (every
    value here is 0, so the prior alone): the floor does not enter it."""
    games, plain = _root_searches(0.0, add_noise=True)
    favoured = np.zeros_like(plain.visits, dtype=np.bool_)
    for row, legal in enumerate(games.masks()):
        favoured[row, np.flatnonzero(legal)[:2]] = True
    assert plain.visits[~favoured].sum() == 0
    _, floored = _root_searches(0.5, add_noise=True)
    others = floored.visits * ~favoured
    assert others.sum() > 0 and (others > 0).any(axis=1).sum() >= 4
    np.testing.assert_allclose(floored.policy, plain.policy, rtol=1e-5, atol=1e-12)


def test_a_root_uniform_floor_leaves_searches_without_noise_as_they_were() -> None:
    """Evaluation play (no noise) searches the network's prior whatever the floor."""
    _, plain = _root_searches(0.0, add_noise=False, n=4)
    _, floored = _root_searches(0.5, add_noise=False, n=4)
    np.testing.assert_array_equal(plain.visits, floored.visits)
    np.testing.assert_array_equal(plain.policy, floored.policy)
    np.testing.assert_array_equal(plain.action, floored.action)

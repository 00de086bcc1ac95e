"""Self-play's whole-batch ply kernels against the per-game steps they replace: play, reset, advance, noise, samples."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from agents.alphazero.search import BatchedMCTS, MCTSConfig, PuctConfig, make_policy, uniform_evaluator
from agents.alphazero.search.driver import NOISE_PLIES
from agents.alphazero.search.gumbel import Gumbel
from agents.alphazero.search.puct import Puct
from agents.alphazero.selfplay.data import SelfPlayData
from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
from agents.alphazero.selfplay.samples import game_samples, new_samples, record_samples
from envs import RuleSet
from envs.batch import GameBatch
from envs.board import IllegalMoveError
from envs.notation import START_JFEN, parse_jfen

RULES = RuleSet(no_capture_draw=40)
GAME_FIELDS = ("state", "hist", "hashes", "done", "truncated", "term", "winner")


def _random_actions(games: GameBatch, rng: np.random.Generator, skip: float = 0.2) -> np.ndarray:
    """A random legal action per unfinished game (-1 for finished ones and, at random, a few others)."""
    masks = games.masks()
    actions = np.full(games.n, -1, dtype=np.int64)
    for i in range(games.n):
        if masks[i].any() and rng.random() >= skip:
            actions[i] = rng.choice(np.flatnonzero(masks[i]))
    return actions


def _same_games(a: GameBatch, b: GameBatch) -> None:
    for name in GAME_FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_play_many_equals_playing_game_by_game() -> None:
    """Random games to their ends (rules and the ply cap): one kernel call per ply keeps the arrays of
    one `play` per game, finished games included."""
    rng = np.random.default_rng(0)
    batch, single = GameBatch(6, RULES, max_plies=30), GameBatch(6, RULES, max_plies=30)
    board = batch.board(2)  # a game handed out as a Board follows its moves
    for _ in range(40):
        actions = _random_actions(batch, rng)
        batch.play_many(actions)
        for i in np.flatnonzero(actions >= 0).tolist():
            single.play(i, int(actions[i]))
        _same_games(batch, single)
    assert batch.done.all() and batch.truncated.any()
    assert batch.board(2).jfen() == single.board(2).jfen() != board.jfen()


def test_play_many_refuses_illegal_actions_and_finished_games() -> None:
    games = GameBatch(3, RULES)
    actions = np.array([-1, 2, -1])  # the Tiger on a1 moving south, off the board
    with pytest.raises(IllegalMoveError, match="not legal in game 1"):
        games.play_many(actions)
    with pytest.raises(ValueError, match="one action per game"):
        games.play_many(np.array([0, 1]))
    games.done[0] = True
    with pytest.raises(IllegalMoveError, match="game 0 is over"):
        games.play_many(np.array([5, -1, -1]))


def test_reset_many_equals_reset() -> None:
    rng = np.random.default_rng(1)
    jfen = "7/3E3/6e/7/7/7/7/7/7 b 0 1"
    batch, single = GameBatch(5, RULES, max_plies=30), GameBatch(5, RULES, max_plies=30)
    for _ in range(30):
        actions = _random_actions(batch, rng, skip=0.0)
        batch.play_many(actions)
        single.play_many(actions)
    batch.board(3)
    batch.reset_many(np.array([1, 3]), jfen)
    for i in (1, 3):
        single.reset(i, jfen)
    _same_games(batch, single)
    assert batch.start == single.start and batch.board(3).jfen() == single.board(3).jfen()


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_advance_many_equals_advancing_game_by_game(algorithm: str) -> None:
    """Two searches of the same games, one advanced per game and one in one call: the same trees, and
    the same next searches (reused subtrees, proven roots emptied, cleared trees)."""
    cfg = MCTSConfig(algorithm=algorithm, num_simulations=12)
    games = GameBatch(5, RULES, max_plies=80)
    one, many = (BatchedMCTS(uniform_evaluator, make_policy(cfg), games.flags, seed=3, n_games=5) for _ in range(2))
    for ply in range(25):
        outs = [m.search(games, add_noise=False) for m in (one, many)]
        np.testing.assert_array_equal(outs[0].policy, outs[1].policy)
        actions = np.where(games.done, -1, outs[0].action)
        if ply % 7 == 3:
            actions[ply % 5] = -1 if not games.done[ply % 5] else actions[ply % 5]  # a cleared tree
        live = np.flatnonzero(~games.done)
        games.play_many(np.where(actions >= 0, actions, -1))
        for b in live.tolist():
            one.advance(b, int(actions[b]))
        many.advance_many(live, actions)
        for name, x, y in zip(one.tree._fields, one.tree, many.tree):
            np.testing.assert_array_equal(x, y, err_msg=name)
        np.testing.assert_array_equal(one._root_ply, many._root_ply)
        np.testing.assert_array_equal(one.work.root_state, many.work.root_state)
        if games.done.all():
            break
    assert (one._root_ply >= 0).any()  # some trees were kept


@pytest.mark.parametrize("policy", [Gumbel(MCTSConfig()), Puct(MCTSConfig(algorithm="puct"))])
def test_noise_drawn_ahead_is_the_noise_drawn_search_by_search(policy) -> None:
    """`fill_noise` draws in the order the searches would draw one by one from the slot's generator."""
    rows = policy.fill_noise(np.random.default_rng(9), NOISE_PLIES)
    rng = np.random.default_rng(9)
    for r in range(NOISE_PLIES):
        if isinstance(policy, Gumbel):
            np.testing.assert_array_equal(rows[r], rng.gumbel(size=rows.shape[1]))
        else:
            np.testing.assert_array_equal(
                rows[r, :-1], rng.gamma(policy.config.puct.dirichlet_alpha, size=rows.shape[1] - 1)
            )
            assert rows[r, -1] == rng.random()


def test_recorded_samples_replay_to_the_positions_played() -> None:
    """Per-ply records of random games, read back by `game_samples`: the observations, masks and
    policies seen during play, the sides, flags and root values recorded."""
    rng = np.random.default_rng(4)
    games = GameBatch(4, RULES, max_plies=40)
    samples = new_samples(4, 40)
    seen: list[list[tuple[np.ndarray, ...]]] = [[] for _ in range(4)]
    while not games.done.all():
        live = ~games.done
        obs, mask = games.observations(), games.masks()
        policy = np.where(mask, rng.random(mask.shape), 0.0).astype(np.float32)
        policy[:, 0] = 0.0
        root_value = rng.uniform(-1, 1, 4).astype(np.float32)
        full, searched = rng.random(4) < 0.7, rng.random(4) < 0.8
        record_samples(samples, np.flatnonzero(live), games.state, policy, root_value, full, searched)
        for b in np.flatnonzero(live).tolist():
            seen[b].append(
                (
                    obs[b],
                    mask[b],
                    policy[b] if searched[b] else np.zeros_like(policy[b]),
                    games.side_to_move(b),
                    full[b],
                    root_value[b] if searched[b] else np.nan,
                )
            )
        games.play_many(_random_actions(games, rng, skip=0.0))
    first = parse_jfen(START_JFEN)
    for b in range(4):
        plies = games.plies(b)
        assert plies == len(seen[b])
        obs, mask, policy = game_samples(samples, b, first, games.hist[b], plies, games.flags)
        np.testing.assert_array_equal(obs, np.stack([s[0] for s in seen[b]]))
        np.testing.assert_array_equal(mask, np.stack([s[1] for s in seen[b]]))
        np.testing.assert_array_equal(policy, np.stack([s[2] for s in seen[b]]))
        np.testing.assert_array_equal(samples.side[b, :plies], [s[3] for s in seen[b]])
        np.testing.assert_array_equal(samples.full[b, :plies], [s[4] for s in seen[b]])
        np.testing.assert_array_equal(samples.root_value[b, :plies], np.array([s[5] for s in seen[b]], np.float64))


def _digest(d: SelfPlayData) -> str:
    h = hashlib.sha256(json.dumps([[r.moves, r.result, r.red, r.blue] for r in d.records]).encode())
    h.update(d.full_search.tobytes())
    h.update(np.isnan(d.value).tobytes())
    return h.hexdigest()[:16]


def test_games_are_those_of_the_per_game_loop() -> None:
    """Golden games: the digests of these calls' moves, results and flags were taken from the self-play
    that looped over the games in Python at every ply (commit 3454601); the batch kernels keep them."""
    a = play_games(
        uniform_evaluator,
        SelfPlayConfig(
            parallel=3,
            max_plies=50,
            playout_cap_fraction=0.3,
            cheap_simulations=2,
            opponents=["random"],
            opponent_fraction=0.4,
        ),
        mcts=MCTSConfig(num_simulations=6),
        rules=RULES,
        num_games=7,
        seed=21,
    )
    b = play_games(
        uniform_evaluator,
        SelfPlayConfig(parallel=4, max_plies=50, playout_cap_fraction=0.3),
        mcts=MCTSConfig(algorithm="puct", num_simulations=6, puct=PuctConfig(temperature_plies=8)),
        rules=RULES,
        num_games=6,
        seed=22,
        first_game=3,
    )
    assert (a.stats.opponent_games, a.stats.truncated, b.stats.truncated) == (5, 5, 5)
    assert (_digest(a), _digest(b)) == ("dd2c7ed288626758", "55822af8dfc76d7f")

"""The evaluation cache: answers as its evaluator would, evaluates each distinct input once, forgets the least
recently used first, and leaves a search's moves as they were with fewer positions evaluated."""

from __future__ import annotations

import numpy as np
import pytest

from agents.alphazero.search import BatchedMCTS, GumbelConfig, MCTSConfig, make_policy
from agents.alphazero.search.cache import MAX_CACHE_ENTRIES, CachedEvaluator, CacheSizeError
from envs import Board, Move, RuleSet
from envs.batch import GameBatch
from envs.encoding import N_ACTIONS, OBS_SHAPE, action_to_move
from tests.support.evaluators import linear_evaluator

RULES = RuleSet()


def recording(rows: list[bytes]):
    """The linear evaluator, appending the bytes of every observation it is asked about to `rows`."""
    inner = linear_evaluator(seed=4)

    def evaluate(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows.extend(row.tobytes() for row in obs)
        return inner(obs, mask)

    return evaluate


def positions(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    obs = (rng.random((n, *OBS_SHAPE)) < 0.1).astype(np.float32)
    mask = rng.random((n, N_ACTIONS)) < 0.2
    return obs, mask


def test_answers_are_the_evaluators_and_each_distinct_input_is_evaluated_once() -> None:
    obs, mask = positions(3)
    batch_obs = obs[[0, 1, 0, 2, 1]]
    batch_mask = mask[[0, 1, 0, 2, 1]]
    seen: list[bytes] = []
    cache = CachedEvaluator(recording(seen), 100)
    logits, value = cache(batch_obs, batch_mask)
    want_logits, want_value = linear_evaluator(seed=4)(batch_obs, batch_mask)
    np.testing.assert_array_equal(logits, want_logits)
    np.testing.assert_array_equal(value, want_value)
    assert len(seen) == 3 and len(set(seen)) == 3  # the repeats within the call are evaluated once
    assert (cache.hits, cache.misses, len(cache)) == (2, 3, 3)
    again_logits, again_value = cache(obs[[2, 0]], mask[[2, 0]])  # both known: no evaluator call
    assert len(seen) == 3
    np.testing.assert_array_equal(again_logits, want_logits[[3, 0]])
    np.testing.assert_array_equal(again_value, want_value[[3, 0]])
    assert (cache.hits, cache.misses) == (4, 3)


def test_the_same_board_under_another_legal_mask_is_another_input() -> None:
    obs, mask = positions(1)
    seen: list[bytes] = []
    cache = CachedEvaluator(recording(seen), 10)
    cache(obs, mask)
    cache(obs, ~mask)
    assert len(seen) == 2


def test_the_least_recently_used_position_is_forgotten_first() -> None:
    obs, mask = positions(3)
    seen: list[bytes] = []
    cache = CachedEvaluator(recording(seen), 2)
    cache(obs[[0]], mask[[0]])
    cache(obs[[1]], mask[[1]])
    cache(obs[[0]], mask[[0]])  # 0 is now the most recently used
    cache(obs[[2]], mask[[2]])  # so 1 goes
    assert len(cache) == 2 and len(seen) == 3
    cache(obs[[0, 2]], mask[[0, 2]])
    assert len(seen) == 3
    cache(obs[[1]], mask[[1]])
    assert len(seen) == 4
    cache.clear()
    assert (len(cache), cache.hits, cache.misses) == (0, 0, 0)


def test_the_callers_arrays_are_its_own() -> None:
    obs, mask = positions(2)
    cache = CachedEvaluator(linear_evaluator(seed=4), 10)
    first_logits, first_value = cache(obs, mask)
    want_logits, want_value = first_logits.copy(), first_value.copy()
    first_logits[:] = 7.0
    first_value[:] = 0.5
    logits, value = cache(obs, mask)
    np.testing.assert_array_equal(logits, want_logits)
    np.testing.assert_array_equal(value, want_value)


def test_an_evaluator_error_passes_through_and_nothing_is_kept() -> None:
    def broken(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise FloatingPointError("the network's outputs are not finite")

    cache = CachedEvaluator(broken, 10)
    obs, mask = positions(2)
    with pytest.raises(FloatingPointError, match="not finite"):
        cache(obs, mask)
    assert (len(cache), cache.misses) == (0, 0)


@pytest.mark.parametrize("size", (0, -1, MAX_CACHE_ENTRIES + 1, 2.5, True, "8"))
def test_a_bad_size_is_refused_naming_it(size: object) -> None:
    with pytest.raises(CacheSizeError, match="cache size"):
        CachedEvaluator(linear_evaluator(), size)  # type: ignore[arg-type]


@pytest.mark.parametrize("leaf_batch", (1, 8))
def test_a_search_through_the_cache_is_the_same_with_fewer_positions_evaluated(leaf_batch: int) -> None:
    """Six moves of a game searched with subtree reuse off, so each search meets its predecessor's
    positions again: the same targets, moves and visits as without the cache (the evaluator answers row
    by row), and fewer positions evaluated."""
    config = MCTSConfig(
        algorithm="gumbel", num_simulations=48, leaf_batch=leaf_batch, gumbel=GumbelConfig(max_actions=8)
    )
    plain_rows: list[bytes] = []
    cached_rows: list[bytes] = []
    cache = CachedEvaluator(recording(cached_rows), 4096)
    searches = [
        BatchedMCTS(recording(plain_rows), make_policy(config), RULES.flags(), seed=0, n_games=1),
        BatchedMCTS(cache, make_policy(config), RULES.flags(), seed=0, n_games=1),
    ]
    board = Board()
    for _ in range(6):
        outs = []
        for search in searches:
            games = GameBatch(1, RULES)
            games.load_board(0, board)
            outs.append(search.search(games, add_noise=False))
            search.advance(0, -1)
        plain, cached = outs
        np.testing.assert_array_equal(cached.policy, plain.policy)
        np.testing.assert_array_equal(cached.visits, plain.visits)
        np.testing.assert_array_equal(cached.root_value, plain.root_value)
        assert int(cached.action[0]) == int(plain.action[0])
        board.push(Move.from_int(int(action_to_move(board.state, int(plain.action[0])))))
    assert cache.hits > 0
    assert len(cached_rows) == cache.misses < len(plain_rows)
    assert len(set(cached_rows)) == len(cached_rows)  # never the same input twice

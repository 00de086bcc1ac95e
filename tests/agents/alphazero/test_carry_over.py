"""Self-play games carried over from one training iteration to the next (`SelfPlayConfig.carry_over`)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest

from agents.alphazero.config import TrainConfig
from agents.alphazero.network import NetworkConfig
from agents.alphazero.pools import make_selfplay_pool
from agents.alphazero.search import MCTSConfig
from agents.alphazero.selfplay import SelfPlayConfig, SelfPlayLoop, play_games
from agents.alphazero.selfplay_data import SelfPlayData
from agents.alphazero.settings import InferenceSettings, WorkerBackendError, WorkerSettings
from agents.alphazero.workers import InProcessPool
from envs import RuleSet
from envs.config import ConfigError
from tests.support.evaluators import EvaluatorFn, counted, linear_evaluator

RULES = RuleSet(no_capture_draw=40)
MCTS = MCTSConfig(algorithm="puct", num_simulations=6)
PER_ITERATION = 6
SEED = 13


def _settings(carry_over: bool, parallel: int = 4) -> SelfPlayConfig:
    return SelfPlayConfig(
        parallel=parallel, max_plies=40, playout_cap_fraction=0.3, cheap_simulations=2, carry_over=carry_over
    )


def _loop(evaluator: EvaluatorFn, carry_over: bool = True, first_game: int = 0) -> SelfPlayLoop:
    return SelfPlayLoop(
        evaluator,
        _settings(carry_over),
        mcts=MCTS,
        rules=RULES,
        num_games=PER_ITERATION,
        seed=SEED,
        first_game=first_game,
    )


def _indices(data: SelfPlayData) -> list[int]:
    return [r.extra["game_index"] for r in data.records]


def _rows(data: SelfPlayData, k: int) -> slice:
    """The rows of the k-th record of `data`."""
    start = sum(len(r.moves) for r in data.records[:k])
    return slice(start, start + len(data.records[k].moves))


def test_carried_games_are_played_once_each_and_are_the_games_played_alone() -> None:
    # Three iterations of one loop: each returns exactly its games (the carried ones count first), no game
    # index is returned twice, none is lost (returned or still in play), and every game is the one played on
    # its own from its index: the same moves and training rows.
    evaluator = linear_evaluator(3)  # row by row: batching changes nothing of its answers
    loop = _loop(evaluator)
    calls = [loop.play_next(PER_ITERATION) for _ in range(3)]
    returned: list[int] = []
    for data in calls:
        assert len(data.records) == data.stats.games == PER_ITERATION
        assert len(data.value) == data.stats.positions == sum(len(r.moves) for r in data.records)
        assert _indices(data) == sorted(_indices(data))  # in game-index order
        returned += _indices(data)
    in_play = [g.index for g in loop.slots if g is not None]
    assert len(returned) == len(set(returned)) == 3 * PER_ITERATION
    assert sorted(returned + in_play) == list(range(loop.started))
    assert max(returned) >= PER_ITERATION  # games of later iterations were started while others played on
    assert any(k < PER_ITERATION for k in _indices(calls[1]))  # and a game carried over finished later
    for data in calls:
        for k, index in enumerate(_indices(data)):
            alone = play_games(
                evaluator,
                _settings(False, parallel=1),
                mcts=MCTS,
                rules=RULES,
                num_games=1,
                seed=SEED,
                first_game=index,
            )
            record = data.records[k]
            assert record.moves == alone.records[0].moves and record.seed == alone.records[0].seed
            assert record.replay().jfen() == alone.records[0].replay().jfen()
            for name in ("obs", "mask", "policy", "value", "full_search"):
                np.testing.assert_array_equal(getattr(data, name)[_rows(data, k)], getattr(alone, name))


def test_games_numbered_from_first_game_run_on_from_call_to_call() -> None:
    loop = _loop(linear_evaluator(3), first_game=100)
    seen = _indices(loop.play_next(PER_ITERATION)) + _indices(loop.play_next(PER_ITERATION))
    assert min(seen) >= 100 and len(set(seen)) == len(seen) == 2 * PER_ITERATION


def test_carry_over_keeps_the_batches_full_at_an_iterations_end() -> None:
    # The same three iterations' worth of games: without carry_over each iteration's batches shrink to a few
    # positions as its last games end; with it a freed slot starts the next game at once.
    def tiny_calls(carry_over: bool) -> tuple[int, int]:
        sizes: list[int] = []
        evaluator = counted(linear_evaluator(3), sizes)
        if carry_over:
            loop = _loop(evaluator)
            games = sum(len(loop.play_next(PER_ITERATION).records) for _ in range(3))
        else:
            games = sum(
                len(
                    play_games(
                        evaluator, _settings(False), mcts=MCTS, rules=RULES, num_games=PER_ITERATION, seed=SEED + it
                    ).records
                )
                for it in range(3)
            )
        assert games == 3 * PER_ITERATION
        return sum(1 for n in sizes if n <= 2), len(sizes)  # half the slots or fewer

    tiny_off, calls_off = tiny_calls(False)
    tiny_on, calls_on = tiny_calls(True)
    assert tiny_off >= 10
    assert tiny_on < tiny_off / 2
    assert calls_on < calls_off


def test_play_next_needs_carry_over() -> None:
    with pytest.raises(ValueError, match="carry_over"):
        _loop(linear_evaluator(3), carry_over=False).play_next(2)


TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)


def _worker_settings(carry_over: bool = True) -> WorkerSettings:
    return WorkerSettings(
        network=TINY.to_dict(), mcts=asdict(MCTS), rules=RULES.to_dict(), selfplay=_settings(carry_over)
    )


class Interrupted(Exception):
    """A stop signal in the middle of a self-play call."""


def test_a_call_cut_short_drops_the_games_in_play_and_loses_or_repeats_no_recorded_game() -> None:
    calls = {"n": 0, "stop_at": -1}
    base = linear_evaluator(3)

    def evaluator(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls["n"] += 1
        if calls["n"] == calls["stop_at"]:
            raise Interrupted
        return base(obs, mask)

    pool = InProcessPool(_worker_settings(), evaluator=evaluator, first_game=7)
    first = pool.play({}, seed=SEED, num_games=PER_ITERATION)
    kept_loop, started = pool.loop, pool.next_game
    assert kept_loop is not None and started == kept_loop.started > 7 + PER_ITERATION - 1
    calls["stop_at"] = calls["n"] + 5
    with pytest.raises(Interrupted):
        pool.play({}, seed=SEED, num_games=PER_ITERATION)
    assert pool.loop is None and pool.next_game == started  # the games in play are dropped
    again = pool.play({}, seed=SEED, num_games=PER_ITERATION)  # new games, after every game started so far
    assert pool.loop is not None and pool.loop is not kept_loop
    assert min(_indices(again)) >= started and min(_indices(first)) >= 7
    assert len(set(_indices(first) + _indices(again))) == 2 * PER_ITERATION
    with pytest.raises(ValueError, match="seeded"):
        pool.play({}, seed=SEED + 1, num_games=PER_ITERATION)


def test_the_weights_of_each_call_search_the_carried_games() -> None:
    # The pool's CPU network takes each call's weights; the games carried over go on under them.
    pool = InProcessPool(_worker_settings())
    assert pool.worker is not None
    model = pool.worker.model
    first = pool.play({k: v.clone() for k, v in model.state_dict().items()}, seed=SEED, num_games=PER_ITERATION)
    changed = {k: (v + 0.5 if v.is_floating_point() else v) for k, v in model.state_dict().items()}
    second = pool.play(changed, seed=SEED, num_games=PER_ITERATION)
    assert len(first.records) == len(second.records) == PER_ITERATION
    for k, v in model.state_dict().items():
        assert (v == changed[k]).all()
    assert not set(_indices(first)) & set(_indices(second))


def test_carry_over_is_refused_where_it_is_not_built() -> None:
    for backend, workers, inference in (
        ("process", 2, None),
        ("ray", 2, None),
        ("process", 2, InferenceSettings(device="cpu")),
    ):
        with pytest.raises(WorkerBackendError, match="carry_over") as e:
            make_selfplay_pool(backend, workers, _worker_settings(), inference=inference)
        assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="train.selfplay.carry_over") as e:
        TrainConfig(workers=2, selfplay=SelfPlayConfig(carry_over=True))
    assert "\n" not in str(e.value)
    assert isinstance(make_selfplay_pool("inprocess", 0, _worker_settings()), InProcessPool)

"""Self-play games carried over from one training iteration to the next (`SelfPlayConfig.carry_over`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch

from agents.alphazero.distributed.inference import ServedPool
from agents.alphazero.distributed.pools import make_selfplay_pool
from agents.alphazero.distributed.settings import InferenceConfig, InferenceSettings, WorkerBackendError, WorkerSettings
from agents.alphazero.distributed.workers import InProcessPool, next_game_after
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.search import MCTSConfig
from agents.alphazero.selfplay.data import SelfPlayData
from agents.alphazero.selfplay.games import SelfPlayConfig, SelfPlayLoop, play_games
from agents.alphazero.training.config import TrainConfig
from envs import RuleSet
from envs.config import ConfigError
from tests.support.evaluators import EvaluatorFn, counted, linear_evaluator
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread, as in the workers)

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


@pytest.mark.slow
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


@pytest.mark.slow
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


def _worker_settings(carry_over: bool = True, parallel: int = 4) -> WorkerSettings:
    return WorkerSettings(network=TINY, mcts=MCTS, rules=RULES, selfplay=_settings(carry_over, parallel))


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


@pytest.mark.slow
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


def test_carry_over_is_refused_on_ray() -> None:
    for inference in (None, InferenceSettings()):
        with pytest.raises(WorkerBackendError, match="carry_over") as e:
            make_selfplay_pool("ray", 2, _worker_settings(), inference=inference)
        assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="train.selfplay.carry_over") as e:
        TrainConfig(workers=2, worker_backend="ray", selfplay=SelfPlayConfig(carry_over=True))
    assert "\n" not in str(e.value)
    TrainConfig(workers=2, worker_backend="process", selfplay=SelfPlayConfig(carry_over=True))
    assert isinstance(make_selfplay_pool("inprocess", 0, _worker_settings()), InProcessPool)


def test_interleaved_loops_number_their_games_apart() -> None:
    # Three loops numbering their games 5 + l, 5 + l + 3, ...: no index twice, and `next_game_after` lies above
    # every game started (where a resumed run starts its new games).
    loops = [
        SelfPlayLoop(
            linear_evaluator(3),
            _settings(True),
            mcts=MCTS,
            rules=RULES,
            num_games=2,
            seed=SEED,
            first_game=5 + j,
            stride=3,
        )
        for j in range(3)
    ]
    started: list[int] = []
    for j, loop in enumerate(loops):
        mine = [k for _ in range(2) for k in _indices(loop.play_next(2))] + [g.index for g in loop.slots if g]
        assert sorted(mine) == list(range(5 + j, loop.started, 3))  # its own indices, each once, none lost
        started += mine
    assert len(set(started)) == len(started) > 3 * 4
    after = next_game_after(5, 3, [loop.started for loop in loops])
    assert after > max(started) and after - 3 <= max(started)
    assert next_game_after(5, 3, []) == 5
    with pytest.raises(ValueError, match="stride"):
        SelfPlayLoop(linear_evaluator(3), _settings(False), mcts=MCTS, rules=RULES, num_games=2, seed=SEED, stride=2)


# --------------------------------------------------------------------------------------------
# Worker processes, with and without the inference server
# --------------------------------------------------------------------------------------------
ROUNDING = 1e-5
"""The network's last-bit rounding by batch size, in search policies and values (see test_inference_service)."""
SERVED = InferenceSettings(config=InferenceConfig(max_wait=1.0))  # on the CPU, in the workers' fp32
"""A batch waits for every client in play (as a GPU's server does, its clients never far behind): its size is
then the clients' requests', not the machine's timing."""


def _assert_the_games_played_alone(data: SelfPlayData, net: torch.nn.Module) -> None:
    """Every game of `data` is the one played on its own from its index on `net`: move for move, position for
    position, its search outputs within `ROUNDING`."""
    evaluator = make_evaluator(net, "cpu", "fp32")
    for k, index in enumerate(_indices(data)):
        alone = play_games(
            evaluator, _settings(False, parallel=1), mcts=MCTS, rules=RULES, num_games=1, seed=SEED, first_game=index
        )
        assert data.records[k].to_json() == alone.records[0].to_json()
        assert data.records[k].replay().jfen() == alone.records[0].replay().jfen()
        for name in ("obs", "mask", "full_search"):
            np.testing.assert_array_equal(getattr(data, name)[_rows(data, k)], getattr(alone, name), err_msg=name)
        for name in ("policy", "value"):
            np.testing.assert_allclose(
                getattr(data, name)[_rows(data, k)], getattr(alone, name), rtol=0, atol=ROUNDING, err_msg=name
            )


def _three_iterations(
    pool: Any, weights: dict[str, torch.Tensor], loops: int, games: int
) -> tuple[list[SelfPlayData], list[float]]:
    """Three calls of `games` carried games on `pool` (`loops` of them interleaving their indices): exactly the
    iteration's games each, no index twice, every loop's games played, `next_game` above them all. The calls'
    games and the server's `tail_mean_batch` of each (none without a server)."""
    calls, tails = [], []
    for _ in range(3):
        calls.append(pool.play(weights, seed=SEED, num_games=games))
        tails += [c["tail_mean_batch"] for c in [getattr(pool, "server_counts", {})] if c]
    returned = [k for data in calls for k in _indices(data)]
    for data in calls:
        assert len(data.records) == data.stats.games == games
        assert len(data.value) == data.stats.positions == sum(len(r.moves) for r in data.records)
    assert len(returned) == len(set(returned)) == 3 * games
    assert max(returned) >= games  # games of later iterations started while others played on
    assert {k % loops for k in returned} == set(range(loops))  # every loop played
    assert pool.next_game > max(returned)
    return calls, tails


def _tiny_network() -> torch.nn.Module:
    torch.manual_seed(4)
    net = build_network(TINY)
    net.eval()
    return net


@pytest.mark.slow
def test_process_workers_carry_their_games_and_a_new_pool_starts_after_them() -> None:
    net = _tiny_network()
    weights = net.state_dict()
    pool: Any
    with make_selfplay_pool("process", 2, _worker_settings()) as pool:
        calls, _ = _three_iterations(pool, weights, loops=2, games=PER_ITERATION)
        after = pool.next_game
    for data in calls:
        _assert_the_games_played_alone(data, net)
    # A resumed run's pool: new games, after every game the first one started.
    with make_selfplay_pool("process", 2, _worker_settings(), first_game=after) as again:
        resumed = again.play(weights, seed=SEED, num_games=PER_ITERATION)
    assert min(_indices(resumed)) >= after and len(resumed.records) == PER_ITERATION


@pytest.mark.slow
@pytest.mark.parametrize("halves", [1, 2])
def test_served_workers_carry_their_games_and_keep_the_servers_batches_wide(halves: int) -> None:
    # 16 games an iteration on 2 processes of 8 slots (4 a half): every loop full at every call.
    net = _tiny_network()
    weights = net.state_dict()
    served = replace(SERVED, config=replace(SERVED.config, halves=halves))
    pool: Any
    with make_selfplay_pool("process", 2, _worker_settings(parallel=8), inference=served) as pool:
        assert isinstance(pool, ServedPool)
        calls, tails_on = _three_iterations(pool, weights, loops=2 * halves, games=16)
        assert pool._slots is not None and pool._slots.clients == 2 * halves
    for data in calls:
        _assert_the_games_played_alone(data, net)
    tails_off = []  # without carry_over each call's last batches shrink as its games run out
    with make_selfplay_pool("process", 2, _worker_settings(False, parallel=8), inference=served) as pool:
        for it in range(3):
            pool.play(weights, seed=SEED + it, num_games=16)
            tails_off.append(pool.server_counts["tail_mean_batch"])
    assert len(tails_on) == 3 and sum(tails_on) > 1.4 * sum(tails_off)

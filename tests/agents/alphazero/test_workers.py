"""Self-play split over index ranges and workers: the same games as one in-process call."""

from __future__ import annotations

import builtins
import os
import pickle
import signal
import threading

import numpy as np
import pytest
import torch

from agents.alphazero.distributed.inference import WorkerDiedError
from agents.alphazero.distributed.pools import make_selfplay_pool
from agents.alphazero.distributed.settings import WorkerBackendError, WorkerSettings
from agents.alphazero.distributed.workers import split_games
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.search import MCTSConfig, uniform_evaluator
from agents.alphazero.selfplay.data import SelfPlayData, merge_selfplay
from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
from agents.common.child import ChildDiedError
from envs import RuleSet
from envs.players import make_player
from tests.support.fake_ray import ThreadedRay
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread, as in the workers)

RULES = RuleSet(no_capture_draw=40)
TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)


def assert_same_data(a: SelfPlayData, b: SelfPlayData, atol: float = 0.0) -> None:
    assert [r.moves for r in a.records] == [r.moves for r in b.records]
    assert [r.to_json() for r in a.records] == [r.to_json() for r in b.records]
    for name in ("obs", "mask", "full_search", "survival"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    # Policies, and the values of games cut at max_plies (bootstrapped from root values), are search
    # outputs: they carry the network's rounding by batch size.
    np.testing.assert_allclose(a.policy, b.policy, rtol=0, atol=atol)
    np.testing.assert_allclose(a.value, b.value, rtol=0, atol=atol)
    sa, sb = a.stats.untimed(), b.stats.untimed()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert sa[k] == pytest.approx(sb[k], nan_ok=True), k


class FirstMove:
    """A deterministic opponent: the first legal move in the engine's order."""

    name = "first-move"

    def reset(self) -> None:
        pass

    def select_move(self, board):
        return next(iter(board.legal_moves))


def test_split_index_ranges_merge_into_the_one_call() -> None:
    s = SelfPlayConfig(parallel=3, max_plies=40, playout_cap_fraction=0.3, cheap_simulations=2, opponent_fraction=0.4)
    kw = dict(mcts=MCTSConfig(algorithm="puct", num_simulations=6), rules=RULES, seed=21, opponents=[FirstMove()])
    whole = play_games(uniform_evaluator, s, num_games=7, **kw)
    parts = [play_games(uniform_evaluator, s, num_games=n, first_game=f, **kw) for f, n in ((0, 3), (3, 1), (4, 3))]
    assert [r.extra["game_index"] for r in whole.records] == list(range(7))
    assert [r.extra["game_index"] for p in parts for r in p.records] == list(range(7))
    merged = merge_selfplay(parts)
    assert_same_data(merged, whole)
    assert 0 < whole.stats.opponent_games < 7  # the opponent score was weighted over the parts
    assert merged.stats.seconds == pytest.approx(sum(p.stats.seconds for p in parts))
    assert merge_selfplay(parts, seconds=2.0).stats.games_per_s == pytest.approx(3.5)


def test_split_games_covers_the_range_contiguously() -> None:
    assert split_games(7, 3) == [(0, 3), (3, 2), (5, 2)]
    assert split_games(2, 4) == [(0, 1), (1, 1)]
    with pytest.raises(ValueError):
        split_games(0, 2)


def settings(**kw) -> WorkerSettings:
    selfplay = SelfPlayConfig(parallel=4, max_plies=24, playout_cap_fraction=0.25, cheap_simulations=2, **kw)
    return WorkerSettings(
        network=TINY,
        mcts=MCTSConfig(algorithm="gumbel", num_simulations=4),
        rules=RULES,
        selfplay=selfplay,
    )


def test_worker_settings_are_the_config_objects_and_pickle_as_they_are() -> None:
    """A worker gets the run's config objects themselves (no dict copies to rebuild), pickled as they are to
    its process."""
    s = settings()
    back = pickle.loads(pickle.dumps(s))
    assert back == s
    assert (type(back.network), type(back.mcts), type(back.rules)) == (NetworkConfig, MCTSConfig, RuleSet)
    with make_selfplay_pool("inprocess", 0, s) as pool:  # checked and played as they are
        assert pool.play(build_network(TINY).state_dict(), seed=1, num_games=1).stats.games == 1


def rows_by_game(data: SelfPlayData) -> list[slice]:
    ends = np.cumsum([len(r.moves) for r in data.records])
    return [slice(e - len(r.moves), e) for e, r in zip(ends, data.records)]


@pytest.mark.slow
def test_process_workers_play_the_games_of_one_in_process_call() -> None:
    torch.manual_seed(4)
    net = build_network(TINY)
    weights = net.state_dict()
    s = settings(opponents=["random"], opponent_fraction=0.4)
    here = play_games(
        make_evaluator(net),
        s.selfplay,
        mcts=s.mcts,
        rules=RULES,
        num_games=6,
        seed=9,
        opponents=[make_player("random", seed=123)],
    )
    with make_selfplay_pool("inprocess", 0, s) as pool:  # a CPU worker in this process: the same call
        assert_same_data(pool.play(weights, seed=9, num_games=6, opponent_seeds=[123]), here)
    with make_selfplay_pool("process", 2, s) as pool:  # opponents are built inside the workers from the specs
        assert pool.backend == "process" and pool.workers == 2
        there = pool.play(weights, seed=9, num_games=6, opponent_seeds=[123])
        again = pool.play(weights, seed=9, num_games=6, opponent_seeds=[123])  # the processes persist
    assert_same_data(again, there)
    assert [r.extra["game_index"] for r in there.records] == list(range(6))
    # Who plays whom, with which colour, comes from each game's seed.
    assert [(r.red, r.blue) for r in there.records] == [(r.red, r.blue) for r in here.records]
    assert (
        there.stats.opponent_games
        == here.stats.opponent_games
        == sum("random" in (r.red, r.blue) for r in here.records)
    )
    # The network's own games are those of the in-process call, position by position (the random player
    # is one generator per worker, so the games against it differ).
    selfplay = [k for k, r in enumerate(here.records) if "random" not in (r.red, r.blue)]
    assert 0 < len(selfplay) < 6
    for k in selfplay:
        a, b = here.records[k], there.records[k]
        assert a.to_json() == b.to_json()
        ra, rb = rows_by_game(here)[k], rows_by_game(there)[k]
        for name in ("obs", "mask", "full_search"):
            np.testing.assert_array_equal(getattr(here, name)[ra], getattr(there, name)[rb], err_msg=name)
        np.testing.assert_allclose(here.policy[ra], there.policy[rb], rtol=0, atol=1e-6)
        np.testing.assert_allclose(here.value[ra], there.value[rb], rtol=0, atol=1e-6)
    assert not there.full_search.all() and there.full_search.any()  # playout caps travelled too


@pytest.mark.slow
def test_a_killed_worker_stops_the_call_with_an_error_naming_it() -> None:
    weights = build_network(TINY).state_dict()
    with make_selfplay_pool("process", 2, settings()) as pool:
        pool.play(weights, seed=0, num_games=2)  # every process is up
        victim = pool.pids[1]
        timer = threading.Timer(0.5, os.kill, (victim, signal.SIGKILL))
        timer.start()
        try:
            with pytest.raises(ChildDiedError, match=rf"^self-play worker 1 \(pid {victim}\) died: killed by SIGKILL$"):
                pool.play(weights, seed=1, num_games=400)  # minutes of games if none died
        finally:
            timer.cancel()
        with pytest.raises(RuntimeError, match="stopped by a worker's death"):
            pool.play(weights, seed=1, num_games=2)


def test_unknown_backend_and_bad_settings_fail_before_any_worker() -> None:
    with pytest.raises(WorkerBackendError, match="backend='threads' is not one of inprocess, process, ray"):
        make_selfplay_pool("threads", 2, settings())
    with pytest.raises(WorkerBackendError, match="workers=-1"):
        make_selfplay_pool("process", -1, settings())
    with pytest.raises(ValueError, match="depth"):
        make_selfplay_pool("process", 2, settings(opponents=["alphabeta:depth=-1"], opponent_fraction=0.5))
    with pytest.raises(ValueError, match="needs opponents"):
        make_selfplay_pool("process", 2, settings(opponent_fraction=0.5))
    with pytest.raises(ValueError, match="depth"):  # a spec that would not play is checked too
        make_selfplay_pool("process", 2, settings(opponents=["alphabeta:depth=-1"]))


def test_ray_backend_without_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_ray(name: str, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError("No module named 'ray'", name="ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(WorkerBackendError, match=r"pip install -e '\.\[distributed\]'"):
        make_selfplay_pool("ray", 2, settings())


def test_ray_actors_play_the_in_process_games(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Ray backend, with the part of Ray's API it uses run in this process (real Ray nodes run in
    tests/agents/alphazero/test_ray_cluster.py, on a loopback-only network)."""
    import agents.alphazero.distributed.workers as workers

    fake = ThreadedRay()
    monkeypatch.setattr(workers, "import_ray", lambda: fake)
    torch.manual_seed(5)
    weights = build_network(TINY).state_dict()
    s = settings()
    with make_selfplay_pool("inprocess", 0, s) as pool:
        here = pool.play(weights, seed=3, num_games=5)
    with make_selfplay_pool("ray", 2, s) as pool:
        assert pool.backend == "ray" and pool.workers == 2
        there = pool.play(weights, seed=3, num_games=5)
    assert_same_data(there, here, atol=1e-6)
    assert (len(fake.actors), fake.puts, fake.killed, fake.initialized) == (2, 1, 2, False)


@pytest.mark.parametrize("served", [False, True], ids=["workers", "served"])
def test_a_dead_ray_actor_ends_the_call_with_one_line_naming_it(monkeypatch: pytest.MonkeyPatch, served: bool) -> None:
    """With or without an inference server, a Ray actor that died ends the call with the same one line naming it
    (Ray's own message runs over several), every actor is killed and the local Ray, bound to this machine
    alone and without its dashboard, is shut down."""
    import agents.alphazero.distributed.workers as workers
    from agents.alphazero.distributed.settings import InferenceSettings

    fake = ThreadedRay()
    monkeypatch.setattr(workers, "import_ray", lambda: fake)
    inference = InferenceSettings() if served else None
    weights = build_network(TINY).state_dict()
    with pytest.raises(WorkerDiedError) as died:
        with make_selfplay_pool("ray", 2, settings(), inference=inference) as pool:
            fake.actors[-1].dead = True  # self-play worker 1 (made after the server)
            pool.play(weights, seed=3, num_games=4)
    assert str(died.value) == (
        "self-play worker 1 on node 0 (a Ray actor) died: The actor died unexpectedly before finishing this task.; "
        "the self-play call is abandoned and every worker stopped"
    )
    assert fake.killed == 2 + served and not fake.initialized
    assert fake.init_kwargs["_node_ip_address"] == "127.0.0.1" and fake.init_kwargs["include_dashboard"] is False

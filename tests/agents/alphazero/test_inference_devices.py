"""Several inference servers, one a device (`train.inference.devices`): the devices resolved and refused before
any process starts, the workers split among the servers, the same games, a dead server named."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import replace

import pytest
import torch

from agents.alphazero.distributed.batcher import merge_counts
from agents.alphazero.distributed.inference import WorkerDiedError
from agents.alphazero.distributed.pools import make_selfplay_pool
from agents.alphazero.distributed.settings import (
    InferenceConfig,
    InferenceSettings,
    InferenceSettingsError,
    WorkerBackendError,
    resolve_server_devices,
)
from agents.alphazero.net.network import build_network
from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.selfplay.games import play_games
from agents.alphazero.training import config as train_config
from tests.agents.alphazero.test_inference_service import (
    RULES,
    TINY,
    assert_same_games,
    counted,
    in_threads,
    settings,
)
from tests.support.fake_ray import ThreadedRay
from tests.support.processes import alive
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread, as in the workers)

CPU = torch.device("cpu")
NO_OPPONENTS = settings(opponents=[], opponent_fraction=0.0)
"""Settings whose check builds no player (the refusals come first)."""
TWO_CPU_SERVERS = InferenceSettings(config=InferenceConfig(server=True, devices=["cpu", "cpu"]), devices=(CPU, CPU))


def gpus(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """This machine seen by torch as having `count` CUDA devices (none: no CUDA at all)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


def servers(devices: object) -> tuple[torch.device, ...]:
    return resolve_server_devices(InferenceConfig(server=True, devices=devices))


# --------------------------------------------------------------------------------------------
# The devices, resolved once, and the refusals
# --------------------------------------------------------------------------------------------
def test_the_servers_devices_are_a_list_all_or_the_runs_device(monkeypatch: pytest.MonkeyPatch) -> None:
    assert servers([]) == ()  # one server on the run's device, as without the key
    assert servers(["cpu", "cpu"]) == (CPU, CPU)
    gpus(monkeypatch, 2)
    cuda = (torch.device("cuda:0"), torch.device("cuda:1"))
    assert servers("all") == servers(["all"]) == cuda
    assert servers(["cuda:1", "cuda:0"]) == cuda[::-1]
    assert InferenceConfig(server=True, devices="all").devices == ["all"]


def test_a_device_this_machine_lacks_is_refused_naming_the_key_the_value_and_the_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus(monkeypatch, 2)
    with pytest.raises(InferenceSettingsError) as e:
        servers(["cuda:0", "cuda:3"])
    assert str(e.value) == (
        "train.inference.devices=['cuda:0', 'cuda:3']: device='cuda:3' is not available: this machine has "
        "2 CUDA device(s), cuda:0 to cuda:1"
    )
    gpus(monkeypatch, 0)
    with pytest.raises(InferenceSettingsError, match=r"^train.inference.devices=\['cuda:0'\]: device='cuda:0' is not"):
        servers(["cuda:0"])
    with pytest.raises(InferenceSettingsError) as e:
        servers("all")
    assert str(e.value) == "train.inference.devices=all runs a server on every CUDA device: this machine has none"


def test_malformed_devices_and_devices_without_the_server_are_refused_in_one_line() -> None:
    for devices, why in (
        ([3], r"entry 3 is not a device name"),
        (["cpu", ["cpu"]], r"entry \['cpu'\] is not a device name"),
        (["all", "cpu"], r"'all' stands alone"),
        ({"a": 1}, r"must be a list of devices"),
    ):
        with pytest.raises(InferenceSettingsError, match=r"^train.inference.devices=.*" + why):
            InferenceConfig(server=True, devices=devices)
    with pytest.raises(InferenceSettingsError, match=r"^train.inference.devices=\['gpu0'\]: unknown device 'gpu0'"):
        servers(["gpu0"])
    with pytest.raises(InferenceSettingsError) as e:
        InferenceConfig(devices=["cpu", "cpu"])
    assert (
        str(e.value)
        == "train.inference.devices=['cpu', 'cpu'] runs inference servers: it needs train.inference.server=true"
    )


def test_more_servers_than_self_play_workers_are_refused() -> None:
    with pytest.raises(WorkerBackendError) as e:
        make_selfplay_pool("process", 1, NO_OPPONENTS, inference=TWO_CPU_SERVERS)
    assert str(e.value) == "2 inference servers need at least 2 self-play workers (train.workers), got 1"


def test_servers_on_given_devices_are_refused_on_ray_whose_pool_places_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.alphazero.distributed.workers as workers

    fake = ThreadedRay()
    monkeypatch.setattr(workers, "import_ray", lambda: fake)
    with pytest.raises(
        WorkerBackendError, match=r"^inference servers on given devices \(2\) run on the process backend"
    ):
        make_selfplay_pool("ray", 2, NO_OPPONENTS, inference=TWO_CPU_SERVERS)
    assert fake.options == []  # refused before any actor


@pytest.mark.slow
def test_train_config_resolves_the_devices_once_and_the_gpu_preset_serves_on_every_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def check(*overrides: str) -> tuple[torch.device, ...]:
        return train_config.checked_run_config(train_config.compose_config(list(overrides)))[2]

    on = ("train.inference.server=true", "train.workers=2")
    assert check(*on) == () and check(*on, "train.inference.devices=[cpu,cpu]") == (CPU, CPU)
    with pytest.raises(WorkerBackendError) as e:
        check(*on, "train.inference.devices=[cpu,cpu,cpu]")
    assert str(e.value) == (
        "train.inference.devices=['cpu', 'cpu', 'cpu']: 3 inference servers need at least 3 self-play workers "
        "(train.workers), got 2"
    )
    with pytest.raises(InferenceSettingsError, match=r"needs train.inference.server=true"):
        check("train.inference.devices=[cpu,cpu]")
    with pytest.raises(WorkerBackendError, match=r"^train.inference.devices=\['cpu', 'cpu'\]: inference servers on"):
        check(*on, "train.worker_backend=ray", "train.inference.devices=[cpu,cpu]")
    gpus(monkeypatch, 2)
    cuda = (torch.device("cuda:0"), torch.device("cuda:1"))
    conf = train_config.compose_config(["preset=gpu", "device=cpu"])
    assert conf.train.inference.devices == "all"
    assert train_config.checked_run_config(conf)[2] == cuda  # the learner stays on `device`
    gpus(monkeypatch, 0)
    with pytest.raises(InferenceSettingsError, match="devices=all runs a server on every CUDA device"):
        check("preset=gpu", "device=cpu")


def test_the_servers_counts_add_up_to_the_runs() -> None:
    a = {"batches": 2, "positions": 20, "mean_batch": 10.0, "max_batch": 12, "mean_wait_ms": 1.0}
    a |= {"mean_batch_ms": 3.0, "tail_mean_batch": 8.0}
    b = {"batches": 6, "positions": 30, "mean_batch": 5.0, "max_batch": 9, "mean_wait_ms": 3.0}
    b |= {"mean_batch_ms": 1.0, "tail_mean_batch": 4.0}
    assert merge_counts([a]) == a
    assert merge_counts([a, b]) == {
        "batches": 8,
        "positions": 50,
        "mean_batch": 50 / 8,
        "max_batch": 12,
        "mean_wait_ms": (2 * 1.0 + 6 * 3.0) / 8,
        "mean_batch_ms": (2 * 3.0 + 6 * 1.0) / 8,
        "tail_mean_batch": (2 * 8.0 + 6 * 4.0) / 8,
    }
    assert merge_counts([{}, {}]) == {}  # no call yet


# --------------------------------------------------------------------------------------------
# The processes
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_servers_play_the_games_of_one_in_process_call() -> None:
    """Three workers, two halves each, on two CPU servers (worker k feeds server k mod 2): the games of the
    in-process loop, every leaf evaluated once, each server busy."""
    s = settings()
    torch.manual_seed(4)
    net = build_network(TINY)
    leaves_seen: list[int] = []
    evaluator = counted(make_evaluator(net, "cpu", "fp32"), leaves_seen)
    here = play_games(evaluator, s.selfplay, mcts=s.mcts, rules=RULES, num_games=9, seed=9)
    inference = replace(TWO_CPU_SERVERS, config=replace(TWO_CPU_SERVERS.config, halves=2))
    with make_selfplay_pool("process", 3, s, inference=inference) as pool:
        assert sorted(pool.pids) == ["inference-server-0", "inference-server-1", *(f"selfplay-{k}" for k in range(3))]
        there = pool.play(net.state_dict(), seed=9, num_games=9)
        assert pool.server_counts["positions"] == sum(leaves_seen)
        each = [c["positions"] for c in pool.servers_counts]
        assert len(each) == 2 and all(n > 0 for n in each) and sum(each) == sum(leaves_seen)
        pids = [p for p in pool.pids.values() if p is not None]
    assert_same_games(there, here)
    assert not any(alive(p) for p in pids)


@pytest.mark.slow
def test_one_of_two_servers_killed_stops_the_call_naming_it() -> None:
    s = settings(max_plies=200, opponent_fraction=0.0)
    weights = build_network(TINY).state_dict()
    with make_selfplay_pool("process", 2, s, inference=TWO_CPU_SERVERS) as pool:
        pool.play(weights, seed=0, num_games=2)  # every process is up
        pids = pool.pids
        timer = threading.Timer(0.5, os.kill, (pids["inference-server-1"], signal.SIGKILL))
        timer.start()
        try:
            with pytest.raises(
                WorkerDiedError, match=r"^inference server 1 on cpu \(pid \d+\) died: killed by SIGKILL"
            ):
                in_threads(lambda: pool.play(weights, seed=1, num_games=400))  # minutes of games if none died
        finally:
            timer.cancel()
    assert not any(alive(p) for p in pids.values() if p is not None)

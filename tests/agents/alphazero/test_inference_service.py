"""The inference-server pipeline: batching across clients, the same games as in-process, deaths named, no orphans."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from multiprocessing import Pipe
from typing import Any, Callable

import numpy as np
import pytest
import torch

from agents.alphazero.distributed import slots as slots_module
from agents.alphazero.distributed.batcher import LeafBatcher, tail_mean_batch
from agents.alphazero.distributed.inference import WorkerDiedError
from agents.alphazero.distributed.pools import make_selfplay_pool
from agents.alphazero.distributed.settings import (
    InferenceConfig,
    InferenceSettings,
    InferenceSettingsError,
    WorkerBackendError,
    WorkerSettings,
)
from agents.alphazero.distributed.slots import (
    InferenceServiceError,
    LeafSlots,
    ServedEvaluator,
    SharedMemoryError,
    check_shared_memory,
    slot_capacity,
)
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.net.packing import BINARY_PLANES, pack_masks, pack_observations, unpack_masks, unpack_observations
from agents.alphazero.net.runtime import make_evaluator, make_packed_evaluator, unpack_masks_on_device, unpack_on_device
from agents.alphazero.search import MCTSConfig
from agents.alphazero.selfplay.data import SelfPlayData
from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
from agents.alphazero.training import config as train_config
from agents.alphazero.training.progress import log_server
from agents.alphazero.training.run import TrainingRun
from envs import RuleSet
from envs.encoding import N_ACTIONS, OBS_SHAPE
from tests.support import ROOT
from tests.support.fake_ray import ThreadedRay
from tests.support.processes import alive, survivors
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread, as in the workers)

RULES = RuleSet(no_capture_draw=40)
SCALAR_PLANE = BINARY_PLANES
"""The first observation plane that is constant per position (stored as a float in the packed form)."""
TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
FP32 = InferenceSettings()
"""A CPU server; its precision is the workers' (`WorkerSettings.precision`, fp32: `make_evaluator`'s default),
so the in-process games here run in fp32 whatever the CPU offers."""
ROUNDING = 1e-5
"""How far a search policy may move when the server's batches mix the leaves of several processes (the
network's CPU kernels round the last bit by batch size; measured differences are about 1e-7)."""


def assert_same_games(a: SelfPlayData, b: SelfPlayData) -> None:
    """The same games move by move and the same positions; the network's outputs (search policies, values
    bootstrapped from the search in cut games, their statistics) within `ROUNDING`."""
    assert [r.to_json() for r in a.records] == [r.to_json() for r in b.records]
    for name in ("obs", "mask", "full_search", "survival"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in ("policy", "value"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=ROUNDING, err_msg=name)
    sa, sb = a.stats.untimed(), b.stats.untimed()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert sa[key] == pytest.approx(sb[key], abs=ROUNDING, nan_ok=True), key


def settings(**selfplay: Any) -> WorkerSettings:
    """Tiny network, 4-simulation Gumbel search, playout caps, and a deterministic opponent in some games."""
    sp = dict(
        parallel=4,
        max_plies=24,
        playout_cap_fraction=0.25,
        cheap_simulations=2,
        opponents=["alphabeta:depth=1"],
        opponent_fraction=0.3,
    )
    sp.update(selfplay)
    return WorkerSettings(
        network=TINY,
        mcts=MCTSConfig(algorithm="gumbel", num_simulations=4),
        rules=RULES,
        selfplay=SelfPlayConfig(**sp),
    )


def rows_evaluator(calls: list[int]) -> Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """An evaluator whose outputs name their input row (value = obs[:, 0, 0, 0]) and that logs its batch sizes."""

    def evaluate(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls.append(len(obs))
        logits = np.repeat(obs[:, 0, 0, :1], N_ACTIONS, axis=1).astype(np.float32)
        return logits, obs[:, 0, 0, 0].astype(np.float32)

    return evaluate


def leaves(first: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    obs = np.zeros((n,) + OBS_SHAPE, np.float32)
    obs[:, 0, 0, 0] = np.arange(first, first + n)
    return obs, np.ones((n, N_ACTIONS), np.bool_)


def in_threads(*fns: Callable[[], Any], timeout: float = 60.0) -> list[Any]:
    """Run each function in a thread of its own; their results (a hang fails the test instead of the run)."""
    with ThreadPoolExecutor(len(fns)) as ex:
        futures = [ex.submit(fn) for fn in fns]
        return [f.result(timeout=timeout) for f in futures]


# --------------------------------------------------------------------------------------------
# The batcher and the client's evaluator, without processes
# --------------------------------------------------------------------------------------------
def test_the_batcher_joins_the_requests_of_every_active_client_into_one_call() -> None:
    calls: list[int] = []
    batcher = LeafBatcher(rows_evaluator(calls), max_wait=30.0)  # only a full batch can go before 30 s
    ranges = [(0, 3), (100, 5), (200, 1)]
    barrier = threading.Barrier(3)  # all three ask at once

    def client(k: int) -> tuple[np.ndarray, np.ndarray]:
        barrier.wait()
        return batcher.evaluate(k, *leaves(*ranges[k]))

    batcher.expect(range(3))  # as the server does when a call starts

    results = in_threads(*(lambda k=k: client(k) for k in range(3)))
    assert calls == [9]
    for (first, n), (logits, value) in zip(ranges, results):
        np.testing.assert_array_equal(value, np.arange(first, first + n))  # each client gets its own rows
        assert logits.shape == (n, N_ACTIONS) and (logits[:, 7] == value).all()
    counts = batcher.take_counts()
    assert {k: counts[k] for k in ("batches", "positions", "mean_batch", "max_batch")} == {
        "batches": 1,
        "positions": 9,
        "mean_batch": 9.0,
        "max_batch": 9,
    }
    assert 0 <= counts["mean_wait_ms"] < 30_000 and counts["mean_batch_ms"] >= 0
    assert batcher.take_counts()["batches"] == 0


def test_one_device_thread_runs_every_batch_and_the_waits_are_counted() -> None:
    """The network runs in the batcher's own thread whichever client closes a batch; a client that never
    comes makes each batch wait `max_wait`, and the counts say so."""
    threads: set[str] = set()
    calls: list[int] = []
    evaluate = rows_evaluator(calls)

    def evaluator(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        threads.add(threading.current_thread().name)
        return evaluate(obs, mask)

    batcher = LeafBatcher(evaluator, max_wait=0.05)
    batcher.expect(["a", "b", "late"])  # "late" never asks: every batch waits max_wait for it
    for step in range(3):
        results = in_threads(*(lambda k=k, s=step: batcher.evaluate(k, *leaves(10 * s + k, 2)) for k in range(2)))
        for k, (_, value) in enumerate(results):
            assert value.tolist() == [10 * step + k, 10 * step + k + 1]
    assert threads == {"device"} and sum(calls) == 12
    counts = batcher.take_counts()
    assert counts["positions"] == 12 and counts["max_batch"] <= 4
    assert counts["mean_wait_ms"] >= 50 * 0.9, counts  # the batches waited for "late"


def test_the_counts_say_how_small_the_last_tenth_of_the_batches_got() -> None:
    """A client alone sends 20 batches of 10 positions, then 10 as its games end (3 each); the last tenth
    of the 30 batches (3) are the small ones."""
    batcher = LeafBatcher(rows_evaluator([]), max_wait=30.0)
    for n in [10] * 20 + [3] * 10:
        batcher.evaluate("alone", *leaves(0, n))
    counts = batcher.take_counts()
    assert counts["batches"] == 30 and counts["mean_batch"] == 230 / 30 and counts["tail_mean_batch"] == 3.0
    assert batcher.take_counts()["tail_mean_batch"] == 0.0  # the counts restart
    assert tail_mean_batch([8, 6, 4, 2], share=0.5) == 3.0 and tail_mean_batch([5], share=0.1) == 5.0


@pytest.mark.slow
def test_train_config_sets_the_server_wait() -> None:
    """The server's settings are the train.inference section, checked once with the config; its keys of old
    (train.inference_server ...) are refused on the command line with one line naming the new key."""
    conf = train_config.checked_config(
        train_config.compose_config(["train.inference.server=true", "train.workers=2", "train.inference.max_wait=0.01"])
    )
    assert conf.train.inference == InferenceConfig(server=True, max_wait=0.01)
    assert train_config.checked_config(train_config.compose_config([])).train.inference.max_wait == 0.002
    with pytest.raises(ValueError, match=r"^train.inference.max_wait=11(.0)? must lie in \[0, 10\]$"):
        train_config.checked_config(train_config.compose_config(["train.inference.max_wait=11"]))
    with pytest.raises(train_config.ConfigError) as old:
        train_config.compose_config(["train.inference_max_wait=0.01"])
    assert str(old.value) == "train.inference_max_wait is now train.inference.max_wait (train.inference_max_wait=0.01)"


def test_a_batch_waits_at_most_max_wait_and_never_for_a_client_that_left() -> None:
    calls: list[int] = []
    batcher = LeafBatcher(rows_evaluator(calls), max_wait=0.05)
    in_threads(lambda: batcher.evaluate("a", *leaves(0, 2)), lambda: batcher.evaluate("b", *leaves(10, 2)))
    assert sum(calls) == 4
    # "b" is still active and silent: "a" is served once its request has waited max_wait.
    value = in_threads(lambda: batcher.evaluate("a", *leaves(5, 1)))[0][1]
    assert value.tolist() == [5.0] and calls[-1] == 1
    # Once "b" has left, nobody waits for it, however long max_wait is.
    batcher.max_wait = 3600.0
    batcher.leave("b")
    value = in_threads(lambda: batcher.evaluate("a", *leaves(7, 1)))[0][1]
    assert value.tolist() == [7.0]


def test_an_evaluator_error_reaches_every_request_of_its_batch() -> None:
    def broken(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise RuntimeError("device lost")

    batcher = LeafBatcher(broken, max_wait=30.0)
    batcher.expect("ab")

    def ask(k: str) -> str:
        try:
            batcher.evaluate(k, *leaves(0, 1))
        except RuntimeError as e:
            return str(e)
        return "no error"

    assert in_threads(lambda: ask("a"), lambda: ask("b")) == ["device lost", "device lost"]


def test_the_served_evaluator_sends_a_batch_larger_than_its_slot_in_pieces() -> None:
    slots = LeafSlots(2, capacity=3)
    try:
        here, there = Pipe()
        sizes: list[int] = []

        def serve() -> None:  # the server's side of client 1's pipe, on its slot (packed leaves)
            slot = slots.slot(1)
            while (n := there.recv()) != 0:
                sizes.append(n)
                obs, mask = unpack_observations(slot.bits[:n], slot.scalars[:n]), unpack_masks(slot.mask[:n])
                slot.logits[:n] = obs[:n, SCALAR_PLANE, 0, :1] * 2
                slot.value[:n] = obs[:n, SCALAR_PLANE, 0, 0] + 0.5 * mask[:n, 0] + 0.25 * obs[:n, 3, 4, 5]
                there.send(n)
            there.send(0)

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        evaluator = ServedEvaluator(slots.slot(1), here)
        obs, mask = np.zeros((7,) + OBS_SHAPE, np.float32), np.ones((7, N_ACTIONS), np.bool_)
        obs[:, SCALAR_PLANE] = np.arange(40, 47)[:, None, None]  # a plane constant per position, as in play
        obs[1::3, 3, 4, 5] = 1.0  # a piece plane's bit
        mask[::2, 0] = False
        logits, value = evaluator(obs, mask)
        assert sizes == [3, 3, 1]
        np.testing.assert_array_equal(value, np.arange(40, 47) + 0.5 * mask[:, 0] + 0.25 * obs[:, 3, 4, 5])
        np.testing.assert_array_equal(logits[:, 100], 2 * np.arange(40, 47))
        assert evaluator(*leaves(0, 0))[0].shape == (0, N_ACTIONS)
        evaluator.idle()
        server.join(10)
        there.close()
        with pytest.raises(InferenceServiceError, match="inference server went away"):
            evaluator(obs, mask)
        del evaluator
    finally:
        slots.unlink()


def test_bad_inference_settings_and_a_server_without_workers_are_refused() -> None:
    with pytest.raises(InferenceSettingsError, match="^train.inference.max_wait=-1 must lie in"):
        InferenceConfig(max_wait=-1)
    with pytest.raises(InferenceSettingsError, match="^train.inference.halves=3 must lie in"):
        InferenceConfig(halves=3)
    for backend, workers in (("inprocess", 2), ("process", 0)):
        with pytest.raises(WorkerBackendError, match="needs workers >= 1 on the process or ray backend"):
            make_selfplay_pool(backend, workers, settings(), inference=FP32)


@pytest.mark.slow
def test_train_config_switches_the_server_on_for_workers_only(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="inference.server=true .* needs train.workers >= 1"):
        train_config.checked_config(train_config.compose_config(["train.inference.server=true", "train.workers=0"]))
    conf = train_config.checked_config(train_config.compose_config(["train.inference.server=true", "train.workers=2"]))
    assert conf.train.inference.server and conf.train.workers == 2
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a machine of one GPU (preset=gpu serves on all)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    gpu = train_config.checked_config(train_config.compose_config(["preset=gpu", "device=cpu"]))
    assert gpu.train.inference.server and gpu.train.workers == 15 and gpu.train.worker_backend == "process"
    assert not train_config.checked_config(
        train_config.compose_config([])
    ).train.inference.server  # the CPU default is as before


# --------------------------------------------------------------------------------------------
# The processes
# --------------------------------------------------------------------------------------------
def counted(evaluator: Callable, positions: list[int]) -> Callable:
    def evaluate(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        positions.append(len(obs))
        return evaluator(obs, mask)

    return evaluate


@pytest.mark.slow
def test_the_served_pool_plays_the_games_of_one_in_process_call() -> None:
    s = settings()
    nets = []
    for seed in (4, 5):
        torch.manual_seed(seed)
        nets.append(build_network(TINY))
    calls = [(nets[0], 9, 6), (nets[1], 10, 10)]  # new weights; a bigger share per worker (slots made again)
    here, positions = [], []
    for net, seed, games in calls:
        leaves_seen: list[int] = []
        here.append(
            play_games(
                counted(make_evaluator(net, "cpu", "fp32"), leaves_seen),
                s.selfplay,
                mcts=s.mcts,
                rules=RULES,
                num_games=games,
                seed=seed,
            )
        )
        positions.append(sum(leaves_seen))
    with make_selfplay_pool("process", 2, s, inference=FP32) as pool:
        assert (pool.backend, pool.workers) == ("process", 2)
        for (net, seed, games), expected, evaluated in zip(calls, here, positions):
            there = pool.play(net.state_dict(), seed=seed, num_games=games)
            assert_same_games(there, expected)
            # The server evaluated exactly the leaves of the in-process games (no request lost or answered twice).
            assert pool.server_counts["positions"] == evaluated
        assert 0 < here[1].stats.opponent_games < 10 and not there.full_search.all()
        pids = [p for p in pool.pids.values() if p is not None]
    assert not any(alive(p) for p in pids)  # closing stops every process


@pytest.mark.slow
@pytest.mark.parametrize(
    "victim, workers, name",
    [
        ("selfplay-1", 2, r"self-play worker 1 \(pid \d+\)"),
        ("inference-server", 1, r"the inference server \(pid \d+\)"),
    ],
)
def test_a_killed_process_stops_the_call_with_an_error_naming_it(victim: str, workers: int, name: str) -> None:
    s = settings(max_plies=200, opponent_fraction=0.0)
    weights = build_network(TINY).state_dict()
    with make_selfplay_pool("process", workers, s, inference=FP32) as pool:
        pool.play(weights, seed=0, num_games=2)  # every process is up
        pids = pool.pids
        timer = threading.Timer(0.5, os.kill, (pids[victim], signal.SIGKILL))
        timer.start()
        try:
            with pytest.raises(WorkerDiedError, match=name + " died: killed by SIGKILL"):
                in_threads(lambda: pool.play(weights, seed=1, num_games=400))  # minutes of games if none died
        finally:
            timer.cancel()
        with pytest.raises(RuntimeError, match="stopped by an error"):
            pool.play(weights, seed=1, num_games=2)
    assert not any(alive(p) for p in pids.values() if p is not None)


ORPHANS = """
import time
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.distributed.pools import make_selfplay_pool
from agents.alphazero.training.progress import log_server
from agents.alphazero.search import MCTSConfig
from agents.alphazero.selfplay.games import SelfPlayConfig
from agents.alphazero.distributed.settings import InferenceSettings, WorkerSettings
from envs.rules import RuleSet
tiny = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
s = WorkerSettings(network=tiny, mcts=MCTSConfig(num_simulations=2), rules=RuleSet(),
                   selfplay=SelfPlayConfig(parallel=2, max_plies=4))
pool = make_selfplay_pool("process", 1, s, inference=InferenceSettings())
pool.play(build_network(tiny).state_dict(), seed=0, num_games=2)
print(" ".join(str(p) for p in pool.pids.values()), flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_the_processes_exit_when_their_parent_dies() -> None:
    parent = subprocess.Popen([sys.executable, "-c", ORPHANS], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline()  # type: ignore[union-attr]
        pids = [int(p) for p in line.split()]
        assert len(pids) == 2 and all(alive(p) for p in pids), line
    finally:
        parent.kill()  # SIGKILL: no clean-up of its own
        parent.wait()
    assert not survivors(pids, 60)


# --------------------------------------------------------------------------------------------
# Ray, with the part of its API the pool uses run in this process (CI has no Ray)
# --------------------------------------------------------------------------------------------
def test_ray_served_pool_plays_the_in_process_games(monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.alphazero.distributed.workers as workers

    fake = ThreadedRay()
    monkeypatch.setattr(workers, "import_ray", lambda: fake)
    s = replace(settings(), threads=0)  # the actors share this process's torch threads
    torch.manual_seed(6)
    net = build_network(TINY)
    here = play_games(
        make_evaluator(net, "cpu", "fp32"),
        s.selfplay,
        mcts=s.mcts,
        rules=RULES,
        num_games=5,
        seed=3,
    )
    with make_selfplay_pool("ray", 2, s, inference=FP32) as pool:
        assert (pool.backend, pool.workers) == ("ray", 2)
        there = pool.play(net.state_dict(), seed=3, num_games=5)
        assert pool.server_counts["positions"] > 0
    assert_same_games(there, here)
    # The server asked for room for a thread per client; one actor per worker plus the server, all killed.
    assert fake.options[0]["max_concurrency"] >= 3 and fake.options[0]["num_gpus"] == 0
    assert (fake.killed, fake.initialized) == (3, False)


def test_slots_hold_a_search_step_of_every_game() -> None:
    """A self-play process's slot is sized for the leaves one search step can send per game: Gumbel's
    shared runs send up to its root actions, leaf batching its lanes, PUCT one."""

    def leaves_per_game(mcts: dict[str, Any]) -> int:
        return slot_capacity(1, MCTSConfig.from_dict(mcts))

    assert leaves_per_game({"algorithm": "gumbel", "gumbel": {"max_actions": 4}}) == 4
    assert leaves_per_game({"algorithm": "gumbel", "gumbel": {"max_actions": 16}, "leaf_batch": 8}) == 8
    assert leaves_per_game({"algorithm": "puct"}) == 1
    assert leaves_per_game({"algorithm": "puct", "leaf_batch": 4}) == 4


def small_shm(monkeypatch: pytest.MonkeyPatch, free_bytes: int) -> list[str]:
    """`os.statvfs` of the shared-memory filesystem reporting `free_bytes` free; the paths it was asked about."""
    asked: list[str] = []
    real = os.statvfs

    def statvfs(path: Any) -> Any:
        if str(path) != slots_module.SHM_DIR:
            return real(path)
        asked.append(str(path))
        return os.statvfs_result((4096, 4096, 1 << 20, free_bytes // 4096, free_bytes // 4096, 0, 0, 0, 0, 255))

    monkeypatch.setattr(os, "statvfs", statvfs)
    return asked


def test_leaf_slots_larger_than_the_free_shared_memory_are_refused_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the free space of /dev/shm a self-play process dies with SIGBUS at its first write: the need, the
    free space and the fix are named before any process starts."""
    capacity = slot_capacity(128, MCTSConfig(algorithm="gumbel", num_simulations=32))
    need = 15 * capacity * slots_module.ROW_BYTES
    free = need - 4096  # one page short
    asked = small_shm(monkeypatch, free)
    with pytest.raises(SharedMemoryError) as e:
        check_shared_memory(15, capacity)
    message = str(e.value)
    assert f"need {need / 2**20:.1f} MB" in message and f"has {(free // 4096 * 4096) / 2**20:.1f} MB free" in message
    assert "--shm-size" in message and "train.workers" in message and "train.selfplay.parallel" in message
    assert "\n" not in message and asked == [slots_module.SHM_DIR]
    check_shared_memory(14, capacity)  # a worker fewer fits
    small_shm(monkeypatch, need)
    check_shared_memory(15, capacity)  # exactly the need fits


def test_the_served_pool_and_train_refuse_too_little_shared_memory_before_any_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    small_shm(monkeypatch, 16 * 1024)
    with pytest.raises(SharedMemoryError, match="2 self-play workers"):
        make_selfplay_pool("process", 2, settings(parallel=64), inference=FP32)
    overrides = ["train.inference.server=true", "train.workers=3", f"out_dir={tmp_path}", "name=shm"]
    with pytest.raises(SharedMemoryError, match="3 self-play workers"):
        TrainingRun.open(train_config.compose_config(overrides), overrides)
    assert list(tmp_path.iterdir()) == []


def random_leaves(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations shaped as the encoding's (0/1 planes, then planes constant per position) and masks."""
    rng = np.random.default_rng(seed)
    obs = np.zeros((n,) + OBS_SHAPE, np.float32)
    obs[:, :BINARY_PLANES] = rng.random((n, BINARY_PLANES) + OBS_SHAPE[1:]) < 0.1
    obs[:, BINARY_PLANES:] = rng.random((n, OBS_SHAPE[0] - BINARY_PLANES, 1, 1)).astype(np.float32)
    return obs, rng.random((n, N_ACTIONS)) < 0.2


def test_packed_leaves_unpack_on_the_device_to_the_planes() -> None:
    obs, mask = random_leaves(37, seed=1)
    bits, scalars = pack_observations(obs)
    planes = unpack_on_device(torch.from_numpy(bits), torch.from_numpy(scalars))
    assert planes.dtype == torch.float32
    np.testing.assert_array_equal(planes.numpy(), obs)
    np.testing.assert_array_equal(unpack_masks_on_device(torch.from_numpy(pack_masks(mask))).numpy(), mask)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("n", [1, 5, 300])
def test_the_packed_evaluator_gives_the_planes_evaluations_bit_for_bit(precision: str, n: int) -> None:
    """The server's packed path (unpacked by torch for fp32; for bf16 into the CPU's fused forward pass) is the
    evaluator of the planes to the last bit, in one call and in the CPU's chunks (300 rows)."""
    torch.manual_seed(2)
    net = build_network(replace(TINY, value_head="wdl"))
    obs, mask = random_leaves(n, seed=n)
    planes = make_evaluator(net, "cpu", precision)(obs, mask)
    packed = make_packed_evaluator(net, "cpu", precision)(*pack_observations(obs), pack_masks(mask))
    for a, b in zip(planes, packed):
        assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_the_server_counts_are_logged_as_scalars_and_one_line() -> None:
    class Writer:
        def __init__(self) -> None:
            self.scalars: dict[str, float] = {}

        def add_scalar(self, tag: str, value: float, step: int) -> None:
            self.scalars[tag] = value

    writer = Writer()
    counts = {
        "batches": 4,
        "positions": 40,
        "mean_batch": 10.0,
        "max_batch": 16,
        "mean_wait_ms": 1.5,
        "mean_batch_ms": 3.25,
        "tail_mean_batch": 2.5,
    }
    line = log_server(writer, 7, counts)  # type: ignore[arg-type]
    assert writer.scalars == {
        "perf/server_batches": 4,
        "perf/server_mean_batch": 10.0,
        "perf/server_max_batch": 16,
        "perf/server_mean_wait_ms": 1.5,
        "perf/server_mean_batch_ms": 3.25,
        "perf/server_tail_mean_batch": 2.5,
    }
    assert (
        line == "iter 7: inference server: 4 batches, mean 10 positions (largest 16, last tenth 2), mean wait 1.5 ms, "
        "3.2 ms a batch"
    )


@pytest.mark.slow
def test_two_halves_in_flight_per_process_play_the_games_of_one_request_in_flight() -> None:
    """Double buffering (`InferenceConfig.halves=2`): each process searches two halves of its games in turn,
    one half's request in flight while the other grows its trees; the games are those of one request in
    flight, and the server evaluates exactly as many leaves."""
    s = settings()
    torch.manual_seed(4)
    weights = build_network(TINY).state_dict()
    results, counts = [], []
    for halves in (1, 2):
        with make_selfplay_pool(
            "process", 2, s, inference=replace(FP32, config=InferenceConfig(halves=halves))
        ) as pool:
            results.append(pool.play(weights, seed=9, num_games=7))
            counts.append(pool.server_counts["positions"])
            assert pool._slots is not None and pool._slots.clients == 2 * halves  # a slot and a pipe a half
    assert_same_games(results[1], results[0])
    assert counts[1] == counts[0] > 0


@pytest.mark.slow
def test_train_config_sets_the_halves_in_flight() -> None:
    conf = train_config.checked_config(train_config.compose_config(["train.inference.halves=2"]))
    assert conf.train.inference.halves == 2
    assert train_config.checked_config(train_config.compose_config([])).train.inference.halves == 1
    with pytest.raises(ValueError, match=r"train.inference.halves=3 must lie in \[1, 2\]"):
        train_config.checked_config(train_config.compose_config(["train.inference.halves=3"]))

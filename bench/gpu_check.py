"""GPU check: one machine's device, inference, self-play and training figures, step by step (`--cpu`: small, on CPU).

    python bench/gpu_check.py --json gpu.json           # a CUDA machine: about 8 minutes (9 with several GPUs)
    python bench/gpu_check.py --cpu --json cpu.json     # the same steps at small sizes on CPU
    python bench/gpu_check.py --steps inference,selfplay --json gpu.json   # some steps only

Steps, in order (each prints its rows as it finishes and appends them, one record a row, to the
``--json`` file, rewritten atomically after each step: a check cut short keeps the steps it finished):

  device      the device, its driver and compute capability, torch, CUDA, cuDNN, numba, numpy, CPUs
  shm         the size and free space of /dev/shm, and what the served self-play's leaf slots need
  warm-up     a fresh process's first self-play game (numba kernels loaded from the cache, or compiled
              when it is cold) and a second fresh process's, seconds each
  inference   network evaluations/s by batch, numpy in and out as the server calls it: fp32 (batch norm
              fused), bf16, channels-last fp32 and the fused fp32 copy through torch.compile (compile time
              excluded), and the host-copy share: the part of an fp32 call spent outside the forward pass
              on device-resident inputs (copies in and out, conversions)
  selfplay    served self-play positions/s and the server's mean batch with the plan's process counts
  devices     the same with one server a GPU (train.inference.devices): 2 GPUs and all of them, each row
              skipped with its reason where the machine has fewer (--cpu: 2 and 3 CPU servers stand in)
  ray         the same on a local Ray (the ray backend's per-node serving: one server a GPU of the node, or one
              CPU server), run in a loopback-only network namespace (agents.common.loopback), since Ray
              listens on every interface otherwise; skipped with its reason without Ray or the namespace
  inprocess   the same games in this process (train.workers=0: every game's tree in one process, direct
              network calls on the device)
  training    a 3-iteration train.py run: self-play positions/s, learner ms a step, whether the loss is
              finite and falling, and whether its checkpoint loads and evaluates in a CPU-only process

Positions per second are per wall second on CUDA, per CPU second of this process on CPU (inference), or
per wall second (self-play and training). Each step has a time budget; a step or row the budget does not
reach says ``skipped (time budget)``, and a step that fails records its error and the check goes on (exit
status 1 at the end). Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
from bench_network import make_runners, rate

from agents.alphazero.distributed.batcher import tail_mean_batch
from agents.alphazero.distributed.pools import make_selfplay_pool
from agents.alphazero.distributed.settings import InferenceSettings, WorkerSettings
from agents.alphazero.distributed.slots import ROW_BYTES, SHM_DIR, slot_capacity
from agents.alphazero.net.device import resolve_device
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.net.runtime import fuse_for_inference, make_evaluator
from agents.alphazero.training.config import checked_config, compose_config
from agents.common.child import how_it_ended
from agents.common.io import atomic_write_json
from envs.config import config_dir, read_config_file
from envs.encoding import N_ACTIONS, OBS_SHAPE

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = "skipped (time budget)"
MODES = {"fp32": "fused", "bf16": "bf16", "chlast": "chlast", "compile": "compile"}
"""The inference columns and the bench_network paths that measure them."""
STEPS = ("device", "shm", "warm-up", "inference", "selfplay", "devices", "ray", "inprocess", "training")


@dataclass(frozen=True)
class Plan:
    """The sizes and time budgets of one kind of check."""

    device: str
    models: tuple[str, ...]
    batches: tuple[int, ...]
    seconds: float
    """Time per inference measurement."""
    compiled: tuple[str, ...]
    """The models measured through torch.compile (a compilation a batch shape: the slowest column)."""
    selfplay: tuple[str, ...]
    """Overrides of the self-play steps' configuration."""
    processes: tuple[int, ...]
    games: int
    plies: int
    """Self-play games are capped at this many plies (the rate of a game's opening plies)."""
    training: tuple[str, ...]
    """train.py overrides of the training run."""
    stand_ins: int = 0
    """CPU servers that stand in for GPUs in the `devices` step (0: the machine's GPUs)."""
    budgets: Mapping[str, float] = field(default_factory=dict)
    """Seconds each step may take (its later rows are skipped past it)."""


GPU = Plan(
    device="cuda",
    models=("medium", "large"),
    batches=(1024, 4096, 16384),
    seconds=0.5,
    compiled=("medium",),
    selfplay=("preset=gpu", "model=medium", "mcts.num_simulations=32"),
    processes=(15, 8),
    games=1024,
    plies=12,
    training=(
        "preset=gpu",
        "train.iterations=3",
        "train.selfplay.max_plies=100",
        "train.min_replay=1000",
        "train.max_steps_per_iteration=50",
        "train.eval.every=0",
    ),
    budgets={
        "warm-up": 60,
        "inference": 100,
        "selfplay": 80,
        "devices": 60,
        "ray": 50,
        "inprocess": 40,
        "training": 130,
    },
)
CPU = Plan(
    device="cpu",
    models=("tiny",),
    batches=(16, 64),
    seconds=0.05,
    compiled=(),
    selfplay=("preset=smoke",),
    processes=(1,),
    games=4,
    plies=6,
    training=(
        "preset=smoke",
        "train.workers=1",
        "train.inference.server=true",
        "train.iterations=3",
        "train.max_steps_per_iteration=4",
        "train.learner.warmup_steps=1",
        "train.eval.every=0",
    ),
    stand_ins=3,
    budgets={
        "warm-up": 60,
        "inference": 20,
        "selfplay": 60,
        "devices": 60,
        "ray": 90,
        "inprocess": 30,
        "training": 120,
    },
)


@dataclass
class Row:
    """One row of the check: what was measured, at what setting, the result as text and its figures."""

    check: str
    setting: str
    result: str
    figures: dict[str, Any] = field(default_factory=dict)


def over(deadline: float) -> bool:
    return time.monotonic() > deadline


def processes(n: int) -> str:
    return f"{n} process" if n == 1 else f"{n} processes"


def device_rows(plan: Plan) -> list[Row]:
    """The device and the versions of what runs on it."""
    import numba

    figures: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "numba": numba.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    if plan.device == "cuda":
        props = torch.cuda.get_device_properties(0)
        figures.update(
            name=props.name,
            capability=f"{props.major}.{props.minor}",
            memory_gib=round(props.total_memory / 2**30, 1),
            cudnn=torch.backends.cudnn.version(),
            driver=_driver(),
        )
    else:
        figures["name"] = platform.processor() or platform.machine()
    text = ", ".join(f"{k} {v}" for k, v in figures.items() if v is not None)
    return [Row("device", plan.device, text, figures)]


def _driver() -> Optional[str]:
    """The NVIDIA driver's version, as nvidia-smi reports it (None without it)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True)
    except OSError:
        return None
    return out.stdout.decode().strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def selfplay_config(plan: Plan) -> Any:
    """The self-play steps' composed configuration."""
    return checked_config(compose_config(list(plan.selfplay)))


def shm_rows(plan: Plan) -> list[Row]:
    """/dev/shm's size and free space against what the largest served self-play's slots need."""
    conf = selfplay_config(plan)
    workers = max(plan.processes)
    games = -(-max(plan.games, conf.train.selfplay.parallel) // workers)
    need = workers * slot_capacity(games, conf.mcts) * ROW_BYTES
    try:
        fs = os.statvfs(SHM_DIR)
    except (OSError, AttributeError):
        return [Row("shared memory", SHM_DIR, "not found here", {"need_mb": need / 2**20})]
    size, free = fs.f_blocks * fs.f_frsize, fs.f_bavail * fs.f_frsize
    figures = {"size_mb": size / 2**20, "free_mb": free / 2**20, "need_mb": need / 2**20, "enough": free >= need}
    text = (
        f"size {size / 2**20:,.0f} MB, free {free / 2**20:,.0f} MB; {processes(workers)} need "
        f"{need / 2**20:,.1f} MB ({'enough' if free >= need else 'NOT enough'})"
    )
    return [Row("shared memory", SHM_DIR, text, figures)]


def warm_up_probe() -> None:
    """This process's first self-play game (preset=smoke, 2 plies), timed from before the imports: what a
    worker's start costs in numba kernels (`warm_up_rows`)."""
    t0 = time.perf_counter()
    conf = checked_config(compose_config(["preset=smoke"]))
    settings = WorkerSettings(
        network=conf.model,
        mcts=conf.mcts,
        rules=conf.rules.rule_set(),
        selfplay=replace(conf.train.selfplay, max_plies=2, parallel=2),
    )
    torch.manual_seed(0)
    with make_selfplay_pool("inprocess", 0, settings) as pool:
        pool.play(build_network(conf.model).state_dict(), seed=0, num_games=2)
    print(json.dumps({"seconds": time.perf_counter() - t0}))


def warm_up_rows(plan: Plan) -> list[Row]:
    """Two fresh processes' first self-play game in turn: the first compiles what the numba cache lacks."""
    deadline = time.monotonic() + plan.budgets["warm-up"]
    rows = []
    for which in ("first process", "second process"):
        if over(deadline):
            rows.append(Row("numba warm-up", which, SKIPPED))
            continue
        left = max(1.0, deadline - time.monotonic())
        t0 = time.perf_counter()
        run = subprocess.run(
            [sys.executable, __file__, "--warm-up-probe"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=left + 120,
        )
        wall = time.perf_counter() - t0
        if run.returncode != 0:
            raise RuntimeError(f"the warm-up process failed ({how_it_ended(run.returncode)}): {run.stderr[-500:]}")
        game = json.loads(run.stdout.strip().splitlines()[-1])["seconds"]
        rows.append(
            Row(
                "numba warm-up",
                which,
                f"{wall:.1f} s from start to its first game's end ({game:.1f} s after the interpreter started)",
                {"seconds": wall, "game_seconds": game},
            )
        )
    return rows


def _device_rate(net: torch.nn.Module, obs: np.ndarray, seconds: float, device: torch.device) -> float:
    """Positions/s of `net`'s forward pass alone, on inputs already on `device` (outputs left there)."""
    x = torch.from_numpy(obs).to(device)
    clock = time.perf_counter if device.type == "cuda" else time.process_time
    with torch.inference_mode():
        for _ in range(3):
            net(x)
        if device.type == "cuda":
            torch.cuda.synchronize()
        n, t0 = 0, clock()
        while clock() - t0 < seconds:
            net(x)
            n += len(obs)
        if device.type == "cuda":
            torch.cuda.synchronize()
    return n / (clock() - t0)


def inference_rows(plan: Plan) -> list[Row]:
    """One row per model and batch: evaluations/s in each mode, and the host-copy share of an fp32 call;
    torch.compile last, as its compilations take the longest (what the budget leaves)."""
    device = torch.device(plan.device)
    deadline = time.monotonic() + plan.budgets["inference"]
    rng = np.random.default_rng(0)
    inputs = {
        b: ((rng.random((b,) + OBS_SHAPE) < 0.1).astype(np.float32), rng.random((b, N_ACTIONS)) < 0.1)
        for b in plan.batches
    }
    figures: dict[tuple[str, int], dict[str, Any]] = {(m, b): {} for m in plan.models for b in plan.batches}
    models = {}
    for name in plan.models:
        torch.manual_seed(0)
        cfg = NetworkConfig.from_dict(read_config_file(config_dir("model") / f"{name}.yaml", "model", ValueError))
        models[name] = build_network(cfg).to(device).eval()
    for modes in (("fp32", "bf16", "chlast"), ("compile",)):
        for name, model in models.items():
            wanted = [m for m in modes if m != "compile" or name in plan.compiled]
            runners = {} if over(deadline) else make_runners(model, device, [MODES[m] for m in wanted])
            fused = fuse_for_inference(model).to(device) if "fp32" in modes and not over(deadline) else None
            for b in plan.batches:
                got = figures[name, b]
                for mode in modes:
                    run = runners.get(MODES[mode])
                    if mode not in wanted:
                        got[mode] = "not measured"
                    elif over(deadline):
                        got[mode] = SKIPPED
                    elif run is None:  # make_runners has said why
                        got[mode] = "unavailable"
                    else:
                        got[mode] = rate(run, *inputs[b], plan.seconds, device)
                if fused is not None and isinstance(got.get("fp32"), float) and not over(deadline):
                    alone = _device_rate(fused, inputs[b][0], plan.seconds, device)
                    got["forward_only"] = alone
                    got["host_copy_share"] = max(0.0, 1.0 - got["fp32"] / alone)
    rows = []
    for (name, b), got in figures.items():
        shown = [f"{m} {_number(got.get(m, SKIPPED))}" for m in MODES]
        share = got.get("host_copy_share")
        text = " · ".join(shown) + " evaluations/s" + ("" if share is None else f"; host copies {share:.0%}")
        rows.append(Row(f"inference {name}", f"batch {b}", text, dict(got, model=name, batch=b)))
    return rows


def _number(value: Any) -> str:
    return f"{value:,.0f}" if isinstance(value, float) else str(value)


def _settings(conf: Any, plan: Plan) -> WorkerSettings:
    return WorkerSettings(
        network=conf.model,
        mcts=conf.mcts,
        rules=conf.rules.rule_set(),
        selfplay=replace(conf.train.selfplay, max_plies=plan.plies),
        precision=conf.precision,
    )


def _what(conf: Any, plan: Plan) -> str:
    return f"{' '.join(plan.selfplay)} ({conf.model.blocks}x{conf.model.channels}, {plan.games} games)"


def served_figures(pool: Any, weights: Mapping[str, Any], plan: Plan, workers: int) -> dict[str, Any]:
    """A served pool's start-up call, then `plan.games` games timed: positions/s (wall), the servers' mean
    batch and that of their last tenth, seconds."""
    pool.play(weights, seed=1, num_games=workers)  # start-up: the processes, their kernels, the device
    t0 = time.perf_counter()
    data = pool.play(weights, seed=0, num_games=plan.games)
    seconds = time.perf_counter() - t0
    positions = int(data.stats.positions)
    return {
        "processes": workers,
        "positions": positions,
        "positions_per_s": positions / seconds,
        "mean_batch": pool.server_counts.get("mean_batch", 0.0),
        "tail_mean_batch": pool.server_counts.get("tail_mean_batch", 0.0),
        "seconds": seconds,
    }


def served_text(got: Mapping[str, Any]) -> str:
    """`served_figures` as a row's result."""
    return (
        f"{got['positions_per_s']:,.0f} positions/s, mean server batch {got['mean_batch']:,.0f} (last tenth "
        f"{got['tail_mean_batch']:,.0f}) ({got['positions']} positions in {got['seconds']:.1f} s)"
    )


def _weights(conf: Any) -> dict[str, Any]:
    torch.manual_seed(0)
    return build_network(conf.model).state_dict()


def selfplay_rows(plan: Plan) -> list[Row]:
    """Positions/s of served self-play by the number of self-play processes feeding one server."""
    conf = selfplay_config(plan)
    settings = _settings(conf, plan)
    inference = InferenceSettings(device=resolve_device(plan.device))
    weights = _weights(conf)
    deadline = time.monotonic() + plan.budgets["selfplay"]
    rows = []
    for w in plan.processes:
        if over(deadline):
            rows.append(Row(f"served self-play {_what(conf, plan)}", processes(w), SKIPPED))
            continue
        with make_selfplay_pool("process", w, settings, inference=inference) as pool:
            got = served_figures(pool, weights, plan, w)
        rows.append(Row(f"served self-play {_what(conf, plan)}", processes(w), served_text(got), got))
    return rows


def server_devices(plan: Plan) -> list[tuple[str, Optional[tuple[torch.device, ...]], str]]:
    """The `devices` step's rows: (setting, the servers' devices or None to skip, the reason to skip): 2
    devices and all of them; on CPU, 2 and `plan.stand_ins` CPU servers."""
    if plan.stand_ins:
        cpu = torch.device("cpu")
        return [(f"{n} CPU servers", (cpu,) * n, "") for n in (2, plan.stand_ins)]
    gpus = torch.cuda.device_count()
    every = tuple(torch.device("cuda", i) for i in range(gpus))
    return [
        ("2 GPUs", every[:2] if gpus >= 2 else None, f"skipped: this machine has {gpus} GPU{'s' * (gpus != 1)}"),
        (
            "all GPUs",
            every if gpus > 2 else None,
            f"skipped: this machine has {gpus} GPU{'s' * (gpus != 1)}"
            + (" (the row above is all of them)" if gpus == 2 else ""),
        ),
    ]


def devices_rows(plan: Plan) -> list[Row]:
    """Served self-play with one server a device (`train.inference.devices`), the workers split among them:
    the largest process count of the plan (at least one a server)."""
    conf = selfplay_config(plan)
    settings = _settings(conf, plan)
    weights = _weights(conf)
    deadline = time.monotonic() + plan.budgets["devices"]
    rows = []
    for setting, devices, reason in server_devices(plan):
        check = f"served self-play, one server a device {_what(conf, plan)}"
        if devices is None:
            rows.append(Row(check, setting, reason))
            continue
        if over(deadline):
            rows.append(Row(check, setting, SKIPPED))
            continue
        w = max(max(plan.processes), len(devices))
        inference = InferenceSettings(device=devices[0], devices=devices)
        with make_selfplay_pool("process", w, settings, inference=inference) as pool:
            got = served_figures(pool, weights, plan, w)
        got["servers"] = len(devices)
        rows.append(Row(check, f"{setting}, {processes(w)}", served_text(got), got))
    return rows


RAY_PROBE = "ray probe:"
"""How `--ray-probe` (the `ray` step's run inside the namespace) prints its figures: this, then JSON."""


def ray_workers(plan: Plan) -> int:
    """The `ray` step's self-play actors: the plan's largest process count, within the CPUs the local Ray's
    servers leave (one a GPU, or one CPU server)."""
    servers = torch.cuda.device_count() if plan.device == "cuda" else 1
    return max(1, min(max(plan.processes), (os.cpu_count() or 1) - servers))


def ray_probe(plan: Plan) -> None:
    """The `ray` step's games on a local Ray (`RayPool`, served per node), printed after `RAY_PROBE`."""
    conf = selfplay_config(plan)
    settings = _settings(conf, plan)
    settings = replace(settings, selfplay=replace(settings.selfplay, carry_over=False))  # not on Ray
    w = ray_workers(plan)
    inference = InferenceSettings(device=resolve_device(plan.device))
    with make_selfplay_pool("ray", w, settings, inference=inference) as pool:
        got = served_figures(pool, _weights(conf), plan, w)
        got["servers"] = len(pool.placement.servers)
    print(RAY_PROBE + json.dumps(got), flush=True)


def ray_rows(plan: Plan) -> list[Row]:
    """Served self-play on a local Ray, in a loopback-only network namespace: this script again with
    `--ray-probe`, Ray's files in a directory of its own (so it neither finds nor joins another instance)."""
    import importlib.util

    from agents.common.loopback import run_on_loopback

    conf = selfplay_config(plan)
    check = f"Ray-served self-play {_what(conf, plan)}"
    setting = f"local Ray, {processes(ray_workers(plan))}"
    if importlib.util.find_spec("ray") is None:
        return [Row(check, setting, "skipped: Ray is not installed (pip install -e '.[distributed]')")]
    with tempfile.TemporaryDirectory(prefix="ray-") as temp:  # short: Ray's socket paths live under it
        env = dict(os.environ, RAY_TMPDIR=temp, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
        argv = [sys.executable, __file__, "--ray-probe", *(["--cpu"] if plan.device == "cpu" else [])]
        try:
            run = run_on_loopback(argv, timeout=plan.budgets["ray"] + 120, env=env, cwd=str(ROOT))
        except RuntimeError as e:  # no unshare or ip here
            return [Row(check, setting, f"skipped: {e}")]
    found = [line[len(RAY_PROBE) :] for line in run.stdout.splitlines() if line.startswith(RAY_PROBE)]
    if run.returncode != 0 or not found:
        tail = " / ".join(run.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"the Ray run failed ({how_it_ended(run.returncode)}): {tail}")
    got = json.loads(found[0])
    return [Row(check, setting, served_text(got) + f"; {got['servers']} server(s)", got)]


def inprocess_rows(plan: Plan) -> list[Row]:
    """The same games played in this process (train.workers=0), the network called directly on the device."""
    conf = selfplay_config(plan)
    settings = _settings(conf, plan)
    device = torch.device(plan.device)
    torch.manual_seed(0)
    model = build_network(conf.model).to(device).eval()
    what = f"in-process self-play {_what(conf, plan)}"
    evaluate = make_evaluator(model, device, conf.precision)
    sizes: list[int] = []

    def counted(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sizes.append(len(obs))
        return evaluate(obs, mask)

    with make_selfplay_pool("inprocess", 0, settings, evaluator=counted) as pool:
        weights = model.state_dict()
        pool.play(weights, seed=1, num_games=2)  # the device's first calls
        sizes.clear()
        t0 = time.perf_counter()
        data = pool.play(weights, seed=0, num_games=plan.games)
        seconds = time.perf_counter() - t0
    positions = int(data.stats.positions)
    mean, tail = sum(sizes) / max(1, len(sizes)), tail_mean_batch(sizes)
    return [
        Row(
            what,
            "1 process",
            f"{positions / seconds:,.0f} positions/s, mean batch {mean:,.0f} (last tenth {tail:,.0f}) "
            f"({positions} positions in {seconds:.1f} s)",
            {"positions_per_s": positions / seconds, "mean_batch": mean, "tail_mean_batch": tail, "seconds": seconds},
        )
    ]


def scalars(run_dir: Path) -> dict[str, list[float]]:
    """The run's TensorBoard scalars by tag, iteration by iteration."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [e.value for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


LOAD_ON_CPU = """
import sys, numpy as np, torch
from agents.alphazero.net.checkpoint import load_model
from agents.alphazero.net.runtime import make_evaluator
from envs.encoding import N_ACTIONS, OBS_SHAPE
assert not torch.cuda.is_available()
model, _ = load_model(sys.argv[1], device="cpu")
logits, value = make_evaluator(model, "cpu")(np.zeros((2,) + OBS_SHAPE, np.float32), np.ones((2, N_ACTIONS), bool))
assert np.isfinite(logits[:, 0]).all() and np.isfinite(value).all()
print("ok")
"""
"""A CPU-only process (no CUDA device visible) loads a checkpoint and evaluates two positions with it."""


def training_rows(plan: Plan) -> list[Row]:
    """A 3-iteration train.py run: its self-play rate, learner ms a step, the loss's course, and its checkpoint
    loaded in a CPU-only process."""
    what = f"training {' '.join(plan.training[:1])} 3 iterations"
    with tempfile.TemporaryDirectory() as out:
        command = [
            sys.executable,
            str(ROOT / "train.py"),
            *plan.training,
            f"device={plan.device}",
            f"out_dir={out}",
            "name=gpu-check",
            "train.write_games=false",
        ]
        t0 = time.monotonic()
        try:
            run = subprocess.run(
                command, cwd=ROOT, capture_output=True, text=True, timeout=plan.budgets["training"] + 60
            )
        except subprocess.TimeoutExpired:
            return [Row(what, f"{time.monotonic() - t0:.0f} s", "did not end in its time budget")]
        took = time.monotonic() - t0
        run_dir = Path(out) / "gpu-check"
        if run.returncode != 0 or not (run_dir / "latest.pt").is_file():
            tail = " / ".join((run.stdout + run.stderr).strip().splitlines()[-3:])
            raise RuntimeError(f"train.py failed ({how_it_ended(run.returncode)}): {tail}")
        found = scalars(run_dir)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
        load = subprocess.run(
            [sys.executable, "-c", LOAD_ON_CPU, str(run_dir / "latest.pt")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    total = found.get("loss/total", [])
    learn, steps = found.get("perf/seconds_learn", []), found.get("perf/learner_steps", [])
    done = [b - a for a, b in zip([0.0, *steps], steps)]
    ms = [1000 * s / n for s, n in zip(learn, done) if n > 0]
    figures = {
        "seconds": took,
        "iterations": len(found.get("selfplay/positions_per_s", [])),
        "positions_per_s": found.get("selfplay/positions_per_s", []),
        "learner_ms_per_step": ms,
        "loss_total": total,
        "loss_finite": bool(total) and bool(np.isfinite(total).all()),
        "loss_falling": len(total) >= 2 and total[-1] < total[0],
        "loads_on_cpu": load.returncode == 0 and load.stdout.strip().endswith("ok"),
    }
    rates = ", ".join(f"{r:,.0f}" for r in figures["positions_per_s"])
    text = (
        f"self-play {rates} positions/s; learner "
        + (", ".join(f"{m:.1f}" for m in ms) or "no step")
        + " ms a step; loss/total "
        + (" -> ".join(f"{t:.3f}" for t in total) or "not logged")
        + f" ({'finite' if figures['loss_finite'] else 'NOT finite'}, "
        + f"{'falling' if figures['loss_falling'] else 'not falling'}); checkpoint "
        + ("loads on a CPU-only process" if figures["loads_on_cpu"] else f"does NOT load on CPU: {load.stderr[-300:]}")
    )
    return [Row(what, f"{took:.0f} s", text, figures)]


STEP_ROWS: dict[str, Callable[[Plan], list[Row]]] = {
    "device": device_rows,
    "shm": shm_rows,
    "warm-up": warm_up_rows,
    "inference": inference_rows,
    "selfplay": selfplay_rows,
    "devices": devices_rows,
    "ray": ray_rows,
    "inprocess": inprocess_rows,
    "training": training_rows,
}


def table(rows: list[tuple[str, str, str]]) -> str:
    """The rows as one markdown table."""
    head = ("check", "setting", "result")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
    lines = [head, tuple("-" * w for w in widths), *rows]
    return "\n".join("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |" for line in lines)


def commit() -> str:
    """The commit the check runs on (``unknown`` outside a git checkout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def read_records(path: Optional[Path]) -> list[dict[str, Any]]:
    """The records already in the JSON file (an earlier check's), so that this one appends to them."""
    if path is None or not path.exists():
        return []
    try:
        records = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: --json {path}: not a JSON list of records ({e})") from None
    if not isinstance(records, list):
        raise SystemExit(f"error: --json {path}: not a JSON list of records")
    return records


def run_steps(plan: Plan, steps: list[str], json_path: Optional[Path]) -> bool:
    """Each step in turn: its rows printed and appended to `json_path` as it ends; whether every step ran."""
    records = read_records(json_path)
    started, at = time.strftime("%Y-%m-%dT%H:%M:%S"), commit()
    rows: list[tuple[str, str, str]] = []
    ok = True
    for step in steps:
        t0 = time.monotonic()
        try:
            got = STEP_ROWS[step](plan)
        except Exception as e:  # noqa: BLE001 - a failed step is recorded and the next ones still run
            got, ok = [Row(step, "failed", f"{type(e).__name__}: {e}", {"error": str(e)})], False
        seconds = time.monotonic() - t0
        for row in got:
            print(f"| {row.check} | {row.setting} | {row.result} |", flush=True)
            rows.append((row.check, row.setting, row.result))
            records.append(
                {"step": step, "device": plan.device, "started": started, "commit": at, "step_seconds": seconds}
                | asdict(row)
            )
        if json_path is not None:
            atomic_write_json(json_path, records)
    print(table(rows))
    return ok


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="small sizes on CPU (what the test suite runs)")
    ap.add_argument("--json", type=Path, help="append one record a row to this JSON file (written atomically)")
    ap.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated steps (default all: {','.join(STEPS)})")
    ap.add_argument("--warm-up-probe", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ray-probe", action="store_true", help=argparse.SUPPRESS)  # the ray step's own run
    args = ap.parse_args(argv)
    if args.warm_up_probe:
        return warm_up_probe()
    if args.ray_probe:
        torch.set_num_threads(1 if args.cpu else min(4, os.cpu_count() or 1))
        return ray_probe(CPU if args.cpu else GPU)
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in steps if s not in STEPS]
    if unknown or not steps:
        ap.error(
            f"--steps={args.steps!r}: unknown step(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(STEPS)}"
        )
    plan = CPU if args.cpu else GPU
    if plan.device == "cuda" and not torch.cuda.is_available():
        ap.error("no CUDA device here; run with --cpu for the small CPU check")
    torch.set_num_threads(1 if args.cpu else min(4, os.cpu_count() or 1))
    t0 = time.monotonic()
    print(f"gpu_check{' --cpu' if args.cpu else ''}: steps {', '.join(steps)}; commit {commit()}", flush=True)
    ok = run_steps(plan, steps, args.json)
    print(f"gpu_check: {time.monotonic() - t0:.0f} s", flush=True)
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

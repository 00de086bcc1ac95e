"""GPU check: one machine's inference, self-play and training figures in one table (`--cpu`: small sizes on CPU).

    python bench/gpu_check.py          # a CUDA machine: at most about 9 minutes
    python bench/gpu_check.py --cpu    # the same rows at small sizes on CPU, in well under a minute
                                       # (tests/bench/test_gpu_check.py runs it)

Rows of the table (positions per second are per wall second on CUDA, per CPU
second of this process on CPU, as bench/bench_network.py counts them):

  inference <model>      batch n    the network alone, numpy in and out as the searches call it:
                                    fp32 (batch norm fused, what `make_evaluator` runs), bf16, and
                                    the fused fp32 copy through torch.compile (compile time excluded)
  self-play <preset>     w processes   positions/s of that preset's self-play (untrained network,
                                    games capped at a few plies) with w self-play processes feeding
                                    one inference server on the device, and the server's mean batch
  training model=medium  seconds    a train.py run with the inference server, stopped after 3
                                    minutes: its loss/total (policy, value) at the first and last
                                    iteration, and whether it fell

Each part has a time budget, and the whole run one (the training run is cut
shorter when the parts before it overran); a row a budget does not reach says
``skipped (time budget)``, so the run stays under 10 minutes on any machine.
Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from bench_network import make_runners, rate

from agents.alphazero.config import checked_config, compose_config
from agents.alphazero.network import NetworkConfig, build_network
from agents.alphazero.pools import make_selfplay_pool
from agents.alphazero.settings import InferenceSettings, WorkerSettings
from agents.child import how_it_ended
from envs.config import config_dir, read_config_file
from envs.encoding import N_ACTIONS, OBS_SHAPE

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = "skipped (time budget)"
MODES = {"fp32": "fused", "bf16": "bf16", "compile": "compile"}
"""The table's inference columns and the bench_network paths that measure them."""


@dataclass(frozen=True)
class Plan:
    """The sizes and time budgets of one kind of run."""

    device: str
    models: tuple[str, ...]
    batches: tuple[int, ...]
    seconds: float
    """Time per inference measurement."""
    inference_budget: float
    selfplay_preset: str
    processes: tuple[int, ...]
    selfplay_games: int
    selfplay_plies: int
    selfplay_budget: float
    training: tuple[str, ...]
    """train.py overrides of the training run."""
    training_seconds: float
    """The training run is stopped (Ctrl-C) after this long; its own iterations may end it sooner."""
    total: float
    """Seconds for the whole check; the training run is cut to fit (with a minute for its shutdown)."""


GPU = Plan(
    device="cuda",
    models=("small", "medium", "large"),
    batches=(64, 256, 1024, 4096),
    seconds=0.5,
    inference_budget=120,
    selfplay_preset="gpu",
    processes=(1, 4, 8, 15),
    selfplay_games=1024,
    selfplay_plies=12,
    selfplay_budget=180,
    training=(
        "preset=gpu",
        "model=medium",
        "train.games_per_iteration=240",
        "train.selfplay.max_plies=120",
        "train.min_replay=2000",
        "train.max_steps_per_iteration=100",
        "train.eval.every=0",
        "train.iterations=1000",
    ),
    training_seconds=180,
    total=540,
)
CPU = Plan(
    device="cpu",
    models=("tiny", "small"),
    batches=(1, 16),
    seconds=0.05,
    inference_budget=30,
    selfplay_preset="smoke",
    processes=(1, 2),
    selfplay_games=4,
    selfplay_plies=8,
    selfplay_budget=60,
    training=(
        "preset=smoke",
        "train.workers=2",
        "train.inference_server=true",
        "train.iterations=3",
        "train.max_steps_per_iteration=10",
        "train.learner.warmup_steps=1",
        "train.eval.every=0",
    ),
    training_seconds=120,
    total=400,
)


def over(deadline: float) -> bool:
    return time.monotonic() > deadline


def processes(n: int) -> str:
    return f"{n} process" if n == 1 else f"{n} processes"


def inference_rows(plan: Plan) -> list[tuple[str, str, str]]:
    """One row per model and batch: positions/s in fp32, bf16 and compiled; torch.compile last, as its
    compilations take the longest (a model's compiled column is what the budget leaves)."""
    device = torch.device(plan.device)
    deadline = time.monotonic() + plan.inference_budget
    rng = np.random.default_rng(0)
    inputs = {
        b: ((rng.random((b,) + OBS_SHAPE) < 0.1).astype(np.float32), rng.random((b, N_ACTIONS)) < 0.1)
        for b in plan.batches
    }
    figures: dict[tuple[str, int, str], str] = {}
    models = {}
    for name in plan.models:
        torch.manual_seed(0)
        cfg = NetworkConfig.from_dict(read_config_file(config_dir("model") / f"{name}.yaml", "model", ValueError))
        models[name] = build_network(cfg).to(device).eval()
    for modes in (("fp32", "bf16"), ("compile",)):
        for name, model in models.items():
            runners = {} if over(deadline) else make_runners(model, device, [MODES[m] for m in modes])
            for b in plan.batches:
                for mode in modes:
                    run = runners.get(MODES[mode])
                    if over(deadline):
                        figures[name, b, mode] = SKIPPED
                    elif run is None:  # make_runners has said why
                        figures[name, b, mode] = "unavailable"
                    else:
                        figures[name, b, mode] = f"{rate(run, *inputs[b], plan.seconds, device):,.0f}"
    return [
        (
            f"inference {name}",
            f"batch {b}",
            " · ".join(f"{mode} {figures[name, b, mode]}" for mode in MODES) + " positions/s",
        )
        for name in plan.models
        for b in plan.batches
    ]


def selfplay_rows(plan: Plan) -> list[tuple[str, str, str]]:
    """Positions/s of the preset's self-play by the number of self-play processes feeding one server."""
    conf = checked_config(compose_config([f"preset={plan.selfplay_preset}"]))
    settings = WorkerSettings(
        network=conf.model.to_dict(),
        mcts=asdict(conf.mcts),
        rules=conf.rules.rule_set().to_dict(),
        selfplay=replace(conf.train.selfplay, max_plies=plan.selfplay_plies),
    )
    inference = InferenceSettings(device=plan.device, precision=conf.precision)
    torch.manual_seed(0)
    weights = build_network(conf.model).state_dict()
    deadline = time.monotonic() + plan.selfplay_budget
    what = (
        f"self-play preset={plan.selfplay_preset} ({conf.model.blocks}x{conf.model.channels} network, "
        f"{conf.mcts.num_simulations} simulations)"
    )
    rows = []
    for w in plan.processes:
        if over(deadline):
            rows.append((what, processes(w), SKIPPED))
            continue
        with make_selfplay_pool("process", w, settings, inference=inference) as pool:
            pool.play(weights, seed=1, num_games=w)  # start-up: the processes, their kernels, the device
            t0 = time.perf_counter()
            data = pool.play(weights, seed=0, num_games=plan.selfplay_games)
            seconds = time.perf_counter() - t0
        positions = int(data.stats.positions)
        rows.append(
            (
                what,
                processes(w),
                f"{positions / seconds:,.0f} positions/s, mean server batch "
                f"{pool.server_counts['mean_batch']:.0f} ({positions} positions in {seconds:.1f} s)",
            )
        )
    return rows


def losses(run_dir: Path) -> dict[str, list[float]]:
    """The run's loss scalars by tag, iteration by iteration."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [e.value for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"] if tag.startswith("loss/")}


def training_row(plan: Plan, seconds: float) -> tuple[str, str, str]:
    """A train.py run of the plan (stopped by Ctrl-C after `seconds`) and the course of its losses."""
    model = next((o.split("=", 1)[1] for o in plan.training if o.startswith("model=")), "")
    what = f"training model={model}" if model else f"training preset={plan.selfplay_preset}"
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
        run = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            log, _ = run.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            run.send_signal(signal.SIGINT)  # abandons the self-play in progress, keeps what was learnt
            try:
                log, _ = run.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                run.kill()
                log, _ = run.communicate()
        took = time.monotonic() - t0
        found = losses(Path(out) / "gpu-check") if (Path(out) / "gpu-check").is_dir() else {}
    total = found.get("loss/total", [])
    if not total:
        tail = " / ".join(log.strip().splitlines()[-3:])
        return what, f"{took:.0f} s", f"no loss logged ({how_it_ended(run.returncode)}): {tail}"
    parts = [
        f"{tag[5:]} {found[tag][0]:.3f} -> {found[tag][-1]:.3f}"
        for tag in ("loss/total", "loss/policy", "loss/value")
        if found.get(tag)
    ]
    verdict = "falling" if total[-1] < total[0] else "not falling"
    return what, f"{took:.0f} s, {len(total)} iterations", f"{', '.join(parts)} ({verdict})"


def table(rows: list[tuple[str, str, str]]) -> str:
    """The rows as one markdown table."""
    head = ("check", "setting", "result")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
    lines = [head, tuple("-" * w for w in widths), *rows]
    return "\n".join("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |" for line in lines)


def machine(plan: Plan) -> str:
    where = torch.cuda.get_device_name() if plan.device == "cuda" else platform.processor() or platform.machine()
    return f"{where}; {os.cpu_count()} CPUs; torch {torch.__version__}"


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="small sizes on CPU (what the test suite runs)")
    args = ap.parse_args(argv)
    plan = CPU if args.cpu else GPU
    if plan.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_check: no CUDA device here; run with --cpu for the small CPU check")
    torch.set_num_threads(1 if args.cpu else min(4, os.cpu_count() or 1))
    t0 = time.monotonic()
    rows = inference_rows(plan) + selfplay_rows(plan)
    rows.append(training_row(plan, max(10.0, min(plan.training_seconds, plan.total - 60 - (time.monotonic() - t0)))))
    print(f"gpu_check{' --cpu' if args.cpu else ''}: {machine(plan)}; {time.monotonic() - t0:.0f} s")
    print(table(rows))


if __name__ == "__main__":
    main()

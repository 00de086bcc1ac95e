"""The learner's share of a training iteration: learner steps per second against self-play positions per second
at the default replay ratio, for the default network and a larger one, so a user sees when a second learner
device would matter.

    python bench/learner_share.py                          # small and medium, on CUDA when present, else the CPU
    python bench/learner_share.py --device cpu --models small,large
    python bench/learner_share.py --quick                  # tiny sizes (the smoke test's)

For each model (a configs/model/ name; untrained, seed 0) the bench runs, in this process, the two phases of an
iteration of `python train.py` one after the other, as train.py does:

- self-play: `--games` games at once on the network (`make_evaluator`, the run's `precision`) under the
  default run's search and self-play settings (`Config()`: Gumbel, 32 simulations over 4 root actions,
  the draw breakers), games capped at `--max-plies` and every drawn game kept (`draw_keep=1`, so that
  each position played is a position trained on);
- learning: `--steps` learner steps (`Learner.learn`, the run's optimizer and `amp`) on batches of the
  run's `train.batch_size` sampled from a replay buffer holding those positions.

Figures are per CPU second of the whole process tree (`resource.getrusage`, this process and its children,
all threads) and per wall second. The default run takes ``train_ratio / batch_size`` learner steps per new
position (4 / 256: one step per 64 positions), so the learner keeps up with ``steps/s x batch_size /
train_ratio`` self-play positions a second; below that rate the self-play is the bottleneck and a second
learner device would buy nothing. The learner's share is its part of the time of an iteration whose two
phases run one after the other (train.py today). Figures only (no assertions).
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import sys
import time
from typing import Any, NamedTuple

PROG = "learner_share.py"
QUICK = {"games": 4, "max_plies": 8, "sims": 4, "steps": 3, "batch_size": 32}
"""The sizes of `--quick` (the smoke test's): a run of seconds whose figures mean nothing (each
where its option is left at its default), on the `tiny` model unless `--models` says otherwise."""


def cpu_seconds() -> float:
    """CPU seconds (user and system) of this process and its children so far, all threads."""
    mine, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + kids.ru_utime + kids.ru_stime


class Timed(NamedTuple):
    """Work counted (positions or steps) and the CPU and wall seconds it took."""

    count: int
    cpu: float
    wall: float

    def per_cpu(self) -> float:
        return self.count / max(self.cpu, 1e-9)

    def per_wall(self) -> float:
        return self.count / max(self.wall, 1e-9)


def timed(run: Any) -> tuple[Any, float, float]:
    """`run()`'s result, and the CPU and wall seconds it took."""
    c0, w0 = cpu_seconds(), time.perf_counter()
    out = run()
    return out, cpu_seconds() - c0, time.perf_counter() - w0


def network_config(name: str) -> Any:
    """The `NetworkConfig` of configs/model/<name>.yaml."""
    from agents.alphazero.net.network import NetworkConfig
    from envs.config import ConfigError, config_dir, read_config_file

    path = config_dir("model") / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"--models: no model {name!r} (configs/model/ has: {model_names()})")
    return NetworkConfig.from_dict(read_config_file(path, "model", ConfigError))


def model_names() -> str:
    from envs.config import config_dir

    return ", ".join(
        sorted(p.name.removesuffix(".yaml") for p in config_dir("model").iterdir() if p.name.endswith(".yaml"))
    )


def measure(name: str, args: argparse.Namespace, device: Any) -> dict[str, Any]:
    """One model's self-play and learner figures on `device`."""
    import torch

    from agents.alphazero.distributed.pools import make_selfplay_pool
    from agents.alphazero.distributed.settings import WorkerSettings
    from agents.alphazero.net.network import build_network, count_parameters
    from agents.alphazero.net.runtime import make_evaluator
    from agents.alphazero.training.config import Config
    from agents.alphazero.training.learner import Learner
    from agents.alphazero.training.replay import ReplayBuffer

    conf = Config()
    torch.manual_seed(0)
    model = build_network(network_config(name)).to(device)
    mcts = dataclasses.replace(conf.mcts, num_simulations=args.sims or conf.mcts.num_simulations)
    selfplay = dataclasses.replace(conf.train.selfplay, parallel=args.games, max_plies=args.max_plies, draw_keep=1.0)
    settings = WorkerSettings(
        network=model.config,
        mcts=mcts,
        rules=conf.rules.rule_set(),
        selfplay=selfplay,
        precision=conf.precision,
    )
    evaluator = make_evaluator(model, device, conf.precision)
    with make_selfplay_pool("inprocess", 0, settings, evaluator=evaluator) as pool:
        pool.play(model.state_dict(), seed=1, num_games=2)  # compile, load the numba cache, fuse the network
        data, cpu, wall = timed(lambda: pool.play(model.state_dict(), seed=0, num_games=args.games))
    played = Timed(data.stats.positions, cpu, wall)

    tc = conf.train
    batch = args.batch_size or tc.batch_size
    replay = ReplayBuffer(max(len(data), 1), mirror=tc.mirror, seed=0)
    replay.add(data.obs, data.mask, data.policy, data.value, data.full_search, data.survival, data.trains_value)
    learner = Learner(model, tc.learner, device=device, amp=conf.amp)
    learner.learn(replay, 2, batch)  # warm-up: the optimizer's state, the first autocast
    _, cpu, wall = timed(lambda: learner.learn(replay, args.steps, batch))
    steps = Timed(args.steps, cpu, wall)
    return {
        "model": name,
        "parameters": count_parameters(model),
        "played": played,
        "steps": steps,
        "batch": batch,
        "ratio": tc.train_ratio,
        "simulations": mcts.num_simulations,
    }


def learner_share(played: float, steps: float, ratio: float, batch: int) -> tuple[float, float]:
    """(self-play positions a second the learner keeps up with, the learner's share of an iteration) from the
    self-play rate `played` (positions/s), the learner rate `steps` (steps/s) and the run's `ratio` positions
    sampled per new position in batches of `batch`."""
    ceiling = steps * batch / ratio if ratio > 0 else float("inf")
    learn = (ratio / batch) / steps  # learner seconds per self-play position
    return ceiling, learn / (learn + 1.0 / played)


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The printed table: one row per model."""
    out = [
        "| model | parameters | self-play positions per CPU s / wall s | learner steps per CPU s / wall s "
        "| positions the learner keeps up with per CPU s / wall s | learner share (CPU / wall) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        played, steps = r["played"], r["steps"]
        cpu = learner_share(played.per_cpu(), steps.per_cpu(), r["ratio"], r["batch"])
        wall = learner_share(played.per_wall(), steps.per_wall(), r["ratio"], r["batch"])
        out.append(
            f"| {r['model']} | {r['parameters']} | {played.per_cpu():.0f} / {played.per_wall():.0f} "
            f"| {steps.per_cpu():.2f} / {steps.per_wall():.2f} | {cpu[0]:.0f} / {wall[0]:.0f} "
            f"| {cpu[1]:.0%} / {wall[1]:.0%} |"
        )
    return out


def main() -> None:
    from agents.common.cli import refuse

    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.error = lambda message: refuse(PROG, ValueError(message))  # type: ignore[method-assign]  # one line, no usage
    ap.add_argument("--models", default=None, help="comma-separated configs/model/ names (default: small,medium)")
    ap.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda (default: %(default)s)")
    ap.add_argument("--games", type=int, default=32, help="self-play games, all at once (default: %(default)s)")
    ap.add_argument("--max-plies", type=int, default=40, help="each game's cap (default: %(default)s)")
    ap.add_argument("--sims", type=int, default=0, help="simulations a move (0: the default run's, 32)")
    ap.add_argument("--steps", type=int, default=20, help="learner steps timed (default: %(default)s)")
    ap.add_argument("--batch-size", type=int, default=0, help="learner batch (0: the default run's, 256)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: %(default)s, the run's)")
    ap.add_argument("--quick", action="store_true", help=f"tiny sizes for a smoke test ({QUICK})")
    args = ap.parse_args()
    if args.quick:  # the sizes left at their defaults
        for key, value in QUICK.items():
            if getattr(args, key) == ap.get_default(key):
                setattr(args, key, value)
    args.models = args.models or ("tiny" if args.quick else "small,medium")
    for key in ("games", "max_plies", "steps"):
        if getattr(args, key) < 1:
            ap.error(f"--{key.replace('_', '-')}={getattr(args, key)} must be at least 1")
    for key in ("sims", "batch_size", "threads"):
        if getattr(args, key) < 0:
            ap.error(f"--{key.replace('_', '-')}={getattr(args, key)} must be at least 0")
    if args.device not in ("auto", "cpu", "cuda"):
        ap.error(f"--device={args.device!r} must be auto, cpu or cuda")
    import torch

    from agents.alphazero.net.device import resolve_device

    try:
        device = resolve_device(args.device)
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        if not models:
            raise ValueError(f"--models={args.models!r} names no model")
        for name in models:
            network_config(name)
    except ValueError as e:
        ap.error(str(e))
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = [measure(name, args, device) for name in models]
    first = rows[0]
    print(
        f"device {device}, {torch.get_num_threads()} torch threads; self-play: {args.games} games at once, "
        f"Gumbel {first['simulations']} simulations, games capped at {args.max_plies} plies, in this process; "
        f"learner: batch {first['batch']}, {args.steps} steps; replay ratio {first['ratio']:g} "
        f"(one learner step per {first['batch'] / first['ratio']:g} new positions)"
    )
    print("\n".join(table(rows)))
    for r in rows:
        played, steps = r["played"], r["steps"]
        print(
            f"{r['model']}: {played.count} positions in {played.cpu:.1f} CPU s ({played.wall:.1f} wall s), "
            f"{steps.count} learner steps in {steps.cpu:.1f} CPU s ({steps.wall:.1f} wall s)"
        )


if __name__ == "__main__":
    sys.exit(main())

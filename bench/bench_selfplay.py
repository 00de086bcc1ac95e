"""Self-play speed with the default network on this CPU: positions per CPU and wall second, and where the time goes.

    python bench/bench_selfplay.py                         # before/after: the two earlier commits and this tree
    python bench/bench_selfplay.py --before none           # this tree only
    python bench/bench_selfplay.py --before 3454601 --before-precision fp32   # another commit, in fp32
    python bench/bench_selfplay.py --model medium --parallel 128 --mcts puct --sims 64
    python bench/bench_selfplay.py --model uniform --games 256   # no network: the search and the game loop alone
    python bench/bench_selfplay.py --sims 32 --max-actions 4     # the default run's self-play (preset=cpu)
    python bench/bench_selfplay.py --workers 2 --backend process   # the games split over 2 local processes
    python bench/bench_selfplay.py --before none --rules-mix default,keeps_rank,enemy_rat   # mixed beside single

Each measured tree runs in its own subprocess, one after the other: this
checkout, and each ``--before`` commit checked out as a git worktree under
the temporary directory (kept there, so its numba cache serves the next
run). By default the "before" commits are the default self-play when the
throughput work began (`ORIGINAL_COMMIT`: fp32 inference, a Python loop
over the games at every ply; a commit whose evaluator has no precision runs
fp32) and the last one with that Python loop (`PYTHON_LOOP_COMMIT`, bf16
inference already).

In each subprocess an untrained network (random weights, seed 0) plays, so
game lengths are those of early training; a warm-up round compiles the
numba kernels first. The timed round counts positions per CPU second (the
process's CPU time, all threads) and per wall second, and splits the time
into the network (inside the evaluator calls), numba (inside calls of
jitted functions from Python, dispatch included) and Python (the rest): the
bench wraps every jitted function that `agents` and `envs` modules hold, at
about a microsecond per call, and a kernel the evaluator calls counts as the
network's. With ``--rounds N`` the trees take turns N times: the table
shows each tree's best round, and the ratios of this tree to each other one
follow round by round (the runs of one round are minutes apart and share
the machine's load, which drifts more than that between rounds here) with
their median. With ``--workers`` the games run in other processes: only the
rates are printed. With ``--rules-mix`` this tree also plays its self-play
with each game's rules drawn from that mix (`train.rules_mix`) in every
round, beside the single-rule run, and the ratio of the two follows.
Figures only (no assertions).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

ORIGINAL_COMMIT = "e902945"
"""The default self-play when issue 10 (self-play throughput) was filed: fp32 inference, a Python loop per game."""
PYTHON_LOOP_COMMIT = "3454601"
"""The last commit whose self-play looped over the games in Python at every ply (bf16 inference already)."""

REPO = Path(__file__).resolve().parents[1]


class _Clock:
    """Wall and CPU seconds spent inside wrapped calls (outermost calls only, and none made while the
    `outside` clock runs: a kernel the evaluator calls is the network's time, not the search's)."""

    def __init__(self, outside: "_Clock | None" = None) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.depth = 0
        self.outside = outside

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self.depth or (self.outside is not None and self.outside.depth):
                return fn(*args, **kwargs)
            self.depth += 1
            w, c = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall += time.perf_counter() - w
                self.cpu += time.process_time() - c
                self.depth -= 1

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed


def _time_numba_calls(clock: _Clock) -> int:
    """Replace every jitted function held by a module of `agents` or `envs` (module globals and class
    staticmethods) by a timed wrapper; returns how many. Call it once every kernel is compiled."""
    from numba.core.dispatcher import Dispatcher

    wrapped: dict[int, Callable[..., Any]] = {}

    def timed(d: Any) -> Callable[..., Any]:
        if id(d) not in wrapped:
            wrapped[id(d)] = clock.wrap(d)
        return wrapped[id(d)]

    for name, mod in list(sys.modules.items()):
        if mod is None or name.split(".")[0] not in ("agents", "envs"):
            continue
        for attr, obj in list(vars(mod).items()):
            if isinstance(obj, Dispatcher):
                setattr(mod, attr, timed(obj))
            elif isinstance(obj, type) and obj.__module__ == name:
                for key, member in list(vars(obj).items()):
                    if isinstance(member, staticmethod) and isinstance(member.__func__, Dispatcher):
                        setattr(obj, key, staticmethod(timed(member.__func__)))
    return len(wrapped)


ROOM_MOVES = {
    "net.network": "network",
    "net.planestem": "planestem",
    "net.runtime": "runtime",
    "net.device": "device",
    "net.checkpoint": "checkpoint",
    "net.export": "export",
    "net.shipped": "shipped",
    "selfplay.games": "selfplay",
    "selfplay.samples": "samples",
    "selfplay.data": "selfplay_data",
    "selfplay.endgames": "endgames",
    "selfplay.rules_mix": "rules_mix",
    "training.config": "config",
    "training.run": "run",
    "training.learner": "learner",
    "training.replay": "replay",
    "training.progress": "progress",
    "training.ladder": "evaluation",
    "distributed.settings": "settings",
    "distributed.workers": "workers",
    "distributed.pools": "pools",
    "distributed.inference": "inference",
    "distributed.batcher": "batcher",
    "distributed.slots": "slots",
}
"""Where each module of agents/alphazero/ lived before the rooms (a subpackage a concern): new -> old name."""


def alias_rooms() -> None:
    """In a tree from before the rooms, make the rooms' module names import that tree's flat modules."""
    try:
        import agents.alphazero.net  # noqa: F401
    except ImportError:
        old_modules = {}
        for new, old in ROOM_MOVES.items():
            try:
                old_modules[new] = importlib.import_module(f"agents.alphazero.{old}")
            except ImportError:  # a module that tree does not have yet
                pass
        for new, module in old_modules.items():
            room, name = f"agents.alphazero.{new.split('.')[0]}", new.split(".")[1]
            if room not in sys.modules:  # (the old agents.alphazero.selfplay module stands for its room)
                sys.modules[room] = types.ModuleType(room)
            if not hasattr(sys.modules[room], "__path__"):
                sys.modules[room].__path__ = []  # type: ignore[attr-defined]  # a package: its submodules import
            sys.modules[f"agents.alphazero.{new}"] = module
            setattr(sys.modules[room], name, module)


def load(group: str, name: str) -> dict:
    """The values of one option of a config group (configs/<group>/<name>.yaml) of the tree imported."""
    try:
        from envs.config import config_dir, read_config_file
    except ImportError:  # a commit from before envs.config
        from omegaconf import OmegaConf

        import envs

        path = Path(envs.__file__).resolve().parents[1] / "configs" / group / f"{name}.yaml"
        values = OmegaConf.to_container(OmegaConf.load(path))
        return {k: v for k, v in values.items() if k != "defaults"}  # type: ignore[union-attr]
    return read_config_file(config_dir(group) / f"{name}.yaml", group, ValueError)


def _mix_settings(settings: Any, mix: str) -> Any:
    """`settings` with each game's rules drawn from the comma-separated `mix` (this tree only)."""
    from agents.alphazero.selfplay.rules_mix import parse_rules_mix

    return dataclasses.replace(settings, rules_mix=tuple(parse_rules_mix(mix.split(","))))


def _settings(network: dict, mcts: dict, rules: dict, args: argparse.Namespace) -> Any:
    """The workers' settings, in the shape of the tree imported (commits before `SelfPlayConfig` took
    `SelfPlaySettings` with the self-play fields inline)."""
    try:
        from agents.alphazero.selfplay.games import SelfPlayConfig

        try:
            from agents.alphazero.distributed.settings import WorkerSettings
        except ImportError:  # a commit from before agents.alphazero.distributed.settings
            from agents.alphazero.distributed.workers import WorkerSettings  # type: ignore[attr-defined,no-redef]
    except ImportError:
        from agents.alphazero.distributed.workers import SelfPlaySettings  # type: ignore[attr-defined]

        return SelfPlaySettings(
            network=network,
            mcts=mcts,
            rules=rules,
            parallel=args.parallel,
            max_plies=args.max_plies,
            threads=max(args.threads, 0),
        )
    if "Mapping" not in str(dataclasses.fields(WorkerSettings)[0].type):  # the config objects themselves
        from agents.alphazero.net.network import NetworkConfig
        from agents.alphazero.search import MCTSConfig
        from envs import RuleSet

        network, mcts, rules = NetworkConfig.from_dict(network), MCTSConfig.from_dict(mcts), RuleSet.from_dict(rules)
    return WorkerSettings(
        network=network,
        mcts=mcts,
        rules=rules,
        threads=max(args.threads, 0),
        selfplay=SelfPlayConfig(parallel=args.parallel, max_plies=args.max_plies),
    )


def _compile_refills(settings: Any, mcts: Any, rules: Any) -> None:
    """Compile the kernels of refilling a finished game's slot (two short games in one slot), which the
    warm-up round (fewer games than slots) never calls in commits whose GameBatch constructor does not
    reset its games through them (this tree's does): once `_time_numba_calls` has put Python wrappers
    in the modules, a kernel compiled later could not call the ones it names."""
    try:
        from agents.alphazero.search import uniform_evaluator
        from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
    except ImportError:  # a commit from before these modules: nothing compiles lazily there
        return
    selfplay = getattr(settings, "selfplay", None)
    if not isinstance(selfplay, SelfPlayConfig) or "settings" not in inspect.signature(play_games).parameters:
        return
    play_games(
        uniform_evaluator,
        dataclasses.replace(selfplay, parallel=1, max_plies=6),
        mcts=mcts,
        rules=rules,
        num_games=2,
        seed=1,
    )


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One timed self-play round in this process (the tree on sys.path), after a warm-up round."""
    import torch

    from agents.alphazero.net.network import NetworkConfig, build_network, count_parameters
    from envs import RuleSet

    try:
        from agents.alphazero.net.device import resolve_device
        from agents.alphazero.net.runtime import make_evaluator
    except ImportError:  # a commit from before the network's device and runtime modules
        from agents.alphazero.net.network import make_evaluator, resolve_device  # type: ignore[attr-defined,no-redef]
    try:
        from agents.alphazero.distributed.pools import make_selfplay_pool
    except ImportError:  # a commit from before agents.alphazero.distributed.pools
        from agents.alphazero.distributed.workers import make_selfplay_pool  # type: ignore[attr-defined,no-redef]
    try:
        from agents.alphazero.search import MCTSConfig, uniform_evaluator
    except ImportError:  # a commit from before the search package
        from agents.alphazero.mcts import MCTSConfig, uniform_evaluator  # type: ignore[no-redef]

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = resolve_device(args.device)
    model = build_network(NetworkConfig.from_dict(load("model", "small" if args.model == "uniform" else args.model)))
    model = model.to(device)
    mcts = MCTSConfig.from_dict(load("mcts", args.mcts))
    if args.sims:
        mcts = MCTSConfig.from_dict(dict(asdict(mcts), num_simulations=args.sims))
    if args.max_actions:
        mcts = MCTSConfig.from_dict(dict(asdict(mcts), gumbel_max_actions=args.max_actions))
    network = _Clock()
    if args.model == "uniform":  # the search recognises it and runs whole in numba: no network time
        evaluator, args.precision = uniform_evaluator, "-"
    elif "precision" in inspect.signature(make_evaluator).parameters:
        evaluator = network.wrap(make_evaluator(model, device, args.precision))
    else:  # a commit from before inference precisions: fp32, the network as trained
        evaluator = network.wrap(make_evaluator(model, device))
        args.precision = "fp32"
    rules = RuleSet()
    settings = _settings(model.config.to_dict(), asdict(mcts), rules.to_dict(), args)
    if args.rules_mix:
        settings = _mix_settings(settings, args.rules_mix)
    kernels = _Clock(outside=network)
    with make_selfplay_pool(args.backend, args.workers, settings, evaluator=evaluator) as pool:
        pool.play(model.state_dict(), seed=1, num_games=max(2, args.workers))  # compile, start the workers
        _compile_refills(settings, mcts, rules)
        _time_numba_calls(kernels)
        network.wall = network.cpu = 0.0
        t0, c0 = time.perf_counter(), time.process_time()
        data = pool.play(model.state_dict(), seed=0, num_games=args.games)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = data.stats if isinstance(data.stats, dict) else data.stats.untimed()  # a dict in trees before SelfPlayStats
    where = f"{pool.workers} {pool.backend} workers" if pool.workers else f"in process, device {device}"
    return {
        "setup": f"model {args.model} ({0 if args.model == 'uniform' else count_parameters(model)} parameters), "
        f"{mcts.algorithm} {mcts.num_simulations} "
        f"simulations, {args.parallel} games in parallel, {where}, {torch.get_num_threads()} torch threads"
        + (f", rules mix {args.rules_mix}" if args.rules_mix else ""),
        "precision": args.precision,
        "games": s["games"],
        "positions": s["positions"],
        "simulations": s["simulations"],
        "mean_length": s["mean_length"],
        "wall": wall,
        "cpu": cpu,
        "in_process": not pool.workers,
        "network_wall": network.wall,
        "network_cpu": network.cpu,
        "numba_wall": kernels.wall,
        "numba_cpu": kernels.cpu,
    }


def worktree(rev: str) -> Path:
    """A git worktree of `rev` under the temporary directory (made once, kept for its numba cache)."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short=12", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    path = Path(tempfile.gettempdir()) / f"jungle-zero-bench-{sha}"
    if not (path / "agents").is_dir():
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), sha],
            check=True,
            capture_output=True,
            text=True,
        )
    return path


def run_child(tree: Path, argv: list[str]) -> dict[str, Any]:
    """`measure` in a subprocess that imports `agents` and `envs` from `tree`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", *argv],
        cwd=tree,
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def row(label: str, r: dict[str, Any]) -> str:
    pos = r["positions"]
    line = f"| {label} | {pos / r['cpu']:.0f} | {pos / r['wall']:.0f} | {r['mean_length']:.0f} |"
    if not r["in_process"]:
        return line + " - | - | - |"
    shares = []
    for key in ("cpu", "wall"):
        total = r[key]
        net, nb = r[f"network_{key}"] / total, r[f"numba_{key}"] / total
        shares.append(f"{net:.0%} / {nb:.0%} / {1 - net - nb:.0%}")
    return line + f" {shares[0]} | {shares[1]} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--model",
        default="small",
        help="a configs/model/ name, or uniform: no network (zero logits "
        "and values), the search's and the game loop's own speed",
    )
    ap.add_argument("--mcts", default="gumbel", help="a configs/mcts/ name")
    ap.add_argument("--sims", type=int, default=16, help="simulations per move (0: the config's)")
    ap.add_argument(
        "--max-actions",
        type=int,
        default=0,
        help="Gumbel root actions (0: the config's; the default run's preset=cpu searches 32 simulations over 4)",
    )
    ap.add_argument("--games", type=int, default=64)
    ap.add_argument("--parallel", type=int, default=64)
    ap.add_argument("--max-plies", type=int, default=300)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", default="auto", help="inference precision of this tree (fp32, bf16, auto)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch default)")
    ap.add_argument("--workers", type=int, default=0, help="self-play workers (0: in this process)")
    ap.add_argument("--backend", default="process", help="where the workers run (process, ray, ...)")
    ap.add_argument(
        "--before",
        action="append",
        default=None,
        help=f"a commit to measure too, from a git worktree (repeatable; default {ORIGINAL_COMMIT} and "
        f"{PYTHON_LOOP_COMMIT}; 'none': this tree only)",
    )
    ap.add_argument(
        "--before-precision", default=None, help="inference precision of the --before commits (default: --precision)"
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="rounds of all trees, alternating; the table shows each tree's best round, and the ratios "
        "of each round's pair follow",
    )
    ap.add_argument(
        "--rules-mix",
        default="",
        help="comma-separated rule sets (train.rules_mix entries, e.g. default,keeps_rank:2): this tree plays "
        "mixed self-play too, beside its single-rule self-play",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        alias_rooms()
        print(json.dumps(measure(args)))
        return
    common = [
        "--model",
        args.model,
        "--mcts",
        args.mcts,
        "--sims",
        str(args.sims),
        "--max-actions",
        str(args.max_actions),
        "--games",
        str(args.games),
        "--parallel",
        str(args.parallel),
        "--max-plies",
        str(args.max_plies),
        "--device",
        args.device,
        "--threads",
        str(args.threads),
        "--workers",
        str(args.workers),
        "--backend",
        args.backend,
    ]
    befores = [b for b in (args.before or [ORIGINAL_COMMIT, PYTHON_LOOP_COMMIT]) if b != "none"]
    trees = [(f"before: {b}", worktree(b), args.before_precision or args.precision, []) for b in befores]
    if args.rules_mix:
        trees.append(("this tree, rules mix", REPO, args.precision, ["--rules-mix", args.rules_mix]))
    trees.append(("this tree", REPO, args.precision, []))
    best: dict[str, dict[str, Any]] = {}
    rates: dict[str, list[float]] = {label: [] for label, _, _, _ in trees}
    for _ in range(args.rounds):
        for label, tree, precision, extra in trees:
            r = run_child(tree, common + ["--precision", precision, *extra])
            rates[label].append(r["positions"] / r["cpu"])
            if label not in best or r["positions"] / r["cpu"] > best[label]["positions"] / best[label]["cpu"]:
                best[label] = r
    print(best[trees[-1][0]]["setup"])
    print(
        "| path | positions per CPU s | positions per wall s | mean plies | network / numba / Python "
        "(CPU) | network / numba / Python (wall) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for label, _, _, _ in trees:
        print(row(f"{label} [{best[label]['precision']}]", best[label]))
    if args.rules_mix:
        print(best["this tree, rules mix"]["setup"])
    last = best[trees[-1][0]]
    for label, _, _, _ in trees[:-1]:
        first = best[label]
        gain = (last["positions"] / last["cpu"]) / (first["positions"] / first["cpu"])
        wall = (last["positions"] / last["wall"]) / (first["positions"] / first["wall"])
        print(f"this tree / {label}: {gain:.2f}x positions per CPU second, {wall:.2f}x per wall second")
        if args.rounds > 1:  # each round's trees ran minutes apart at most: the ratios of one round are paired
            paired = sorted(a / b for a, b in zip(rates[trees[-1][0]], rates[label]))
            print(
                f"  per round (positions per CPU second, paired): {' '.join(f'{x:.2f}x' for x in paired)}; "
                f"median {statistics.median(paired):.2f}x"
            )


if __name__ == "__main__":
    main()

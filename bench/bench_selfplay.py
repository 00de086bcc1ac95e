"""Self-play speed with the default network on this CPU: games, positions and simulations per second.

    python bench/bench_selfplay.py                         # model small, the default gumbel search
    python bench/bench_selfplay.py --model medium --parallel 128 --mcts puct --sims 64
    python bench/bench_selfplay.py --workers 2 --backend process   # the games split over 2 local processes

An untrained network (random weights) plays, so game lengths are those of
early training. Figures only (no assertions); the first call compiles numba
kernels (and starts the workers), so a warm-up round runs first. With
workers, `--parallel` is the lockstep width inside each worker, and the time
counts sending the weights and merging the parts.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict

import torch

from agents.alphazero.search import MCTSConfig
from agents.alphazero.network import NetworkConfig, build_network, count_parameters, make_evaluator, resolve_device
from agents.alphazero.selfplay import SelfPlayConfig
from agents.alphazero.workers import BACKENDS, WorkerSettings, make_selfplay_pool
from envs import RuleSet
from envs.config import config_dir, read_config_file


def load(group: str, name: str) -> dict:
    """The values of one option of a config group (configs/<group>/<name>.yaml)."""
    return read_config_file(config_dir(group) / f"{name}.yaml", group, ValueError)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="small")
    ap.add_argument("--mcts", default="gumbel", help="a configs/mcts/ name")
    ap.add_argument("--sims", type=int, default=0, help="simulations per move (0: the config's)")
    ap.add_argument("--games", type=int, default=64)
    ap.add_argument("--parallel", type=int, default=64)
    ap.add_argument("--max-plies", type=int, default=300)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch default)")
    ap.add_argument("--workers", type=int, default=0, help="self-play workers (0: in this process)")
    ap.add_argument("--backend", default="process", choices=BACKENDS, help="where the workers run")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = resolve_device(args.device)
    model = build_network(NetworkConfig.from_dict(load("model", args.model))).to(device)
    mcts = MCTSConfig.from_dict(load("mcts", args.mcts))
    if args.sims:
        mcts = MCTSConfig.from_dict(dict(mcts.__dict__, num_simulations=args.sims))
    evaluator = make_evaluator(model, device, "auto")
    rules = RuleSet()
    settings = WorkerSettings(network=model.config.to_dict(), mcts=asdict(mcts), rules=rules.to_dict(),
                              selfplay=SelfPlayConfig(parallel=args.parallel, max_plies=args.max_plies),
                              threads=max(args.threads, 0))
    with make_selfplay_pool(args.backend, args.workers, settings, evaluator=evaluator) as pool:
        pool.play(model.state_dict(), seed=1, num_games=max(2, args.workers))  # compile, start the workers
        t0 = time.perf_counter()
        data = pool.play(model.state_dict(), seed=0, num_games=args.games)
        dt = time.perf_counter() - t0
    s = data.stats
    where = f"{pool.workers} {pool.backend} workers" if pool.workers else f"in process, device {device}"
    print(f"model {args.model} ({count_parameters(model)} parameters), {mcts.algorithm} {mcts.num_simulations} "
          f"simulations, {args.parallel} games in parallel, {where}, {torch.get_num_threads()} torch threads")
    print(f"  {s['games']} games, {s['positions']} positions, mean length {s['mean_length']:.0f} plies, {dt:.1f} s")
    print(f"  {s['games'] / dt:.2f} games/s  {s['positions'] / dt:.0f} positions/s  {s['simulations'] / dt:.0f} simulations/s")


if __name__ == "__main__":
    main()

"""Self-play speed with the default network on this CPU: games, positions and simulations per second.

    python bench/bench_selfplay.py                         # model small, the default gumbel search
    python bench/bench_selfplay.py --model medium --parallel 128 --mcts puct --sims 64

An untrained network (random weights) plays, so game lengths are those of
early training. Figures only (no assertions); the first call compiles numba
kernels, so a warm-up round runs first.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

from agents.mcts import MCTSConfig
from agents.network import NetworkConfig, build_network, count_parameters, make_evaluator, resolve_device
from agents.selfplay import play_games
from envs import RuleSet

ROOT = Path(__file__).resolve().parents[1]


def load(group: str, name: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(ROOT / "configs" / group / f"{name}.yaml"))  # type: ignore[return-value]


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
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = resolve_device(args.device)
    model = build_network(NetworkConfig.from_dict(load("model", args.model))).to(device)
    mcts = MCTSConfig.from_dict(load("mcts", args.mcts))
    if args.sims:
        mcts = MCTSConfig.from_dict(dict(mcts.__dict__, num_simulations=args.sims))
    evaluator = make_evaluator(model, device, amp=device.type == "cuda")
    rules = RuleSet()
    play_games(evaluator, num_games=2, parallel=2, mcts=mcts, rules=rules, seed=1, max_plies=20)  # compile
    t0 = time.perf_counter()
    data = play_games(evaluator, num_games=args.games, parallel=args.parallel, mcts=mcts, rules=rules, seed=0,
                      max_plies=args.max_plies)
    dt = time.perf_counter() - t0
    s = data.stats
    print(f"model {args.model} ({count_parameters(model)} parameters), {mcts.algorithm} {mcts.num_simulations} "
          f"simulations, {args.parallel} games in parallel, device {device}, {torch.get_num_threads()} torch threads")
    print(f"  {s['games']} games, {s['positions']} positions, mean length {s['mean_length']:.0f} plies, {dt:.1f} s")
    print(f"  {s['games'] / dt:.2f} games/s  {s['positions'] / dt:.0f} positions/s  {s['simulations'] / dt:.0f} simulations/s")


if __name__ == "__main__":
    main()

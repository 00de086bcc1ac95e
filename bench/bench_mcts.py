"""Speed of the batched tree search and of self-play (prints figures; not a test).

    python bench/bench_mcts.py                  # search alone + self-play, uniform evaluator
    python bench/bench_mcts.py --quick          # a few seconds
    python bench/bench_mcts.py --net            # also self-play with the default network on this CPU

"Search alone" runs the whole search (selection, the rules kernels for
expansion and terminal checks, backup) with the uniform evaluator, whose path
never leaves numba: simulations per CPU second of the (single-threaded)
process, i.e. per core, robust to other load on the machine. Positions are those of
a few random plies from the start, so that trees differ between games.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agents.alphazero.search import BatchedMCTS, Evaluator, MCTSConfig, make_policy, uniform_evaluator  # noqa: E402
from agents.alphazero.selfplay.games import SelfPlayConfig, play_games  # noqa: E402
from envs import RuleSet  # noqa: E402
from envs.batch import GameBatch  # noqa: E402


def random_openings(games: GameBatch, plies: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for i in range(games.n):
        for _ in range(int(rng.integers(0, plies + 1))):
            legal = np.flatnonzero(games.masks(i)[0])
            if games.done[i] or len(legal) == 0:
                break
            games.play(i, int(rng.choice(legal)))


def bench_search(algorithm: str, n_games: int, sims: int, repeats: int) -> float:
    games = GameBatch(n_games, RuleSet())
    flags = games.flags
    random_openings(games, 10, seed=1)
    cfg = MCTSConfig(algorithm=algorithm, num_simulations=sims, reuse_tree=False)
    mcts = BatchedMCTS(uniform_evaluator, make_policy(cfg), flags, seed=0)
    mcts.search(games, num_simulations=2)  # compile / load the numba cache
    t, c = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        mcts.search(games)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    total = repeats * int((~games.done).sum()) * sims
    rate = total / cpu
    print(
        f"search alone  {algorithm:6s} {n_games:4d} games x {sims:4d} sims x {repeats} searches: "
        f"{rate / 1e3:8.1f} k simulations per CPU second ({total / wall / 1e3:.1f} k/s wall)"
    )
    return rate


def zero_network(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Uniform priors and zero values through the Python evaluator path (what a network pays besides itself)."""
    return np.zeros((len(obs), 252), np.float32), np.zeros(len(obs), np.float32)


def bench_evaluator_path(algorithm: str, n_games: int, sims: int) -> float:
    games = GameBatch(n_games, RuleSet())
    flags = games.flags
    random_openings(games, 10, seed=1)
    cfg = MCTSConfig(algorithm=algorithm, num_simulations=sims, reuse_tree=False)
    mcts = BatchedMCTS(zero_network, make_policy(cfg), flags, seed=0)
    mcts.search(games, num_simulations=2)
    c = time.process_time()
    mcts.search(games)
    cpu = time.process_time() - c
    rate = int((~games.done).sum()) * sims / cpu
    print(
        f"search + obs  {algorithm:6s} {n_games:4d} games x {sims:4d} sims, Python evaluator returning zeros: "
        f"{rate / 1e3:8.1f} k simulations per CPU second"
    )
    return rate


def bench_selfplay(
    algorithm: str,
    parallel: int,
    sims: int,
    games: int,
    evaluator: Evaluator = uniform_evaluator,
    label: str = "uniform",
    max_plies: int = 400,
) -> float:
    cfg = MCTSConfig(algorithm=algorithm, num_simulations=sims)
    play_games(
        evaluator,
        SelfPlayConfig(parallel=2, max_plies=20),
        mcts=MCTSConfig(algorithm=algorithm, num_simulations=2),
        rules=RuleSet(),
        num_games=2,
        seed=0,
    )
    c = time.process_time()
    data = play_games(
        evaluator,
        SelfPlayConfig(parallel=parallel, max_plies=max_plies),
        mcts=cfg,
        rules=RuleSet(),
        num_games=games,
        seed=0,
    )
    cpu = time.process_time() - c
    s = data.stats
    print(
        f"self-play     {algorithm:6s} {label:8s} {parallel:4d} parallel, {sims:3d} sims: "
        f"{s.positions / cpu:9.1f} positions per CPU second ({s.positions_per_s:.1f}/s wall), "
        f"{s.simulations / cpu / 1e3:7.1f} k sims per CPU second, {s.games} games, "
        f"mean length {s.mean_length:.0f} plies"
    )
    return float(s.positions / cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller runs")
    ap.add_argument("--net", action="store_true", help="also self-play with the default network (CPU)")
    args = ap.parse_args()
    q = args.quick
    for algorithm in ("puct", "gumbel"):
        bench_search(algorithm, 64, 64 if q else 200, 1 if q else 3)
    for algorithm in ("puct", "gumbel"):
        bench_evaluator_path(algorithm, 256, 32 if q else 64)
    for algorithm in ("puct", "gumbel"):
        bench_selfplay(algorithm, 32, 32, 16 if q else 64)
    if args.net:
        import torch

        from agents.alphazero.net.network import NetworkConfig, build_network
        from agents.alphazero.net.runtime import make_evaluator

        torch.set_num_threads(1)  # per core, like the search figures
        model = build_network(NetworkConfig()).eval()
        ev = make_evaluator(model, "cpu")
        # Short games (cut at 40 plies): the rate is the network's, the length does not matter.
        bench_selfplay("gumbel", 64, 32, 64, evaluator=ev, label="net", max_plies=10 if q else 40)


if __name__ == "__main__":
    main()

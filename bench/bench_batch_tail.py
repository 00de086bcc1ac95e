"""How small the network's batches get at the end of a self-play iteration.

    python bench/bench_batch_tail.py [games=256] [simulations=32] [checkpoint=shipped:default-180] [seed=0]

All the iteration's games start at once (as in `train=gpu`, where each process's games all fit in its
slots) and play to their end in this process; every evaluator call's batch size is recorded. It prints
the mean batch over all calls and over the last tenth of the calls (`batcher.tail_mean_batch`, what
the server logs as `perf/server_tail_mean_batch`), the share of the calls and of the positions that
run below a quarter of the first tenth's mean batch, and the game lengths. The shape depends on how long
the games are, not on the device: on a GPU, whose call costs about the same at 100 positions as at
10 000, the calls below a quarter of the full batch are time the device runs mostly idle.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np

from agents.alphazero.distributed.batcher import tail_mean_batch
from agents.alphazero.net.checkpoint import load_model
from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.net.shipped import resolve
from agents.alphazero.search import MCTSConfig
from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
from envs.rules import RuleSet


def main(argv: list[str]) -> int:
    args = {"games": "256", "simulations": "32", "checkpoint": "shipped:default-180", "seed": "0"}
    for a in argv:
        key, _, value = a.partition("=")
        if key not in args or not value:
            print(f"error: unknown argument {a!r}: use {' '.join(f'{k}=...' for k in args)}", file=sys.stderr)
            return 2
        args[key] = value
    for key in ("games", "simulations", "seed"):
        if not args[key].isdigit() or (key != "seed" and int(args[key]) < 1):
            print(f"error: {key}={args[key]!r} must be an integer of at least {int(key != 'seed')}", file=sys.stderr)
            return 2
    games, simulations, seed = int(args["games"]), int(args["simulations"]), int(args["seed"])
    path = resolve(args["checkpoint"]) if args["checkpoint"].startswith("shipped:") else args["checkpoint"]
    model, _ = load_model(path, rules=RuleSet())
    evaluate = make_evaluator(model.eval(), "cpu", "auto")
    sizes: list[int] = []

    def counted(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sizes.append(len(obs))
        return evaluate(obs, mask)

    settings = replace(SelfPlayConfig(), parallel=games, max_plies=300)  # train=gpu's cap
    t0 = time.perf_counter()
    data = play_games(
        counted,
        settings,
        mcts=MCTSConfig(algorithm="gumbel", num_simulations=simulations),
        rules=RuleSet(),
        num_games=games,
        seed=seed,
    )
    seconds = time.perf_counter() - t0
    b = np.asarray(sizes)
    full = b[: max(1, len(b) // 10)].mean()  # the first tenth: every game in play
    small = b < full / 4
    lengths = np.asarray([len(r.moves) for r in data.records])
    print(f"{games} games at once, {simulations} simulations, {args['checkpoint']}: {len(b)} calls in {seconds:.0f} s")
    print(f"  batch: mean {b.mean():.0f}, first tenth of the calls {full:.0f}, last tenth {tail_mean_batch(sizes):.0f}")
    print(
        f"  calls below a quarter of the first tenth's: {small.mean():.0%} of the calls, "
        f"{b[small].sum() / b.sum():.0%} of the positions"
    )
    for q in (0.5, 0.9, 0.99):
        i = int(q * len(b))
        print(f"  after {q:.0%} of the calls the batch is {b[min(i, len(b) - 1)]}")
    print(
        f"  game length: mean {lengths.mean():.0f}, median {np.median(lengths):.0f}, "
        f"90th percentile {np.percentile(lengths, 90):.0f}, longest {lengths.max()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

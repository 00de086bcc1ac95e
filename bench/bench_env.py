"""Gymnasium env speed: steps per second in self-play and versus `random`.

    python bench/bench_env.py [--steps N]

The agent draws uniformly among the legal actions of `info["action_mask"]`
(with a numpy generator, as a masked random policy would), so the figure is
the env's own cost plus one masked draw per step. Prints one line per mode.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from envs import JungleEnv


def run(env: JungleEnv, steps: int, seed: int = 0) -> tuple[float, int]:
    """Play `steps` env steps (resetting at episode ends); return (seconds, episodes)."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    episodes = 0
    t0 = time.perf_counter()
    for _ in range(steps):
        legal = np.flatnonzero(info["action_mask"])
        action = legal[rng.integers(len(legal))]
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            episodes += 1
            obs, info = env.reset()
    return time.perf_counter() - t0, episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000, help="env steps per mode")
    args = parser.parse_args()

    t0 = time.perf_counter()
    warm = JungleEnv()
    run(warm, 10)  # compiles (or loads the numba cache)
    print(f"first call (compile or cache load): {time.perf_counter() - t0:.2f} s")

    for label, env, steps in (
        ("self-play", JungleEnv(), args.steps),
        ("vs random", JungleEnv(opponent="random", agent_side="random"), args.steps // 4),
    ):
        seconds, episodes = run(env, steps)
        print(f"{label:>10}: {steps / seconds:10,.0f} steps/s  ({steps} steps, {episodes} episodes, {seconds:.2f} s)")


if __name__ == "__main__":
    main()

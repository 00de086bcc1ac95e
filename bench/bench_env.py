"""Gymnasium env speed: steps per second in self-play and versus `random`, single and batched.

    python bench/bench_env.py [--steps N] [--sizes 1,64,512,4096]

The agent draws uniformly among the legal actions of `info["action_mask"]`
(with a numpy generator, as a masked random policy would), so the figure is
the env's own cost plus one masked draw per step. Prints one line per mode.
The vector env (`envs.vector.JungleVectorEnv`) is then timed at each N: one
step is N env steps, the actions drawn by ``action_space.sample()`` (one
legal action per game), observations and masks filled for every game,
with ``copy=True`` (fresh arrays each step, Gymnasium's default) and
``copy=False`` (the env's own buffers).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from envs import JungleEnv
from envs.vector import JungleVectorEnv


def run(env: JungleEnv, steps: int, seed: int = 0) -> tuple[float, float, int]:
    """Play `steps` env steps (resetting at episode ends); return (wall seconds, CPU seconds, episodes)."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    episodes = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        legal = np.flatnonzero(info["action_mask"])
        action = legal[rng.integers(len(legal))]
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            episodes += 1
            obs, info = env.reset()
    return time.perf_counter() - t0, time.process_time() - c0, episodes


def run_vector(venv: JungleVectorEnv, env_steps: int, seed: int = 0) -> tuple[float, float, int]:
    """Step `venv` until about `env_steps` env steps are done; return (wall seconds, CPU seconds, env steps)."""
    venv.reset(seed=seed)
    venv.action_space.seed(seed)
    for _ in range(3):  # warm up (compiles or loads the numba cache)
        venv.step(venv.action_space.sample())
    calls = max(20, env_steps // venv.num_envs)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        venv.step(venv.action_space.sample())
    return time.perf_counter() - t0, time.process_time() - c0, calls * venv.num_envs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000, help="env steps per mode")
    parser.add_argument("--sizes", default="1,64,512,4096", help="the vector env's N values")
    parser.add_argument("--vector-steps", type=int, default=2_000_000, help="env steps per vector-env measurement")
    args = parser.parse_args()

    t0 = time.perf_counter()
    warm = JungleEnv()
    run(warm, 10)  # compiles (or loads the numba cache)
    print(f"first call (compile or cache load): {time.perf_counter() - t0:.2f} s")

    for label, env, steps in (
        ("self-play", JungleEnv(), args.steps),
        ("vs random", JungleEnv(opponent="random", agent_side="random"), args.steps // 4),
    ):
        seconds, cpu, episodes = run(env, steps)
        print(
            f"{label:>10}: {steps / seconds:10,.0f} steps/s [{steps / cpu:10,.0f} per CPU second]  "
            f"({steps} steps, {episodes} episodes, {seconds:.2f} s)"
        )

    print("vector env (JungleVectorEnv), env steps/s, wall clock [per CPU second]:")
    for label, opponent, side in (("self-play", None, "red"), ("vs random", "random", "random")):
        for n in (int(x) for x in args.sizes.split(",")):
            rates = []
            for copy in (True, False):
                venv = JungleVectorEnv(n, opponent=opponent, agent_side=side, copy=copy)
                wall, cpu, done = run_vector(
                    venv, args.vector_steps if n >= 64 else args.vector_steps // 20
                )  # N = 1 is slow
                rates.append(f"{done / wall:10,.0f} [{done / cpu:10,.0f}] (copy={copy})")
            print(f"{label:>10}, N = {n:>5}: {'  '.join(rates)}")


if __name__ == "__main__":
    main()

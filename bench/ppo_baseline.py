"""MaskablePPO (sb3-contrib) on `Jungle-v0`: where a generic RL algorithm stands on this game.

    pip install -e '.[baselines]'
    python bench/ppo_baseline.py                          # tens of minutes on a CPU (docs/rl-interfaces.md)
    python bench/ppo_baseline.py --steps 1000000 --out runs/ppo-long
    tensorboard --logdir runs/ppo

Two phases, one network: MaskablePPO (an MLP over the flattened
``[32, 9, 7]`` planes, invalid actions masked through `JungleEnv.action_masks`)
learns against ``random``, then goes on against ``alphabeta:level=beginner``;
the agent's colour is drawn at every episode (``agent_side="random"``) and the
reward is the game's, +1/-1/0 at the end. After each phase the deterministic
policy (masked argmax) plays a colour-swapped evaluation against ``random``,
``alphabeta:level=beginner`` and ``alphabeta:depth=1``: pairs of games, one
as Red and one as Blue, each pair from its own 4-ply random opening (the
tournaments' `random_openings`), so that two deterministic players still
meet in different games. TensorBoard
(``<out>/tb``) gets SB3's ``rollout/*`` and ``train/*`` curves plus
``eval/score_<opponent>``; ``<out>/results.json`` holds every evaluation
(W-D-L, score, wall clock), and the table is printed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_util import make_vec_env

import envs  # noqa: F401  (registers Jungle-v0)
from agents.arena.tournament import random_openings
from envs import RuleSet

PHASES = ("random", "alphabeta:level=beginner")
EVAL_OPPONENTS = ("random", "alphabeta:level=beginner", "alphabeta:depth=1")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200_000, help="agent steps per phase (one per agent move)")
    p.add_argument("--envs", type=int, default=8, help="Jungle-v0 copies stepped together (DummyVecEnv)")
    p.add_argument("--n-steps", type=int, default=256, help="PPO rollout length per env")
    p.add_argument("--eval-games", type=int, default=40, help="evaluation games per opponent (colour-swapped pairs)")
    p.add_argument("--max-plies", type=int, default=400, help="Jungle-v0 ply cap of the training games")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--out", type=Path, default=Path("runs/ppo"))
    return p.parse_args()


def make_env(opponent: str, n_envs: int, max_plies: int, seed: int) -> Any:
    """An SB3 VecEnv of `n_envs` Jungle-v0 against `opponent`, the agent's colour drawn per episode."""
    return make_vec_env(
        "Jungle-v0",
        n_envs=n_envs,
        seed=seed,
        env_kwargs={"opponent": opponent, "agent_side": "random", "max_plies": max_plies},
    )


def evaluate(model: MaskablePPO, opponent: str, games: int, seed: int) -> dict[str, Any]:
    """Play `games` (rounded up to pairs) with the deterministic policy: each opening once as Red, once as Blue.

    Returns W-D-L in all and by the policy's colour, and the score."""
    openings = random_openings((games + 1) // 2, plies=4, seed=seed)
    wdl = {"red": [0, 0, 0], "blue": [0, 0, 0]}
    for g in range(2 * len(openings)):
        side = ("red", "blue")[g % 2]
        start = openings[g // 2].board(RuleSet()).jfen()
        env = gym.make("Jungle-v0", opponent=opponent, agent_side=side, start_jfen=start)
        obs, info = env.reset(seed=seed + g // 2)
        done = False
        while not done:
            action, _ = model.predict(obs, action_masks=info["action_mask"].astype(bool), deterministic=True)
            obs, reward, terminated, truncated, info = env.step(int(action))
            done = terminated or truncated
        wdl[side][0 if reward > 0 else 2 if reward < 0 else 1] += 1
    wins, draws, losses = (wdl["red"][k] + wdl["blue"][k] for k in range(3))
    return {
        "opponent": opponent,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "score": (wins + 0.5 * draws) / (wins + draws + losses),
        "as_red": wdl["red"],
        "as_blue": wdl["blue"],
    }


def main() -> None:
    args = parse_args()
    # seed and build
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    env = make_env(PHASES[0], args.envs, args.max_plies, args.seed)
    model = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=args.n_steps,
        batch_size=256,
        n_epochs=4,
        gamma=0.995,
        ent_coef=0.01,
        learning_rate=3e-4,
        policy_kwargs={"net_arch": [256, 256]},
        tensorboard_log=str(args.out / "tb"),
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    results: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    train_seconds = 0.0
    for phase, opponent in enumerate(PHASES):
        # learn against this phase's opponent
        if phase > 0:
            model.set_env(make_env(opponent, args.envs, args.max_plies, args.seed + phase))
        t_learn = time.perf_counter()
        model.learn(args.steps, reset_num_timesteps=phase == 0, tb_log_name="maskable_ppo")
        train_seconds += time.perf_counter() - t_learn
        # evaluate, colour-swapped
        for opp in EVAL_OPPONENTS:
            r = evaluate(model, opp, args.eval_games, seed=10_000 * (phase + 1))
            r.update(phase=f"vs {opponent}", steps=int(model.num_timesteps), train_minutes=train_seconds / 60)
            results.append(r)
            model.logger.record(f"eval/score_{opp.replace(':', '_').replace('=', '_')}", r["score"])
            print(
                f"{r['phase']:>30} after {r['steps']:>8} steps ({r['train_minutes']:5.1f} min training): "
                f"vs {opp:<26} {r['wins']}-{r['draws']}-{r['losses']} score {r['score']:.2f} "
                f"(as Red {'-'.join(map(str, r['as_red']))}, as Blue {'-'.join(map(str, r['as_blue']))})",
                flush=True,
            )
        model.logger.dump(model.num_timesteps)
        # checkpoint
        model.save(args.out / f"maskable_ppo_phase{phase + 1}.zip")
    (args.out / "results.json").write_text(
        json.dumps(
            {
                "args": {k: str(v) for k, v in vars(args).items()},
                "wall_minutes": (time.perf_counter() - t0) / 60,
                "results": results,
            },
            indent=2,
        )
    )
    print(f"total {(time.perf_counter() - t0) / 60:.1f} min; results in {args.out / 'results.json'}")


if __name__ == "__main__":
    main()

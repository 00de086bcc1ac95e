"""Network inference speed: positions/s by batch size, on CPU (and CUDA when present).

    python bench/bench_network.py                 # model=small, CPU (+ CUDA if available)
    python bench/bench_network.py --model large --batches 64 256 1024 4096

Figures only (no assertions). The evaluator path is the one self-play uses:
numpy in, masked float32 logits and values out.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf

from agents.alphazero.network import NetworkConfig, build_network, count_parameters, make_evaluator
from envs.encoding import N_ACTIONS, OBS_SHAPE

ROOT = Path(__file__).resolve().parents[1]


def bench(model: torch.nn.Module, device: torch.device, amp: bool, batch: int, seconds: float) -> float:
    ev = make_evaluator(model, device, amp)
    rng = np.random.default_rng(0)
    obs = (rng.random((batch,) + OBS_SHAPE) < 0.1).astype(np.float32)
    mask = rng.random((batch, N_ACTIONS)) < 0.1
    ev(obs, mask)  # warm-up
    ev(obs, mask)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        ev(obs, mask)
        n += batch
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="small", help="a configs/model/ name")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32, 64, 128, 256])
    ap.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch default)")
    ap.add_argument("--cpu-only", action="store_true")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = NetworkConfig.from_dict(OmegaConf.to_container(OmegaConf.load(ROOT / "configs" / "model" / f"{args.model}.yaml")))
    devices = [torch.device("cpu")]
    if torch.cuda.is_available() and not args.cpu_only:
        devices.append(torch.device("cuda"))
    for device in devices:
        model = build_network(cfg).to(device)
        name = torch.cuda.get_device_name() if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
        print(f"model {args.model} ({count_parameters(model)} parameters) on {name}")
        for amp in ([False, True] if device.type == "cuda" else [False]):
            for b in args.batches:
                rate = bench(model, device, amp, b, args.seconds)
                print(f"  batch {b:5d}{' amp' if amp else ''}: {rate:10.0f} positions/s")


if __name__ == "__main__":
    main()

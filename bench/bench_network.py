"""Network inference speed: positions/s by batch size for every inference path, side by side in one run.

    python bench/bench_network.py                        # model=small, CPU, every path
    python bench/bench_network.py --model large --batches 64 256 1024 4096
    python bench/bench_network.py --paths fp32 auto      # a subset

Paths (the network's forward pass alone, numpy in and out, on the same weights and inputs):
  fp32      the model as trained (batch norm unfused), float32, inference mode
  fused     batch norm folded into the convolutions (`fuse_for_inference`), float32
  bf16      the fused copy in bfloat16
  auto      fused in the dtype `inference_dtype(precision="auto")` picks for the batch:
            what self-play and evaluation run (`make_evaluator(precision="auto")`)
  chlast    the fused fp32 copy in channels-last memory format
  kernels   the fused fp32 copy through oneDNN's fused convolutions (`FusedCPUForward`): what
            `make_evaluator(precision="auto")` runs in float32 on a CPU (CPU only)
  compile   the fused fp32 copy through `torch.compile` (inductor; compile time excluded)
  onnxrt    the fused copy exported to ONNX, run by ONNX Runtime (the `onnx` extra), fp32

Rates are positions per CPU second of this process (per wall second on CUDA),
so a busy machine slows them less than wall clock would. Figures only, no
assertions; `--seconds` sets the time per measurement.
"""

from __future__ import annotations

import argparse
import io
import time
from functools import partial
from typing import Callable, Optional

import numpy as np
import torch

from agents.alphazero.net.device import inference_dtype
from agents.alphazero.net.network import NetworkConfig, build_network, count_parameters
from agents.alphazero.net.runtime import FusedCPUForward, for_inference, fuse_for_inference
from envs.config import config_dir, read_config_file
from envs.encoding import N_ACTIONS, OBS_SHAPE

PATHS = ("fp32", "fused", "bf16", "auto", "chlast", "kernels", "compile", "onnxrt")
Runner = Callable[[np.ndarray, np.ndarray], object]


def _torch_runner(
    net: torch.nn.Module,
    device: torch.device,
    channels_last: bool = False,
    dtype: Callable[[int], torch.dtype] = lambda n: torch.float32,
) -> Runner:
    def run(obs: np.ndarray, mask: np.ndarray) -> object:
        with torch.inference_mode():
            x = torch.from_numpy(obs).to(device, dtype(len(obs)))
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            logits, value = net(x)
            return logits.float().cpu().numpy(), value.float().cpu().numpy()

    return run


def _kernels_runner(kernels: FusedCPUForward, obs: np.ndarray, mask: np.ndarray) -> object:
    with torch.inference_mode():
        logits, value = kernels.from_planes(obs)
        return logits.float().numpy(), value.float().numpy()


def _onnx_runner(net: torch.nn.Module) -> Optional[Runner]:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    buf = io.BytesIO()
    # dynamo=False: the TorchScript exporter, which needs only the `onnx` package.
    torch.onnx.export(
        net.cpu(),
        (torch.zeros((1,) + OBS_SHAPE),),
        buf,
        input_names=["obs"],
        output_names=["logits", "value"],
        dynamic_axes={"obs": {0: "batch"}},
        dynamo=False,
    )
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(torch.get_num_threads(), 1)
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(buf.getvalue(), options, providers=["CPUExecutionProvider"])
    return lambda obs, mask: session.run(None, {"obs": obs})


def make_runners(model: torch.nn.Module, device: torch.device, paths: list[str]) -> dict[str, Runner]:
    """Each requested path as a callable over (obs, mask); paths that cannot run here are left out (with a note)."""
    model = model.eval()
    fused = fuse_for_inference(model).to(device)
    runners: dict[str, Runner] = {}
    for path in paths:
        if path == "fp32":
            runners[path] = _torch_runner(model, device)
        elif path == "fused":
            runners[path] = _torch_runner(fused, device)
        elif path == "bf16":
            runners[path] = _torch_runner(
                fuse_for_inference(model).to(device, torch.bfloat16), device, dtype=lambda n: torch.bfloat16
            )
        elif path == "auto":
            copies = {dt: fuse_for_inference(model).to(device, dt) for dt in (torch.float32, torch.bfloat16)}
            pick = partial(inference_dtype, device, "auto")
            runners[path] = lambda obs, mask, copies=copies, pick=pick: _torch_runner(
                copies[pick(len(obs))], device, dtype=pick
            )(obs, mask)
        elif path == "chlast":
            runners[path] = _torch_runner(
                fuse_for_inference(model).to(device, memory_format=torch.channels_last), device, channels_last=True
            )
        elif path == "kernels":
            if device.type != "cpu":
                continue
            kernels = for_inference(fuse_for_inference(model), device, torch.float32, fast_fp32=True)
            if not isinstance(kernels, FusedCPUForward):
                print("  (kernels unavailable: this torch has no oneDNN fused convolutions)")
                continue
            runners[path] = partial(_kernels_runner, kernels)
        elif path == "compile":
            try:
                compiled = torch.compile(fuse_for_inference(model).to(device), dynamic=False)
                runners[path] = _torch_runner(compiled, device)  # type: ignore[arg-type]
            except Exception as e:  # noqa: BLE001 - a missing compiler toolchain is a note, not a failure
                print(f"  (compile unavailable: {type(e).__name__}: {e})")
        elif path == "onnxrt":
            if device.type != "cpu":
                continue
            runner = _onnx_runner(fuse_for_inference(model))
            if runner is None:
                print("  (onnxrt unavailable: pip install '.[onnx]')")
            else:
                runners[path] = runner
        else:
            raise SystemExit(f"unknown path {path!r}; known: {', '.join(PATHS)}")
    return runners


def rate(run: Runner, obs: np.ndarray, mask: np.ndarray, seconds: float, device: torch.device) -> float:
    """Positions per CPU second (per wall second on CUDA) of `run` on this batch."""
    for _ in range(3):  # warm-up (and compilation for this shape)
        run(obs, mask)
    clock = time.perf_counter if device.type == "cuda" else time.process_time
    n, t0 = 0, clock()
    while clock() - t0 < seconds:
        run(obs, mask)
        n += len(obs)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return n / (clock() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="small", help="a configs/model/ name")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 16, 64, 256])
    ap.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS)
    ap.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch default)")
    ap.add_argument("--cpu-only", action="store_true")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = NetworkConfig.from_dict(read_config_file(config_dir("model") / f"{args.model}.yaml", "model", ValueError))
    devices = [torch.device("cpu")]
    if torch.cuda.is_available() and not args.cpu_only:
        devices.append(torch.device("cuda"))
    rng = np.random.default_rng(0)
    for device in devices:
        torch.manual_seed(0)
        model = build_network(cfg).to(device)
        name = torch.cuda.get_device_name() if device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
        print(
            f"model {args.model} ({count_parameters(model)} parameters) on {name}; positions per "
            f"{'wall' if device.type == 'cuda' else 'CPU'} second"
        )
        runners = make_runners(model, device, args.paths)
        print(f"  {'batch':>6} " + " ".join(f"{p:>9}" for p in runners))
        for b in args.batches:
            obs = (rng.random((b,) + OBS_SHAPE) < 0.1).astype(np.float32)
            mask = rng.random((b, N_ACTIONS)) < 0.1
            rates = [rate(run, obs, mask, args.seconds, device) for run in runners.values()]
            print(f"  {b:6d} " + " ".join(f"{r:9.0f}" for r in rates))


if __name__ == "__main__":
    main()

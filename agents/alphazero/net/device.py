"""Where and in what precision the network runs: the torch device, CPU threads, the inference and autocast dtypes."""

from __future__ import annotations

import functools

import torch

from envs.config import shown

MAX_THREADS = 1024
"""The most torch CPU threads a run or a player asks for (far more makes torch's thread pool abort)."""


def resolve_device(device: str) -> torch.device:
    """`auto` -> CUDA when present, else CPU; `cpu`, `cuda`, `cuda:N` or `mps` when this machine has it.

    ValueError naming the device and why it cannot be used (checked before any work: torch itself
    would fail at the first tensor moved there)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"unknown device {shown(device)}: use auto, cpu, cuda, cuda:N or mps") from None
    if d.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA device is visible"
            raise ValueError(f"device={device!r} is not available: {why}")
        if d.index is not None and d.index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} is not available: this machine has "
                f"{torch.cuda.device_count()} CUDA device(s), cuda:0 to cuda:{torch.cuda.device_count() - 1}"
            )
    elif d.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"device={device!r} is not available: this machine has no MPS device")
    elif d.type != "cpu":
        raise ValueError(f"unknown device {shown(device)}: use auto, cpu, cuda, cuda:N or mps")
    return d


PRECISIONS = ("fp32", "bf16", "auto")
"""Inference precisions of `make_evaluator`."""
BF16_MIN_BATCH = 16
"""Smallest batch at which bf16 pays on a CPU with native bf16 (the checkpoint player's default
precision follows it through its leaf batch): below it bf16 is slower than fp32
(bench/bench_network.py; docs/performance.md)."""


CUDA_BF16_CAPABILITY = (8, 0)
"""The first CUDA compute capability (Ampere) whose tensor cores compute bf16: torch.cuda.is_bf16_supported()
also says yes on older GPUs, which emulate it slowly."""


def native_bf16(device: torch.device) -> bool:
    """Whether `device` computes bf16 natively (CUDA of compute capability 8.0 or more, CPUs with AVX512-BF16
    or AMX); emulated bf16 does not count."""
    if device.type == "cuda":
        return tuple(torch.cuda.get_device_capability(device)) >= CUDA_BF16_CAPABILITY
    if device.type == "cpu":
        return _cpu_native_bf16()
    return False


@functools.cache
def _cpu_native_bf16() -> bool:
    """Whether this CPU has AVX512-BF16 or AMX (asked once: every evaluator call wants to know)."""
    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in checks)


def autocast_dtype(device: torch.device, amp: bool) -> torch.dtype | None:
    """The learner's mixed-precision dtype on `device`, or None for float32.

    CUDA: bf16 where supported, else fp16 (with a grad scaler). CPU: bf16 where
    the CPU computes it natively (faster than fp32 there: docs/performance.md),
    else float32. Master weights stay float32 either way.
    """
    if not amp:
        return None
    if device.type == "cuda":
        return torch.bfloat16 if native_bf16(device) else torch.float16
    if device.type == "cpu" and native_bf16(device):
        return torch.bfloat16
    return None


def inference_dtype(device: torch.device, precision: str, batch: int) -> torch.dtype:
    """The dtype a batch of `batch` positions is evaluated in on `device` under `precision`.

    ``fp32`` always float32; ``bf16`` always bfloat16 (float16 on a GPU without
    native bf16); ``auto``: bf16 where the device computes it natively (fp16 on a
    GPU without), else fp32. The choice does not depend on `batch`, so a game's
    moves do not depend on how many games share its network calls (self-play
    splits its games over any number of workers and gets the same games).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"inference precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    if precision == "fp32" or (precision == "auto" and device.type not in ("cuda", "cpu")):
        return torch.float32
    if device.type == "cuda":
        return torch.bfloat16 if native_bf16(device) else torch.float16
    if precision == "bf16" or native_bf16(device):
        return torch.bfloat16
    return torch.float32


def channels_last(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether inference in `dtype` on `device` runs in channels-last layout: bf16 on a CPU, oneDNN's
    native layout for its bf16 convolutions (fp32 on a CPU was slower with it: docs/performance.md); bf16
    and fp16 on CUDA, the layout of cuDNN's tensor-core convolutions."""
    if device.type == "cuda":
        return dtype in (torch.bfloat16, torch.float16)
    return device.type == "cpu" and dtype == torch.bfloat16


def cuda_defaults(device: torch.device) -> None:
    """On CUDA, let float32 matrix products and convolutions use TF32 tensor cores (torch leaves matmul's off);
    nothing elsewhere. Called where a network is built to run on `device` (evaluator, learner)."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

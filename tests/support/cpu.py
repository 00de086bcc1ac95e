"""Standing in for the CPU's precision features, so that a test checks each branch on any machine.

Whether a CPU computes bf16 natively (AVX512-BF16 or AMX) decides what ``precision=auto`` runs. A test whose
expectation follows that choice pins it with `native_cpu_bf16` and is parametrized over both answers, so that
the machine it lands on never decides its verdict.
"""

from __future__ import annotations

import pytest

from agents.alphazero.net import device as device_module
from agents.alphazero.net import runtime

BOTH = pytest.mark.parametrize("native", (False, True), ids=("cpu-without-bf16", "cpu-with-bf16"))
"""Parametrizes a test over both answers to "does this CPU compute bf16 natively?" (argument `native`)."""


def native_cpu_bf16(monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    """Makes `agents.alphazero.net.device.native_bf16` answer `native` for a CPU, for the rest of the test.

    Whether oneDNN's bf16 convolutions run stays this CPU's own answer (they fail where it lacks AVX-512), so a
    CPU standing in for one with native bf16 runs bf16 through whichever kernels it really has."""
    onednn = runtime.onednn_bf16()
    monkeypatch.setattr(device_module, "_cpu_native_bf16", lambda: native)
    monkeypatch.setattr(runtime, "onednn_bf16", lambda: onednn)

"""CUDA defaults, checked on CPU by standing in for torch.cuda: native bf16 only, TF32, channels-last, no fork."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np
import pytest
import torch

from agents.alphazero.net.device import autocast_dtype, channels_last, inference_dtype, native_bf16
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.training.learner import Learner, LearnerConfig
from agents.arena.errors import TournamentError
from agents.arena.settings import TournamentSettings
from agents.arena.tournament import run_tournament
from envs.players import register_player

CUDA = torch.device("cuda")
TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)


def gpu(monkeypatch: pytest.MonkeyPatch, capability: tuple[int, int]) -> None:
    """torch.cuda standing for a GPU of compute `capability` that (as torch says of every recent GPU) supports
    bf16, emulated or not."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)


@pytest.mark.parametrize(("capability", "native"), [((7, 5), False), ((7, 0), False), ((8, 0), True), ((9, 0), True)])
def test_bf16_counts_on_cuda_only_where_the_gpu_computes_it(
    monkeypatch: pytest.MonkeyPatch, capability: tuple[int, int], native: bool
) -> None:
    """A pre-Ampere GPU emulates bf16 (slowly) though torch.cuda.is_bf16_supported() says yes: fp16 there."""
    gpu(monkeypatch, capability)
    half = torch.bfloat16 if native else torch.float16
    assert native_bf16(CUDA) is native
    assert autocast_dtype(CUDA, amp=True) == half
    assert inference_dtype(CUDA, "auto", 1024) == half
    assert inference_dtype(CUDA, "bf16", 1024) == half
    assert inference_dtype(CUDA, "fp32", 1024) == torch.float32


def test_channels_last_on_cuda_for_half_precision_as_on_a_cpu_for_bf16() -> None:
    assert channels_last(CUDA, torch.bfloat16) and channels_last(CUDA, torch.float16)
    assert not channels_last(CUDA, torch.float32)
    cpu = torch.device("cpu")
    assert channels_last(cpu, torch.bfloat16) and not channels_last(cpu, torch.float32)


@pytest.fixture
def tf32_off() -> Iterator[Callable[[], tuple[bool, bool]]]:
    """TF32 switched off for matmul and cuDNN (restored after); the function reads the two flags."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    saved = matmul.allow_tf32, cudnn.allow_tf32

    def flags() -> tuple[bool, bool]:
        return bool(matmul.allow_tf32), bool(cudnn.allow_tf32)

    matmul.allow_tf32 = cudnn.allow_tf32 = False
    try:
        yield flags
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = saved


def test_tf32_is_switched_on_for_cuda_networks_only(
    monkeypatch: pytest.MonkeyPatch, tf32_off: Callable[[], tuple[bool, bool]]
) -> None:
    """An evaluator or a learner on CUDA lets float32 matmuls and convolutions use TF32; on a CPU nothing
    changes (the evaluator and learner are only built here: nothing runs on the device)."""
    net = build_network(TINY)
    make_evaluator(net, "cpu")
    Learner(net, LearnerConfig(), device=torch.device("cpu"))
    assert tf32_off() == (False, False)
    make_evaluator(net, CUDA)
    assert tf32_off() == (True, True)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    gpu(monkeypatch, (9, 0))
    Learner(net, LearnerConfig(), device=CUDA, amp=True)
    assert tf32_off() == (True, True)


class _CudaPlayer:
    """A player whose network would be on CUDA (as a checkpoint player with device=cuda): plays randomly."""

    device = CUDA

    def __init__(self, seed: Any = None) -> None:
        self.name = "cuda"
        self.rng = np.random.default_rng(seed)

    def select_move(self, board: Any) -> Any:
        moves = list(board.legal_moves)
        return moves[int(self.rng.integers(len(moves)))]


def test_a_tournament_refuses_to_fork_workers_from_a_process_using_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forked workers of a parent that has started CUDA fail at their first CUDA call: refused in one line."""
    register_player("cudastub", lambda rules=None, seed=None, **kw: _CudaPlayer(seed))
    kw: dict[str, Any] = dict(progress=False, workers=2)
    kw["settings"] = TournamentSettings(games_per_pair=2, max_plies=4)
    with pytest.raises(TournamentError, match=r"^start_method=fork with player 'cudastub' runs on CUDA: .*spawn"):
        run_tournament(["random", "cudastub"], start_method="fork", **kw)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(TournamentError, match=r"^start_method=fork with this process has started CUDA: "):
        run_tournament(["random", "alphabeta:depth=1"], start_method="fork", **kw)

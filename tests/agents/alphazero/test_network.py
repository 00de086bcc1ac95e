"""Network shapes, safe masking (dtype minimum, all-masked rows) and the evaluator."""

from typing import Any

import numpy as np
import pytest
import torch

from agents.alphazero.net.device import BF16_MIN_BATCH, inference_dtype, native_bf16
from agents.alphazero.net.network import NetworkConfig, NetworkShapeError, build_network, mask_logits, scalar_value
from agents.alphazero.net.runtime import (
    FUSED_FP32_MIN_BATCH,
    FusedCPUForward,
    for_inference,
    fuse_for_inference,
    make_evaluator,
    onednn_bf16,
)
from envs import Board, Move
from envs.encoding import N_ACTIONS, OBS_SHAPE, action_to_move, encode_observation, legal_action_mask
from tests.support import ROOT
from tests.support.cpu import BOTH, native_cpu_bf16
from tests.support.positions import position_batch

TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
SHAPES = pytest.mark.parametrize(
    "shape",
    ({"value_head": "scalar"}, {"value_head": "wdl"}, {"global_pool": True}),
    ids=("scalar", "wdl", "global_pool"),
)
"""The shapes whose inference copies are checked against the module: both value heads, and global pooling."""


@pytest.mark.parametrize("head", ["scalar", "wdl"])
def test_output_shapes(head: str) -> None:
    net = build_network(NetworkConfig(blocks=2, channels=8, value_head=head))
    logits, v = net(torch.zeros((3,) + OBS_SHAPE))
    assert logits.shape == (3, N_ACTIONS)
    assert v.shape == ((3,) if head == "scalar" else (3, 3))
    s = scalar_value(v)
    assert s.shape == (3,) and bool((s.abs() <= 1).all())


def test_masking_uses_dtype_minimum_not_inf() -> None:
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        logits = torch.randn(2, N_ACTIONS).to(dtype)
        mask = torch.zeros(2, N_ACTIONS, dtype=torch.bool)
        mask[0, [3, 7]] = True
        mask[1, 0] = True
        out = mask_logits(logits, mask)
        assert torch.isfinite(out).all()
        assert out[0, 0].item() == torch.finfo(dtype).min
        p = torch.softmax(out.float(), -1)
        assert p[0, [3, 7]].sum().item() == pytest.approx(1.0)
        assert p[1, 0].item() == pytest.approx(1.0)
        assert not torch.equal(logits, out)  # a new tensor ...
        inplace = mask_logits(logits, mask, inplace=True)
        assert inplace is logits and torch.equal(inplace, out)  # ... or the same one, masked the same


def test_all_masked_row_is_uniform_and_finite() -> None:
    logits = torch.randn(1, N_ACTIONS)
    out = mask_logits(logits, torch.zeros(1, N_ACTIONS, dtype=torch.bool))
    p = torch.softmax(out, -1)
    assert not torch.isnan(p).any()
    assert torch.allclose(p, torch.full_like(p, 1.0 / N_ACTIONS))
    logp = torch.log_softmax(out, -1)
    assert torch.isfinite(logp).all()


def test_evaluator_masks_and_bounds_values() -> None:
    torch.manual_seed(0)
    obs, mask = position_batch(6)
    ev = make_evaluator(build_network(TINY), "cpu")
    logits, value = ev(obs, mask)
    assert logits.dtype == np.float32 and value.dtype == np.float32
    assert logits.shape == (6, N_ACTIONS) and value.shape == (6,)
    assert np.all(logits[~mask] == np.finfo(np.float32).min)
    assert np.all(np.abs(value) <= 1.0)
    # batched == one by one (eval-mode batch norm, no cross-talk)
    l1, v1 = ev(obs[2:3], mask[2:3])
    np.testing.assert_allclose(l1[0][mask[2]], logits[2][mask[2]], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(v1, value[2:3], rtol=1e-4, atol=1e-5)
    empty_l, empty_v = ev(obs[:0], mask[:0])
    assert empty_l.shape == (0, N_ACTIONS) and empty_v.shape == (0,)


def test_bad_shape_is_refused_with_the_field_name() -> None:
    with pytest.raises(NetworkShapeError, match="channels"):
        NetworkConfig(channels=0)
    with pytest.raises(NetworkShapeError, match="value_head"):
        NetworkConfig(value_head="gaussian")
    with pytest.raises(NetworkShapeError, match="widht"):
        NetworkConfig.from_dict({"widht": 3})


SHIPPED = ROOT / "checkpoints" / "shipped" / "results-only-60.pt"


def _selfplay_positions(model: torch.nn.Module, n: int, games: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """`n` positions of games the network plays against itself (moves drawn from its policy)."""
    ev = make_evaluator(model, "cpu")
    rng = np.random.default_rng(1)
    boards = [Board() for _ in range(games)]
    obs = np.zeros((n,) + OBS_SHAPE, np.float32)
    mask = np.zeros((n, N_ACTIONS), np.bool_)
    filled = 0
    while filled < n:
        for i, board in enumerate(boards):
            if board.outcome() is not None or board.ply > 150:
                boards[i] = board = Board()
        k = min(len(boards), n - filled)
        for i in range(k):
            encode_observation(boards[i].state, boards[i].hashes, boards[i].flags, obs[filled + i])
            legal_action_mask(boards[i].state, boards[i].hist, boards[i].flags, mask[filled + i])
        logits, _ = ev(obs[filled : filled + k], mask[filled : filled + k])
        for i in range(k):
            p = torch.softmax(torch.from_numpy(logits[i]), 0).numpy().astype(np.float64)
            action = int(rng.choice(N_ACTIONS, p=p / p.sum()))
            boards[i].push(Move.from_int(int(action_to_move(boards[i].state, action))))
        filled += k
    return obs, mask


@SHAPES
def test_fused_copy_computes_the_same_function(shape: dict[str, Any]) -> None:
    """The batch-norm-folded copy computes the model's function, with either value head and with global pooling."""
    torch.manual_seed(3)
    net = build_network(NetworkConfig(blocks=2, channels=16, **shape))
    net.train()
    net(torch.rand(32, *OBS_SHAPE))  # move the running statistics away from their defaults
    net.eval()
    x = (torch.rand(40, *OBS_SHAPE) < 0.2).float()
    with torch.no_grad():
        a_logits, a_v = net(x)
        b_logits, b_v = fuse_for_inference(net)(x)
    torch.testing.assert_close(b_logits, a_logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(b_v, a_v, rtol=1e-4, atol=1e-5)


@SHAPES
def test_fused_cpu_kernels_compute_the_same_function(shape: dict[str, Any]) -> None:
    """bf16 inference on a CPU runs each convolution as one oneDNN kernel with its ReLU (and a block's skip
    addition, and a global pool's bias between a block's two): the folded module's function to bf16 rounding, with
    either value head and with global pooling."""
    torch.manual_seed(5)
    net = build_network(NetworkConfig(blocks=2, channels=16, **shape))
    net.train()
    net(torch.rand(32, *OBS_SHAPE))
    net.eval()
    fused = fuse_for_inference(net).to(torch.bfloat16)
    for m in fused.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.weight.data = m.weight.data.contiguous(memory_format=torch.channels_last)
    run = for_inference(fused, torch.device("cpu"), torch.bfloat16)
    if not torch.backends.mkldnn.is_available() or not onednn_bf16():
        assert run is fused  # the module itself where torch has no oneDNN, or oneDNN no bf16 convolutions
        return
    assert isinstance(run, FusedCPUForward)
    assert for_inference(fused, torch.device("cpu"), torch.float32) is fused  # fp32 keeps the module
    x = (torch.rand(40, *OBS_SHAPE) < 0.2).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():
        a_logits, a_v = fused(x)
        b_logits, b_v = run(x)
    assert b_logits.shape == a_logits.shape and b_v.shape == a_v.shape and b_logits.dtype == torch.bfloat16
    torch.testing.assert_close(b_logits.float(), a_logits.float(), rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(b_v.float(), a_v.float(), rtol=2e-2, atol=2e-2)


def test_bf16_without_onednn_bf16_runs_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a CPU whose oneDNN has no bf16 convolutions (AVX2 alone), bf16 runs the module, which answers,
    rather than the fused kernels, which oneDNN would refuse there."""
    import agents.alphazero.net.runtime as runtime

    monkeypatch.setattr(runtime, "onednn_bf16", lambda: False)
    torch.manual_seed(6)
    model = build_network(TINY)
    obs, mask = position_batch(4)
    logits, value = make_evaluator(model, "cpu", "bf16")(obs, mask)
    want_logits, want_value = make_evaluator(model, "cpu", "fp32")(obs, mask)
    np.testing.assert_allclose(value, want_value, atol=5e-2)
    assert np.isfinite(logits[mask]).all()


@SHAPES
def test_fast_fp32_kernels_compute_the_same_function(shape: dict[str, Any]) -> None:
    """``auto`` float32 on a CPU runs the fused oneDNN kernels for calls of `FUSED_FP32_MIN_BATCH` positions
    or more, the module below: the module's function to float32 rounding either way, with either value head and
    with global pooling."""
    torch.manual_seed(7)
    net = build_network(NetworkConfig(blocks=2, channels=16, **shape))
    net.train()
    net(torch.rand(32, *OBS_SHAPE))
    net.eval()
    fused = fuse_for_inference(net)
    run = for_inference(fused, torch.device("cpu"), torch.float32, fast_fp32=True)
    if not torch.backends.mkldnn.is_available():
        assert run is fused
        return
    assert isinstance(run, FusedCPUForward) and run.small is fused
    for n in (1, FUSED_FP32_MIN_BATCH - 1, FUSED_FP32_MIN_BATCH, 40):
        obs = (np.random.default_rng(n).random((n, *OBS_SHAPE)) < 0.2).astype(np.float32)
        with torch.inference_mode():
            a_logits, a_v = fused(torch.from_numpy(obs))
            b_logits, b_v = run.from_planes(obs)
        assert b_logits.dtype == torch.float32 and b_logits.shape == a_logits.shape
        torch.testing.assert_close(b_logits, a_logits, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(b_v, a_v, rtol=1e-4, atol=1e-4)


@BOTH
def test_auto_precision_on_a_cpu_is_float32_or_bf16_by_the_cpu(monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    """``auto`` on a CPU without native bf16 is float32 (the fused kernels): the ``fp32`` evaluator's answers to
    float32 rounding. On a CPU with native bf16 it is bf16: the same answers to bf16 rounding, and not float32's
    (so the test sees which path ran). Both branches run on any machine."""
    native_cpu_bf16(monkeypatch, native)
    torch.manual_seed(7)
    net = build_network(NetworkConfig(blocks=2, channels=16))
    net.train()
    net(torch.rand(32, *OBS_SHAPE))
    net.eval()
    obs, mask = position_batch(12)
    fast = make_evaluator(net, "cpu", "auto")(obs, mask)
    reference = make_evaluator(net, "cpu", "fp32")(obs, mask)
    tolerance = 2e-2 if native else 1e-4
    np.testing.assert_allclose(fast[0][mask], reference[0][mask], rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(fast[1], reference[1], rtol=tolerance, atol=tolerance)
    same_to_float32 = np.allclose(fast[0][mask], reference[0][mask], rtol=1e-5, atol=1e-5)
    assert same_to_float32 is not native


@pytest.mark.slow
def test_evaluator_follows_the_weights_as_they_train() -> None:
    torch.manual_seed(4)
    net = build_network(TINY)
    ev = make_evaluator(net, "cpu")
    obs, mask = position_batch(4)
    before, _ = ev(obs, mask)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    logits, v = net(torch.from_numpy(obs))
    (logits.sum() + v.sum()).backward()
    opt.step()
    net.eval()
    after, _ = ev(obs, mask)
    with torch.no_grad():
        expected = mask_logits(net(torch.from_numpy(obs))[0], torch.from_numpy(mask)).numpy()
    assert not np.allclose(before[mask], after[mask])
    np.testing.assert_allclose(after[mask], expected[mask], rtol=1e-4, atol=1e-4)


@BOTH
def test_inference_dtype_rule(monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    native_cpu_bf16(monkeypatch, native)
    cpu = torch.device("cpu")
    assert native_bf16(cpu) is native
    assert inference_dtype(cpu, "fp32", 4096) == torch.float32
    assert inference_dtype(cpu, "bf16", 1) == torch.bfloat16
    for batch in (1, BF16_MIN_BATCH, 4096):  # never by batch: the games must not depend on the batching
        assert inference_dtype(cpu, "auto", batch) == (torch.bfloat16 if native else torch.float32)
    with pytest.raises(ValueError, match="fp16"):
        inference_dtype(cpu, "fp16", 1)
    with pytest.raises(ValueError, match="precision"):
        make_evaluator(build_network(TINY), "cpu", "half")


@pytest.mark.slow
def test_bf16_agrees_with_fp32_on_selfplay_positions() -> None:
    """The shipped network in bf16 vs fp32 over 1000 positions of its own games:
    top-1 policy agreement >= 98% and mean |value difference| <= 0.02."""
    from agents.alphazero.net.checkpoint import load_model

    model, _ = load_model(SHIPPED)
    obs, mask = _selfplay_positions(model, 1000)
    l32, v32 = make_evaluator(model, "cpu", "fp32")(obs, mask)
    l16, v16 = make_evaluator(model, "cpu", "bf16")(obs, mask)
    agreement = float(np.mean(l32.argmax(1) == l16.argmax(1)))
    assert np.all(mask[np.arange(len(mask)), l16.argmax(1)])  # bf16 picks legal moves too
    assert agreement >= 0.98, agreement
    assert float(np.mean(np.abs(v32 - v16))) <= 0.02


@pytest.mark.parametrize("precision", ("fp32", "bf16"))
def test_large_calls_run_in_parts_with_the_same_answers(monkeypatch: pytest.MonkeyPatch, precision: str) -> None:
    """A call larger than `CPU_CHUNK` positions runs as equal parts (20 as 7 + 7 + 6) and answers as one
    forward pass over them all would, to the dtype's rounding by batch size; every row is filled."""
    import agents.alphazero.net.runtime as runtime

    torch.manual_seed(0)
    model = build_network(TINY)
    rng = np.random.default_rng(0)
    obs = (rng.random((20,) + OBS_SHAPE) < 0.1).astype(np.float32)
    mask = rng.random((20, N_ACTIONS)) < 0.3
    whole_logits, whole_value = make_evaluator(model, "cpu", precision)(obs, mask)
    calls: list[int] = []
    runner = runtime.for_inference

    def counting(fused: torch.nn.Module, device: torch.device, dtype: torch.dtype, **options: bool):
        run = runner(fused, device, dtype, **options)

        def counted(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            calls.append(len(x))
            return run(x)

        return counted

    monkeypatch.setattr(runtime, "CPU_CHUNK", 7)
    monkeypatch.setattr(runtime, "for_inference", counting)
    logits, value = make_evaluator(model, "cpu", precision)(obs, mask)
    assert calls == [7, 7, 6]
    tol = 1e-5 if precision == "fp32" else 2e-2
    np.testing.assert_allclose(logits[mask], whole_logits[mask], rtol=tol, atol=tol)
    np.testing.assert_allclose(value, whole_value, rtol=tol, atol=tol)
    assert np.all(logits[~mask] == np.finfo(np.float32).min)

"""The stem convolution from the planes' nonzero entries (`PlaneStem`) against the dense bf16 convolution."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import agents.alphazero.net.runtime as runtime
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.net.planestem import PlaneStem
from agents.alphazero.net.runtime import FusedCPUForward, make_evaluator
from envs.encoding import OBS_SHAPE, TERRAIN_FIRST_PLANE, TERRAIN_PLANES
from tests.support.positions import position_batch


def _bf16_conv(channels: int, seed: int) -> torch.nn.Conv2d:
    """A stem convolution with bf16 weights and bias, as the fused bf16 copy holds it."""
    torch.manual_seed(seed)
    conv = torch.nn.Conv2d(OBS_SHAPE[0], channels, 3, padding=1)
    with torch.no_grad():
        conv.bias.uniform_(-0.5, 0.5)
    return conv.to(torch.bfloat16)


def _dense(conv: torch.nn.Conv2d, obs: np.ndarray) -> torch.Tensor:
    """ReLU(conv(obs)) as the dense bf16 path computes it: bf16 inputs and weights, float32 sums, bf16 out."""
    x = torch.from_numpy(obs).to(torch.bfloat16).float()
    y = F.conv2d(x, conv.weight.float(), conv.bias.float(), padding=1)
    return F.relu(y).to(torch.bfloat16).float()


def _odd_positions(n: int, seed: int) -> np.ndarray:
    """Observations the encoder never writes: every plane dense with arbitrary (negative, non-bf16) values,
    constant planes of several values, terrain planes with one square changed."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(n,) + OBS_SHAPE).astype(np.float32) * (rng.random((n,) + OBS_SHAPE) < 0.3)
    obs[:, TERRAIN_FIRST_PLANE : TERRAIN_FIRST_PLANE + len(TERRAIN_PLANES)] = TERRAIN_PLANES
    obs[::2, TERRAIN_FIRST_PLANE, 4, 3] = 0.5  # not the terrain: summed entry by entry
    obs[:, 21] = rng.normal(size=(n, 1, 1))  # constant planes, whatever the value
    obs[:, 22] = 0.0
    obs[::3, 23] = 1.0 / 3.0
    return obs


@pytest.mark.parametrize("channels", (16, 32))
def test_the_stem_from_planes_is_the_dense_bf16_convolution(channels: int) -> None:
    """On positions of a game and on odd inputs, the sum from the nonzero entries, the terrain's map and the
    constant planes' maps is the dense convolution up to float32 summation order: at most one bf16 step
    apart, and almost every output equal."""
    conv = _bf16_conv(channels, seed=channels)
    stem = PlaneStem(conv)
    game, _ = position_batch(30)
    for obs in (game, _odd_positions(40, seed=1)):
        got = stem(obs)
        assert got.dtype == torch.bfloat16 and got.shape == (len(obs), channels) + OBS_SHAPE[1:]
        assert got.is_contiguous(memory_format=torch.channels_last)
        want = _dense(conv, obs)
        got = got.float()
        step = torch.clamp(want.abs(), min=1e-3) * 2.0**-7  # one bf16 step (8 significant bits)
        assert torch.all((got - want).abs() <= step + 1e-6)
        assert (got == want).float().mean() >= 0.97
        assert (want > 0).float().mean() > 0.2 and (want == 0).float().mean() > 0.05  # ReLU on both sides


def test_the_stem_rejects_what_it_cannot_compute() -> None:
    stem = PlaneStem(_bf16_conv(8, seed=0))
    with pytest.raises(ValueError, match="shape"):
        stem(np.zeros((2, 23, 9, 7), np.float32))
    with pytest.raises(ValueError, match="3x3"):
        PlaneStem(torch.nn.Conv2d(OBS_SHAPE[0], 8, 1, bias=True))
    with pytest.raises(ValueError, match="3x3"):
        PlaneStem(torch.nn.Conv2d(OBS_SHAPE[0], 8, 3, padding=1, bias=False))


@pytest.mark.parametrize("kernels", ("without-onednn-bf16", "this-cpu"))
def test_the_bf16_evaluator_runs_the_stem_from_planes(monkeypatch: pytest.MonkeyPatch, kernels: str) -> None:
    """make_evaluator's bf16 CPU path feeds the float32 observations to `FusedCPUForward.from_planes` (no
    input copies), whose answers are those of the fused forward pass on the bf16 tensor to bf16 rounding.
    Where oneDNN has no bf16 convolutions (AVX2 alone; forced on any machine by the first case) the module
    answers with its own stem."""
    if kernels == "without-onednn-bf16":
        monkeypatch.setattr(runtime, "onednn_bf16", lambda: False)
    torch.manual_seed(2)
    model = build_network(NetworkConfig(blocks=2, channels=16))
    obs, mask = position_batch(24)
    calls: list[int] = []
    original = FusedCPUForward.from_planes

    def counted(self: FusedCPUForward, planes: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        calls.append(len(planes))
        return original(self, planes)

    monkeypatch.setattr(FusedCPUForward, "from_planes", counted)
    logits, value = make_evaluator(model, "cpu", "bf16")(obs, mask)
    run = runtime._InferenceCopies(model, torch.device("cpu")).get(torch.bfloat16)
    if not runtime.onednn_bf16():  # no oneDNN bf16 convolutions on this CPU: the module, with its own stem
        assert calls == [] and not isinstance(run, FusedCPUForward)
        with torch.inference_mode():
            want_logits, want_value = run(torch.from_numpy(obs).to(torch.bfloat16))
        np.testing.assert_allclose(value, want_value.float().numpy(), rtol=2e-2, atol=2e-2)
        return
    assert calls == [24]
    assert isinstance(run, FusedCPUForward)
    x = torch.from_numpy(obs).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():
        want_logits, want_value = run(x)
    np.testing.assert_allclose(logits[mask], want_logits.float().numpy()[mask], rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(value, want_value.float().numpy(), rtol=2e-2, atol=2e-2)

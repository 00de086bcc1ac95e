"""`compile=true`: batch buckets, the compiled evaluator and server, the compiled learner.

Most tests count compilations with dynamo's `CompileCounter` backend (the captured graphs run eagerly:
quick, and the same numbers as the module); one slow test compiles with inductor, the real backend."""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import torch
from torch._dynamo.testing import CompileCounter

import agents.alphazero.net.runtime as runtime
from agents.alphazero.distributed.batcher import InferenceServer
from agents.alphazero.distributed.settings import InferenceSettings, WorkerSettings
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.net.packing import pack_masks, pack_observations
from agents.alphazero.net.runtime import (
    BucketError,
    bucket_for,
    bucket_parts,
    check_buckets,
    make_evaluator,
    make_packed_evaluator,
)
from agents.alphazero.search import MCTSConfig
from envs.rules import RuleSet
from tests.agents.alphazero.test_learner import _seeded_learner, _snapshot
from tests.support.positions import position_batch

TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
BUCKETS = (4, 8)


@pytest.fixture
def counter(monkeypatch: pytest.MonkeyPatch) -> Iterator[CompileCounter]:
    """Every `torch.compile` of the test compiles with a `CompileCounter` backend (its `frame_count`: the
    graphs compiled); dynamo's caches start empty."""
    real = torch.compile
    count = CompileCounter()

    def counting(target: Any, **kwargs: Any) -> Any:
        kwargs.pop("backend", None)
        return real(target, backend=count, **kwargs)

    torch._dynamo.reset()
    monkeypatch.setattr(torch, "compile", counting)
    yield count
    torch._dynamo.reset()


def _nudge(model: torch.nn.Module) -> None:
    """New weights in place, as an optimizer step writes them."""
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1.1).add_(0.01)


# --------------------------------------------------------------------------------------------
# Buckets
# --------------------------------------------------------------------------------------------
def test_the_bucket_of_a_batch_is_the_smallest_that_holds_it() -> None:
    assert [bucket_for(n, BUCKETS) for n in (1, 3, 4, 5, 7, 8)] == [4, 4, 4, 8, 8, 8]
    with pytest.raises(BucketError, match="a batch of 9 rows has no bucket among \\[4, 8\\]"):
        bucket_for(9, BUCKETS)
    with pytest.raises(BucketError, match="a batch of 0 rows"):
        bucket_for(0, BUCKETS)


def test_a_batch_runs_as_parts_of_the_largest_bucket_then_its_rest_padded() -> None:
    assert bucket_parts(0, BUCKETS) == []
    assert bucket_parts(1, BUCKETS) == [(1, 4)]
    assert bucket_parts(4, BUCKETS) == [(4, 4)]
    assert bucket_parts(5, BUCKETS) == [(5, 8)]
    assert bucket_parts(8, BUCKETS) == [(8, 8)]
    assert bucket_parts(9, BUCKETS) == [(8, 8), (1, 4)]
    assert bucket_parts(13, BUCKETS) == [(8, 8), (5, 8)]
    assert bucket_parts(16, BUCKETS) == [(8, 8), (8, 8)]
    assert bucket_parts(17, BUCKETS) == [(8, 8), (8, 8), (1, 4)]
    for n in range(1, 40):
        parts = bucket_parts(n, runtime.CPU_BUCKETS)
        assert sum(rows for rows, _ in parts) == n
        assert all(padded in runtime.CPU_BUCKETS and rows <= padded for rows, padded in parts)


@pytest.mark.parametrize("bad", [(), (8, 4), (4, 4), (0, 4), (True, 4), (4.0, 8)])
def test_bad_buckets_are_refused_naming_them(bad: tuple[Any, ...]) -> None:
    with pytest.raises(BucketError, match="must be increasing positive integers"):
        check_buckets(bad)
    with pytest.raises(BucketError, match=re.escape(repr(list(bad)))):
        make_evaluator(build_network(TINY), buckets=bad)


def test_the_device_buckets_stay_within_the_recompile_limit_and_the_cpu_chunk() -> None:
    assert check_buckets(runtime.CUDA_BUCKETS) and len(runtime.CUDA_BUCKETS) <= 8  # dynamo's default limit
    assert check_buckets(runtime.CPU_BUCKETS)[-1] == runtime.CPU_CHUNK


# --------------------------------------------------------------------------------------------
# Padded evaluation
# --------------------------------------------------------------------------------------------
def _network_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The batch sizes the evaluators built after this call run their network at."""
    calls: list[int] = []
    runner = runtime.for_inference

    def counting(
        fused: torch.nn.Module, device: torch.device, dtype: torch.dtype, **options: Any
    ) -> Callable[..., Any]:
        run = runner(fused, device, dtype, **options)

        def counted(x: torch.Tensor) -> Any:
            calls.append(len(x))
            return run(x)

        return counted

    monkeypatch.setattr(runtime, "for_inference", counting)
    return calls


@pytest.mark.parametrize("n", [1, 3, 4, 5, 9, 17])
def test_a_padded_evaluation_is_the_unpadded_one_at_the_buckets_shapes(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """fp32, eval mode: each part runs at its bucket's size, and its rows are exactly those of the same rows
    in an unpadded call of that size (the padding changes no other row); against a call at the batch's own
    size they agree to float32 rounding (the CPU kernels round the last bit by batch size)."""
    torch.manual_seed(0)
    model = build_network(TINY)
    obs, mask = position_batch(24)
    obs, mask = obs[:n], mask[:n]
    calls = _network_calls(monkeypatch)
    logits, value = make_evaluator(model, buckets=BUCKETS)(obs, mask)
    parts = bucket_parts(n, BUCKETS)
    assert calls == [padded for _, padded in parts]
    plain = make_evaluator(model)
    start = 0
    for rows, padded in parts:
        o = np.zeros((padded, *obs.shape[1:]), np.float32)
        m = np.ones((padded, mask.shape[1]), np.bool_)
        o[:rows], m[:rows] = obs[start : start + rows], mask[start : start + rows]
        ref_logits, ref_value = plain(o, m)
        np.testing.assert_array_equal(logits[start : start + rows], ref_logits[:rows])
        np.testing.assert_array_equal(value[start : start + rows], ref_value[:rows])
        start += rows
    own_logits, own_value = plain(obs, mask)
    np.testing.assert_allclose(logits[mask], own_logits[mask], rtol=0, atol=1e-6)
    np.testing.assert_allclose(value, own_value, rtol=0, atol=1e-6)
    assert np.all(logits[~mask] == np.finfo(np.float32).min)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_padded_packed_evaluation_is_the_padded_planes_one_bit_for_bit(precision: str) -> None:
    torch.manual_seed(1)
    model = build_network(TINY)
    obs, mask = position_batch(11)
    bits, scalars = pack_observations(obs)
    planes = make_evaluator(model, precision=precision, buckets=BUCKETS)(obs, mask)
    packed = make_packed_evaluator(model, precision=precision, buckets=BUCKETS)(bits, scalars, pack_masks(mask))
    np.testing.assert_array_equal(planes[0], packed[0])
    np.testing.assert_array_equal(planes[1], packed[1])
    unpadded = make_evaluator(model, precision=precision)(obs, mask)
    tol = 1e-6 if precision == "fp32" else 3e-2
    np.testing.assert_allclose(planes[0][mask], unpadded[0][mask], rtol=tol, atol=tol)
    np.testing.assert_allclose(planes[1], unpadded[1], rtol=tol, atol=tol)


# --------------------------------------------------------------------------------------------
# The compiled evaluator and server
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_compiled_evaluator_compiles_once_a_bucket_and_follows_new_weights_without_compiling(
    counter: CompileCounter,
) -> None:
    torch.manual_seed(2)
    model = build_network(TINY)
    obs, mask = position_batch(20)
    compiled = make_evaluator(model, compile=True, buckets=BUCKETS)
    eager = make_evaluator(model, buckets=BUCKETS)
    for n in (3, 4, 2, 5, 8, 9, 20):  # buckets 4, 8, then parts of them: two shapes in all
        ours, theirs = compiled(obs[:n], mask[:n]), eager(obs[:n], mask[:n])
        np.testing.assert_array_equal(ours[0], theirs[0])
        np.testing.assert_array_equal(ours[1], theirs[1])
    assert counter.frame_count == 2
    before = compiled(obs, mask)
    for _ in range(3):  # the learner's weights, iteration after iteration
        _nudge(model)
        after, expected = compiled(obs, mask), eager(obs, mask)
        assert not np.array_equal(after[1], before[1])
        np.testing.assert_array_equal(after[0], expected[0])
        np.testing.assert_array_equal(after[1], expected[1])
        before = after
    assert counter.frame_count == 2


@pytest.mark.slow
def test_compile_pads_to_the_devices_buckets_by_default(counter: CompileCounter) -> None:
    torch.manual_seed(3)
    model = build_network(TINY)
    obs, mask = position_batch(40)
    ev = make_evaluator(model, compile=True)
    for n in (1, 16, 17, 33, 40):  # buckets 16, 16, 32, 64, 64
        ev(obs[:n], mask[:n])
    assert counter.frame_count == 3
    assert runtime._Evaluation(model, "cpu", "fp32", compile=True).buckets == runtime.CPU_BUCKETS
    assert runtime._Evaluation(model, "cpu", "fp32").buckets == ()  # uncompiled: each call at its own size


def test_the_compiled_server_takes_new_weights_without_compiling(counter: CompileCounter) -> None:
    torch.manual_seed(4)
    worker = WorkerSettings(network=TINY, mcts=MCTSConfig(), rules=RuleSet(), precision="fp32")
    server = InferenceServer(worker, InferenceSettings(compile=True))
    reference = build_network(TINY).eval()
    obs, mask = position_batch(6)
    bits, scalars = pack_observations(obs)
    mask_bits = pack_masks(mask)
    for _ in range(2):
        server.load_weights(reference.state_dict())
        logits, value = server.evaluate(0, bits, scalars, mask_bits)
        expected = make_evaluator(reference, buckets=runtime.CPU_BUCKETS)(obs, mask)
        np.testing.assert_array_equal(logits, expected[0])
        np.testing.assert_array_equal(value, expected[1])
        _nudge(reference)
    assert counter.frame_count == 1


# --------------------------------------------------------------------------------------------
# The compiled learner
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("survival_head", [False, True], ids=["plain", "survival"])
def test_the_compiled_learner_trains_as_the_eager_one_with_one_graph_a_mode(
    counter: CompileCounter, survival_head: bool
) -> None:
    runs = []
    for compile in (False, True):
        buf, model, learner = _seeded_learner(survival_head, compile=compile)
        summary = learner.learn(buf, 5, 16)
        runs.append((summary, learner.evaluate_loss(buf.sample(16)), _snapshot(model)))
    (eager_summary, eager_loss, eager_weights), (summary, loss, weights) = runs
    assert summary == eager_summary and loss == eager_loss
    assert all(torch.equal(weights[k], eager_weights[k]) for k in eager_weights)
    assert counter.frame_count == 2  # one graph for the training steps, one for evaluate_loss


# --------------------------------------------------------------------------------------------
# Inductor, the real backend
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_inductor_compiles_once_a_bucket_and_new_weights_reach_the_compiled_code() -> None:
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(5)
    model = build_network(TINY)
    obs, mask = position_batch(8)
    compiled = make_evaluator(model, compile=True, buckets=BUCKETS)
    eager = make_evaluator(model)
    try:
        for n in (3, 8, 2):
            ours, theirs = compiled(obs[:n], mask[:n]), eager(obs[:n], mask[:n])
            np.testing.assert_allclose(ours[0][mask[:n]], theirs[0][mask[:n]], rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4, atol=1e-4)
        graphs = counters["stats"]["unique_graphs"]
        assert graphs == 2
        before = compiled(obs, mask)[1]
        _nudge(model)
        ours, theirs = compiled(obs, mask), eager(obs, mask)
        assert not np.allclose(ours[1], before)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4, atol=1e-4)
        assert counters["stats"]["unique_graphs"] == graphs
    finally:
        torch._dynamo.reset()

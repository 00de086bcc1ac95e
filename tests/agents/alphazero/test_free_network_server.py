"""The inference server's free network (`InferenceSettings.free_network`, the pipeline bench's): a uniform policy
over the legal moves and value 0 for every leaf, the default server unchanged."""

from __future__ import annotations

import numpy as np
import torch

from agents.alphazero.distributed.batcher import InferenceServer
from agents.alphazero.distributed.settings import InferenceSettings
from agents.alphazero.net.packing import BINARY_PLANES, pack_masks, pack_observations
from agents.alphazero.net.runtime import make_evaluator
from envs.encoding import N_ACTIONS, OBS_SHAPE
from tests.agents.alphazero.test_inference_service import settings


def _leaves() -> tuple[np.ndarray, np.ndarray]:
    """Three positions (binary planes drawn at random, the constant planes 0) and masks with a few legal moves:
    obs [3, 32, 9, 7], mask [3, 252]."""
    rng = np.random.default_rng(0)
    obs = np.zeros((3,) + OBS_SHAPE, np.float32)
    obs[:, :BINARY_PLANES] = rng.integers(0, 2, (3, BINARY_PLANES) + OBS_SHAPE[1:])
    return obs, rng.random((3, N_ACTIONS)) < 0.1


def test_the_free_network_answers_uniform_priors_over_the_legal_moves_and_value_zero() -> None:
    obs, mask = _leaves()
    server = InferenceServer(settings(), InferenceSettings(free_network=True))
    logits, value = server.evaluate(0, *pack_observations(obs), pack_masks(mask))
    lowest = np.finfo(np.float32).min
    np.testing.assert_array_equal(logits, np.where(mask, np.float32(0.0), lowest))
    np.testing.assert_array_equal(value, np.zeros(3, np.float32))
    assert logits.dtype == np.float32 and value.dtype == np.float32


def test_the_default_server_evaluates_its_network() -> None:
    assert InferenceSettings().free_network is False
    obs, mask = _leaves()
    server = InferenceServer(settings(), InferenceSettings())
    logits, value = server.evaluate(0, *pack_observations(obs), pack_masks(mask))
    expected_logits, expected_value = make_evaluator(server.model, torch.device("cpu"))(obs, mask)
    np.testing.assert_allclose(logits, expected_logits, rtol=0, atol=1e-5)
    np.testing.assert_allclose(value, expected_value, rtol=0, atol=1e-5)

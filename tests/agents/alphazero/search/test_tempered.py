"""The policy temperature of a search: the evaluator's logits divided by it, the values its own."""

from __future__ import annotations

import numpy as np
import pytest

from agents.alphazero.search.base import TemperedEvaluator
from envs.encoding import N_ACTIONS, OBS_SHAPE

LOW = np.finfo(np.float32).min


def _masked(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Logits 0, 1, 2, ... on the legal actions and the dtype's minimum elsewhere (as the network masks them)."""
    logits = np.where(mask, np.arange(N_ACTIONS, dtype=np.float32) % 7, LOW).astype(np.float32)
    return logits, np.full(obs.shape[0], 0.25, dtype=np.float32)


def _softmax(row: np.ndarray, legal: np.ndarray) -> np.ndarray:
    e = np.exp(row[legal] - row[legal].max())
    return e / e.sum()


@pytest.mark.parametrize("temperature", [0.1, 0.5, 2.0, 10.0])
def test_the_priors_are_the_softmax_at_the_temperature_and_the_values_are_kept(temperature: float) -> None:
    obs = np.zeros((3, *OBS_SHAPE), dtype=np.float32)
    mask = np.zeros((3, N_ACTIONS), dtype=bool)
    mask[:, 10:40] = True
    mask[1, 50:60] = True
    logits, values = TemperedEvaluator(_masked, temperature)(obs, mask)
    plain, plain_values = _masked(obs, mask)
    assert logits.dtype == np.float32 and np.array_equal(values, plain_values)
    assert np.isfinite(logits).all()  # the masked entries never overflow to -inf below 1
    for k in range(3):
        legal = mask[k]
        want = np.exp(plain[k][legal] / temperature) / np.exp(plain[k][legal] / temperature).sum()
        np.testing.assert_allclose(_softmax(logits[k], legal), want, rtol=1e-5)
        assert (logits[k][~legal] <= -1e30).all()
    flat, sharp = (_softmax(TemperedEvaluator(_masked, t)(obs, mask)[0][0], mask[0]) for t in (3.0, 0.5))
    assert flat.max() < _softmax(plain[0], mask[0]).max() < sharp.max()


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_a_temperature_that_is_not_a_positive_number_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="policy temperature must be a positive number"):
        TemperedEvaluator(_masked, bad)

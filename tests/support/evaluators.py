"""Evaluators for search and self-play tests."""

from __future__ import annotations

from typing import Callable

import numpy as np

from envs.encoding import LEGACY_PLANES, N_ACTIONS, OBS_SHAPE

EvaluatorFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def linear_evaluator(seed: int = 0, value_scale: float = 0.1) -> EvaluatorFn:
    """A fixed linear evaluator, deterministic row by row (so batching cannot change its answers), of planes
    0-23 (the rule planes unread: the weights, and so the searches' goldens, are those before them)."""
    rng = np.random.default_rng(seed)
    size = LEGACY_PLANES * OBS_SHAPE[1] * OBS_SHAPE[2]
    w = rng.normal(size=(size, N_ACTIONS)).astype(np.float32) * 0.3
    v = rng.normal(size=size).astype(np.float32) * value_scale

    def evaluate(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        flat = obs[:, :LEGACY_PLANES].reshape(len(obs), -1)
        # Row by row: a batched product may round differently with the batch size.
        logits = np.stack([row @ w for row in flat]) if len(flat) else np.zeros((0, N_ACTIONS), np.float32)
        return logits, np.tanh(np.array([row @ v for row in flat], dtype=np.float32))

    return evaluate


def counted(evaluator: EvaluatorFn, sizes: list[int]) -> EvaluatorFn:
    """`evaluator`, appending the size of each call to `sizes`."""

    def evaluate(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sizes.append(len(obs))
        return evaluator(obs, mask)

    return evaluate

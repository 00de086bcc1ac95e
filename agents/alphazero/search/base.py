"""The search's shared types, below every module that uses them: `Evaluator`, `SearchOutput`, the uniform evaluator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from envs.encoding import N_ACTIONS

Evaluator = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""(obs float32 [n, 32, 9, 7], mask bool [n, 252]) -> (logits float32 [n, 252], value float32 [n]).

The value is from the view of the side to move in each position, in [-1, 1].
Logits of illegal actions are ignored (the search reads only legal ones). The
arrays passed in are buffers reused by the next call: copy them to keep them.

An evaluator with a true `runs_in_kernels` attribute answers as `uniform_evaluator`
does, so `BatchedMCTS` need not call it: the whole search runs inside numba."""


class UniformEvaluator:
    """Zero logits (uniform priors over the legal actions) and zero values; `BatchedMCTS`
    recognises it (`runs_in_kernels`) and runs the whole search inside numba."""

    runs_in_kernels = True
    """The kernels compute this answer themselves: `BatchedMCTS` runs the whole search inside numba."""

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = obs.shape[0]
        return np.zeros((n, N_ACTIONS), dtype=np.float32), np.zeros(n, dtype=np.float32)


uniform_evaluator = UniformEvaluator()
"""The uniform evaluator (an `Evaluator` with `runs_in_kernels`)."""


class TemperedEvaluator:
    """`evaluator` with its logits divided by `temperature`: the softmax temperature of the move priors at
    every node of a search. Above 1 the priors flatten (a move the network gives little is searched
    sooner: a reply it underrates is found in fewer simulations), below 1 they sharpen; the values are the
    evaluator's own. Illegal entries stay at or above the dtype's minimum (finite)."""

    def __init__(self, evaluator: Evaluator, temperature: float) -> None:
        if not temperature > 0 or not np.isfinite(temperature):
            raise ValueError(f"a policy temperature must be a positive number, got {temperature!r}")
        self.evaluator = evaluator
        self.temperature = float(temperature)

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits, values = self.evaluator(obs, mask)
        tempered = np.asarray(logits, dtype=np.float32) / np.float32(self.temperature)  # a new array: the cache's stay
        np.maximum(tempered, np.finfo(np.float32).min, out=tempered)
        return tempered, values


@dataclass
class SearchOutput:
    """Result of one `BatchedMCTS.search` for B games (rows of inactive games are zero, action -1)."""

    policy: np.ndarray
    """float32 [B, 252]: training target (PUCT: visit distribution; Gumbel: completed-Q improved policy); 0 off the
    legal actions."""
    action: np.ndarray
    """int64 [B]: the action to play (canonical index), -1 for inactive games."""
    root_value: np.ndarray
    """float32 [B]: the root's value from the side to move's view (PUCT: mean of the simulations; Gumbel:
    expected completed Q under the improved policy)."""
    visits: np.ndarray
    """int32 [B, 252]: visits of the root's children (reused ones included)."""

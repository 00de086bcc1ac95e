"""`CachedEvaluator`: an evaluator that answers a position it has already evaluated from memory.

A tree search meets the same position again and again. Jungle's pieces step back and forth, so two
move orders often lead to one position, and the tree (a tree, not a graph) holds it twice; the next
move's search starts from scratch and evaluates again the positions below the move played and the
reply. With the shipped network at 0.5 s a move, a third to a half of the network's inputs in one
search are exact repeats of an earlier input (docs/search.md, "The evaluation cache").

The key is a 128-bit digest (SHA-256's first half) of the network's whole input (the observation's bytes, which
hold the position, the side to move, the counters and the rule planes) and of the legal mask, so a
hit returns what the network said for exactly that input. The answers are those of the wrapped
evaluator, bit for bit, except that an evaluator whose float rounding depends on which positions
share its call (a batched network) may differ from a fresh call in the last bits.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np

from agents.alphazero.search.base import Evaluator
from envs.encoding import N_ACTIONS

MAX_CACHE_ENTRIES = 1 << 22
"""The most positions a cache may hold (each about 1.1 kB: its 252 logits, its value and its key)."""


class CacheSizeError(ValueError):
    """A cache size that is not a whole number in [0, `MAX_CACHE_ENTRIES`]."""


class CachedEvaluator:
    """`evaluator` with a memory of the last `capacity` distinct inputs it answered (least recently used
    first out); a call evaluates only the inputs it does not hold, once each, in one call of `evaluator`.

    `hits` and `misses` count the positions answered from memory and by `evaluator` since the cache was
    made (or `clear`ed). The arrays returned are the caller's own: changing them leaves the cache as it
    was. NonFiniteOutputError and any other error of `evaluator` passes through, and nothing of that
    call is kept.
    """

    def __init__(self, evaluator: Evaluator, capacity: int) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)):
            raise CacheSizeError(f"cache size {capacity!r} must be a whole number of positions")
        if not 1 <= capacity <= MAX_CACHE_ENTRIES:
            raise CacheSizeError(f"cache size {capacity} must lie in [1, {MAX_CACHE_ENTRIES}]")
        self.evaluator = evaluator
        self.capacity = int(capacity)
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[bytes, tuple[np.ndarray, np.float32]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every position and reset the counts."""
        self._entries.clear()
        self.hits = self.misses = 0

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = obs.shape[0]
        obs = np.ascontiguousarray(obs)
        mask = np.ascontiguousarray(mask)
        keys = [_key(obs[i], mask[i]) for i in range(n)]
        logits = np.empty((n, N_ACTIONS), dtype=np.float32)
        values = np.empty(n, dtype=np.float32)
        entries = self._entries
        missing: dict[bytes, list[int]] = {}
        for i, key in enumerate(keys):
            entry = entries.get(key)
            if entry is None:
                missing.setdefault(key, []).append(i)
            else:
                entries.move_to_end(key)
                logits[i], values[i] = entry
        if missing:
            first = np.fromiter((rows[0] for rows in missing.values()), dtype=np.int64, count=len(missing))
            new_logits, new_values = self.evaluator(obs[first], mask[first])
            new_logits = np.asarray(new_logits, dtype=np.float32).reshape(len(first), N_ACTIONS)
            new_values = np.asarray(new_values, dtype=np.float32).reshape(len(first))
            for j, (key, rows) in enumerate(missing.items()):
                logits[rows] = new_logits[j]
                values[rows] = new_values[j]
                entries[key] = (new_logits[j].copy(), new_values[j])
            while len(entries) > self.capacity:
                entries.popitem(last=False)
        self.misses += len(missing)
        self.hits += n - len(missing)
        return logits, values


def _key(obs: np.ndarray, mask: np.ndarray) -> bytes:
    """The first 16 bytes of the SHA-256 of one position's input and mask (SHA-256 over BLAKE2b: CPUs with
    the SHA extensions, most of today's, hash an observation's 8 kB in half the time)."""
    h = hashlib.sha256(obs.data)
    h.update(mask.data)
    return h.digest()[:16]

"""Seeds derived from one seed: every random stream of a run, a tournament or a game is named by keys.

    derive_seed(run_seed, "selfplay", iteration)          # the self-play games of one training iteration
    derive_seed(tournament_seed, "game", pairing, index)  # one tournament game

The same seed and keys give the same stream on every machine, in every
process and across resumes; other keys give an independent stream (numpy's
SeedSequence mixes them). Keys are non-negative ints or strings.
"""

from __future__ import annotations

import zlib
from typing import Union

import numpy as np

Key = Union[int, str]


def derive_seed(seed: int, *keys: Key) -> int:
    """A seed in [0, 2**63) for the stream that `keys` name under `seed` (a non-negative int).

    A string key counts by its CRC-32 with bit 32 set, so it never meets a
    small int key. Raises ValueError for a negative seed or key, or another type."""
    words = [_word(seed, "seed")] + [_word(k, "key") for k in keys]
    state = np.random.SeedSequence(words).generate_state(1, dtype=np.uint64)
    return int(state[0] >> np.uint64(1))


def _word(value: Key, what: str) -> int:
    if isinstance(value, str):
        return zlib.crc32(value.encode("utf-8")) | (1 << 32)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0:
        return int(value)
    raise ValueError(f"a seed {what} must be a non-negative int or a string, got {value!r}")

"""The observation and legal mask packed to bits.

How leaves travel to an inference server and how the replay buffer stores positions.

Planes 0-20 of an observation (`envs.encoding`) are 0/1 and packed to bits (numpy's bit order); planes 21-31
(the counters, the colour and the rule set) are constant per position and kept as eleven floats. A legal mask
packs to 32 bytes.
"""

from __future__ import annotations

import numpy as np

from envs.encoding import N_ACTIONS, OBS_SHAPE

_BINARY_PLANES = 21
_SQUARES = OBS_SHAPE[1] * OBS_SHAPE[2]
_BITS = _BINARY_PLANES * _SQUARES
_PACKED = (_BITS + 7) // 8
PIECE_PLANES = 16
"""Observation planes 0-15 each hold one piece (the mover's, then the opponent's)."""
BINARY_PLANES = _BINARY_PLANES
"""Observation planes 0 .. BINARY_PLANES - 1 are 0/1 (packed to bits); the others are constant per position."""
PACKED_OBS_BYTES = _PACKED
"""Bytes of one position's bits (`pack_observations`)."""
PACKED_MASK_BYTES = (N_ACTIONS + 7) // 8
"""Bytes of one position's legal mask as bits (`pack_masks`)."""


def pack_observations(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """obs [n,32,9,7] -> (bits uint8 [n, 166], scalars float32 [n, 11])."""
    n = len(obs)
    bits = np.packbits(obs[:, :_BINARY_PLANES].reshape(n, -1) > 0.5, axis=1)
    scalars = np.ascontiguousarray(obs[:, _BINARY_PLANES:, 0, 0], dtype=np.float32)
    return bits, scalars


def pack_masks(mask: np.ndarray) -> np.ndarray:
    """Legal masks bool [n, 252] -> bits uint8 [n, 32] (numpy's bit order: the first action is the high bit)."""
    return np.packbits(mask, axis=1)


def unpack_masks(bits: np.ndarray) -> np.ndarray:
    """Inverse of `pack_masks` -> bool [n, 252]."""
    return np.unpackbits(bits, axis=1, count=N_ACTIONS).view(np.bool_)


def pieces_on_board(bits: np.ndarray) -> np.ndarray:
    """Packed observations [n, 166] (`pack_observations`) -> bool [n, 16]: whether the piece of each of
    observation planes 0-15 stands on the board."""
    count = PIECE_PLANES * _SQUARES
    planes = np.unpackbits(bits[:, : (count + 7) // 8], axis=1, count=count)
    return planes.reshape(len(bits), PIECE_PLANES, _SQUARES).max(axis=2) > 0


def unpack_observations(bits: np.ndarray, scalars: np.ndarray) -> np.ndarray:
    """Inverse of `pack_observations` -> float32 [n, 32, 9, 7]."""
    n = len(bits)
    out = np.empty((n,) + OBS_SHAPE, dtype=np.float32)
    out[:, :_BINARY_PLANES] = np.unpackbits(bits, axis=1, count=_BITS).reshape(n, _BINARY_PLANES, *OBS_SHAPE[1:])
    out[:, _BINARY_PLANES:] = scalars[:, :, None, None]
    return out

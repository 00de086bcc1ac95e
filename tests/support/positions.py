"""Network inputs for tests: the observations and legal-action masks of real positions."""

from __future__ import annotations

import numpy as np

from envs import Board, Move
from envs.encoding import N_ACTIONS, OBS_SHAPE, encode_observation, legal_action_mask


def position_batch(n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of `n` positions of one seeded random game from the start (network inputs)."""
    board = Board()
    rng = np.random.default_rng(0)
    obs = np.zeros((n,) + OBS_SHAPE, np.float32)
    mask = np.zeros((n, N_ACTIONS), np.bool_)
    for i in range(n):
        encode_observation(board.state, board.hashes, board.flags, obs[i])
        legal_action_mask(board.state, board.hist, board.flags, mask[i])
        moves = board.legal_move_ints()
        board.push(str(Move.from_int(int(moves[rng.integers(len(moves))]))))
    return obs, mask

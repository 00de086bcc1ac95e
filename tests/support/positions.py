"""Network inputs for tests: the observations and legal-action masks of real positions."""

from __future__ import annotations

import numpy as np

from envs import Board, Move
from envs.encoding import N_ACTIONS, OBS_SHAPE, encode_observation, legal_action_mask, move_to_action


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


def played_positions(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observations, masks and one-hot policies (the move played) of `n` positions of seeded random games
    from the start, a new game after 80 plies or an ended one (replay rows, captures among them)."""
    rng = np.random.default_rng(seed)
    obs = np.zeros((n,) + OBS_SHAPE, np.float32)
    mask = np.zeros((n, N_ACTIONS), np.bool_)
    policy = np.zeros((n, N_ACTIONS), np.float32)
    board = Board()
    for i in range(n):
        if board.is_game_over() or board.ply > 80:
            board = Board()
        encode_observation(board.state, board.hashes, board.flags, obs[i])
        legal_action_mask(board.state, board.hist, board.flags, mask[i])
        moves = board.legal_move_ints()
        m = int(moves[rng.integers(len(moves))])
        policy[i, move_to_action(m, int(board.side_to_move))] = 1.0
        board.push(Move.from_int(m))
    return obs, mask, policy

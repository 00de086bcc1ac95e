"""What the self-play games in progress leave for training, kept per game slot and written by numba kernels over the
whole batch.

Each ply, `record_samples` writes what the search of every game gave
(policy, root value, whether it was a full search) at the row of the game's
ply, in one call. A finished game's training rows come from
`game_samples`, which replays the game's moves from its first position to
encode the observations and legal masks (they are not kept while the game
runs: they follow from the moves) and unpacks the policies.

The policy of a position is kept as its nonzero entries only (at most one
per legal move, so ``MAX_MOVES``): the buffers hold
``B x max_plies x MAX_MOVES`` numbers, not ``x 252``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from envs import kernels as K
from envs.encoding import N_ACTIONS, OBS_SHAPE, encode_observation, legal_action_mask

NO_ACTION = -1
"""`Samples.action` past a position's last nonzero policy entry."""


class Samples(NamedTuple):
    """Per game slot `b` and ply `p` of its game: what the position searched there trains."""

    action: np.ndarray  # int16 [B, P, MAX_MOVES]: actions of the policy's nonzero entries, then NO_ACTION
    prob: np.ndarray  # float32 [B, P, MAX_MOVES]: their probabilities
    side: np.ndarray  # int8 [B, P]: side to move
    full: np.ndarray  # bool [B, P]: a full search (False: a cheap one, or the opponent's move)
    root_value: np.ndarray  # float64 [B, P]: the search's root value (side to move); NaN for an opponent's move


def new_samples(n_games: int, max_plies: int) -> Samples:
    """Empty buffers for `n_games` slots of games of up to `max_plies` plies."""
    shape = (n_games, max_plies)
    return Samples(
        action=np.full(shape + (K.MAX_MOVES,), NO_ACTION, dtype=np.int16),
        prob=np.zeros(shape + (K.MAX_MOVES,), dtype=np.float32),
        side=np.zeros(shape, dtype=np.int8),
        full=np.zeros(shape, dtype=np.bool_),
        root_value=np.zeros(shape, dtype=np.float64),
    )


@njit(cache=True)
def record_samples(
    samples: Samples,
    idx: np.ndarray,
    state: np.ndarray,
    policy: np.ndarray,
    root_value: np.ndarray,
    full: np.ndarray,
    searched: np.ndarray,
) -> None:
    """Row ``state[b, S_PLY]`` of each game `b` of `idx`: its side to move, `full[b]`, and when
    `searched[b]` the search's `policy[b]` (float32 [B, 252]) and `root_value[b]`; otherwise (the
    opponent moves) no policy and a NaN root value."""
    for i in range(idx.shape[0]):
        b = idx[i]
        p = state[b, K.S_PLY]
        samples.side[b, p] = state[b, K.S_SIDE]
        samples.full[b, p] = full[b]
        k = 0
        if searched[b]:
            samples.root_value[b, p] = root_value[b]
            for a in range(N_ACTIONS):
                if policy[b, a] != 0.0 and k < K.MAX_MOVES:
                    samples.action[b, p, k] = a
                    samples.prob[b, p, k] = policy[b, a]
                    k += 1
        else:
            samples.root_value[b, p] = np.nan
        for j in range(k, K.MAX_MOVES):
            samples.action[b, p, j] = NO_ACTION


@njit(cache=True)
def _replay(
    samples: Samples,
    b: int,
    first: np.ndarray,
    moves: np.ndarray,
    flags: np.ndarray,
    obs: np.ndarray,
    mask: np.ndarray,
    policy: np.ndarray,
) -> None:
    st = first.copy()
    plies = obs.shape[0]
    hist = np.zeros((plies + 1, K.HIST_WIDTH), dtype=np.int16)
    hashes = np.zeros(plies + 2, dtype=np.uint64)
    hashes[0] = K.compute_hash(st)
    for p in range(plies):
        encode_observation(st, hashes, flags, obs[p])
        legal_action_mask(st, hist, flags, mask[p])
        for j in range(K.MAX_MOVES):
            a = samples.action[b, p, j]
            if a == NO_ACTION:
                break
            policy[p, a] = samples.prob[b, p, j]
        K.make_move(st, hist, hashes, (int(moves[p, 0]) << 6) | int(moves[p, 1]))


def game_samples(
    samples: Samples, b: int, first: np.ndarray, hist: np.ndarray, plies: int, flags: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(obs float32 [plies, 32, 9, 7], mask bool [plies, 252], policy float32 [plies, 252]) of the game in
    slot `b`, which started from the position `first` and whose moves are `hist[:plies]` (the kernels'
    history rows of the slot)."""
    obs = np.zeros((plies,) + OBS_SHAPE, dtype=np.float32)
    mask = np.zeros((plies, N_ACTIONS), dtype=np.bool_)
    policy = np.zeros((plies, N_ACTIONS), dtype=np.float32)
    _replay(samples, b, first, hist[:plies], flags, obs, mask, policy)
    return obs, mask, policy

"""The vector env's hot path: N games stepped in one numba call.

Each game is one row of the batched arrays below and is played by the same
kernels as `Jungle-v0` (`kernels.make_move`, `env_kernels.observe_position`,
`encoding.action_to_move`); this module only loops over the games and keeps
the episode bookkeeping (rewards, autoreset, the opponent's replies), in
`Jungle-v0`'s conventions (see `envs.env.JungleEnv`).

Batched state (the caller allocates it, ``N`` games, ``cap`` plies of room):

=================  ===================================================
``states``         int16 ``[N, STATE_LEN]``, one `kernels` position a row
``hists``          int16 ``[N, cap, HIST_WIDTH]``, the moves played
``hashes``         uint64 ``[N, cap + 1]``, the Zobrist hash after each ply
``rngs``           uint64 ``[N]``, each game's `kernels.rng_below` state
                   (the random opponent's moves, ``agent_side="random"``)
``agent_sides``    int8 ``[N]``, the agent's side (RED in self-play)
``pending``        bool ``[N]``, the game ended at the last step: the next
                   step resets it (Gymnasium's next-step autoreset)
=================  ===================================================

Outputs, written for every game at every call: ``obs`` float32
``[N, 24, 9, 7]``, ``masks`` int8 ``[N, 252]`` (all 0 once a game is over),
``rewards`` float64 ``[N]`` (from the agent's view; in self-play from the
side that just moved), ``terminated`` / ``truncated`` bool ``[N]``,
``side_rewards`` float32 ``[N, 2]`` (red, blue), ``terminations`` int8
``[N]`` (a `kernels` TERM_* code, `TERM_PLY_CAP` when truncated, TERM_NONE
while the game goes on), ``winners`` int8 ``[N]`` (RED, BLUE, DRAW, or -1)
and ``opponent_moves`` int16 ``[N]`` (the kernel move the opponent answered
with in this call, -1 if none).

Configuration ``config`` int64 ``[4]``: `C_MAX_PLIES` (0 never truncates),
`C_OPPONENT` (`OPP_NONE` self-play, `OPP_RANDOM` uniformly random legal
moves drawn in the kernel, `OPP_EXTERNAL` moves supplied by the caller
through `vector_opponent_step`), `C_SIDE` (RED, BLUE or `SIDE_RANDOM`).

Duties of the caller: room in ``hists``/``hashes`` for two more plies
(`vector_step` returns the highest ply reached); ``moves`` is an int64
``[MAX_MOVES]`` scratch buffer.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from envs import kernels as K
from envs.encoding import N_ACTIONS, action_to_move
from envs.env_kernels import observe_position

TERM_PLY_CAP = 6
"""`terminations` code of a game truncated at `max_plies` (after the kernels' TERM_* codes)."""

C_MAX_PLIES = 0
C_OPPONENT = 1
C_SIDE = 2
N_CONFIG = 4

OPP_NONE = 0
OPP_RANDOM = 1
OPP_EXTERNAL = 2
SIDE_RANDOM = 2

OPENING_ENDED_GAME = -2
"""`vector_step` / `vector_reset` status: an opponent's opening move ended a game (a bad start position)."""


@njit(cache=True, inline="always")
def _clear_outputs(
    i: int,
    rewards: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    side_rewards: np.ndarray,
    terminations: np.ndarray,
    winners: np.ndarray,
    opponent_moves: np.ndarray,
) -> None:
    rewards[i] = 0.0
    terminated[i] = False
    truncated[i] = False
    side_rewards[i, 0] = 0.0
    side_rewards[i, 1] = 0.0
    terminations[i] = K.TERM_NONE
    winners[i] = -1
    opponent_moves[i] = -1


@njit(cache=True, inline="always")
def _judge(
    i: int,
    term: int,
    winner: int,
    viewer: int,
    ply: int,
    max_plies: int,
    masks: np.ndarray,
    pending: np.ndarray,
    rewards: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    side_rewards: np.ndarray,
    terminations: np.ndarray,
    winners: np.ndarray,
) -> bool:
    """Record how game `i` stands after a move (rewards from `viewer`'s side); return whether it ended.

    As `JungleEnv.step`: terminated when the rules end the game, else
    truncated once `ply` reaches `max_plies` (mask cleared, reward 0)."""
    if term != K.TERM_NONE:
        terminated[i] = True
        terminations[i] = term
        winners[i] = winner
        if winner != K.DRAW:
            side_rewards[i, winner] = 1.0
            side_rewards[i, 1 - winner] = -1.0
            rewards[i] = 1.0 if winner == viewer else -1.0
        pending[i] = True
        return True
    if max_plies > 0 and ply >= max_plies:
        truncated[i] = True
        terminations[i] = TERM_PLY_CAP
        masks[i, :] = 0
        pending[i] = True
        return True
    return False


@njit(cache=True)
def _reset_game(
    i: int,
    st0: np.ndarray,
    hash0: np.uint64,
    flags: np.ndarray,
    config: np.ndarray,
    states: np.ndarray,
    hists: np.ndarray,
    hashes: np.ndarray,
    rngs: np.ndarray,
    agent_sides: np.ndarray,
    moves: np.ndarray,
    masks: np.ndarray,
    obs: np.ndarray,
    opponent_moves: np.ndarray,
) -> int:
    """Start game `i` again from `st0`; a random opponent opens when the agent is not to move.

    Returns 0, or `OPENING_ENDED_GAME`."""
    st = states[i]
    st[:] = st0
    hashes[i, 0] = hash0
    side = config[C_SIDE]
    if side == SIDE_RANDOM:
        side = K.rng_below(rngs[i : i + 1], 2)
    agent_sides[i] = side
    term, winner, n = observe_position(st, hists[i], hashes[i], flags, moves, masks[i], obs[i])
    if config[C_OPPONENT] == OPP_RANDOM and st[K.S_SIDE] != side:
        m = moves[K.rng_below(rngs[i : i + 1], n)]
        K.make_move(st, hists[i], hashes[i], m)
        opponent_moves[i] = m
        term, winner, n = observe_position(st, hists[i], hashes[i], flags, moves, masks[i], obs[i])
        if term != K.TERM_NONE:
            return OPENING_ENDED_GAME
    return 0


@njit(cache=True)
def vector_reset(
    reset_mask: np.ndarray,
    st0: np.ndarray,
    hash0: np.uint64,
    flags: np.ndarray,
    config: np.ndarray,
    states: np.ndarray,
    hists: np.ndarray,
    hashes: np.ndarray,
    rngs: np.ndarray,
    agent_sides: np.ndarray,
    pending: np.ndarray,
    moves: np.ndarray,
    obs: np.ndarray,
    masks: np.ndarray,
    rewards: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    side_rewards: np.ndarray,
    terminations: np.ndarray,
    winners: np.ndarray,
    opponent_moves: np.ndarray,
) -> int:
    """Reset the games where bool `reset_mask[N]` is set; return 0 or `OPENING_ENDED_GAME`.

    The other games and their outputs are left as they are."""
    status = 0
    for i in range(states.shape[0]):
        if not reset_mask[i]:
            continue
        _clear_outputs(i, rewards, terminated, truncated, side_rewards, terminations, winners, opponent_moves)
        pending[i] = False
        r = _reset_game(i, st0, hash0, flags, config, states, hists, hashes, rngs, agent_sides, moves, masks, obs,
                        opponent_moves)
        if r != 0:
            status = r
    return status


@njit(cache=True)
def first_illegal(actions: np.ndarray, masks: np.ndarray, skip: np.ndarray) -> int:
    """Index of the first game whose action is out of range or masked (games with `skip` set
    are not checked); -1 when all are legal."""
    for i in range(actions.shape[0]):
        if skip[i]:
            continue
        a = actions[i]
        if a < 0 or a >= N_ACTIONS or masks[i, a] == 0:
            return i
    return -1


@njit(cache=True)
def vector_step(
    actions: np.ndarray,
    st0: np.ndarray,
    hash0: np.uint64,
    flags: np.ndarray,
    config: np.ndarray,
    states: np.ndarray,
    hists: np.ndarray,
    hashes: np.ndarray,
    rngs: np.ndarray,
    agent_sides: np.ndarray,
    pending: np.ndarray,
    awaiting: np.ndarray,
    moves: np.ndarray,
    obs: np.ndarray,
    masks: np.ndarray,
    rewards: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    side_rewards: np.ndarray,
    terminations: np.ndarray,
    winners: np.ndarray,
    opponent_moves: np.ndarray,
) -> tuple:
    """Advance every game one env step: ``(status, highest_ply)``.

    A game in `pending` is reset (its action ignored); any other plays its
    action, which the caller has checked (`first_illegal`), then, against an
    opponent, the opponent's reply. With `OPP_EXTERNAL` the reply is left to
    `vector_opponent_step`: bool `awaiting[N]` marks the games whose
    opponent is to move (also the games just reset whose agent is not to
    move). status is 0 or `OPENING_ENDED_GAME`."""
    max_plies = config[C_MAX_PLIES]
    opponent = config[C_OPPONENT]
    status = 0
    top = 0
    for i in range(states.shape[0]):
        _clear_outputs(i, rewards, terminated, truncated, side_rewards, terminations, winners, opponent_moves)
        awaiting[i] = False
        st = states[i]
        if pending[i]:
            pending[i] = False
            r = _reset_game(i, st0, hash0, flags, config, states, hists, hashes, rngs, agent_sides, moves, masks,
                            obs, opponent_moves)
            if r != 0:
                status = r
            awaiting[i] = opponent == OPP_EXTERNAL and st[K.S_SIDE] != agent_sides[i]
        else:
            viewer = st[K.S_SIDE]  # the agent (in self-play the side to move): rewards are from its view
            K.make_move(st, hists[i], hashes[i], action_to_move(st, actions[i]))
            term, winner, n = observe_position(st, hists[i], hashes[i], flags, moves, masks[i], obs[i])
            ended = _judge(i, term, winner, viewer, st[K.S_PLY], max_plies, masks, pending, rewards, terminated,
                           truncated, side_rewards, terminations, winners)
            if not ended and opponent == OPP_RANDOM:
                m = moves[K.rng_below(rngs[i : i + 1], n)]
                K.make_move(st, hists[i], hashes[i], m)
                opponent_moves[i] = m
                term, winner, n = observe_position(st, hists[i], hashes[i], flags, moves, masks[i], obs[i])
                _judge(i, term, winner, viewer, st[K.S_PLY], max_plies, masks, pending, rewards, terminated,
                       truncated, side_rewards, terminations, winners)
            elif not ended and opponent == OPP_EXTERNAL:
                awaiting[i] = True
        if st[K.S_PLY] > top:
            top = st[K.S_PLY]
    return status, top


@njit(cache=True)
def vector_opponent_step(
    actions: np.ndarray,
    awaiting: np.ndarray,
    flags: np.ndarray,
    config: np.ndarray,
    states: np.ndarray,
    hists: np.ndarray,
    hashes: np.ndarray,
    agent_sides: np.ndarray,
    pending: np.ndarray,
    moves: np.ndarray,
    obs: np.ndarray,
    masks: np.ndarray,
    rewards: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    side_rewards: np.ndarray,
    terminations: np.ndarray,
    winners: np.ndarray,
    opponent_moves: np.ndarray,
) -> int:
    """Play the external opponent's `actions[N]` in the games marked `awaiting` (checked by
    `first_illegal`); return 0, or `OPENING_ENDED_GAME` when an opening move (ply 1) ended a game."""
    max_plies = config[C_MAX_PLIES]
    status = 0
    for i in range(states.shape[0]):
        if not awaiting[i]:
            continue
        st = states[i]
        m = action_to_move(st, actions[i])
        K.make_move(st, hists[i], hashes[i], m)
        opponent_moves[i] = m
        term, winner, n = observe_position(st, hists[i], hashes[i], flags, moves, masks[i], obs[i])
        if st[K.S_PLY] == 1 and term != K.TERM_NONE:
            status = OPENING_ENDED_GAME
        _judge(i, term, winner, agent_sides[i], st[K.S_PLY], max_plies, masks, pending, rewards, terminated,
               truncated, side_rewards, terminations, winners)
    return status


@njit(cache=True)
def sample_legal_actions(masks: np.ndarray, uniforms: np.ndarray, out: np.ndarray) -> None:
    """Fill `out[N]` with a uniformly drawn legal action of each game (the k-th legal action,
    k = floor(uniforms[i] * count), uniforms in [0, 1)); 0 where no action is legal."""
    for i in range(masks.shape[0]):
        row = masks[i]
        count = 0
        for a in range(N_ACTIONS):
            count += row[a] != 0
        out[i] = 0
        if count == 0:
            continue
        k = int(uniforms[i] * count)
        for a in range(N_ACTIONS):
            if row[a] != 0:
                if k == 0:
                    out[i] = a
                    break
                k -= 1

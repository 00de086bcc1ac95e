"""Kernels over a batch of games: one numba call plays, judges, observes or resets many games.

The games are the rows of a `envs.batch.GameBatch`'s arrays, handed to the
kernels as they are or in a `BatchArrays` (``GameBatch.arrays()``):

=================  ===================================================
``state``          int16 ``[N, STATE_LEN]``, one `kernels` position a row
``hist``           int16 ``[N, cap, HIST_WIDTH]``, the moves played
``hashes``         uint64 ``[N, cap + 1]``, the Zobrist hash after each ply
=================  ===================================================

The batch's own kernels take ``flags`` int64 ``[N, N_FLAGS]``: row ``i``
is game ``i``'s rule flags (`RuleSet.flags`), so one batch may mix rule sets.

Each game is played by the same kernels as `Jungle-v0` and `envs.Board`
(`kernels.make_move`, `env_kernels.observe_position`,
`encoding.action_to_move`); the kernels here only loop over the games.

**The batch's own kernels** (`GameBatch`, for self-play and the search):
`encode_batch` and `mask_batch` (observations and masks of some games),
`play_batch` (one canonical action per game, each game then judged by
`judge`), `reset_batch` and `first_position`.

**The vector env's hot path** (`envs.vector.JungleVectorEnv`): the same
arrays plus the episode bookkeeping (rewards, autoreset, the opponent's
replies), in `Jungle-v0`'s conventions (see `envs.env.JungleEnv`). The
arrays travel in named tuples, which numba compiles like separate arguments.

`Setup` (fixed per env): ``st0`` int16 ``[STATE_LEN]`` the start position,
``hash0`` uint64 ``[1]`` its hash, ``flags`` the rule flags, ``config`` int64
``[N_CONFIG]``: `C_MAX_PLIES` (0 never truncates), `C_OPPONENT` (`OPP_NONE`
self-play, `OPP_RANDOM` uniformly random legal replies drawn here,
`OPP_EXTERNAL` replies supplied by the caller through
`vector_opponent_step`), `C_SIDE` (RED, BLUE or `SIDE_RANDOM`).

`Episodes` (``N`` games):

=================  ===================================================
``rngs``           uint64 ``[N]``, each game's `kernels.rng_below` state
                   (the random opponent's moves, ``agent_side="random"``)
``agent_sides``    int8 ``[N]``, the agent's side (RED in self-play)
``pending``        bool ``[N]``, the game ended at the last step: the next
                   step resets it (Gymnasium's next-step autoreset)
``awaiting``       bool ``[N]``, an external opponent is to move
=================  ===================================================

`Outputs`, written for every game a call touches: ``obs`` float32
``[N, 32, 9, 7]``, ``masks`` int8 ``[N, 252]`` (all 0 once a game is over),
``rewards`` float64 ``[N]`` (from the agent's view; in self-play from the
side that just moved), ``terminated`` / ``truncated`` bool ``[N]``,
``side_rewards`` float32 ``[N, 2]`` (red, blue), ``terminations`` int8
``[N]`` (a `kernels` TERM_* code, `TERM_PLY_CAP` when truncated, TERM_NONE
while the game goes on), ``winners`` int8 ``[N]`` (RED, BLUE, DRAW, or -1)
and ``opponent_moves`` int16 ``[N]`` (the kernel move the opponent answered
with in this call, -1 if none).

Duties of the caller: room in ``hist``/``hashes`` for two more plies
(`vector_step` returns the highest ply reached; `GameBatch.grow`); ``moves``
is an int64 ``[MAX_MOVES]`` scratch buffer.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from envs import kernels as K
from envs.encoding import N_ACTIONS, action_to_move, encode_observation, legal_action_mask
from envs.env_kernels import observe_position

TERM_PLY_CAP = 6
"""`terminations` code of a game truncated at `max_plies` (after the kernels' TERM_* codes)."""

C_MAX_PLIES = 0
C_OPPONENT = 1
C_SIDE = 2
N_CONFIG = 3

OPP_NONE = 0
OPP_RANDOM = 1
OPP_EXTERNAL = 2
SIDE_RANDOM = 2

OPENING_ENDED_GAME = -2
"""Status of the calls below: an opponent's opening move ended a game (a bad start position)."""


class Setup(NamedTuple):
    """What every game starts from and plays by (see the module doc)."""

    st0: np.ndarray
    hash0: np.ndarray
    flags: np.ndarray
    config: np.ndarray


class BatchArrays(NamedTuple):
    """The positions of a `GameBatch`'s games and their pasts (see the module doc)."""

    state: np.ndarray
    hist: np.ndarray
    hashes: np.ndarray


class Episodes(NamedTuple):
    """The vector env's episode bookkeeping of its N games (see the module doc)."""

    rngs: np.ndarray
    agent_sides: np.ndarray
    pending: np.ndarray
    awaiting: np.ndarray


class Outputs(NamedTuple):
    """What a step returns for the N games (see the module doc)."""

    obs: np.ndarray
    masks: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    side_rewards: np.ndarray
    terminations: np.ndarray
    winners: np.ndarray
    opponent_moves: np.ndarray


# --- the batch's kernels -------------------------------------------------------------
@njit(cache=True)
def encode_batch(state: np.ndarray, hashes: np.ndarray, flags: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """`out[k]` = observation of game `idx[k]` (float32 [n, 32, 9, 7]) under its flags `flags[idx[k]]`."""
    for k in range(idx.shape[0]):
        i = idx[k]
        encode_observation(state[i], hashes[i], flags[i], out[k])


@njit(cache=True)
def mask_batch(state: np.ndarray, hist: np.ndarray, flags: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """`out[k]` = legal-action mask of game `idx[k]` (bool [n, 252]) under its flags `flags[idx[k]]`."""
    for k in range(idx.shape[0]):
        i = idx[k]
        legal_action_mask(state[i], hist[i], flags[i], out[k])


@njit(cache=True, inline="always")
def _play_if_legal(
    state: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, m: int, buf: np.ndarray
) -> bool:
    """Play kernel move `m` if it is among the legal moves under `flags` (`buf`: scratch of K.MAX_MOVES);
    return whether it was played."""
    n = K.generate_moves(state, hist, flags, buf)
    for j in range(n):
        if buf[j] == m:
            K.make_move(state, hist, hashes, m)
            return True
    return False


@njit(cache=True)
def play_action(state: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, action: int) -> int:
    """Play `action` (canonical index) if legal under `flags` (one game's, int64 [N_FLAGS]); return the
    kernel move, or -1 if illegal."""
    m = action_to_move(state, action)
    if m < 0:
        return -1
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    return m if _play_if_legal(state, hist, hashes, flags, m, buf) else -1


@njit(cache=True)
def play_moves(state: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, moves: np.ndarray) -> int:
    """Play the kernel moves `moves` (int64 [n]) one after the other, each if legal under `flags` (one game's);
    return how many were played (n, or the index of the first illegal one)."""
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    for k in range(moves.shape[0]):
        if not _play_if_legal(state, hist, hashes, flags, moves[k], buf):
            return k
    return moves.shape[0]


@njit(cache=True)
def judge(
    state: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    i: int,
    max_plies: int,
    done: np.ndarray,
    truncated: np.ndarray,
    term: np.ndarray,
    winner: np.ndarray,
) -> None:
    """Game `i`'s termination and winner by its rules (`flags[i]`); done when they end it or when it has
    played `max_plies` plies (truncated: no result by the rules; 0 never truncates)."""
    t, w = K.outcome(state[i], hist[i], hashes[i], flags[i])
    term[i], winner[i] = t, w
    done[i] = t != K.TERM_NONE
    truncated[i] = False
    if not done[i] and max_plies > 0 and state[i, K.S_PLY] >= max_plies:
        done[i] = True
        truncated[i] = True


@njit(cache=True)
def play_batch(
    state: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    actions: np.ndarray,
    max_plies: int,
    done: np.ndarray,
    truncated: np.ndarray,
    term: np.ndarray,
    winner: np.ndarray,
    moves: np.ndarray,
) -> int:
    """Play `actions[i]` (canonical index) in every game `i` whose action is >= 0, then judge its end
    (`GameBatch._update_outcome`'s rules); `moves[i]` gets the kernel move played (-1 where none).
    Returns the first game whose action is illegal or which is over (its later games unplayed), else -1."""
    for i in range(actions.shape[0]):
        moves[i] = -1
        if actions[i] < 0:
            continue
        if done[i]:
            return i
        m = play_action(state[i], hist[i], hashes[i], flags[i], actions[i])
        if m < 0:
            return i
        moves[i] = m
        judge(state, hist, hashes, flags, i, max_plies, done, truncated, term, winner)
    return -1


@njit(cache=True)
def reset_batch(
    state: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    idx: np.ndarray,
    first: np.ndarray,
    max_plies: int,
    done: np.ndarray,
    truncated: np.ndarray,
    term: np.ndarray,
    winner: np.ndarray,
) -> None:
    """Start the games `idx` again from the position `first` (`GameBatch.reset` for many games)."""
    h = K.compute_hash(first)
    for k in range(idx.shape[0]):
        i = idx[k]
        state[i, :] = first
        hist[i, :, :] = 0
        hashes[i, :] = 0
        hashes[i, 0] = h
        judge(state, hist, hashes, flags, i, max_plies, done, truncated, term, winner)


@njit(cache=True)
def first_position(state: np.ndarray, hist: np.ndarray, out: np.ndarray) -> None:
    """`out` = the position before every move of `hist` was played (the game's first position)."""
    out[:] = state
    for _ in range(state[K.S_PLY]):
        K.unmake_move(out, hist)


# --- the vector env's hot path ---------------------------------------------------------
@njit(cache=True, inline="always")
def _clear(i: int, out: Outputs) -> None:
    out.rewards[i] = 0.0
    out.terminated[i] = False
    out.truncated[i] = False
    out.side_rewards[i, 0] = 0.0
    out.side_rewards[i, 1] = 0.0
    out.terminations[i] = K.TERM_NONE
    out.winners[i] = -1
    out.opponent_moves[i] = -1


@njit(cache=True, inline="always")
def _observe(i: int, setup: Setup, arrays: BatchArrays, out: Outputs, moves: np.ndarray) -> tuple:
    """`observe_position` of game `i` into its outputs: (termination, winner, n_moves)."""
    return observe_position(
        arrays.state[i], arrays.hist[i], arrays.hashes[i], setup.flags, moves, out.masks[i], out.obs[i]
    )


@njit(cache=True, inline="always")
def _play_move(i: int, m: int, setup: Setup, arrays: BatchArrays, out: Outputs, moves: np.ndarray) -> tuple:
    """Play kernel move `m` in game `i` and observe the position reached: (termination, winner, n_moves)."""
    K.make_move(arrays.state[i], arrays.hist[i], arrays.hashes[i], m)
    return _observe(i, setup, arrays, out, moves)


@njit(cache=True, inline="always")
def _at_cap(st: np.ndarray, setup: Setup) -> bool:
    """Whether the game in `st` has reached the ply cap or a counter its limit (`JungleEnv`'s truncation)."""
    max_plies = setup.config[C_MAX_PLIES]
    return (max_plies > 0 and st[K.S_PLY] >= max_plies) or K.counters_full(st)


@njit(cache=True)
def _record_end(
    i: int, term: int, winner: int, viewer: int, setup: Setup, arrays: BatchArrays, episodes: Episodes, out: Outputs
) -> bool:
    """Record how game `i` stands after a move (rewards from `viewer`'s side); return whether it ended.

    As `JungleEnv.step`: terminated when the rules end the game, else
    truncated once the game's ply reaches the cap (mask cleared, reward 0)."""
    if term != K.TERM_NONE:
        out.terminated[i] = True
        out.terminations[i] = term
        out.winners[i] = winner
        if winner != K.DRAW:
            out.side_rewards[i, winner] = 1.0
            out.side_rewards[i, 1 - winner] = -1.0
            out.rewards[i] = 1.0 if winner == viewer else -1.0
    elif _at_cap(arrays.state[i], setup):
        out.truncated[i] = True
        out.terminations[i] = TERM_PLY_CAP
        out.masks[i, :] = 0
    else:
        return False
    episodes.pending[i] = True
    return True


@njit(cache=True, inline="always")
def _random_reply(
    i: int, n: int, setup: Setup, arrays: BatchArrays, episodes: Episodes, out: Outputs, moves: np.ndarray
) -> tuple:
    """The random opponent plays one of the `n` legal moves in `moves` (from the last observation)."""
    m = moves[K.rng_below(episodes.rngs[i : i + 1], n)]
    out.opponent_moves[i] = m
    return _play_move(i, m, setup, arrays, out, moves)


@njit(cache=True)
def _reset_game(i: int, setup: Setup, arrays: BatchArrays, episodes: Episodes, out: Outputs, moves: np.ndarray) -> int:
    """Start game `i` again; a random opponent opens when the agent is not to move, an external
    one is marked `awaiting`. Returns 0, or `OPENING_ENDED_GAME`."""
    _clear(i, out)
    st = arrays.state[i]
    st[:] = setup.st0
    arrays.hashes[i, 0] = setup.hash0[0]
    episodes.pending[i] = False
    side = setup.config[C_SIDE]
    if side == SIDE_RANDOM:
        side = K.rng_below(episodes.rngs[i : i + 1], 2)
    episodes.agent_sides[i] = side
    term, winner, n = _observe(i, setup, arrays, out, moves)
    opponent = setup.config[C_OPPONENT]
    episodes.awaiting[i] = opponent == OPP_EXTERNAL and st[K.S_SIDE] != side
    if opponent == OPP_RANDOM and st[K.S_SIDE] != side:
        term, winner, n = _random_reply(i, n, setup, arrays, episodes, out, moves)
        if term != K.TERM_NONE:
            return OPENING_ENDED_GAME
    return 0


@njit(cache=True)
def vector_reset(
    reset_mask: np.ndarray, setup: Setup, arrays: BatchArrays, episodes: Episodes, out: Outputs, moves: np.ndarray
) -> int:
    """Reset the games where bool `reset_mask[N]` is set; return 0 or `OPENING_ENDED_GAME`.

    The other games and their outputs are left as they are."""
    status = 0
    for i in range(arrays.state.shape[0]):
        if reset_mask[i]:
            r = _reset_game(i, setup, arrays, episodes, out, moves)
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
    actions: np.ndarray, setup: Setup, arrays: BatchArrays, episodes: Episodes, out: Outputs, moves: np.ndarray
) -> tuple:
    """Advance every game one env step: ``(status, highest_ply)``.

    A game in `pending` is reset (its action ignored); any other plays its
    action, which the caller has checked (`first_illegal`), then, against an
    opponent, the opponent's reply. With `OPP_EXTERNAL` the reply is left to
    `vector_opponent_step`: `awaiting` marks the games whose opponent is to
    move (also the games just reset whose agent is not to move). status is
    0 or `OPENING_ENDED_GAME`."""
    opponent = setup.config[C_OPPONENT]
    status = 0
    top = 0
    for i in range(arrays.state.shape[0]):
        st = arrays.state[i]
        if episodes.pending[i]:
            r = _reset_game(i, setup, arrays, episodes, out, moves)
            if r != 0:
                status = r
        else:
            _clear(i, out)
            episodes.awaiting[i] = False
            viewer = st[K.S_SIDE]  # the agent (in self-play the side to move): rewards are from its view
            m = action_to_move(st, actions[i])
            if opponent == OPP_RANDOM:
                # The position between the agent's move and the reply is observed only if the game ends there.
                K.make_move(st, arrays.hist[i], arrays.hashes[i], m)
                term, winner, n = K.outcome_and_moves(st, arrays.hist[i], arrays.hashes[i], setup.flags, moves)
                if term == K.TERM_NONE and not _at_cap(st, setup):
                    term, winner, n = _random_reply(i, n, setup, arrays, episodes, out, moves)
                else:
                    term, winner, n = _observe(i, setup, arrays, out, moves)
                _record_end(i, term, winner, viewer, setup, arrays, episodes, out)
            else:
                term, winner, n = _play_move(i, m, setup, arrays, out, moves)
                if not _record_end(i, term, winner, viewer, setup, arrays, episodes, out) and opponent == OPP_EXTERNAL:
                    episodes.awaiting[i] = True
        if st[K.S_PLY] > top:
            top = st[K.S_PLY]
    return status, top


@njit(cache=True)
def vector_opponent_step(
    actions: np.ndarray, setup: Setup, arrays: BatchArrays, episodes: Episodes, out: Outputs, moves: np.ndarray
) -> int:
    """Play the external opponent's `actions[N]` in the games marked `awaiting` (checked by
    `first_illegal`), then clear the marks; return 0, or `OPENING_ENDED_GAME` when an opening
    move (ply 1) ended a game."""
    status = 0
    for i in range(arrays.state.shape[0]):
        if not episodes.awaiting[i]:
            continue
        episodes.awaiting[i] = False
        st = arrays.state[i]
        m = action_to_move(st, actions[i])
        out.opponent_moves[i] = m
        term, winner, n = _play_move(i, m, setup, arrays, out, moves)
        if st[K.S_PLY] == 1 and term != K.TERM_NONE:
            status = OPENING_ENDED_GAME
        _record_end(i, term, winner, episodes.agent_sides[i], setup, arrays, episodes, out)
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

"""The vector env's hot path: N games stepped in one numba call.

Each game is one row of the batched arrays below and is played by the same
kernels as `Jungle-v0` (`kernels.make_move`, `env_kernels.observe_position`,
`encoding.action_to_move`); this module only loops over the games and keeps
the episode bookkeeping (rewards, autoreset, the opponent's replies), in
`Jungle-v0`'s conventions (see `envs.env.JungleEnv`). The arrays travel in
three named tuples, which numba compiles like separate arguments.

`Setup` (fixed per env): ``st0`` int16 ``[STATE_LEN]`` the start position,
``hash0`` uint64 ``[1]`` its hash, ``flags`` the rule flags, ``config`` int64
``[N_CONFIG]``: `C_MAX_PLIES` (0 never truncates), `C_OPPONENT` (`OPP_NONE`
self-play, `OPP_RANDOM` uniformly random legal replies drawn here,
`OPP_EXTERNAL` replies supplied by the caller through
`vector_opponent_step`), `C_SIDE` (RED, BLUE or `SIDE_RANDOM`).

`Games` (``N`` games, ``cap`` plies of room):

=================  ===================================================
``states``         int16 ``[N, STATE_LEN]``, one `kernels` position a row
``hists``          int16 ``[N, cap, HIST_WIDTH]``, the moves played
``hashes``         uint64 ``[N, cap + 1]``, the Zobrist hash after each ply
``rngs``           uint64 ``[N]``, each game's `kernels.rng_below` state
                   (the random opponent's moves, ``agent_side="random"``)
``agent_sides``    int8 ``[N]``, the agent's side (RED in self-play)
``pending``        bool ``[N]``, the game ended at the last step: the next
                   step resets it (Gymnasium's next-step autoreset)
``awaiting``       bool ``[N]``, an external opponent is to move
=================  ===================================================

`Outputs`, written for every game a call touches: ``obs`` float32
``[N, 24, 9, 7]``, ``masks`` int8 ``[N, 252]`` (all 0 once a game is over),
``rewards`` float64 ``[N]`` (from the agent's view; in self-play from the
side that just moved), ``terminated`` / ``truncated`` bool ``[N]``,
``side_rewards`` float32 ``[N, 2]`` (red, blue), ``terminations`` int8
``[N]`` (a `kernels` TERM_* code, `TERM_PLY_CAP` when truncated, TERM_NONE
while the game goes on), ``winners`` int8 ``[N]`` (RED, BLUE, DRAW, or -1)
and ``opponent_moves`` int16 ``[N]`` (the kernel move the opponent answered
with in this call, -1 if none).

Duties of the caller: room in ``hists``/``hashes`` for two more plies
(`vector_step` returns the highest ply reached); ``moves`` is an int64
``[MAX_MOVES]`` scratch buffer.
"""

from __future__ import annotations

from typing import NamedTuple

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


class Games(NamedTuple):
    """The N games' state (see the module doc)."""

    states: np.ndarray
    hists: np.ndarray
    hashes: np.ndarray
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
def _observe(i: int, setup: Setup, games: Games, out: Outputs, moves: np.ndarray) -> tuple:
    """`observe_position` of game `i` into its outputs: (termination, winner, n_moves)."""
    return observe_position(games.states[i], games.hists[i], games.hashes[i], setup.flags, moves, out.masks[i],
                            out.obs[i])


@njit(cache=True, inline="always")
def _play(i: int, m: int, setup: Setup, games: Games, out: Outputs, moves: np.ndarray) -> tuple:
    """Play kernel move `m` in game `i` and observe the position reached: (termination, winner, n_moves)."""
    K.make_move(games.states[i], games.hists[i], games.hashes[i], m)
    return _observe(i, setup, games, out, moves)


@njit(cache=True, inline="always")
def _at_cap(st: np.ndarray, setup: Setup) -> bool:
    """Whether the game in `st` has reached the ply cap or a counter its limit (`JungleEnv`'s truncation)."""
    max_plies = setup.config[C_MAX_PLIES]
    return (max_plies > 0 and st[K.S_PLY] >= max_plies) or K.counters_full(st)


@njit(cache=True)
def _judge(i: int, term: int, winner: int, viewer: int, setup: Setup, games: Games, out: Outputs) -> bool:
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
    elif _at_cap(games.states[i], setup):
        out.truncated[i] = True
        out.terminations[i] = TERM_PLY_CAP
        out.masks[i, :] = 0
    else:
        return False
    games.pending[i] = True
    return True


@njit(cache=True, inline="always")
def _random_reply(i: int, n: int, setup: Setup, games: Games, out: Outputs, moves: np.ndarray) -> tuple:
    """The random opponent plays one of the `n` legal moves in `moves` (from the last observation)."""
    m = moves[K.rng_below(games.rngs[i : i + 1], n)]
    out.opponent_moves[i] = m
    return _play(i, m, setup, games, out, moves)


@njit(cache=True)
def _reset_game(i: int, setup: Setup, games: Games, out: Outputs, moves: np.ndarray) -> int:
    """Start game `i` again; a random opponent opens when the agent is not to move, an external
    one is marked `awaiting`. Returns 0, or `OPENING_ENDED_GAME`."""
    _clear(i, out)
    st = games.states[i]
    st[:] = setup.st0
    games.hashes[i, 0] = setup.hash0[0]
    games.pending[i] = False
    side = setup.config[C_SIDE]
    if side == SIDE_RANDOM:
        side = K.rng_below(games.rngs[i : i + 1], 2)
    games.agent_sides[i] = side
    term, winner, n = _observe(i, setup, games, out, moves)
    opponent = setup.config[C_OPPONENT]
    games.awaiting[i] = opponent == OPP_EXTERNAL and st[K.S_SIDE] != side
    if opponent == OPP_RANDOM and st[K.S_SIDE] != side:
        term, winner, n = _random_reply(i, n, setup, games, out, moves)
        if term != K.TERM_NONE:
            return OPENING_ENDED_GAME
    return 0


@njit(cache=True)
def vector_reset(reset_mask: np.ndarray, setup: Setup, games: Games, out: Outputs, moves: np.ndarray) -> int:
    """Reset the games where bool `reset_mask[N]` is set; return 0 or `OPENING_ENDED_GAME`.

    The other games and their outputs are left as they are."""
    status = 0
    for i in range(games.states.shape[0]):
        if reset_mask[i]:
            r = _reset_game(i, setup, games, out, moves)
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
def vector_step(actions: np.ndarray, setup: Setup, games: Games, out: Outputs, moves: np.ndarray) -> tuple:
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
    for i in range(games.states.shape[0]):
        st = games.states[i]
        if games.pending[i]:
            r = _reset_game(i, setup, games, out, moves)
            if r != 0:
                status = r
        else:
            _clear(i, out)
            games.awaiting[i] = False
            viewer = st[K.S_SIDE]  # the agent (in self-play the side to move): rewards are from its view
            m = action_to_move(st, actions[i])
            if opponent == OPP_RANDOM:
                # The position between the agent's move and the reply is observed only if the game ends there.
                K.make_move(st, games.hists[i], games.hashes[i], m)
                term, winner, n = K.outcome_and_moves(st, games.hists[i], games.hashes[i], setup.flags, moves)
                if term == K.TERM_NONE and not _at_cap(st, setup):
                    term, winner, n = _random_reply(i, n, setup, games, out, moves)
                else:
                    term, winner, n = _observe(i, setup, games, out, moves)
                _judge(i, term, winner, viewer, setup, games, out)
            else:
                term, winner, n = _play(i, m, setup, games, out, moves)
                if not _judge(i, term, winner, viewer, setup, games, out) and opponent == OPP_EXTERNAL:
                    games.awaiting[i] = True
        if st[K.S_PLY] > top:
            top = st[K.S_PLY]
    return status, top


@njit(cache=True)
def vector_opponent_step(actions: np.ndarray, setup: Setup, games: Games, out: Outputs, moves: np.ndarray) -> int:
    """Play the external opponent's `actions[N]` in the games marked `awaiting` (checked by
    `first_illegal`), then clear the marks; return 0, or `OPENING_ENDED_GAME` when an opening
    move (ply 1) ended a game."""
    status = 0
    for i in range(games.states.shape[0]):
        if not games.awaiting[i]:
            continue
        games.awaiting[i] = False
        st = games.states[i]
        m = action_to_move(st, actions[i])
        out.opponent_moves[i] = m
        term, winner, n = _play(i, m, setup, games, out, moves)
        if st[K.S_PLY] == 1 and term != K.TERM_NONE:
            status = OPENING_ENDED_GAME
        _judge(i, term, winner, games.agent_sides[i], setup, games, out)
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

"""The Gymnasium environment's hot path: one numba call per env step.

`env_step_action` decodes and checks an action, plays it, and fills the
outcome, the next action mask, the observation and the JFEN in one call, so
that a Python `step` crosses into compiled code once. `env_step_move` does
the same for a move given as a kernel int (the opponent's move), and
`env_observe` fills the outputs for the current position (`reset`).

Shared outputs (the caller allocates them):

* ``moves``: int64[MAX_MOVES] scratch for move generation;
* ``mask``: int8[252], 1 for the legal actions of the side to move, all 0
  once the game is over;
* ``obs``: float32[32, 9, 7], `envs.encoding.encode_observation` of the side
  to move;
* ``text``: uint8[>= JFEN_MAX], the position's JFEN in ASCII.

Each returns ``(status, termination, winner, jfen_length, move)``: status
is `OK`, `OFF_BOARD` (the action leaves the board) or `NOT_LEGAL` (no legal
move has this action); on an error nothing is changed and the outputs are
not written. termination and winner are `envs.kernels.outcome`'s codes for
the position reached (TERM_NONE, -1 while the game goes on); move is the
kernel move played (-1 for `env_observe`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from envs import kernels as K
from envs.encoding import action_to_move, encode_observation, move_to_action

OK = 0
OFF_BOARD = 1
NOT_LEGAL = 2

JFEN_MAX = 96  # 9 ranks of <= 7 chars, 8 slashes, side, two counters <= 5 digits, spaces

_LETTERS = np.frombuffer(K.ANIMAL_LETTERS.encode("ascii"), dtype=np.uint8).copy()


@njit(cache=True)
def _write_int(text: np.ndarray, n: int, value: int) -> int:
    if value == 0:
        text[n] = 48
        return n + 1
    digits = 0
    v = value
    while v > 0:
        digits += 1
        v //= 10
    v = value
    for i in range(digits - 1, -1, -1):
        text[n + i] = 48 + v % 10
        v //= 10
    return n + digits


@njit(cache=True)
def write_jfen(st: np.ndarray, text: np.ndarray) -> int:
    """Write the position's JFEN as ASCII into `text`; return its length."""
    n = 0
    for rank in range(K.N_RANKS - 1, -1, -1):
        empty = 0
        for f in range(K.N_FILES):
            c = st[rank * K.N_FILES + f]
            if c == 0:
                empty += 1
                continue
            if empty > 0:
                text[n] = 48 + empty
                n += 1
                empty = 0
            letter = _LETTERS[abs(c)]
            text[n] = letter if c > 0 else letter + 32  # lower case for Blue
            n += 1
        if empty > 0:
            text[n] = 48 + empty
            n += 1
        if rank > 0:
            text[n] = 47  # '/'
            n += 1
    text[n] = 32
    text[n + 1] = 114 if st[K.S_SIDE] == K.RED else 98  # 'r' / 'b'
    text[n + 2] = 32
    n = _write_int(text, n + 3, st[K.S_CLOCK])
    text[n] = 32
    return _write_int(text, n + 1, st[K.S_MOVENO])


@njit(cache=True)
def observe_position(
    st: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    moves: np.ndarray,
    mask: np.ndarray,
    obs: np.ndarray,
) -> tuple:
    """Outcome, mask and observation of the current position: (termination, winner, n).

    The moves are generated once, for rule 10 and the mask, by
    `kernels.outcome_and_moves`; `moves[:n]` holds them (n is 0 once rule
    8-10 ended the game). Shared by this env and the vector env."""
    mask[:] = 0
    term, winner, n = K.outcome_and_moves(st, hist, hashes, flags, moves)
    if term == K.TERM_NONE:
        side = st[K.S_SIDE]
        for i in range(n):
            mask[move_to_action(moves[i], side)] = 1
    encode_observation(st, hashes, flags, obs)
    return term, winner, n


@njit(cache=True)
def env_observe(
    st: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    moves: np.ndarray,
    mask: np.ndarray,
    obs: np.ndarray,
    text: np.ndarray,
) -> tuple:
    """Fill the outputs for the current position (no move played)."""
    term, winner, _ = observe_position(st, hist, hashes, flags, moves, mask, obs)
    length = write_jfen(st, text)
    return OK, term, winner, length, -1


@njit(cache=True)
def _is_legal(st: np.ndarray, hist: np.ndarray, flags: np.ndarray, moves: np.ndarray, m: int) -> bool:
    n = K.generate_moves(st, hist, flags, moves)
    for i in range(n):
        if moves[i] == m:
            return True
    return False


@njit(cache=True)
def env_step_move(
    st: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    m: int,
    moves: np.ndarray,
    mask: np.ndarray,
    obs: np.ndarray,
    text: np.ndarray,
) -> tuple:
    """Play kernel move `m` if legal, then fill the outputs (see module doc).

    The caller keeps `hist`/`hashes` room for one more ply and calls this
    only while the game is not over."""
    if not _is_legal(st, hist, flags, moves, m):
        return NOT_LEGAL, K.TERM_NONE, -1, 0, m
    K.make_move(st, hist, hashes, m)
    term, winner, _ = observe_position(st, hist, hashes, flags, moves, mask, obs)
    length = write_jfen(st, text)
    return OK, term, winner, length, m


@njit(cache=True)
def env_step_action(
    st: np.ndarray,
    hist: np.ndarray,
    hashes: np.ndarray,
    flags: np.ndarray,
    action: int,
    moves: np.ndarray,
    mask: np.ndarray,
    obs: np.ndarray,
    text: np.ndarray,
) -> tuple:
    """Play `action` (canonical frame of the side to move) if legal, then fill
    the outputs; same duties as `env_step_move`.

    Legality is read from `mask` on entry, which must hold the current
    position's mask (as the previous call left it)."""
    m = action_to_move(st, action)
    if m < 0:
        return OFF_BOARD, K.TERM_NONE, -1, 0, -1
    if mask[action] == 0:
        return NOT_LEGAL, K.TERM_NONE, -1, 0, m
    K.make_move(st, hist, hashes, m)
    term, winner, _ = observe_position(st, hist, hashes, flags, moves, mask, obs)
    length = write_jfen(st, text)
    return OK, term, winner, length, m

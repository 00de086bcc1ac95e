"""B games of Jungle as stacked kernel arrays, for batched self-play and search.

Game ``i`` is the position ``state[i]`` with its history ``hist[i]`` and
``hashes[i]`` (the layout of `envs.kernels`). Games start from a JFEN and end
by the rules (`outcome`) or when ``max_plies`` plies have been played
(``truncated[i]``: no result by the rules, a draw for training purposes).
Observations and legal-action masks of many games come from one numba call.

    >>> games = GameBatch(4, RuleSet())
    >>> obs, mask = games.observations(), games.masks()      # [4, 24, 9, 7], [4, 252]
    >>> games.play(0, int(np.flatnonzero(mask[0])[0]))

This is the one bridge between these arrays and `envs.Board`:
`load_board` copies a Board's game into a slot (its arrays, no replay), and
`board` hands out a game as a Board, kept in step with the game move by
move once asked for (players that take a Board, in self-play and matches).
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
from numba import njit

from envs import kernels as K
from envs.board import START_JFEN, Board, IllegalMoveError, Move, parse_jfen, state_to_jfen
from envs.encoding import N_ACTIONS, OBS_SHAPE, action_to_move, encode_observation, legal_action_mask
from envs.rules import RuleSet

IndexLike = Union[None, int, Sequence[int], np.ndarray]


@njit(cache=True)
def encode_batch(state: np.ndarray, hashes: np.ndarray, flags: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """`out[k]` = observation of game `idx[k]` (float32 [n, 24, 9, 7])."""
    for k in range(idx.shape[0]):
        i = idx[k]
        encode_observation(state[i], hashes[i], flags, out[k])


@njit(cache=True)
def mask_batch(state: np.ndarray, hist: np.ndarray, flags: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """`out[k]` = legal-action mask of game `idx[k]` (bool [n, 252])."""
    for k in range(idx.shape[0]):
        i = idx[k]
        legal_action_mask(state[i], hist[i], flags, out[k])


@njit(cache=True)
def _play(state: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, action: int) -> int:
    """Play `action` (canonical index) if legal; return the kernel move, or -1 if illegal."""
    m = action_to_move(state, action)
    if m < 0:
        return -1
    buf = np.empty(K.MAX_MOVES, dtype=np.int64)
    n = K.generate_moves(state, hist, flags, buf)
    for j in range(n):
        if buf[j] == m:
            K.make_move(state, hist, hashes, m)
            return m
    return -1


@njit(cache=True)
def judge(state: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, i: int, max_plies: int,
          done: np.ndarray, truncated: np.ndarray, term: np.ndarray, winner: np.ndarray) -> None:
    """Game `i`'s termination and winner by the rules; done when they end it or when it has played
    `max_plies` plies (truncated: no result by the rules)."""
    t, w = K.outcome(state[i], hist[i], hashes[i], flags)
    term[i], winner[i] = t, w
    done[i] = t != K.TERM_NONE
    truncated[i] = False
    if not done[i] and state[i, K.S_PLY] >= max_plies:
        done[i] = True
        truncated[i] = True


@njit(cache=True)
def play_batch(state: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, actions: np.ndarray,
               max_plies: int, done: np.ndarray, truncated: np.ndarray, term: np.ndarray, winner: np.ndarray,
               moves: np.ndarray) -> int:
    """Play `actions[i]` (canonical index) in every game `i` whose action is >= 0, then judge its end
    (`GameBatch._update_outcome`'s rules); `moves[i]` gets the kernel move played (-1 where none).
    Returns the first game whose action is illegal or which is over (its later games unplayed), else -1."""
    for i in range(actions.shape[0]):
        moves[i] = -1
        if actions[i] < 0:
            continue
        if done[i]:
            return i
        m = _play(state[i], hist[i], hashes[i], flags, actions[i])
        if m < 0:
            return i
        moves[i] = m
        judge(state, hist, hashes, flags, i, max_plies, done, truncated, term, winner)
    return -1


@njit(cache=True)
def reset_batch(state: np.ndarray, hist: np.ndarray, hashes: np.ndarray, flags: np.ndarray, idx: np.ndarray,
                first: np.ndarray, max_plies: int, done: np.ndarray, truncated: np.ndarray, term: np.ndarray,
                winner: np.ndarray) -> None:
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
def _first_position(state: np.ndarray, hist: np.ndarray, out: np.ndarray) -> None:
    """`out` = the position before every move of `hist` was played (the game's first position)."""
    out[:] = state
    for _ in range(state[K.S_PLY]):
        K.unmake_move(out, hist)


class GameBatch:
    """B games under one `RuleSet`, advanced independently (one `play` per game), read in batches.

    Attributes (all indexed by game): ``state`` int16 [B, STATE_LEN], ``hist``
    int16 [B, max_plies, 5], ``hashes`` uint64 [B, max_plies + 1], ``done``,
    ``truncated`` bool [B], ``term`` / ``winner`` int64 [B] (``TERM_NONE`` / -1
    while a game goes on or when it was truncated), ``start`` list of JFENs;
    ``rules`` the RuleSet given and ``flags`` its compiled flags.
    """

    def __init__(self, n: int, rules: RuleSet, start_jfen: str = START_JFEN, max_plies: int = 1000) -> None:
        if not isinstance(rules, RuleSet):
            raise ValueError(f"a GameBatch takes a RuleSet, got {type(rules).__name__}")
        if n < 1:
            raise ValueError(f"a GameBatch needs at least one game, got n={n}")
        if max_plies < 1:
            raise ValueError(f"max_plies must be >= 1, got {max_plies}")
        self.n = int(n)
        self.rules = rules
        self.flags = rules.flags()
        self.max_plies = int(max_plies)
        self.state = np.zeros((n, K.STATE_LEN), dtype=np.int16)
        self.hist = np.zeros((n, self.max_plies, K.HIST_WIDTH), dtype=np.int16)
        self.hashes = np.zeros((n, self.max_plies + 1), dtype=np.uint64)
        self.done = np.zeros(n, dtype=np.bool_)
        self.truncated = np.zeros(n, dtype=np.bool_)
        self.term = np.zeros(n, dtype=np.int64)
        self.winner = np.full(n, -1, dtype=np.int64)
        self.start: list[str] = [start_jfen] * n
        self._boards: dict[int, Board] = {}  # games handed out as Boards, kept in step
        self._moves = np.full(n, -1, dtype=np.int64)
        for i in range(n):
            self.reset(i, start_jfen)

    def __len__(self) -> int:
        return self.n

    # -- changing ------------------------------------------------------------------
    def reset(self, i: int, jfen: Optional[str] = None) -> None:
        """Start game `i` again from `jfen` (default: its previous start). JFENError on a bad JFEN."""
        jfen = self.start[i] if jfen is None else jfen
        st = parse_jfen(jfen)
        self.start[i] = jfen
        self.state[i] = st
        self.hist[i] = 0
        self.hashes[i] = 0
        self.hashes[i, 0] = K.compute_hash(st)
        self.truncated[i] = False
        self._boards.pop(i, None)
        self._update_outcome(i)

    def reset_many(self, idx: np.ndarray, jfen: str) -> None:
        """Start the games `idx` again from `jfen` (`reset` for many games in one kernel call)."""
        ix = self._index(idx)
        first = parse_jfen(jfen)
        reset_batch(self.state, self.hist, self.hashes, self.flags, ix, first, self.max_plies, self.done,
                    self.truncated, self.term, self.winner)
        for i in ix.tolist():
            self.start[i] = jfen
            self._boards.pop(i, None)

    def load_board(self, i: int, board: Board) -> None:
        """Make game `i` the game of `board`: its first position, moves and history arrays, copied as they
        are (no replay). ValueError if the board plays other rules or has more plies than `max_plies`."""
        if board.rules != self.rules:
            raise ValueError(f"the board plays {board.rules}, this GameBatch {self.rules}")
        ply = board.ply
        if ply > self.max_plies:
            raise ValueError(f"the board has {ply} plies, more than this GameBatch's max_plies={self.max_plies}")
        first = np.empty_like(board.state)
        _first_position(board.state, board.hist, first)
        self.start[i] = state_to_jfen(first)
        self.state[i] = board.state
        self.hist[i, :ply] = board.hist[:ply]
        self.hist[i, ply:] = 0
        self.hashes[i, : ply + 1] = board.hashes[: ply + 1]
        self.hashes[i, ply + 1 :] = 0
        self.truncated[i] = False
        self._boards.pop(i, None)
        self._update_outcome(i)

    def play(self, i: int, action: int) -> None:
        """Play canonical `action` in game `i`; IllegalMoveError if it is not legal there."""
        if self.done[i]:
            raise IllegalMoveError(f"game {i} is over; action {action} cannot be played")
        m = _play(self.state[i], self.hist[i], self.hashes[i], self.flags, int(action))
        if m < 0:
            raise IllegalMoveError(f"action {action} is not legal in game {i} ({state_to_jfen(self.state[i])!r})")
        board = self._boards.get(i)
        if board is not None:
            board.push(Move.from_int(int(m)))
        self._update_outcome(i)

    def play_many(self, actions: np.ndarray) -> None:
        """Play `actions[i]` (canonical index) in every game `i` whose action is >= 0 (int [B]), in one
        kernel call; IllegalMoveError naming the first game where it is not legal (or which is over),
        the games before it played."""
        actions = np.ascontiguousarray(actions, dtype=np.int64)
        if actions.shape != (self.n,):
            raise ValueError(f"play_many takes one action per game ({self.n}), got shape {actions.shape}")
        bad = play_batch(self.state, self.hist, self.hashes, self.flags, actions, self.max_plies, self.done,
                         self.truncated, self.term, self.winner, self._moves)
        for i, board in self._boards.items():
            if self._moves[i] >= 0:
                board.push(Move.from_int(int(self._moves[i])))
        if bad >= 0 and self.done[bad]:
            raise IllegalMoveError(f"game {bad} is over; action {actions[bad]} cannot be played")
        if bad >= 0:
            raise IllegalMoveError(f"action {actions[bad]} is not legal in game {bad} "
                                   f"({state_to_jfen(self.state[bad])!r})")

    def _update_outcome(self, i: int) -> None:
        judge(self.state, self.hist, self.hashes, self.flags, i, self.max_plies, self.done, self.truncated,
              self.term, self.winner)

    # -- reading -------------------------------------------------------------------
    def _index(self, idx: IndexLike) -> np.ndarray:
        if idx is None:
            return np.arange(self.n, dtype=np.int64)
        return np.atleast_1d(np.asarray(idx, dtype=np.int64))

    def observations(self, idx: IndexLike = None) -> np.ndarray:
        """Observations float32 [n, 24, 9, 7] of games `idx` (default all), from the side to move."""
        ix = self._index(idx)
        out = np.empty((len(ix),) + OBS_SHAPE, dtype=np.float32)
        encode_batch(self.state, self.hashes, self.flags, ix, out)
        return out

    def masks(self, idx: IndexLike = None) -> np.ndarray:
        """Legal-action masks bool [n, 252] of games `idx` (default all); all False for a finished
        (or truncated) game."""
        ix = self._index(idx)
        out = np.zeros((len(ix), N_ACTIONS), dtype=np.bool_)
        mask_batch(self.state, self.hist, self.flags, ix, out)
        out[self.done[ix]] = False
        return out

    def outcome(self, i: int) -> tuple[int, int]:
        """(termination, winner) of game `i` by the rules: (TERM_NONE, -1) while it goes on or if truncated."""
        return int(self.term[i]), int(self.winner[i])

    def plies(self, i: int) -> int:
        """Plies played in game `i` since its start."""
        return int(self.state[i, K.S_PLY])

    def side_to_move(self, i: int) -> int:
        """RED (0) or BLUE (1)."""
        return int(self.state[i, K.S_SIDE])

    def moves(self, i: int) -> list[str]:
        """The moves of game `i` so far, as strings like `a3a4`."""
        return [str(Move(int(f), int(t))) for f, t in self.hist[i, : self.plies(i), :2]]

    def board(self, i: int) -> Board:
        """Game `i` as a Board (a copy, yours to change). The first call for a game replays its moves once;
        from then on the batch pushes each move played on its own Board, so later calls only copy it."""
        board = self._boards.get(i)
        if board is None:
            board = Board.from_jfen(self.start[i], rules=self.rules)
            for m in self.moves(i):
                board.push(m)
            self._boards[i] = board
        return board.copy()


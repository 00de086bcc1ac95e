"""B games of Jungle as stacked kernel arrays: the one batched game state of self-play, search and the vector env.

Game ``i`` is the position ``state[i]`` with its history ``hist[i]`` and
``hashes[i]`` (the layout of `envs.kernels`). Games start from a JFEN and end
by the rules (`outcome`) or when ``max_plies`` plies have been played
(``truncated[i]``: no result by the rules, a draw for training purposes).
Observations and legal-action masks of many games come from one numba call.

    >>> games = GameBatch(4, RuleSet())
    >>> obs, mask = games.observations(), games.masks()      # [4, 32, 9, 7], [4, 252]
    >>> games.play(0, int(np.flatnonzero(mask[0])[0]))

This is the one bridge between these arrays and `envs.Board`:
`load_board` copies a Board's game into a slot (its arrays, no replay), and
`board` hands out a game as a Board, kept in step with the game move by
move once asked for (players that take a Board, in self-play and matches).
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from envs import kernels as K
from envs.batch_kernels import (
    BatchArrays,
    encode_batch,
    first_position,
    judge,
    mask_batch,
    play_action,
    play_batch,
    play_moves,
    reset_batch,
)
from envs.board import Board, IllegalMoveError
from envs.encoding import N_ACTIONS, OBS_SHAPE
from envs.notation import START_JFEN, Move, parse_jfen, state_to_jfen
from envs.rules import RuleSet

IndexLike = Union[None, int, Sequence[int], np.ndarray]


class GameBatch:
    """B games, each under its own `RuleSet` (one for all by default), advanced independently, read in batches.

    Attributes (all indexed by game): ``state`` int16 [B, STATE_LEN], ``hist``
    int16 [B, room, 5], ``hashes`` uint64 [B, room + 1], ``done``,
    ``truncated`` bool [B], ``term`` / ``winner`` int64 [B] (``TERM_NONE`` / -1
    while a game goes on or when it was truncated), ``start`` list of JFENs;
    ``rules`` the RuleSet given and ``flags`` its compiled flags; ``game_rules``
    each game's RuleSet (``rules`` until `reset` or `reset_many` gives a game
    others) and ``game_flags`` int64 [B, N_FLAGS] their flags, the row of game
    ``i`` being what every kernel reads for it (one batch can mix rule sets).

    A game is truncated once it has played ``max_plies`` plies (None: never; its
    games end by the rules alone). The history has room for ``room`` plies
    (default ``max_plies``); when that is fewer than a game may play, `play`,
    `play_many` and `load_board` `grow` it (new arrays, the old rows copied).
    """

    def __init__(
        self,
        n: int,
        rules: RuleSet,
        start_jfen: str = START_JFEN,
        max_plies: Optional[int] = 1000,
        room: Optional[int] = None,
    ) -> None:
        if not isinstance(rules, RuleSet):
            raise ValueError(f"a GameBatch takes a RuleSet, got {type(rules).__name__}")
        if n < 1:
            raise ValueError(f"a GameBatch needs at least one game, got n={n}")
        if max_plies is not None and max_plies < 1:
            raise ValueError(f"max_plies must be >= 1 or None, got {max_plies}")
        room = max_plies if room is None else room
        if room is None:
            raise ValueError("a GameBatch with max_plies=None needs room, the plies of history to start with")
        if room < 1:
            raise ValueError(f"room must be >= 1, got {room}")
        self.n = int(n)
        self.rules = rules
        self.flags = rules.flags()
        self.game_rules: list[RuleSet] = [rules] * n
        self.game_flags = np.tile(self.flags, (n, 1))
        self.max_plies = None if max_plies is None else int(max_plies)
        self._cap = 0 if self.max_plies is None else self.max_plies  # the kernels' max_plies: 0 never truncates
        self._grows = self.max_plies is None or room < self.max_plies  # whether a game can outgrow its history
        self.state = np.zeros((n, K.STATE_LEN), dtype=np.int16)
        self.hist = np.zeros((n, room, K.HIST_WIDTH), dtype=np.int16)
        self.hashes = np.zeros((n, room + 1), dtype=np.uint64)
        self.done = np.zeros(n, dtype=np.bool_)
        self.truncated = np.zeros(n, dtype=np.bool_)
        self.term = np.zeros(n, dtype=np.int64)
        self.winner = np.full(n, -1, dtype=np.int64)
        self.start: list[str] = [start_jfen] * n
        self._boards: dict[int, Board] = {}  # games handed out as Boards, kept in step
        self._moves = np.full(n, -1, dtype=np.int64)
        self.reset_many(np.arange(n), start_jfen)

    def __len__(self) -> int:
        return self.n

    # -- changing ------------------------------------------------------------------
    def reset(self, i: int, jfen: Optional[str] = None, rules: Optional[RuleSet] = None) -> None:
        """Start game `i` again from `jfen` (default: its previous start) under `rules` (default: its
        previous rules). JFENError on a bad JFEN."""
        jfen = self.start[i] if jfen is None else jfen
        st = parse_jfen(jfen)
        if rules is not None:
            self._set_rules(np.array([i]), rules)
        self.start[i] = jfen
        self.state[i] = st
        self.hist[i] = 0
        self.hashes[i] = 0
        self.hashes[i, 0] = K.compute_hash(st)
        self.truncated[i] = False
        self._boards.pop(i, None)
        self._update_outcome(i)

    def reset_many(self, idx: np.ndarray, jfen: str, rules: Optional[RuleSet] = None) -> None:
        """Start the games `idx` again from `jfen` under `rules` (default: each game's previous rules), in
        one kernel call (`reset` for many games)."""
        ix = self._index(idx)
        first = parse_jfen(jfen)
        if rules is not None:
            self._set_rules(ix, rules)
        reset_batch(
            self.state,
            self.hist,
            self.hashes,
            self.game_flags,
            ix,
            first,
            self._cap,
            self.done,
            self.truncated,
            self.term,
            self.winner,
        )
        for i in ix.tolist():
            self.start[i] = jfen
            self._boards.pop(i, None)

    def _set_rules(self, ix: np.ndarray, rules: RuleSet) -> None:
        """Games `ix` play `rules` from now on (called as they start again)."""
        if not isinstance(rules, RuleSet):
            raise ValueError(f"a GameBatch's games take a RuleSet, got {type(rules).__name__}")
        flags = rules.flags()
        for i in ix.tolist():
            self.game_rules[i] = rules
        self.game_flags[ix] = flags

    def load_board(self, i: int, board: Board) -> None:
        """Make game `i` the game of `board`: its first position, moves and history arrays, copied as they
        are (no replay). ValueError if the board plays other rules than game `i` or has more plies than
        `max_plies`."""
        if board.rules != self.game_rules[i]:
            raise ValueError(f"the board plays {board.rules}, game {i} of this GameBatch {self.game_rules[i]}")
        ply = board.ply
        if self.max_plies is not None and ply > self.max_plies:
            raise ValueError(f"the board has {ply} plies, more than this GameBatch's max_plies={self.max_plies}")
        self.grow(ply)
        first = np.empty_like(board.state)
        first_position(board.state, board.hist, first)
        self.start[i] = state_to_jfen(first)
        self.state[i] = board.state
        self.hist[i, :ply] = board.hist[:ply]
        self.hist[i, ply:] = 0
        self.hashes[i, : ply + 1] = board.hashes[: ply + 1]
        self.hashes[i, ply + 1 :] = 0
        self.truncated[i] = False
        self._boards.pop(i, None)
        self._update_outcome(i)

    def load_moves(self, i: int, jfen: str, moves: np.ndarray, rules: Optional[RuleSet] = None) -> None:
        """Make game `i` the game that starts from `jfen` under `rules` (default: its previous rules) and plays the
        kernel moves `moves` (int [n], `Move.to_int`), replayed in one kernel call: a position of a recorded
        game with its whole history, as `load_board` of that game's Board, without a Board. JFENError on a bad
        JFEN; IllegalMoveError naming the first move that is not legal (the game then stands before it); ValueError
        for more moves than `max_plies`."""
        moves = np.ascontiguousarray(moves, dtype=np.int64).reshape(-1)
        if self.max_plies is not None and len(moves) > self.max_plies:
            raise ValueError(f"{len(moves)} moves are more than this GameBatch's max_plies={self.max_plies}")
        self.reset(i, jfen, rules)
        self.grow(len(moves))
        played = play_moves(self.state[i], self.hist[i], self.hashes[i], self.game_flags[i], moves)
        self._update_outcome(i)
        if played < len(moves):
            raise IllegalMoveError(
                f"move {played + 1} ({Move.from_int(int(moves[played]))}) is not legal in game {i} "
                f"({state_to_jfen(self.state[i])!r})"
            )

    def play(self, i: int, action: int) -> None:
        """Play canonical `action` in game `i`; IllegalMoveError if it is not legal there."""
        if self.done[i]:
            raise IllegalMoveError(f"game {i} is over; action {action} cannot be played")
        if self._grows:
            self.grow(self.plies(i) + 1)
        m = play_action(self.state[i], self.hist[i], self.hashes[i], self.game_flags[i], int(action))
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
        if self._grows:
            self.grow(int(self.state[actions >= 0, K.S_PLY].max(initial=0)) + 1)
        bad = play_batch(
            self.state,
            self.hist,
            self.hashes,
            self.game_flags,
            actions,
            self._cap,
            self.done,
            self.truncated,
            self.term,
            self.winner,
            self._moves,
        )
        for i, board in self._boards.items():
            if self._moves[i] >= 0:
                board.push(Move.from_int(int(self._moves[i])))
        if bad >= 0 and self.done[bad]:
            raise IllegalMoveError(f"game {bad} is over; action {actions[bad]} cannot be played")
        if bad >= 0:
            raise IllegalMoveError(
                f"action {actions[bad]} is not legal in game {bad} ({state_to_jfen(self.state[bad])!r})"
            )

    def grow(self, plies: int) -> None:
        """Make room in every game's history for `plies` plies (at least doubling it when it is short).

        The arrays are new ones, so a search that holds trees over the old ones starts them again
        (`BatchedMCTS` refuses a change in the middle of a search)."""
        room = self.hist.shape[1]
        if plies <= room:
            return
        cap = max(plies, 2 * room)
        hist = np.zeros((self.n, cap, K.HIST_WIDTH), dtype=np.int16)
        hist[:, :room] = self.hist
        hashes = np.zeros((self.n, cap + 1), dtype=np.uint64)
        hashes[:, : room + 1] = self.hashes
        self.hist, self.hashes = hist, hashes

    def _update_outcome(self, i: int) -> None:
        judge(
            self.state,
            self.hist,
            self.hashes,
            self.game_flags,
            i,
            self._cap,
            self.done,
            self.truncated,
            self.term,
            self.winner,
        )

    # -- reading -------------------------------------------------------------------
    @property
    def room(self) -> int:
        """Plies of history each game has room for (`grow` makes more)."""
        return int(self.hist.shape[1])

    def arrays(self) -> BatchArrays:
        """The games' `state`, `hist` and `hashes` for the kernels of `envs.batch_kernels` (new ones after `grow`)."""
        return BatchArrays(self.state, self.hist, self.hashes)

    def _index(self, idx: IndexLike) -> np.ndarray:
        if idx is None:
            return np.arange(self.n, dtype=np.int64)
        return np.atleast_1d(np.asarray(idx, dtype=np.int64))

    def observations(self, idx: IndexLike = None) -> np.ndarray:
        """Observations float32 [n, 32, 9, 7] of games `idx` (default all), from the side to move."""
        ix = self._index(idx)
        out = np.empty((len(ix),) + OBS_SHAPE, dtype=np.float32)
        encode_batch(self.state, self.hashes, self.game_flags, ix, out)
        return out

    def masks(self, idx: IndexLike = None) -> np.ndarray:
        """Legal-action masks bool [n, 252] of games `idx` (default all); all False for a finished
        (or truncated) game."""
        ix = self._index(idx)
        out = np.zeros((len(ix), N_ACTIONS), dtype=np.bool_)
        mask_batch(self.state, self.hist, self.game_flags, ix, out)
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
            board = Board.from_jfen(self.start[i], rules=self.game_rules[i])
            for m in self.moves(i):
                board.push(m)
            self._boards[i] = board
        return board.copy()

"""A python-chess-like Board over the numba kernels: JFEN, moves, push/pop, outcome.

>>> board = Board()
>>> len(board.legal_moves)
24
>>> board.push("a3a4")
>>> board.jfen()
'l5t/1d3c1/r1p1w1e/7/7/E6/2W1P1R/1C3D1/T5L b 1 1'
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Iterator, NamedTuple, Optional, Union

import numpy as np

from envs import kernels as K
from envs.notation import (
    SQUARE_NAMES,
    START_JFEN,
    Animal,
    InvalidMoveError,
    JFENError,
    Move,
    Piece,
    Side,
    mirror_square,
    parse_jfen,
    parse_square,
    state_to_jfen,
)
from envs.render import render_ansi
from envs.rules import COUNTER_LIMIT, DEFAULT_RULES, RuleSet

if TYPE_CHECKING:
    from envs.tablebase import Tablebase, TablebaseProbe


class IllegalMoveError(ValueError):
    """A well-formed move that is not legal in the position."""


STARTPOS = "startpos"
"""The start position's name, taken wherever a JFEN is (`Board("startpos")`, ``python -m envs perft startpos 3``),
as UCI's ``position startpos``."""


class GameTooLongError(ValueError):
    """A move refused because the game's counters are at their limit (`COUNTER_LIMIT`: 30000 plies, plies
    since a capture, or moves): positions past it could not be written as JFEN."""


class Termination(enum.Enum):
    """Why a game ended: rules 8-12 of RULES.md."""

    DEN = K.TERM_DEN
    ALL_CAPTURED = K.TERM_ALL_CAPTURED
    NO_MOVES = K.TERM_NO_MOVES
    REPETITION = K.TERM_REPETITION
    NO_CAPTURE_LIMIT = K.TERM_NO_CAPTURE_LIMIT


class Outcome(NamedTuple):
    """The end of a game; `winner` is None for a draw."""

    winner: Optional[Side]
    termination: Termination

    def result(self) -> str:
        """`1-0` (Red won), `0-1` (Blue won) or `1/2-1/2`."""
        if self.winner is None:
            return "1/2-1/2"
        return "1-0" if self.winner == Side.RED else "0-1"


MoveLike = Union[Move, str]


class LegalMoves:
    """The legal moves of a position: iterable, sized, supports `in`."""

    def __init__(self, ints: np.ndarray) -> None:
        self._ints = ints
        self._set = {int(m) for m in ints}

    def __len__(self) -> int:
        return len(self._ints)

    def __iter__(self) -> Iterator[Move]:
        return (Move.from_int(m) for m in self._ints)

    def __contains__(self, move: object) -> bool:
        if isinstance(move, str):
            try:
                move = Move.from_str(move)
            except InvalidMoveError:
                return False
        return isinstance(move, Move) and move.to_int() in self._set

    def __bool__(self) -> bool:
        return len(self._ints) > 0

    def __repr__(self) -> str:
        return f"<LegalMoves ({', '.join(sorted(str(m) for m in self))})>"


class Board:
    """A Jungle position with its game history (for repetition and anti-chase): a JFEN, or `STARTPOS`."""

    def __init__(self, jfen: str = START_JFEN, rules: Optional[RuleSet] = None) -> None:
        self.rules = rules if rules is not None else DEFAULT_RULES
        self.flags = self.rules.flags()
        self.state = parse_jfen(START_JFEN if jfen == STARTPOS else jfen)
        self.hist = np.zeros((64, K.HIST_WIDTH), dtype=np.int16)
        self.hashes = np.zeros(65, dtype=np.uint64)
        self.hashes[0] = K.compute_hash(self.state)
        self.move_stack: list[Move] = []

    @classmethod
    def from_jfen(cls, text: str, rules: Optional[RuleSet] = None) -> "Board":
        """The position of JFEN `text` (`STARTPOS`, ``"startpos"``, names the start); JFENError if malformed."""
        return cls(text, rules=rules)

    @classmethod
    def startpos(cls, rules: Optional[RuleSet] = None) -> "Board":
        """The start position (`START_JFEN`), under `rules` (default: RULES.md's default rules)."""
        return cls(START_JFEN, rules=rules)

    # -- reading ------------------------------------------------------------------
    def jfen(self) -> str:
        return state_to_jfen(self.state)

    @property
    def side_to_move(self) -> Side:
        return Side(int(self.state[K.S_SIDE]))

    @property
    def turn(self) -> Side:
        """The side to move: python-chess's name for `side_to_move`."""
        return self.side_to_move

    @property
    def ply(self) -> int:
        """Plies played on this board since its first position."""
        return int(self.state[K.S_PLY])

    @property
    def halfmove_clock(self) -> int:
        """Plies since the last capture."""
        return int(self.state[K.S_CLOCK])

    @property
    def move_number(self) -> int:
        return int(self.state[K.S_MOVENO])

    def piece_at(self, square: Union[str, int]) -> Optional[Piece]:
        sq = parse_square(square) if isinstance(square, str) else int(square)
        if not 0 <= sq < K.N_SQUARES:
            raise ValueError(f"not a square index: {square!r}")
        code = int(self.state[sq])
        return None if code == 0 else Piece.from_code(code)

    def pieces(self, side: Side) -> dict[str, Piece]:
        """Square name -> piece for one side."""
        out = {}
        for a in range(1, 9):
            sq = int(self.state[K.S_PIECES + 8 * side + a - 1])
            if sq >= 0:
                out[SQUARE_NAMES[sq]] = Piece(Animal(a), side)
        return out

    @property
    def legal_moves(self) -> LegalMoves:
        return LegalMoves(self.legal_move_ints())

    def legal_move_ints(self) -> np.ndarray:
        """Legal moves in the kernels' int encoding, generation order."""
        buf = np.empty(K.MAX_MOVES, dtype=np.int64)
        n = K.generate_moves(self.state, self.hist, self.flags, buf)
        return buf[:n].copy()

    def is_legal(self, move: MoveLike) -> bool:
        return move in self.legal_moves

    def zobrist_hash(self) -> int:
        return int(self.hashes[self.ply])

    def repetition_count(self) -> int:
        return int(K.repetition_count(self.state, self.hashes))

    def outcome(self) -> Optional[Outcome]:
        term, winner = K.outcome(self.state, self.hist, self.hashes, self.flags)
        if term == K.TERM_NONE:
            return None
        return Outcome(None if winner == K.DRAW else Side(int(winner)), Termination(int(term)))

    def is_game_over(self) -> bool:
        return self.outcome() is not None

    def result(self) -> str:
        """The game's result as python-chess writes it: `Outcome.result` (`1-0`, `0-1`, `1/2-1/2`) once the game
        is over, `*` while it goes on. Every draw of the rules is automatic, so there is no draw to claim."""
        over = self.outcome()
        return "*" if over is None else over.result()

    def is_capture(self, move: MoveLike) -> bool:
        """Whether the legal `move` (a Move or a string) takes an enemy piece.

        Unlike python-chess, which answers for any pseudo-legal move, a move that is not legal here is refused as
        `push` refuses it (IllegalMoveError says why; InvalidMoveError for a malformed one): a move onto an enemy
        piece that the rules forbid (ranks, water and land) takes nothing."""
        m = self.parse_move(move)
        return bool(self.state[m.to_square] != 0)  # a legal move never lands on a piece of its own side

    def probe(self, tablebase: Optional["Tablebase"] = None) -> "TablebaseProbe":
        """The endgame tables' value of this position and of its moves (`envs.tablebase`), from the
        side to move; the board's rules' tables in the default location unless `tablebase` is given.

        A ValueError subclass names what is missing (with the command that builds the tables) or why
        the tables cannot answer (too many pieces, a game already won, the anti-chase rules)."""
        from envs.tablebase import default_tablebase  # loaded on the first probe, not with every Board

        return (tablebase if tablebase is not None else default_tablebase(self.rules)).probe(self)

    # -- changing -----------------------------------------------------------------
    def parse_move(self, move: MoveLike) -> Move:
        """A Move from a Move or string, checked for legality (IllegalMoveError says why not)."""
        m = move if isinstance(move, Move) else Move.from_str(move)
        if not isinstance(m, Move):
            raise InvalidMoveError(f"not a move: {move!r}")
        if m not in self.legal_moves:
            raise IllegalMoveError(f"illegal move {str(m)!r} in {self.jfen()!r}: {self.why_illegal(m)}")
        return m

    def why_illegal(self, move: MoveLike) -> str:
        """Why `move` is not legal here, in a person's words; `''` when it is legal.

        The kernels decide legality; this only names the first rule of RULES.md
        the move breaks, for error messages (the play page shows it as is)."""
        m = move if isinstance(move, Move) else Move.from_str(move)
        if m in self.legal_moves:
            return ""
        over = self.outcome()
        if over is not None:
            return f"the game is over ({over.termination.name.lower()})"
        src, dst = m.from_square, m.to_square
        fs, ts = SQUARE_NAMES[src], SQUARE_NAMES[dst]
        piece = self.piece_at(src)
        me = self.side_to_move
        if piece is None:
            return f"there is no piece on {fs}"
        if piece.side != me:
            return f"the piece on {fs} is {piece.side.name.title()}'s; {me.name.title()} is to move"
        animal = K.ANIMAL_NAMES[piece.animal]
        target = self.piece_at(dst)
        if target is not None and target.side == me:
            return f"your own {K.ANIMAL_NAMES[target.animal]} stands on {ts}"
        if dst == int(K.DEN[me]):
            return "a piece may not enter its own den"
        (r0, f0), (r1, f1) = divmod(src, K.N_FILES), divmod(dst, K.N_FILES)
        if abs(f0 - f1) + abs(r0 - r1) > 1:
            jump_dirs = [d for d in range(4) if int(K.JUMP[src, d]) == dst]
            if not jump_dirs:
                if f0 != f1 and r0 != r1:
                    return "pieces move one square up, down, left or right, never diagonally"
                return "pieces move one square at a time (only the Lion and Tiger jump, across a river)"
            if piece.animal not in (K.LION, K.TIGER):
                return f"only the Lion and Tiger jump the river, not the {animal}"
            if any(int(s) >= 0 and self.state[int(s)] != 0 for s in K.JUMP_OVER[src, jump_dirs[0]]):
                return "a rat in the river blocks the jump"
        elif K.WATER[dst] and piece.animal != K.RAT:
            return f"only the Rat may enter the water, not the {animal}"
        if target is not None:
            ranks = self.rules.ranks()
            if bool(K.WATER[src]) != bool(K.WATER[dst]):
                return "a piece in the water and a piece on land cannot capture each other"
            if int(K.TRAP_OWNER[src]) == 1 - me and self.rules.trapped_attacker == "powerless":
                return f"the {animal} stands in an enemy trap and can capture nothing"
            if piece.animal == K.ELEPHANT and target.animal == K.RAT:
                return "the Elephant cannot capture the Rat"
            if ranks[piece.animal] < ranks[target.animal]:
                return (
                    f"the {animal} (rank {ranks[piece.animal]}) cannot capture "
                    f"the {K.ANIMAL_NAMES[target.animal]} (rank {ranks[target.animal]})"
                )
        if self.rules.anti_chase != "off":
            return "the anti-chase rule forbids this move"
        return f"the {animal} on {fs} cannot go to {ts}"

    def at_counter_limit(self) -> bool:
        """Whether a counter (ply, plies since a capture, move number) is at `COUNTER_LIMIT`: then `push`
        refuses every move, and a game this long is cut there (tournaments and the envs count it a ply cap)."""
        return bool(K.counters_full(self.state))

    def push(self, move: MoveLike) -> None:
        """Play a legal move (a Move or a string like `a3a4`); GameTooLongError once `at_counter_limit`."""
        if self.at_counter_limit():
            raise GameTooLongError(
                f"no move is pushed in {self.jfen()!r} after {self.ply} plies: a game's "
                f"counters stop at {COUNTER_LIMIT} (plies, plies since a capture, moves)"
            )
        m = self.parse_move(move)
        self._ensure_room(1)
        K.make_move(self.state, self.hist, self.hashes, m.to_int())
        self.move_stack.append(m)

    def pop(self) -> Move:
        """Take back the last move pushed on this board."""
        if not self.move_stack:
            raise IndexError("pop from a board with no moves pushed")
        K.unmake_move(self.state, self.hist)
        return self.move_stack.pop()

    def peek(self) -> Move:
        return self.move_stack[-1]

    def copy(self) -> "Board":
        b = Board.__new__(Board)
        b.rules, b.flags = self.rules, self.flags
        b.state, b.hist, b.hashes = self.state.copy(), self.hist.copy(), self.hashes.copy()
        b.move_stack = list(self.move_stack)
        return b

    def mirror(self) -> "Board":
        """The left-right mirrored position (history dropped)."""
        st = self.state.copy()
        for sq in range(K.N_SQUARES):
            st[mirror_square(sq)] = self.state[sq]
        return Board(state_to_jfen(st), rules=self.rules)

    def _ensure_room(self, plies: int) -> None:
        need = self.ply + plies + 1
        if need > len(self.hist):
            cap = max(need, 2 * len(self.hist))
            hist = np.zeros((cap, K.HIST_WIDTH), dtype=np.int16)
            hist[: len(self.hist)] = self.hist
            hashes = np.zeros(cap + 1, dtype=np.uint64)
            hashes[: len(self.hashes)] = self.hashes
            self.hist, self.hashes = hist, hashes

    # -- display ------------------------------------------------------------------
    def __str__(self) -> str:
        last = self.move_stack[-1] if self.move_stack else None
        return render_ansi(self.state, last, f"{self.side_to_move.name.title()} to move")

    def __repr__(self) -> str:
        return f"Board({self.jfen()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Board) and self.jfen() == other.jfen() and self.rules == other.rules


# --- perft ---------------------------------------------------------------------------
def _work_arrays(board: Board, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    b = board.copy()
    b._ensure_room(depth + 1)
    return b.state, b.hist, b.hashes


MAX_PERFT_DEPTH = 64
"""The deepest perft counted: its work arrays grow with the depth, and a count past about 12 plies from
the start would not finish in a lifetime anyway."""


def perft(board: Board, depth: int, *, bulk: bool = True) -> int:
    """Number of legal move sequences of `depth` plies (RULES.md); draws ignored.

    `bulk=False` makes every leaf too (the same count, for benchmarking). ValueError for a depth outside
    0..`MAX_PERFT_DEPTH`."""
    if not 0 <= depth <= MAX_PERFT_DEPTH:
        raise ValueError(f"perft depth must lie in [0, {MAX_PERFT_DEPTH}], got {depth}")
    st, hist, hashes = _work_arrays(board, depth)
    fn = K.perft if bulk else K.perft_full
    return int(fn(st, hist, hashes, board.flags, depth))


def perft_divide(board: Board, depth: int) -> dict[str, int]:
    """Per-move perft counts at the root: move string -> leaf count of depth-1 subtree."""
    if not 1 <= depth <= MAX_PERFT_DEPTH:
        raise ValueError(f"perft divide depth must lie in [1, {MAX_PERFT_DEPTH}], got {depth}")
    st, hist, hashes = _work_arrays(board, depth)
    moves = np.empty(K.MAX_MOVES, dtype=np.int64)
    counts = np.zeros(K.MAX_MOVES, dtype=np.int64)
    n = K.perft_divide(st, hist, hashes, board.flags, depth, moves, counts)
    return {str(Move.from_int(moves[i])): int(counts[i]) for i in range(n)}


__all__ = [
    "MAX_PERFT_DEPTH",
    "STARTPOS",
    "START_JFEN",
    "Animal",
    "Board",
    "GameTooLongError",
    "IllegalMoveError",
    "InvalidMoveError",
    "JFENError",
    "LegalMoves",
    "Move",
    "MoveLike",
    "Outcome",
    "Piece",
    "Side",
    "Termination",
    "parse_square",
    "perft",
    "perft_divide",
]

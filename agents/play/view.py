"""What the page draws: the board's squares and pieces, what each ply did, and how a game ended, in words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from agents.play.errors import PlayError
from envs import kernels as K
from envs.board import Board
from envs.notation import FILE_NAMES, SQUARE_NAMES, Move, Side
from envs.rules import RuleSet

_SIDE_NAMES = {Side.RED: "red", Side.BLUE: "blue"}
_TERMINATION_TEXT = {
    "den": "{winner} entered {loser}'s den",
    "all_captured": "{winner} captured {loser}'s last piece",
    "no_moves": "{loser} has no legal move",
    "repetition": "the same position occurred for the third time",
    "no_capture_limit": "{limit} plies passed without a capture",
    "ply_cap": "the game was stopped at its ply cap",
    "level": "self-play stopped the game, judged level by its searches",
    "resign": "{loser} resigned",
}


def parse_side(text: Any) -> Side:
    """`'red'`/`'r'` -> Side.RED, `'blue'`/`'b'` -> Side.BLUE; PlayError otherwise."""
    if isinstance(text, str):
        t = text.strip().lower()
        if t in ("red", "r"):
            return Side.RED
        if t in ("blue", "b"):
            return Side.BLUE
    raise PlayError(f"side {text!r} is not 'red' or 'blue'")


def side_name(side: Side) -> str:
    return _SIDE_NAMES[side]


@dataclass
class PlyInfo:
    """What one ply did, for the page's highlight, move list and sounds."""

    move: str
    piece: str
    captured: Optional[str]
    jump: bool

    @property
    def notation(self) -> str:
        """`'L d4xd5'`: the animal's letter, the squares, `x` for a capture."""
        return f"{self.piece.upper()} {self.move[:2]}{'x' if self.captured else ''}{self.move[2:]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "move": self.move,
            "from": self.move[:2],
            "to": self.move[2:],
            "piece": self.piece,
            "captured": self.captured,
            "jump": self.jump,
            "notation": self.notation,
        }


def ply_info(board: Board, move: Move) -> PlyInfo:
    """Describe `move` in `board` (before it is pushed)."""
    piece = board.piece_at(move.from_square)
    target = board.piece_at(move.to_square)
    r0, f0 = divmod(move.from_square, K.N_FILES)
    r1, f1 = divmod(move.to_square, K.N_FILES)
    return PlyInfo(
        str(move), piece.letter if piece else "", target.letter if target else None, abs(f0 - f1) + abs(r0 - r1) > 1
    )


def trapped_squares(board: Board) -> list[int]:
    """Squares whose piece stands in an enemy trap (rank 0 there: any enemy may take it)."""
    codes = board.state[: K.N_SQUARES]
    trapped = ((codes > 0) & (K.TRAP_OWNER == K.BLUE)) | ((codes < 0) & (K.TRAP_OWNER == K.RED))
    return [int(sq) for sq in np.flatnonzero(trapped)]


def board_letters(board: Board) -> list[str]:
    return [p.letter if (p := board.piece_at(sq)) else "" for sq in range(K.N_SQUARES)]


def terrain() -> dict[str, Any]:
    """The board the page draws: size, square names, water, traps and dens with their owners."""
    return {
        "files": FILE_NAMES,
        "n_files": K.N_FILES,
        "n_ranks": K.N_RANKS,
        "squares": list(SQUARE_NAMES),
        "water": [SQUARE_NAMES[s] for s in range(K.N_SQUARES) if K.WATER[s]],
        "traps": {
            SQUARE_NAMES[s]: side_name(Side(int(K.TRAP_OWNER[s]))) for s in range(K.N_SQUARES) if K.TRAP_OWNER[s] >= 0
        },
        "dens": {SQUARE_NAMES[int(K.DEN[side])]: side_name(side) for side in Side},
    }


def termination_text(termination: str, winner: Optional[Side], loser: Optional[Side], rules: RuleSet) -> str:
    """`'den'` -> 'Red entered Blue's den' and so on; draws name their rule."""
    text = _TERMINATION_TEXT.get(termination, termination.replace("_", " "))
    return text.format(
        winner=side_name(winner).title() if winner is not None else "",
        loser=side_name(loser).title() if loser is not None else "",
        limit=rules.no_capture_draw,
    )


def end_reason(board: Board, termination: Optional[str], winner: Optional[Side]) -> Optional[str]:
    """How the game on `board` ended, in words (None while it goes on)."""
    if termination is None:
        return None
    loser = winner.other if winner is not None else None
    if termination == "no_moves":
        loser = board.side_to_move
    return termination_text(termination, winner, loser, board.rules)

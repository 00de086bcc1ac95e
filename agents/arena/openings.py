"""Where a tournament's games start: seeded random openings, an openings file, and their one line of text.

Opening k is the same for every pairing (fair comparisons, less noise): either `opening_plies` uniformly
random moves from the start position drawn from ``(seed, k)`` (`random_openings`), or line k of an
openings file (`read_openings`; cycled when the file is shorter). tournament.json keeps each opening as
one line of text (`opening_text`, `opening_from_text`), so a resumed tournament plays the same ones
whatever the file says by then.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from agents.arena.errors import OpeningsError
from agents.common.io import PathLike
from envs import Board, Move, RuleSet
from envs.notation import START_JFEN
from envs.seeding import derive_seed


@dataclass(frozen=True)
class Opening:
    """Where games start: a JFEN plus moves played from it before the players take over."""

    start: str = START_JFEN
    moves: tuple[str, ...] = ()

    def board(self, rules: RuleSet) -> Board:
        board = Board.from_jfen(self.start, rules=rules)
        for m in self.moves:
            board.push(m)
        return board


def opening_text(opening: Opening) -> str:
    """``"JFEN | moves"``: an opening as tournament.json stores it (`opening_from_text` reads it back)."""
    return f"{opening.start} | {' '.join(opening.moves)}"


def opening_from_text(text: str) -> Opening:
    """``"JFEN | moves"`` (as tournament.json stores openings) -> the Opening."""
    jfen, _, moves = text.partition("|")
    return Opening(jfen.strip(), tuple(moves.split()))


def random_openings(count: int, plies: int, seed: int, rules: Optional[RuleSet] = None) -> list[Opening]:
    """`count` openings of `plies` random legal moves from the start, opening k drawn from
    ``derive_seed(seed, "opening", k)``; distinct when possible."""
    rules = rules if rules is not None else RuleSet()
    out: list[Opening] = []
    seen: set[tuple[str, ...]] = set()
    for k in range(count):
        rng = np.random.default_rng(derive_seed(seed, "opening", k))
        opening = Opening()
        for _attempt in range(20):
            board = Board(rules=rules)
            moves: list[str] = []
            for _ in range(plies):
                legal = board.legal_move_ints()
                if len(legal) == 0 or board.outcome() is not None:
                    break
                m = Move.from_int(int(legal[rng.integers(len(legal))]))
                board.push(m)
                moves.append(str(m))
            if board.outcome() is not None:
                continue
            opening = Opening(START_JFEN, tuple(moves))
            if opening.moves not in seen:
                break
        seen.add(opening.moves)
        out.append(opening)
    return out


def read_openings(path: PathLike, rules: Optional[RuleSet] = None) -> list[Opening]:
    """Openings from a text file, one per line; blank lines and `#` comments skipped.

    A line is a JFEN (``l5t/1d3c1/... r 0 1``), a list of moves from the
    start position (``a3a4 g7g6``), or a JFEN then ``|`` then moves. Every line
    is checked (JFEN parsed, moves played, game not over); OpeningsError names
    the file and line of the first bad one."""
    rules = rules if rules is not None else RuleSet()
    p = Path(path)
    if not p.is_file():
        raise OpeningsError(f"openings file {str(p)!r} does not exist")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise OpeningsError(f"openings file {str(p)!r} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    out = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if "|" in line:
            opening = opening_from_text(line)
        elif "/" in line:
            opening = Opening(line, ())
        else:
            opening = Opening(START_JFEN, tuple(line.split()))
        try:
            playable(opening, rules)
        except ValueError as e:
            raise OpeningsError(f"{p}:{i}: {e}") from None
        out.append(opening)
    if not out:
        raise OpeningsError(f"openings file {str(p)!r} holds no opening")
    return out


def playable(opening: Opening, rules: RuleSet) -> None:
    """Raise ValueError unless `opening` is a position with the game still on: its JFEN parses under
    `rules`, its moves are legal there, and the game is not over after them."""
    if opening.board(rules).outcome() is not None:
        raise OpeningsError("the game is already over in this opening")

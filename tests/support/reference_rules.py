"""An independent, deliberately plain reference of RULES.md's moving rules.

Written straight from RULES.md for cross-checking the numba kernels: no code
is shared with `envs.kernels` or `envs.board`. It is slow and simple on
purpose; correctness by inspection is the point.

A position is a `Pos`: a dict from (file, rank) (both 0-based, a1 = (0, 0))
to a JFEN letter (upper case Red, lower case Blue), the side to move and
the list of moves made so far (needed by the anti-chase rules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

FILES = "abcdefg"
LETTER_RANK = {"R": 1, "C": 2, "D": 3, "W": 4, "P": 5, "T": 6, "L": 7, "E": 8}
WATER = {(f, r) for f in (1, 2, 4, 5) for r in (3, 4, 5)}
TRAPS = {"red": {(2, 0), (4, 0), (3, 1)}, "blue": {(2, 8), (4, 8), (3, 7)}}
ALL_TRAPS = TRAPS["red"] | TRAPS["blue"]
DENS = {"red": (3, 0), "blue": (3, 8)}
DIRECTIONS = ((0, 1), (1, 0), (0, -1), (-1, 0))


def other(side: str) -> str:
    return "blue" if side == "red" else "red"


def side_of(letter: str) -> str:
    return "red" if letter.isupper() else "blue"


def square_name(sq: tuple[int, int]) -> str:
    return FILES[sq[0]] + str(sq[1] + 1)


def parse_square_name(name: str) -> tuple[int, int]:
    return FILES.index(name[0]), int(name[1]) - 1


@dataclass
class Played:
    side: str
    animal: str  # upper-case letter
    frm: tuple[int, int]
    to: tuple[int, int]


@dataclass
class Pos:
    board: dict[tuple[int, int], str]
    side: str
    history: list[Played] = field(default_factory=list)


def parse(jfen: str) -> Pos:
    """The placement and side to move of a (valid) JFEN."""
    placement, side = jfen.split()[:2]
    board = {}
    for i, row in enumerate(placement.split("/")):
        rank = 8 - i
        f = 0
        for ch in row:
            if ch.isdigit():
                f += int(ch)
            else:
                board[(f, rank)] = ch
                f += 1
    return Pos(board, "red" if side == "r" else "blue")


@dataclass(frozen=True)
class Rules:
    """The variant switches, by the names RULES.md gives them."""

    rank_order: str = "standard"
    river_rats: str = "strict"
    jump_blocking: str = "any_rat"
    trapped_attacker: str = "powerless"
    anti_chase: str = "off"

    @classmethod
    def of(cls, ruleset: object) -> "Rules":
        """Take the variant values from any object with those attribute names."""
        return cls(**{k: getattr(ruleset, k) for k in cls.__dataclass_fields__})

    def rank(self, letter: str) -> int:
        a = letter.upper()
        if self.rank_order == "dog_over_wolf" and a in "DW":
            return 4 if a == "D" else 3
        return LETTER_RANK[a]


def may_capture(rules: Rules, pos: Pos, frm: tuple[int, int], to: tuple[int, int]) -> bool:
    """Rules 5-7 and their variants: may the piece on `frm` take the enemy on `to`?"""
    attacker, victim = pos.board[frm], pos.board[to]
    a, v = attacker.upper(), victim.upper()
    mover = side_of(attacker)
    if (frm in WATER) != (to in WATER):
        both_rats = a == "R" and v == "R"
        if not (rules.river_rats == "rats_ignore_water" and both_rats):
            return False
    if to in TRAPS[mover]:
        return True  # the victim stands in its opponent's trap: rank 0
    if frm in TRAPS[other(mover)] and rules.trapped_attacker == "powerless":
        return False
    if a == "R" and v == "E":
        return True
    if a == "E" and v == "R":
        return False
    return rules.rank(attacker) >= rules.rank(victim)


def basic_targets(rules: Rules, pos: Pos, frm: tuple[int, int]) -> list[tuple[int, int]]:
    """Squares the piece on `frm` may move to by rules 1-7 (no anti-chase)."""
    letter = pos.board[frm]
    a = letter.upper()
    mover = side_of(letter)
    out = []
    for df, dr in DIRECTIONS:
        to = (frm[0] + df, frm[1] + dr)
        if not (0 <= to[0] < 7 and 0 <= to[1] < 9):
            continue
        if to in WATER and a != "R":
            if a not in "LT":
                continue
            flown = []
            while to in WATER:
                flown.append(to)
                to = (to[0] + df, to[1] + dr)
            blocked = False
            for sq in flown:
                p = pos.board.get(sq)
                if p is not None and p.upper() == "R":
                    if rules.jump_blocking == "any_rat" or side_of(p) != mover:
                        blocked = True
            if blocked:
                continue
        if to == DENS[mover]:
            continue
        occupant = pos.board.get(to)
        if occupant is not None:
            if side_of(occupant) == mover:
                continue
            if not may_capture(rules, pos, frm, to):
                continue
        out.append(to)
    return out


def is_attacked(rules: Rules, pos: Pos, sq: tuple[int, int]) -> bool:
    """Could an enemy piece capture the piece on `sq` if it were the enemy's turn?"""
    enemy = other(side_of(pos.board[sq]))
    for frm, p in list(pos.board.items()):
        if side_of(p) == enemy and sq in basic_targets(rules, pos, frm):
            return True
    return False


def anti_chase_forbids(rules: Rules, pos: Pos, frm: tuple[int, int], to: tuple[int, int]) -> bool:
    """RULES.md's 7-3 and 17-5 for the side to move's candidate move frm -> to."""
    animal = pos.board[frm].upper()
    own = [m for m in pos.history if m.side == pos.side]
    last7 = own[-7:]
    entries = sum(1 for m in last7 if m.animal == animal and m.to == to)
    trap_in_7 = any(m.to in ALL_TRAPS for m in last7)
    if entries >= 3 and not trap_in_7 and not is_attacked(rules, pos, frm):
        return True
    last17 = own[-17:]
    if len(last17) == 17 and all(m.animal == animal for m in last17):
        if not any(m.to in ALL_TRAPS for m in last17):
            visited = {m.to for m in last17} | {last17[0].frm}
            if len(visited) <= 5 and to in visited:
                return True
    return False


def game_won(pos: Pos) -> bool:
    """Rules 8-9: a piece stands in its enemy's den, or a side has no pieces."""
    for side in ("red", "blue"):
        p = pos.board.get(DENS[side])
        if p is not None and side_of(p) != side:
            return True
        if not any(side_of(q) == side for q in pos.board.values()):
            return True
    return False


def legal_moves(rules: Rules, pos: Pos) -> list[str]:
    """The side to move's legal moves as sorted strings; none once the game is won."""
    if game_won(pos):
        return []
    moves = []
    for frm, p in list(pos.board.items()):
        if side_of(p) != pos.side:
            continue
        for to in basic_targets(rules, pos, frm):
            if rules.anti_chase != "off" and anti_chase_forbids(rules, pos, frm, to):
                continue
            moves.append(square_name(frm) + square_name(to))
    return sorted(moves)


def play(pos: Pos, move: str) -> Pos:
    """The position after `move` (not checked), as a new Pos."""
    frm, to = parse_square_name(move[:2]), parse_square_name(move[2:])
    board = dict(pos.board)
    letter = board.pop(frm)
    board[to] = letter
    played = Played(pos.side, letter.upper(), frm, to)
    return Pos(board, other(pos.side), pos.history + [played])


def perft(rules: Rules, pos: Pos, depth: int) -> int:
    """RULES.md's perft: lines end at a win (rules 8-10); draws are ignored."""
    if depth == 0:
        return 1
    moves = legal_moves(rules, pos)
    if depth == 1:
        return len(moves)
    total = 0
    for m in moves:
        child = play(pos, m)
        if not game_won(child):
            total += perft(rules, child, depth - 1)
    return total


def divide(rules: Rules, pos: Pos, depth: int) -> Mapping[str, int]:
    """Per-root-move perft counts."""
    out = {}
    for m in legal_moves(rules, pos):
        child = play(pos, m)
        out[m] = 1 if depth <= 1 else (0 if game_won(child) else perft(rules, child, depth - 1))
    return out


def replay(jfen: str, moves: list[str]) -> Pos:
    """The position after playing `moves` from `jfen`, history included."""
    pos = parse(jfen)
    for m in moves:
        pos = play(pos, m)
    return pos

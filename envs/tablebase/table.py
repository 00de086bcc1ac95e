"""`Tablebase`: the tables of one rule set, probed from Python (`probe`) or handed to numba (`arrays`).

    tb = Tablebase.open(RuleSet())                   # built by `python -m envs tablebase build`
    p = tb.probe(Board("7/7/7/7/7/7/7/3L3/e6 r 0 1"))
    p.wdl, p.dtm, p.best_moves

Values are from the side to move and hold for the position alone: the
repetition rule (11) is not applied (the winner's shortest line never
repeats a position, but one the game met twice before may draw it), and the
no-capture rule (12) is answered by `TablebaseProbe.clock_wdl`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Optional, Protocol, Union

import numpy as np

from envs import kernels as K
from envs.notation import Move
from envs.rules import F_NO_CAPTURE_LIMIT, RuleSet
from envs.tablebase.errors import TablebaseError, TablebaseFileError, TablebaseMissingError
from envs.tablebase.index import MAX_PIECES, Material, material_of_state
from envs.tablebase.probe import DRAW, LOSS, UNKNOWN, WIN, TablebaseArrays, probe_clock, table_entry
from envs.tablebase.solver import Progress, build_arrays, check_rules
from envs.tablebase.store import check_table_dir, read_tables, table_path, table_rules, tablebase_root, write_tables

RESULT_NAMES = {WIN: "win", DRAW: "draw", LOSS: "loss", UNKNOWN: "unknown"}


class ProbedBoard(Protocol):
    """What the tables read of a position (an `envs.Board` is one): its rules, kernel arrays and moves."""

    rules: RuleSet
    state: np.ndarray
    flags: np.ndarray

    def legal_move_ints(self) -> np.ndarray: ...

    def jfen(self) -> str: ...


class MoveValue(NamedTuple):
    """What one move leads to, from the side that plays it: `probe`'s wdl, dtm and dtz (counting the move)
    and the result under the no-capture rule (`clock_wdl`)."""

    wdl: int
    dtm: Optional[int]
    dtz: Optional[int]
    clock_wdl: int


@dataclass(frozen=True)
class TablebaseProbe:
    """The tables' answer for one position; every value is from the side to move."""

    wdl: int
    """WIN (1), DRAW (0) or LOSS (-1) by the position alone."""
    dtm: Optional[int]
    """Plies to the end under optimal play (the winner shortest, the loser longest); None for a draw."""
    dtz: Optional[int]
    """Plies to the next capture or the end under the same rule; None for a draw."""
    clock_wdl: int
    """The result under the board's no-capture rule from its clock (`probe.clock_wdl`): a cursed win
    is a DRAW; UNKNOWN where the tables cannot tell; `wdl` when the rule is off."""
    plies_left: Optional[int]
    """Plies before the no-capture rule draws (None when it is off)."""
    moves: dict[Move, MoveValue]
    """Every legal move and what it leads to."""

    @property
    def best_moves(self) -> list[Move]:
        """The moves that keep the best result under the game's rules (the clock included), then the
        quickest win or the longest loss; sorted.

        Quickest by dtm, or by dtz when the clock leaves fewer plies than dtm: the winner's dtz then
        falls at each of its moves, so that line reaches its capture in time and repeats no position."""
        if not self.moves:
            return []
        by_dtz = self.plies_left is not None and self.dtm is not None and self.dtm > self.plies_left
        keys = {m: _move_key(v, by_dtz) for m, v in self.moves.items()}
        top = max(keys.values())
        return sorted((m for m, k in keys.items() if k == top), key=str)

    def describe(self) -> str:
        """`'win in 3 plies'`, `'loss in 4 plies'`, `'win in 1 ply'` or `'draw'`, plus the clock's verdict
        when it differs."""
        plies = "ply" if self.dtm == 1 else "plies"
        text = "draw" if self.wdl == DRAW else f"{RESULT_NAMES[self.wdl]} in {self.dtm} {plies}"
        if self.clock_wdl != self.wdl:
            text += f" ({RESULT_NAMES[self.clock_wdl]} under the no-capture rule, {self.plies_left} plies left)"
        return text


def _move_key(v: MoveValue, by_dtz: bool) -> tuple[int, int, int]:
    """Order of the moves, best last: the result under the clock (the table's where it cannot tell), the
    table result, then the distance (shorter for a win, longer for a loss)."""
    clock = v.wdl if v.clock_wdl == UNKNOWN else v.clock_wdl
    d = v.dtz if by_dtz else v.dtm
    dist = 0 if d is None else (-d if v.wdl == WIN else d)
    return clock, v.wdl, dist


class Tablebase:
    """The endgame tables of one rule set's position-only rules (`store.TABLE_RULES`), up to `max_pieces`."""

    def __init__(
        self,
        rules: RuleSet,
        materials: list[Material],
        arrays: TablebaseArrays,
        max_pieces: int,
        path: Optional[Path] = None,
    ) -> None:
        check_rules(rules)
        self.rules = rules
        self.materials = materials
        self.arrays = arrays
        """The tables for numba kernels (`probe.probe_state`, `probe.probe_states`)."""
        self.max_pieces = max_pieces
        self.path = path

    # -- making -------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        rules: Optional[RuleSet] = None,
        pieces: int = MAX_PIECES,
        only: Optional[list[Material]] = None,
        progress: Optional[Progress] = None,
    ) -> "Tablebase":
        """Solve the tables in memory (`solver.build_arrays`); `save` writes them."""
        rules = rules if rules is not None else RuleSet()
        order, arrays = build_arrays(rules, pieces, only, progress)
        return cls(rules, order, arrays, pieces)

    def save(self, root: Union[str, Path, None] = None) -> tuple[Path, str]:
        """Write the tables under `root` (`store.tablebase_root`); returns the file and its data's sha256.

        A directory that cannot be written (`store.check_table_dir`) is a TablebaseError naming it."""
        path = table_path(self.rules, self.max_pieces, root)
        check_table_dir(path.parent, write=True)
        digest = write_tables(path, self.rules, self.max_pieces, self.materials, self.arrays)
        self.path = path
        return path, digest

    @classmethod
    def open(
        cls,
        rules: Optional[RuleSet] = None,
        root: Union[str, Path, None] = None,
        pieces: Optional[int] = None,
    ) -> "Tablebase":
        """The tables of `rules` under `root`: those with the most pieces, or with `pieces`.

        Every header field and the data's checksum are checked first (`store.read_tables`): a damaged file
        is a TablebaseFileError naming it and the command that builds it again. TablebaseMissingError says
        how to build them when none are there; a directory that cannot be read is a TablebaseError."""
        rules = rules if rules is not None else RuleSet()
        check_rules(rules)
        counts = [pieces] if pieces is not None else list(range(MAX_PIECES, 1, -1))
        check_table_dir(table_path(rules, counts[0], root).parent)
        for n in counts:
            path = table_path(rules, n, root)
            try:
                if not path.is_file():
                    continue
                layout, arrays = read_tables(path, rules)
                if layout.pieces != n:
                    raise TablebaseFileError(
                        f"tablebase file {str(path)!r} holds the tables of up to {layout.pieces} pieces, not {n}"
                    )
            except OSError as e:
                raise TablebaseFileError(f"tablebase file {str(path)!r} cannot be read: {e.strerror or e}") from None
            except TablebaseFileError as e:
                raise TablebaseFileError(f"{e}; build it again with: {build_command(rules, n, root)}") from None
            return cls(rules, layout.materials, arrays, n, path)
        raise TablebaseMissingError(
            f"no tablebase for rules {_rules_text(rules)} in {str(table_path(rules, counts[0], root).parent)!r}; "
            f"build it with: {build_command(rules, counts[0], root)}"
        )

    # -- probing ------------------------------------------------------------------------
    def serves(self, rules: RuleSet) -> bool:
        """Whether these tables hold the values of `rules` (the same position-only rules, no anti-chase)."""
        return rules.anti_chase == "off" and table_rules(rules) == table_rules(self.rules)

    def holds(self, board: ProbedBoard) -> bool:
        """Whether `probe` answers for `board` (its rules served, its material built, its game going on)."""
        return self.serves(board.rules) and table_entry(board.state, self.arrays)[0] >= 0

    def probe(self, board: ProbedBoard) -> TablebaseProbe:
        """The tables' value of `board` and of each of its legal moves (TablebaseError when they lack it)."""
        self._check(board)
        st = board.state
        wdl, dtm, dtz, clock = probe_clock(st, board.flags, self.arrays)
        limit = int(board.flags[F_NO_CAPTURE_LIMIT])
        moves = {}
        child = st.copy()
        hist = np.zeros((1, K.HIST_WIDTH), dtype=np.int16)
        hashes = np.zeros(2, dtype=np.uint64)
        child[K.S_PLY] = 0
        for m in board.legal_move_ints():
            cap = K.make_move(child, hist, hashes, int(m))
            if K.won_by_last_move(child):
                value = MoveValue(WIN, 1, 1, WIN)
            else:
                c_wdl, c_dtm, c_dtz, c_clock = probe_clock(child, board.flags, self.arrays)
                if c_wdl == DRAW:
                    value = MoveValue(DRAW, None, None, -c_clock)
                else:
                    value = MoveValue(
                        -c_wdl, c_dtm + 1, 1 if cap else c_dtz + 1, UNKNOWN if c_clock == UNKNOWN else -c_clock
                    )
            K.unmake_move(child, hist)
            moves[Move.from_int(int(m))] = value
        return TablebaseProbe(
            wdl=int(wdl),
            dtm=None if wdl == DRAW else int(dtm),
            dtz=None if wdl == DRAW else int(dtz),
            clock_wdl=int(clock),
            plies_left=limit - int(st[K.S_CLOCK]) if limit > 0 else None,
            moves=moves,
        )

    def _check(self, board: ProbedBoard) -> None:
        if not self.serves(board.rules):
            check_rules(board.rules)
            mine, theirs = table_rules(self.rules), table_rules(board.rules)
            differ = [k for k in mine if mine[k] != theirs[k]]
            raise TablebaseError(
                f"these tables are for {', '.join(f'{k}={mine[k]}' for k in differ)}; the board "
                f"plays {', '.join(f'{k}={theirs[k]}' for k in differ)}"
            )
        n = int(board.state[K.S_COUNT] + board.state[K.S_COUNT + 1])
        if n > self.max_pieces:
            text = f"{board.jfen()!r} has {n} pieces; these tables hold at most {self.max_pieces}"
            if n <= MAX_PIECES:
                raise TablebaseMissingError(
                    f"{text}; build the {n}-piece tables with: python -m envs tablebase "
                    f"build --pieces {n}{_rules_flags(self.rules)}"
                )
            raise TablebaseError(text)
        if K.game_won(board.state):
            raise TablebaseError(f"the game in {board.jfen()!r} is already won (rule 8 or 9): nothing to probe")
        if table_entry(board.state, self.arrays)[0] < 0:
            material = material_of_state(board.state)
            where = f" ({self.path})" if self.path is not None else ""
            raise TablebaseMissingError(
                f"material {material} is not in these tables{where}; build them with: "
                f"python -m envs tablebase build --pieces {material.n_pieces}"
                f"{_rules_flags(self.rules)}"
            )


def build_command(rules: RuleSet, pieces: int, root: Union[str, Path, None] = None) -> str:
    """The command line that builds the tables of `rules` up to `pieces` pieces (under `root` when given)."""
    return f"python -m envs tablebase build --pieces {pieces}{_rules_flags(rules)}" + (
        f" --out {shlex.quote(str(root))}" if root is not None else ""
    )


def _rules_text(rules: RuleSet) -> str:
    return ", ".join(f"{k}={v}" for k, v in table_rules(rules).items())


def _rules_flags(rules: RuleSet) -> str:
    default = table_rules(RuleSet())
    return "".join(f" --rule {k}={v}" for k, v in table_rules(rules).items() if default[k] != v)


_OPEN: dict[tuple[Path, str], Tablebase] = {}


def default_tablebase(rules: Optional[RuleSet] = None) -> Tablebase:
    """The tables of `rules` in the default location (`store.tablebase_root`), opened once per process.

    TablebaseMissingError (not remembered: a build later is found) says how to build them."""
    rules = rules if rules is not None else RuleSet()
    check_rules(rules)
    key = (tablebase_root(), ".".join(table_rules(rules).values()))
    if key not in _OPEN:
        _OPEN[key] = Tablebase.open(rules)
    return _OPEN[key]

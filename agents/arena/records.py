"""Game records: one JSON object per line (JSONL), shared by tournaments,
self-play and the play page.

Fields of a record:

``start``        JFEN the game started from
``moves``        list of move strings (``"a3a4"``) in order
``result``       ``"1-0"`` Red won, ``"0-1"`` Blue won, ``"1/2-1/2"``, ``"*"`` unfinished
``termination``  ``den``, ``all_captured``, ``no_moves``, ``repetition``,
                 ``no_capture_limit``, ``ply_cap``, ``resign``, ``tablebase`` (self-play
                 adjudicated by the endgame tables), ``level`` (self-play ended a long game
                 its searches judged level), ``engine_fault`` (a tournament game an
                 ``engine:`` player lost by its own fault; ``extra["fault"]`` says which side
                 and what it did) or null
``red``/``blue`` player names (specs)
``rules``        the RuleSet as a dict
``seed``         the seed the game was played with, or null
``extra``        free-form dict (timings, search values, tournament round...)
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

from agents.common.io import PathLike, atomic_write_text
from envs import Board, RuleSet
from envs.notation import START_JFEN

RESULTS = ("1-0", "0-1", "1/2-1/2", "*")
TERMINATIONS = (
    "den",
    "all_captured",
    "no_moves",
    "repetition",
    "no_capture_limit",
    "ply_cap",
    "resign",
    "tablebase",
    "level",
    "engine_fault",
    None,
)


class RecordError(ValueError):
    """A malformed game record (names the file and line where there is one)."""


@dataclass
class GameRecord:
    start: str = START_JFEN
    moves: list[str] = field(default_factory=list)
    result: str = "*"
    termination: Optional[str] = None
    red: str = ""
    blue: str = ""
    rules: dict[str, Any] = field(default_factory=lambda: RuleSet().to_dict())
    seed: Optional[int] = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_board(
        cls,
        board: Board,
        start: str,
        *,
        red: str = "",
        blue: str = "",
        seed: Optional[int] = None,
        termination: Optional[str] = None,
        result: Optional[str] = None,
        **extra: Any,
    ) -> "GameRecord":
        """Record a game played on `board` from `start` (the board's move stack is the game)."""
        out = board.outcome()
        if result is None:
            result = out.result() if out is not None else "*"
        if termination is None and out is not None:
            termination = out.termination.name.lower()
        return cls(
            start=start,
            moves=[str(m) for m in board.move_stack],
            result=result,
            termination=termination,
            red=red,
            blue=blue,
            rules=board.rules.to_dict(),
            seed=seed,
            extra=dict(extra),
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, d: Any, where: str = "record") -> "GameRecord":
        if not isinstance(d, dict):
            raise RecordError(f"{where}: a record must be a JSON object, got {type(d).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(d) - known)
        if unknown:
            raise RecordError(f"{where}: unknown field(s) {', '.join(unknown)}")
        rec = cls(**d)
        if not isinstance(rec.moves, list) or not all(isinstance(m, str) for m in rec.moves):
            raise RecordError(f"{where}: 'moves' must be a list of move strings")
        if rec.result not in RESULTS:
            raise RecordError(f"{where}: result {rec.result!r} is not one of {', '.join(RESULTS)}")
        if rec.termination not in TERMINATIONS:
            raise RecordError(f"{where}: unknown termination {rec.termination!r}")
        return rec

    def replay(self) -> Board:
        """The final board, every move checked by the rules engine (ValueError naming the bad move)."""
        try:
            board = Board.from_jfen(self.start, rules=RuleSet.from_dict(self.rules))
            for m in self.moves:
                board.push(m)
        except ValueError as e:
            raise RecordError(f"record does not replay: {e}") from None
        return board


def write_jsonl(path: PathLike, records: Iterable[GameRecord]) -> None:
    """Write all records atomically (replaces the file)."""
    atomic_write_text(path, "".join(r.to_json() + "\n" for r in records))


def append_jsonl(path: PathLike, records: Iterable[GameRecord]) -> None:
    """Append records (one line each, flushed) for logs that grow during a run."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "a", encoding="utf-8") as f:
        for r in records:
            f.write(r.to_json() + "\n")


def cut_torn_tail(path: PathLike) -> int:
    """Drop a last line that a killed writer left unfinished (no final newline) from a JSONL log.

    Returns the bytes removed (0 when the file ends with a newline, is empty or does not exist)."""
    p = Path(path)
    if not p.is_file():
        return 0
    size = p.stat().st_size
    with open(p, "rb") as f:
        keep, pos = 0, size
        while pos > 0:  # read backwards for the last newline
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            chunk = f.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                keep = pos + nl + 1
                break
    if keep < size:
        os.truncate(p, keep)
    return size - keep


def is_game_record(line: bytes) -> bool:
    """Whether one JSONL line holds a game record (its fields checked as `GameRecord.from_dict` does; the
    moves are not replayed)."""
    try:
        GameRecord.from_dict(json.loads(line))
    except (ValueError, TypeError, RecursionError):  # not JSON, not UTF-8, not a record; nested past the stack
        return False
    return True


def parse_jsonl(lines: Iterable[str], where: Callable[[int], str]) -> Iterator[GameRecord]:
    """Records from JSONL lines (blank lines skipped); RecordError starts with `where(line number)`."""
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"{where(i)}: not valid JSON ({e.msg})") from None
        yield GameRecord.from_dict(d, where=where(i))


def read_jsonl(path: PathLike) -> Iterator[GameRecord]:
    """Read records; RecordError names the file and line of a malformed one."""
    p = Path(path)
    if not p.is_file():
        raise RecordError(f"no game record file at {str(p)!r}")
    with open(p, encoding="utf-8") as f:
        yield from parse_jsonl(f, lambda i: f"{p}:{i}")

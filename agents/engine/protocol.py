"""The Jungle Engine Protocol's lines as small typed objects (docs/protocol.md): parsed and formatted here,
for both sides of the line (the engine, `agents.engine.engine`, and a driver that runs an engine).

    >>> parse_command("go wtime 3000 btime 3000 winc 100").limits.winc
    100
    >>> format_info(Info(depth=2, wp=0.64, nodes=620, pv=("g7g6", "a4a5")))
    'info depth 2 score wp 0.640 cp 100 nodes 620 pv g7g6 a4a5'
    >>> parse_bestmove("bestmove a3a4")
    'a3a4'

A line the protocol does not allow raises `ProtocolError` (a ValueError) whose message is what the engine
puts after ``info string error``: the command's name, then what was wrong with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Optional, Union

COMMANDS = ("jep", "setoption", "isready", "newgame", "position", "go", "stop", "quit")
"""The commands from the driver to the engine, in the order docs/protocol.md lists them."""
MAX_CP = 3000
"""`score cp` is clipped to this magnitude."""
MAX_NUMBER = 10**12
"""The largest number a command's field may hold (milliseconds, plies, nodes)."""


class ProtocolError(ValueError):
    """A line the protocol does not allow; the message names the command and what was wrong."""


@dataclass(frozen=True)
class Bare:
    """A command without arguments: ``jep``, ``isready``, ``newgame``, ``stop`` or ``quit``."""

    name: str


@dataclass(frozen=True)
class SetOption:
    """``setoption name <name> value <value>`` (the value may hold spaces; '' when none is given)."""

    name: str
    value: str


@dataclass(frozen=True)
class Position:
    """``position startpos|jfen <JFEN> [moves ...]``: `jfen` None for the start position."""

    jfen: Optional[str]
    moves: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoLimits:
    """The limits of ``go`` (None: not given). Times in milliseconds; `wtime`/`winc` are Red's (it moves
    first, as White in chess), `btime`/`binc` Blue's."""

    movetime: Optional[int] = None
    wtime: Optional[int] = None
    btime: Optional[int] = None
    winc: Optional[int] = None
    binc: Optional[int] = None
    movestogo: Optional[int] = None
    depth: Optional[int] = None
    nodes: Optional[int] = None
    infinite: bool = False

    @property
    def unlimited(self) -> bool:
        """Search until ``stop``: ``infinite`` given, or no limit at all."""
        return self.infinite or all(getattr(self, f.name) is None for f in fields(self) if f.name != "infinite")


@dataclass(frozen=True)
class Go:
    """``go <limits>``."""

    limits: GoLimits


Command = Union[Bare, SetOption, Position, Go]

_GO_NUMBERS = ("movetime", "wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes")
_GO_MINIMUM = {"movestogo": 1, "depth": 1, "nodes": 1}
"""The smallest value of a go field (0 for the others: a clock may read 0)."""


def _number(command: str, key: str, text: Optional[str], minimum: int = 0) -> int:
    if text is None:
        raise ProtocolError(f"{command}: {key} needs a number")
    if not text.isdigit() or not minimum <= int(text) <= MAX_NUMBER:
        raise ProtocolError(f"{command}: {key} {text!r} is not a whole number in {minimum}..{MAX_NUMBER}")
    return int(text)


def parse_command(line: str) -> Optional[Command]:
    """One line from the driver as a Command; None for an empty line. ProtocolError for anything else the
    protocol does not allow (an unknown command, a missing or bad field)."""
    tokens = line.split()
    if not tokens:
        return None
    name, args = tokens[0], tokens[1:]
    if name in ("jep", "isready", "newgame", "stop", "quit"):
        if args:
            raise ProtocolError(f"{name}: takes nothing, got {' '.join(args)!r}")
        return Bare(name)
    if name == "setoption":
        return _parse_setoption(args)
    if name == "position":
        return _parse_position(args)
    if name == "go":
        return Go(_parse_go(args))
    shown = line.strip()
    raise ProtocolError(f"unknown command {shown[:80]!r} (the commands are {', '.join(COMMANDS)})")


def _parse_setoption(args: list[str]) -> SetOption:
    if not args or args[0] != "name" or len(args) < 2 or args[1] == "value":
        raise ProtocolError("setoption: expected 'setoption name <Name> value <value>'")
    if "value" in args:
        at = args.index("value")
        return SetOption(" ".join(args[1:at]), " ".join(args[at + 1 :]))
    return SetOption(" ".join(args[1:]), "")


def _parse_position(args: list[str]) -> Position:
    if not args or args[0] not in ("startpos", "jfen"):
        raise ProtocolError("position: expected 'position startpos' or 'position jfen <JFEN>', then 'moves ...'")
    at = args.index("moves") if "moves" in args else len(args)
    head, moves = args[:at], tuple(args[at + 1 :])
    if args[0] == "startpos":
        if len(head) > 1:
            raise ProtocolError(f"position: unexpected {' '.join(head[1:])!r} after startpos")
        return Position(None, moves)
    if len(head) != 5:
        raise ProtocolError(f"position: a JFEN has four fields, got {len(head) - 1}: {' '.join(head[1:])!r}")
    return Position(" ".join(head[1:]), moves)


def _parse_go(args: list[str]) -> GoLimits:
    values: dict[str, object] = {}
    i = 0
    while i < len(args):
        key = args[i]
        if key == "infinite":
            values["infinite"] = True
            i += 1
            continue
        if key not in _GO_NUMBERS:
            raise ProtocolError(f"go: unknown limit {key!r} (the limits are {', '.join(_GO_NUMBERS)}, infinite)")
        if key in values:
            raise ProtocolError(f"go: {key} is given twice")
        values[key] = _number("go", key, args[i + 1] if i + 1 < len(args) else None, _GO_MINIMUM.get(key, 0))
        i += 2
    return GoLimits(**values)  # type: ignore[arg-type]


def format_command(command: Command) -> str:
    """The line of a Command (what a driver sends); `parse_command` reads it back."""
    if isinstance(command, Bare):
        return command.name
    if isinstance(command, SetOption):
        return f"setoption name {command.name} value {command.value}".rstrip()
    if isinstance(command, Position):
        head = "position startpos" if command.jfen is None else f"position jfen {command.jfen}"
        return head + (" moves " + " ".join(command.moves) if command.moves else "")
    words = ["go"]
    for key in _GO_NUMBERS:
        value = getattr(command.limits, key)
        if value is not None:
            words += [key, str(value)]
    if command.limits.infinite:
        words.append("infinite")
    return " ".join(words)


# --- replies --------------------------------------------------------------------------------------------------
def cp_from_wp(wp: float) -> int:
    """`score cp` of an expected score `wp` in [0, 1]: round(400 * log10(wp / (1 - wp))), clipped to ±MAX_CP."""
    if wp <= 0:
        return -MAX_CP
    if wp >= 1:
        return MAX_CP
    return max(-MAX_CP, min(MAX_CP, round(400 * math.log10(wp / (1 - wp)))))


def wp_from_cp(cp: float) -> float:
    """The expected score of `cp` (the inverse of `cp_from_wp` inside the clip)."""
    return 1.0 / (1.0 + 10 ** (-cp / 400))


@dataclass(frozen=True)
class Info:
    """An ``info`` line's fields (None: not given). The score is one of `wp` (with `cp`, derived from it
    when not given), `win` or `loss` (plies to a proven result)."""

    depth: Optional[int] = None
    sims: Optional[int] = None
    wp: Optional[float] = None
    cp: Optional[int] = None
    win: Optional[int] = None
    loss: Optional[int] = None
    nodes: Optional[int] = None
    nps: Optional[int] = None
    time: Optional[int] = None
    pv: tuple[str, ...] = ()
    string: Optional[str] = None
    """Free text (``info string ...``): the rest of the line."""


_INFO_NUMBERS = ("depth", "sims", "nodes", "nps", "time")


def format_info(info: Info) -> str:
    """The ``info`` line of `info`, its fields in docs/protocol.md's order (``string`` last: it takes the rest
    of the line)."""
    words = ["info"]
    for key in ("depth", "sims"):
        if getattr(info, key) is not None:
            words += [key, str(getattr(info, key))]
    if info.win is not None:
        words += ["score", "win", str(info.win)]
    elif info.loss is not None:
        words += ["score", "loss", str(info.loss)]
    elif info.wp is not None:
        cp = info.cp if info.cp is not None else cp_from_wp(info.wp)
        words += ["score", "wp", f"{info.wp:.3f}", "cp", str(cp)]
    for key in ("nodes", "nps", "time"):
        if getattr(info, key) is not None:
            words += [key, str(getattr(info, key))]
    if info.pv:
        words += ["pv", *info.pv]
    if info.string is not None:
        words += ["string", info.string]
    return " ".join(words)


def parse_info(line: str) -> Info:
    """An ``info`` line's fields; ProtocolError for a line that is not one or holds a malformed field."""
    tokens = line.split()
    if not tokens or tokens[0] != "info":
        raise ProtocolError(f"info: not an info line: {line.strip()[:80]!r}")
    values: dict[str, object] = {}
    i = 1
    while i < len(tokens):
        key = tokens[i]
        if key == "string":
            values["string"] = line.split("string", 1)[1].strip()
            break
        if key == "pv":
            values["pv"] = tuple(tokens[i + 1 :])
            break
        if key in _INFO_NUMBERS:
            values[key] = _number("info", key, tokens[i + 1] if i + 1 < len(tokens) else None)
            i += 2
        elif key == "score":
            i = _parse_score(tokens, i + 1, values)
        else:
            raise ProtocolError(f"info: unknown field {key!r}")
    return Info(**values)  # type: ignore[arg-type]


def _parse_score(tokens: list[str], i: int, values: dict[str, object]) -> int:
    """Read ``score`` fields from `tokens[i:]` into `values`; the index after them."""
    kind = tokens[i] if i < len(tokens) else None
    text = tokens[i + 1] if i + 1 < len(tokens) else None
    if kind in ("win", "loss"):
        values[kind] = _number("info", f"score {kind}", text)
        return i + 2
    if kind != "wp":
        raise ProtocolError(f"info: score {kind!r} is not wp, win or loss")
    try:
        wp = float(text) if text is not None else math.nan
    except ValueError:
        wp = math.nan
    if not 0 <= wp <= 1:
        raise ProtocolError(f"info: score wp {text!r} is not a number in [0, 1]")
    values["wp"] = wp
    i += 2
    if i < len(tokens) and tokens[i] == "cp":
        cp = tokens[i + 1] if i + 1 < len(tokens) else ""
        if not cp.lstrip("-").isdigit():
            raise ProtocolError(f"info: score cp {cp!r} is not a whole number")
        values["cp"] = int(cp)
        i += 2
    return i


def parse_bestmove(line: str) -> Optional[str]:
    """The move of a ``bestmove`` line; None for ``bestmove (none)``. ProtocolError for another line."""
    tokens = line.split()
    if len(tokens) != 2 or tokens[0] != "bestmove":
        raise ProtocolError(f"bestmove: expected 'bestmove <move>', got {line.strip()[:80]!r}")
    return None if tokens[1] == "(none)" else tokens[1]


@dataclass(frozen=True)
class Option:
    """One ``option`` line of the answer to ``jep``."""

    name: str
    type: str
    default: str
    min: Optional[int] = None
    max: Optional[int] = None
    var: tuple[str, ...] = ()


def format_option(option: Option) -> str:
    words = ["option", "name", option.name, "type", option.type, "default", option.default]
    if option.min is not None and option.max is not None:
        words += ["min", str(option.min), "max", str(option.max)]
    for v in option.var:
        words += ["var", v]
    return " ".join(words)


def parse_option(line: str) -> Option:
    """An ``option`` line (single-word names and values); ProtocolError for a line that is not one."""
    tokens = line.split()
    try:
        if tokens[:2] != ["option", "name"] or tokens[3] != "type" or tokens[5] != "default":
            raise ValueError
        rest = tokens[7:]
        low = high = None
        if rest[:1] == ["min"]:
            if rest[2] != "max":
                raise ValueError
            low, high, rest = int(rest[1]), int(rest[3]), rest[4:]
        if any(tokens != "var" for tokens in rest[::2]) or len(rest) % 2:
            raise ValueError
        return Option(tokens[2], tokens[4], tokens[6], low, high, tuple(rest[1::2]))
    except (IndexError, ValueError):
        raise ProtocolError(f"option: not an option line: {line.strip()[:80]!r}") from None


__all__ = [
    "Bare",
    "COMMANDS",
    "Command",
    "Go",
    "GoLimits",
    "Info",
    "Option",
    "Position",
    "ProtocolError",
    "SetOption",
    "cp_from_wp",
    "format_command",
    "format_info",
    "format_option",
    "parse_bestmove",
    "parse_command",
    "parse_info",
    "parse_option",
    "wp_from_cp",
]

"""The driver's side of the Jungle Engine Protocol: any program that speaks it, as a player (``engine:`` specs).

    player = make_player("engine:cmd=jungle-engine --player alphabeta:depth=4,time=0.5")
    move = player.select_move(Board())      # position startpos / go movetime 500 / bestmove ...
    player.close()                          # quit, then a kill if it does not exit

A spec is ``engine:cmd=<command line>,name=<name>,time=<s>,depth=<n>,nodes=<n>,option.<Name>=<value>``
(`EngineSettings` lists every key). The command line is split as a shell would (`shlex`), but run
without one; a spec cannot hold a comma, so a command that needs one goes into a wrapper script
(which should ``exec`` the engine). Building the player starts the program and holds it to the
protocol's handshake (``jep``/``jepok``, the options, ``isready``/``readyok``) within ``startup``
seconds: a missing command, a program that cannot start or never answers, an option it does not offer
or refuses is a `PlayerSpecError` naming it, before any game.

During a game, whatever the program does wrong is an `EngineFault`: a move that is not a move or not
legal, no ``bestmove`` within the move's time plus ``margin`` seconds, an ``info string error`` about a
position it was sent, an exit. The program is killed at once and started again for the next move asked
of it (a tournament counts the game lost by the engine, `agents.arena.tournament.play_game`). The
program runs in a session of its own (a Ctrl-C at the terminal reaches the driver, which decides), and
its standard error is kept in memory until `keep_stderr` names a file for it.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shlex
import tempfile
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Optional

from agents.common.child import how_it_ended, kill_program, start_program, wait_program
from agents.engine.protocol import (
    Bare,
    Go,
    GoLimits,
    Position,
    ProtocolError,
    SetOption,
    format_command,
    parse_bestmove,
    parse_info,
)
from envs import Board, Move
from envs.config import check_range, shown
from envs.notation import START_JFEN
from envs.players import PlayerSpecError
from envs.rules import RuleSet, load_rules, rule_set_names

ENGINE_FAULT = "engine_fault"
"""The termination of a game an engine lost by its own fault (`EngineFault`)."""
MAX_LINE = 65536
"""Bytes of one line read from the program; a longer line is read as several."""
MAX_WAITING_LINES = 10000
"""Lines of its output kept unread; past them an engine that floods its output loses lines (and, in time, its
move)."""
STDERR_TAIL = 20
"""Lines of the program's standard error kept in memory for the messages (and, until `keep_stderr`, the whole
of it up to `MAX_PENDING_STDERR` lines)."""
MAX_PENDING_STDERR = 2000
QUIT_GRACE = 1.0
"""Seconds a program told to ``quit`` has to exit before it is killed."""
SPEC_KEYS = ("cmd", "name", "time", "depth", "nodes", "margin", "startup")


class EngineFault(RuntimeError):
    """The engine failed during a game (a crash, no answer in time, a move that is not legal or not a move);
    the message says what it did. The game is the engine's loss."""


@dataclass(frozen=True)
class EngineSettings:
    """What an ``engine:`` spec says, checked."""

    argv: tuple[str, ...]
    """The command line (``cmd=``), split as a shell would."""
    name: str = ""
    """``name=``: the player's name outside tournaments (which name a player by its spec) and in the names of
    its stderr logs; default: the program's file name."""
    time: Optional[float] = None
    """``time=``: seconds a move, sent as ``go movetime <ms>``; 0.001 to 1e6."""
    depth: Optional[int] = None
    """``depth=``: sent as ``go depth <n>``; 1 to 10000."""
    nodes: Optional[int] = None
    """``nodes=``: sent as ``go nodes <n>``; 1 to 1e12. At least one of time, depth and nodes is given; given
    together, all are sent and the engine stops at the first reached."""
    margin: float = 10.0
    """``margin=``: seconds past the move's time (``time=``, or none) that the answer may take before it is a
    fault; 0 to 1e6."""
    startup: float = 60.0
    """``startup=``: seconds the program has to answer ``jep`` with ``jepok`` and the options' ``isready``
    with ``readyok`` (a network loaded on ``setoption name Rules`` included); 0.01 to 1e6."""
    options: tuple[tuple[str, str], ...] = field(default=())
    """``option.<Name>=<value>``: sent as ``setoption name <Name> value <value>`` after the handshake."""

    @property
    def shown_name(self) -> str:
        return self.name or Path(self.argv[0]).name

    def go(self) -> Go:
        """The ``go`` command of every move."""
        movetime = None if self.time is None else max(1, round(self.time * 1000))
        return Go(GoLimits(movetime=movetime, depth=self.depth, nodes=self.nodes))

    def answer_within(self) -> float:
        """Seconds a move may take before it is a fault."""
        return (self.time or 0.0) + self.margin


def _number(key: str, text: str, kind: type, low: float, high: float) -> Any:
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise PlayerSpecError(
            f"engine option {key}={text!r} is not a{'n integer' if kind is int else ' number'}"
        ) from None
    check_range({key: value}, "engine option ", PlayerSpecError, **{key: (low, high)})
    return value


def engine_settings(options: dict[str, str]) -> EngineSettings:
    """The settings of an ``engine:`` spec's options (`envs.players.parse_spec`); PlayerSpecError names a bad
    one."""
    unknown = sorted(k for k in options if k not in SPEC_KEYS and not k.startswith("option."))
    if unknown:
        raise PlayerSpecError(
            f"unknown engine option(s) {', '.join(unknown)}; known: {', '.join(SPEC_KEYS)}, option.<Name>"
        )
    command = options.get("cmd", "")
    try:
        argv = tuple(shlex.split(command))
    except ValueError as e:
        raise PlayerSpecError(f"engine option cmd={command!r} cannot be split into words: {e}") from None
    if not argv:
        raise PlayerSpecError("an engine player needs the command that starts the program: cmd=...")
    engine_options = []
    for key, value in options.items():
        if key.startswith("option."):
            name = key[len("option.") :].strip()
            if not name or len(name.split()) != 1:
                raise PlayerSpecError(f"engine option {key!r}: an option's name is one word after 'option.'")
            engine_options.append((name, value))
    kwargs: dict[str, Any] = {}
    bounds = {
        "time": (float, 1e-3, 1e6),
        "depth": (int, 1, 10000),
        "nodes": (int, 1, 10**12),
        "margin": (float, 0.0, 1e6),
        "startup": (float, 0.01, 1e6),
    }
    for key, (kind, low, high) in bounds.items():
        if key in options:
            kwargs[key] = _number(key, options[key], kind, low, high)
    if not any(k in kwargs for k in ("time", "depth", "nodes")):
        raise PlayerSpecError("an engine player needs a limit for its moves: time= (seconds), depth= or nodes=")
    return EngineSettings(argv=argv, name=options.get("name", ""), options=tuple(engine_options), **kwargs)


class _Program:
    """One run of the engine's program: its pipes, a thread reading each of its outputs, and its end.

    Lines of its standard output wait in `lines` (None once it is closed); those of its standard error go
    to `sink` once there is one, and their last ones stay in `tail`."""

    def __init__(self, argv: tuple[str, ...], sink: Optional[Path]) -> None:
        self.argv = argv
        self.process = start_program(argv)
        self.pid = self.process.pid
        self.lines: queue.Queue[Optional[str]] = queue.Queue()
        self.last_line = ""
        self.tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._sink: Optional[IO[bytes]] = None
        if sink is not None:
            self.keep_stderr(sink)
        self._threads = [
            threading.Thread(target=self._read_stdout, name=f"engine-{self.pid}-stdout", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"engine-{self.pid}-stderr", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        out = self.process.stdout
        assert out is not None
        try:
            for raw in iter(lambda: out.readline(MAX_LINE), b""):
                if self.lines.qsize() < MAX_WAITING_LINES:
                    self.lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):  # the pipe was closed under the read
            pass
        self.lines.put(None)

    def _read_stderr(self) -> None:
        err = self.process.stderr
        assert err is not None
        try:
            for raw in iter(lambda: err.readline(MAX_LINE), b""):
                with self._lock:
                    self.tail.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
                    if self._sink is not None:
                        self._sink.write(raw)
                        self._sink.flush()
                    elif len(self._pending) < MAX_PENDING_STDERR:
                        self._pending.append(raw)
        except (OSError, ValueError):
            pass

    def keep_stderr(self, path: Path) -> None:
        """Append the program's standard error to `path` from now on (what it wrote before included)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        sink = open(path, "ab")
        sink.write(f"=== {shlex.join(self.argv)} (pid {self.pid})\n".encode())
        with self._lock:
            sink.writelines(self._pending)
            sink.flush()
            self._pending.clear()
            if self._sink is not None:
                self._sink.close()
            self._sink = sink

    def send(self, line: str) -> None:
        """Write one line to the program; EngineFault when it no longer reads."""
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(line.encode() + b"\n")
            stdin.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            raise EngineFault(f"it stopped reading its input ({self.ended()})") from None

    def read(self, deadline: float, waiting_for: str, within: str) -> str:
        """The next line of the program, by `deadline` (`time.monotonic`); EngineFault when it ends first or
        none comes in time (`waiting_for` says for what, `within` how long it had)."""
        timeout = deadline - time.monotonic()
        try:
            line = self.lines.get(timeout=timeout) if timeout > 0 else self.lines.get_nowait()
        except queue.Empty:
            seen = f"; its last line was {shown(self.last_line)}" if self.last_line else ""
            raise EngineFault(f"no {waiting_for} within {within}{seen}") from None
        if line is None:
            self.lines.put(None)  # every later read sees the end too
            raise EngineFault(f"it ended before its {waiting_for} ({self.ended()})")
        self.last_line = line
        return line

    def ended(self) -> str:
        """How the program ended (``exit code 1``...), with the last line of its standard error."""
        code = wait_program(self.process, 1.0)
        text = how_it_ended(code) if code is not None else "its output closed"
        if code is not None:
            self._threads[1].join(timeout=1.0)  # its last words: the standard error read to its end
        with self._lock:
            last = next((line for line in reversed(self.tail) if line.strip()), "")
        return text + (f"; its stderr ends {shown(last)}" if last else "")

    def close(self, grace: float = QUIT_GRACE) -> None:
        """End the program: ``quit`` and `grace` seconds to exit (0: none), then a kill of its process group;
        it is reaped, and the threads reading it end."""
        if grace > 0 and self.process.poll() is None:
            try:
                self.send("quit")
            except EngineFault:
                pass
        with contextlib.suppress(OSError, ValueError):  # a pipe the program broke
            assert self.process.stdin is not None
            self.process.stdin.close()
        if wait_program(self.process, grace) is None:
            kill_program(self.process)
        for t in self._threads:
            t.join(timeout=2.0)
        with self._lock:
            if self._sink is not None:
                self._sink.close()
                self._sink = None


def _close_program(program: list[Optional[_Program]]) -> None:
    """Kill the program of a player that was dropped without `close` (garbage, the interpreter's exit)."""
    if program[0] is not None:
        program[0].close(grace=0)
        program[0] = None


def _rules_value(rules: RuleSet, folder: list[Optional[tempfile.TemporaryDirectory[str]]]) -> str:
    """The ``Rules`` option's value for `rules`: the name of the kit's rule set that is `rules`, else a rule
    file written into a temporary folder (kept in `folder` for the player's life)."""
    for name in rule_set_names():
        if load_rules(name) == rules:
            return name
    kept = folder[0]
    if kept is None:
        kept = folder[0] = tempfile.TemporaryDirectory(prefix="jungle-rules-")
    path = Path(kept.name) / "rules.yaml"
    path.write_text(json.dumps(rules.to_dict()) + "\n", encoding="utf-8")  # JSON is YAML
    return str(path)


class EnginePlayer:
    """A program speaking the Jungle Engine Protocol, as a Player: `select_move` sends the game's position and
    ``go`` and reads ``bestmove``; `reset` begins a new game (``newgame``); `close` ends the program.

    The program is started by `start` (or the first move asked of it) and again after an `EngineFault`,
    which kills it. `pid` is its process id while it runs."""

    def __init__(self, settings: EngineSettings, rules: Optional[RuleSet] = None) -> None:
        self.settings = settings
        self.rules = rules if rules is not None else RuleSet()
        self.name = settings.name or "engine"
        self.engine_name = ""
        """The name the program gave (``id name``)."""
        self.engine_options: list[str] = []
        """The options the program offers (its ``option name`` lines)."""
        self._program: list[Optional[_Program]] = [None]
        self._rules_folder: list[Optional[tempfile.TemporaryDirectory[str]]] = [None]
        self._stderr_path: Optional[Path] = None
        self._new_game = True
        self._start: Optional[str] = None
        self._sent: list[Move] = []
        self._finalizer = weakref.finalize(self, _close_program, self._program)

    @property
    def pid(self) -> Optional[int]:
        program = self._program[0]
        return program.pid if program is not None else None

    def keep_stderr(self, path: Path) -> None:
        """Append the program's standard error to `path` (this run's and every later run's)."""
        self._stderr_path = Path(path)
        if self._program[0] is not None:
            self._program[0].keep_stderr(self._stderr_path)

    # --- the program's life -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the program and hold it to the handshake within ``startup`` seconds (``jep`` ... ``jepok``,
        the options, ``isready`` ... ``readyok``). EngineFault says what went wrong; the program is then
        killed."""
        self.close()
        s = self.settings
        try:
            program = _Program(s.argv, self._stderr_path)
        except OSError as e:
            raise EngineFault(f"{shown(s.argv[0])} cannot be started: {e.strerror or e}") from None
        self._program[0] = program
        try:
            self._handshake(program, time.monotonic() + s.startup)
        except EngineFault:
            self._kill()
            raise
        self._new_game = True

    def _handshake(self, program: _Program, deadline: float) -> None:
        s = self.settings
        within = f"{s.startup:g} s (startup=)"
        program.send("jep")
        offered: list[str] = []
        while True:
            line = program.read(deadline, "'jepok' in answer to 'jep'", within)
            tokens = line.split()
            if tokens[:1] == ["jepok"]:
                break
            if tokens[:2] == ["id", "name"]:
                self.engine_name = line.split("name", 1)[1].strip()
            elif tokens[:2] == ["option", "name"] and "type" in tokens:
                offered.append(" ".join(tokens[2 : tokens.index("type")]))
        self.engine_options = offered
        by_name = {o.lower(): o for o in offered}
        settings = list(s.options)
        if "rules" in by_name:
            settings.insert(0, (by_name["rules"], _rules_value(self.rules, self._rules_folder)))
        elif self.rules != RuleSet():
            raise EngineFault(f"it offers no Rules option, so it cannot play under rules {self.rules.to_dict()}")
        for name, value in settings:
            if name.lower() not in by_name:
                raise EngineFault(f"it offers no option {name!r} (its options: {', '.join(offered) or 'none'})")
            program.send(format_command(SetOption(by_name[name.lower()], value)))
        program.send("isready")
        while True:
            line = program.read(deadline, "'readyok' in answer to 'isready'", within)
            if line.split()[:1] == ["readyok"]:
                return
            error = _error(line)
            if error is not None:
                raise EngineFault(f"it refused its settings: {error}")

    def _kill(self) -> None:
        program, self._program[0] = self._program[0], None
        if program is not None:
            program.close(grace=0)

    def close(self) -> None:
        """End the program (``quit``, then a kill if it has not exited within a second) and remove the rule file
        written for it; a later move starts it again."""
        program, self._program[0] = self._program[0], None
        if program is not None:
            program.close()
        folder, self._rules_folder[0] = self._rules_folder[0], None
        if folder is not None:
            folder.cleanup()

    # --- the Player protocol ----------------------------------------------------------------------------------
    def reset(self) -> None:
        """The next position is a new game's (``newgame`` is sent with it)."""
        self._new_game = True
        self._start = None
        self._sent = []

    def select_move(self, board: Board) -> Move:
        """The program's move for `board`'s side to move: the position since the game's start, ``go``, then
        ``bestmove``. EngineFault when the program fails (it is then killed)."""
        try:
            return self._ask(board)
        except EngineFault:
            self._kill()
            raise

    def _ask(self, board: Board) -> Move:
        if self._program[0] is None:
            try:
                self.start()
            except EngineFault as e:
                raise EngineFault(f"it could not be started: {e}") from None
        program = self._program[0]
        assert program is not None
        start, moves = self._position(board)
        while True:  # lines left from before (a late info) are no answer to this move
            try:
                line = program.lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                program.lines.put(None)
                raise EngineFault(f"it ended between moves ({program.ended()})")
        if self._new_game:
            program.send(format_command(Bare("newgame")))
            self._new_game = False
        position = Position(None if start == START_JFEN else start, tuple(str(m) for m in moves))
        program.send(format_command(position))
        s = self.settings
        program.send(format_command(s.go()))
        deadline = time.monotonic() + s.answer_within()
        within = f"{s.answer_within():g} s" + (
            f" (time={s.time:g} + margin={s.margin:g})" if s.time else f" (margin={s.margin:g})"
        )
        while True:
            line = program.read(deadline, "bestmove", within)
            tokens = line.split()
            if tokens[:1] == ["bestmove"]:
                break
            error = _error(line)
            if error is not None:
                raise EngineFault(f"it refused the position: {error}")
        try:
            text = parse_bestmove(line)
        except ProtocolError:
            raise EngineFault(f"its answer {shown(line)} is not 'bestmove <move>'") from None
        n_legal = len(board.legal_moves)
        if text is None:
            raise EngineFault(f"it answered 'bestmove (none)' with {n_legal} legal moves in {board.jfen()!r}")
        try:
            move = Move.from_str(text)
        except ValueError:
            raise EngineFault(f"its answer {shown(line)} names no move") from None
        if not board.is_legal(move):
            raise EngineFault(f"it played {text}, not a legal move in {board.jfen()!r}: {board.why_illegal(move)}")
        return move

    def _position(self, board: Board) -> tuple[str, list[Move]]:
        """The game's first position and its moves to `board`; the first position is found once a game (the
        moves taken back), again only when `board` is not the game the last move was asked in."""
        moves = list(board.move_stack)
        if not moves:
            self._start = board.jfen()
        elif self._start is None or moves[: len(self._sent)] != self._sent:
            first = board.copy()
            while first.move_stack:
                first.pop()
            self._start = first.jfen()
        self._sent = moves
        return self._start, moves


def _error(line: str) -> Optional[str]:
    """The text of an ``info string error ...`` line, None for any other."""
    if not line.startswith("info"):
        return None
    try:
        info = parse_info(line)
    except ProtocolError:
        return None
    text = info.string or ""
    return text[len("error") :].strip() if text.split()[:1] == ["error"] else None


def make_engine_player(rules: Optional[RuleSet] = None, seed: Optional[int] = None, **options: str) -> EnginePlayer:
    """Factory of ``make_player('engine:...')``: the player, its program started and through the handshake.
    PlayerSpecError names a bad option, a program that cannot start, does not answer in time or refuses an
    option. `seed` is not used: an engine's play is its own."""
    del seed
    settings = engine_settings({k: str(v) for k, v in options.items()})
    player = EnginePlayer(settings, rules=rules)
    try:
        player.start()
    except EngineFault as e:
        player.close()
        raise PlayerSpecError(f"engine {shlex.join(settings.argv)!r}: {e}") from None
    return player

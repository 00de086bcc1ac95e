"""The engine side of the Jungle Engine Protocol: any player spec of the kit answering the commands of
docs/protocol.md. `Engine.handle` takes one line; the search runs in a thread of its own, so that ``stop``,
``isready`` and ``quit`` are answered while it runs.

    engine = Engine("alphabeta:depth=2", write=print)
    for line in ("jep", "position startpos moves a3a4", "go depth 2"):
        engine.handle(line)
    engine.close()

``go``'s limits become an `envs.players.Limit` for the player (its spec's own depth, nodes, time or sims
are replaced for that move; its other options stay) and a `StopSignal` that ``stop`` sets: alpha-beta stops
at its next node, the tree search after its round of ``sims`` simulations. A player that takes no limits
(``random``) just plays its move.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from agents.alphabeta.search import SearchResult, plies_to_result
from agents.engine.protocol import (
    Bare,
    Command,
    Go,
    GoLimits,
    Info,
    Option,
    Position,
    ProtocolError,
    SetOption,
    format_info,
    format_option,
    parse_command,
    wp_from_cp,
)
from agents.engine.timeman import move_time_ms
from envs import Board, Move, Side
from envs.config import ConfigError
from envs.players import Limit, Player, StopSignal, accepts_limit, make_player
from envs.rules import RuleSet, resolve_rules

AUTHOR = "Jungle Zero"
DEFAULT_OVERHEAD_MS = 50
MAX_OVERHEAD_MS = 5000
OPTIONS = (
    Option("Rules", "string", "default"),
    Option("MoveOverhead", "spin", str(DEFAULT_OVERHEAD_MS), 0, MAX_OVERHEAD_MS),
)
"""The options every engine offers (docs/protocol.md, "Options")."""


class Engine:
    """One engine: a player built from `spec`, the position the driver set up, the search running (if any).
    `write` takes each reply line (without its newline), from this thread or the search's."""

    def __init__(
        self, spec: str, write: Callable[[str], None], rules: Optional[RuleSet] = None, seed: Optional[int] = None
    ) -> None:
        self.spec, self.seed = spec, seed
        self.rules = rules if rules is not None else RuleSet()
        self.player: Player = _warm(make_player(spec, rules=self.rules, seed=seed), self.rules)
        self.board = Board(rules=self.rules)
        self.overhead_ms = DEFAULT_OVERHEAD_MS
        self._write = write
        self._write_lock = threading.Lock()
        self._search: Optional[_Search] = None

    # --- the loop's side -------------------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        """Answer one line from the driver; False once the engine is to exit (``quit``)."""
        try:
            command = parse_command(line)
            if command is not None:
                return self._dispatch(command)
        except (ProtocolError, ConfigError) as e:
            self.reply(f"info string error {e}")
        return True

    def close(self) -> None:
        """Stop a running search and wait for its ``bestmove`` (at ``quit`` or the end of the input)."""
        search = self._search
        if search is not None:
            search.stop.set()
            search.thread.join()

    def reply(self, line: str) -> None:
        with self._write_lock:
            self._write(line)

    @property
    def searching(self) -> bool:
        return self._search is not None and not self._search.finished

    def _dispatch(self, command: Command) -> bool:
        if isinstance(command, Bare):
            if command.name == "quit":
                self.close()
                return False
            if command.name == "stop":
                if self._search is not None:
                    self._search.stop.set()
                return True
            if command.name == "isready":
                self.reply("readyok")
                return True
        self._refuse_while_searching(command)
        if isinstance(command, Bare):
            if command.name == "jep":
                self._identify()
            elif command.name == "newgame":
                self.player.reset()
                self.board = Board(rules=self.rules)
        elif isinstance(command, SetOption):
            self._set_option(command)
        elif isinstance(command, Position):
            self.board = self._position(command)
        elif isinstance(command, Go):
            self._go(command.limits)
        return True

    def _refuse_while_searching(self, command: Command) -> None:
        if self.searching:
            name = command.name if isinstance(command, Bare) else type(command).__name__.lower()
            raise ProtocolError(f"{name}: a search is running (send stop first)")
        if self._search is not None:
            self._search.thread.join()
            self._search = None

    def _identify(self) -> None:
        self.reply(f"id name {self.player.name}")
        self.reply(f"id author {AUTHOR}")
        for option in OPTIONS:
            self.reply(format_option(option))
        self.reply("jepok")

    def _set_option(self, command: SetOption) -> None:
        name = command.name.lower()
        if name == "rules":
            try:
                rules = resolve_rules(command.value or "default")
            except (ConfigError, OSError) as e:
                raise ProtocolError(f"setoption: Rules {command.value!r}: {e}") from None  # it names the known sets
            try:
                player = _warm(make_player(self.spec, rules=rules, seed=self.seed), rules)
            except ValueError as e:  # a network not trained on these rules, tables that do not serve them
                raise ProtocolError(f"setoption: Rules {command.value!r}: {e}") from None
            self.rules, self.player = rules, player
            self.board = Board(rules=rules)
        elif name == "moveoverhead":
            value = command.value
            if not value.isdigit() or not 0 <= int(value) <= MAX_OVERHEAD_MS:
                raise ProtocolError(f"setoption: MoveOverhead {value!r} is not a whole number in 0..{MAX_OVERHEAD_MS}")
            self.overhead_ms = int(value)
        else:
            names = ", ".join(o.name for o in OPTIONS)
            raise ProtocolError(f"setoption: unknown option {command.name!r} (the options are {names})")

    def _position(self, command: Position) -> Board:
        """The board `command` sets up; ProtocolError naming a bad JFEN or the first move that cannot be played
        (the engine's board is then left as it was)."""
        if command.jfen is None:
            board = Board(rules=self.rules)
        else:
            try:
                board = Board.from_jfen(command.jfen, rules=self.rules)
            except ValueError as e:
                raise ProtocolError(f"position: bad JFEN {command.jfen!r}: {e}") from None
        for i, move in enumerate(command.moves, start=1):
            try:
                board.push(move)
            except ValueError as e:
                raise ProtocolError(f"position: move {i} {move!r} cannot be played: {e}") from None
        return board

    def _go(self, limits: GoLimits) -> None:
        millis = move_time_ms(limits, red_to_move=self.board.side_to_move == Side.RED, overhead=self.overhead_ms)
        limit = Limit(
            time=None if millis is None else millis / 1000,
            depth=limits.depth,
            nodes=limits.nodes,
        )
        search = _Search(self, self.board.copy(), limit, wait_for_stop=limits.unlimited)
        self._search = search
        search.thread.start()


def _warm(player: Player, rules: RuleSet) -> Player:
    """`player` after a search of the start position as short as it allows (then `reset`), so that loading
    its compiled search is not paid by the first ``go``'s clock."""
    if accepts_limit(player):
        player.select_move(Board(rules=rules), limit=Limit(depth=1, nodes=1), stop=None)  # type: ignore[call-arg]
        player.reset()
    return player


class _Search:
    """One ``go``: the thread that searches, its `StopSignal`, and whether ``bestmove`` waits for ``stop``
    (``go infinite``, as UCI asks)."""

    def __init__(self, engine: Engine, board: Board, limit: Limit, wait_for_stop: bool) -> None:
        self.engine, self.board, self.limit, self.wait_for_stop = engine, board, limit, wait_for_stop
        self.stop = StopSignal()
        self.finished = False
        """Set just before ``bestmove`` is written: the driver's next command finds the engine free."""
        self.thread = threading.Thread(target=self.run, name="jep-search", daemon=True)

    def run(self) -> None:
        engine, player = self.engine, self.engine.player
        start = time.perf_counter()
        move: Optional[Move] = None
        info = Info(time=0, nodes=0)
        evaluations = _evaluations(player)
        if self.board.outcome() is None and len(self.board.legal_moves) > 0:
            try:
                if accepts_limit(player):
                    move = player.select_move(self.board, limit=self.limit, stop=self.stop)  # type: ignore[call-arg]
                else:
                    move = player.select_move(self.board)
            except Exception as e:  # a player's failure is one line, not the end of the engine
                engine.reply(f"info string error go: {type(e).__name__}: {e}")
            else:
                info = search_info(player, move, time.perf_counter() - start, _evaluations(player) - evaluations)
        engine.reply(format_info(info))
        if self.wait_for_stop:
            stopped = threading.Event()
            self.stop.on_set(stopped.set)
            stopped.wait()
        self.finished = True
        engine.reply(f"bestmove {move if move is not None else '(none)'}")


def _evaluations(player: Player) -> int:
    """The network evaluations a tree search player has made so far (its cache's misses; 0 without a cache)."""
    return int(getattr(getattr(player, "cache", None), "misses", 0))


def search_info(player: Player, move: Move, seconds: float, evaluations: int = 0) -> Info:
    """What the player tells of its last search (`seconds` long) as an ``info`` line's fields: alpha-beta's
    depth, score, nodes and line; the tree search's rounds, simulations, root value, network evaluations (the
    `evaluations` its cache counted, else its simulations) and most visited line; else the time, 0 nodes."""
    millis = int(seconds * 1000)
    result = getattr(player, "last_result", None)
    if isinstance(result, SearchResult):
        plies = plies_to_result(result.score)
        nodes = result.nodes
        return Info(
            depth=result.depth,
            wp=None if plies is not None else wp_from_cp(max(-3000, min(3000, result.score))),
            cp=None if plies is not None else max(-3000, min(3000, result.score)),
            win=plies if plies is not None and plies > 0 else None,
            loss=-plies if plies is not None and plies < 0 else None,
            nodes=nodes,
            nps=int(nodes / seconds) if seconds > 0 else None,
            time=millis,
            pv=tuple(str(m) for m in result.pv),
        )
    sims = getattr(player, "last_simulations", None)
    if isinstance(sims, int) and hasattr(player, "principal_variation"):
        nodes = evaluations if getattr(player, "cache", None) is not None else sims
        value = float(getattr(player, "last_value", 0.0))
        return Info(
            depth=getattr(player, "last_rounds", None),
            sims=sims,
            wp=min(1.0, max(0.0, (value + 1) / 2)),
            nodes=nodes,
            nps=int(nodes / seconds) if seconds > 0 else None,
            time=millis,
            pv=tuple(str(m) for m in player.principal_variation(move)),
        )
    return Info(nodes=0, time=millis)


__all__ = ["AUTHOR", "DEFAULT_OVERHEAD_MS", "Engine", "OPTIONS", "search_info"]

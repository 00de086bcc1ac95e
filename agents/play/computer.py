"""The computer's moves in worker processes, so that no search can stall the play server.

A search holds the GIL for as long as it runs (the numba alpha-beta, a
network's tree search), so the server never runs one itself: it hands a
`ThinkJob` (the player spec, the rules, the game's moves) to a
`ComputerWorkers` of worker processes and waits on a pipe, which lets its
other threads answer requests meanwhile. Each worker keeps the few players
it built last (an alpha-beta player owns a transposition table, a checkpoint
player a network), so a game's moves reuse its player.

A worker first warms up: it plays one move of each of the pool's `warm_up`
jobs (the page's levels) with players built for that alone, so that every
kernel their searches run is compiled, and written to numba's cache, before
any job reaches it. The pool starts its workers one after the other (the
first compiles, the next ones read the cache), and a job waits for a warm
worker, off any clock. Then a job has two limits: building the player
(importing torch, loading a checkpoint) and, from the moment the worker starts
searching, `time_limit` seconds for the move. A worker that runs past its
limit, or whose job is cancelled (the person undid or resigned meanwhile), is
killed, and a fresh one starts and warms up in the background: a runaway
search costs CPU for at most its limit and never blocks anything else.

The terminal mode calls `choose_move` in its own process with a
`PlayerCache`, the same code the workers run.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any, Callable, Iterable, Optional, Sequence

from agents.common.child import start_child
from envs.board import Board
from envs.players import Player, PlayerSpecError, make_player
from envs.rules import RuleSet

BUILD_SECONDS = 120.0
"""How long a worker may take to start and build a player (a cold numba cache compiles for about a minute)."""
PLAYERS_PER_WORKER = 4
"""Players a worker keeps built (least recently used dropped)."""
WARM_UP_SECONDS = 900.0
"""How long a worker may take to start and warm up (a cold numba cache compiles every level's search)."""


class ComputerError(ValueError):
    """The computer could not choose a move: a player that cannot be built, a failed or overlong search."""


class Cancelled(Exception):
    """The job was cancelled before its answer came (the game moved on)."""


@dataclass(frozen=True)
class ThinkJob:
    """Everything a worker needs to choose a move: who plays (spec, seed) and the game so far.

    `key` names the player in the worker's cache (a game id and its role:
    the opponent or the hint giver), so one game's moves reuse one player."""

    key: str
    spec: str
    rules: tuple[tuple[str, Any], ...]
    seed: int
    start: str
    moves: tuple[str, ...] = field(default=())

    def board(self) -> Board:
        """The position to choose a move in, every move checked by the rules engine."""
        board = Board.from_jfen(self.start, rules=RuleSet.from_dict(dict(self.rules)))
        for m in self.moves:
            board.push(m)
        return board


def job_rules(rules: RuleSet) -> tuple[tuple[str, Any], ...]:
    """`rules` as a `ThinkJob` carries them (`ThinkJob.board` reads them back)."""
    return tuple(sorted(rules.to_dict().items()))


class PlayerCache:
    """The players one process has built, by job key and spec; the least recently used goes first."""

    def __init__(self, size: int = PLAYERS_PER_WORKER) -> None:
        self.size = size
        self._players: OrderedDict[tuple[str, str, tuple[tuple[str, Any], ...]], Player] = OrderedDict()

    def get(self, job: ThinkJob) -> Player:
        """The job's player, built on first use; ComputerError says why one cannot be built."""
        key = (job.key, job.spec, job.rules)
        player = self._players.get(key)
        if player is None:
            player = build_player(job.spec, RuleSet.from_dict(dict(job.rules)), job.seed)
            self._players[key] = player
            while len(self._players) > self.size:
                self._players.popitem(last=False)
        self._players.move_to_end(key)
        return player


def build_player(spec: str, rules: RuleSet, seed: Optional[int]) -> Player:
    """make_player, with every failure (unknown kind, missing module, bad file) as a ComputerError."""
    try:
        return make_player(spec, rules=rules, seed=seed)
    except PlayerSpecError as e:
        raise ComputerError(str(e)) from None
    except ImportError as e:
        raise ComputerError(f"player {spec!r} is not available in this installation ({e})") from None
    except (ValueError, OSError, KeyError, RuntimeError) as e:
        raise ComputerError(f"cannot build player {spec!r}: {e}") from None


def choose_move(job: ThinkJob, cache: PlayerCache) -> str:
    """The move the job's player chooses (`'a3a4'`), checked against the rules; ComputerError otherwise."""
    player = cache.get(job)
    board = job.board()
    try:
        move = player.select_move(board.copy())
        return str(board.parse_move(move))  # a player's bug must not reach the game
    except ValueError as e:
        raise ComputerError(f"{job.spec} could not move: {e}") from None


def warm_up(jobs: Iterable[ThinkJob]) -> list[str]:
    """Choose one move for each job with a player built for it alone (then dropped); returns the failures.

    This compiles (and caches on disk) every kernel those searches run, so
    that a later move's time is spent searching. The players of later jobs
    are built afresh: a warm-up changes no game's player or its seeds."""
    failures = []
    for job in jobs:
        try:
            choose_move(job, PlayerCache(size=1))
        except Exception as e:  # noqa: BLE001 - a level that cannot play is reported, the others still warm up
            failures.append(f"{job.spec}: {' '.join(str(e).split())}")
    return failures


def _worker_main(conn: Connection, init: Optional[Callable[[], None]], jobs: Sequence[ThinkJob] = ()) -> None:
    """A worker process: warm up, say ("ready", failures), then answer ("build" | "move", job) messages until
    the pipe closes (the server is gone). Ctrl-C is the server's to handle: it stops the workers."""
    cache = PlayerCache()
    try:
        if init is not None:
            init()
        conn.send(("ready", warm_up(jobs)))
        while True:
            kind, job = conn.recv()
            if kind == "move":  # build first: the move's time limit starts with the search
                built = _answer("build", job, cache)
                if built[0] == "error":
                    conn.send(built)
                    continue
                conn.send(("started", ""))
            conn.send(_answer(kind, job, cache))
    except (EOFError, OSError):
        return


def _answer(kind: str, job: ThinkJob, cache: PlayerCache) -> tuple[str, str]:
    try:
        if kind == "build":
            cache.get(job)
            return "built", ""
        return "move", choose_move(job, cache)
    except ComputerError as e:
        return "error", str(e)
    except Exception as e:  # noqa: BLE001 - any failure of a player is an answer, never a dead worker
        return "error", f"{job.spec} failed: {type(e).__name__}: {e}"


class _Worker:
    def __init__(self, init: Optional[Callable[[], None]], jobs: Sequence[ThinkJob]) -> None:
        self.conn, there = Pipe()
        # spawn: the server has threads, never fork it.
        self.child = start_child(_worker_main, (there, init, tuple(jobs)), name="jungle-computer")
        self.process = self.child.process
        self.ready = False
        """Whether it has warmed up (and said so): only then does it take jobs."""
        self.keys: list[str] = []  # job keys it has answered, newest last (its players, roughly)

    def stopped(self, then: str = "") -> ComputerError:
        """Its process has ended (its pipe is closed): the error naming it, its pid and how it ended, and `then`."""
        return ComputerError(self.child.death("the computer's worker process") + then)

    def kill(self) -> None:
        self.process.kill()
        self.process.join(5)
        self.conn.close()


class ComputerWorkers:
    """A few worker processes that build players and choose moves, each job with a time limit.

    `run` blocks the calling thread (never the others) until the answer, a
    failure (ComputerError) or a cancel (Cancelled). Jobs beyond `workers` wait
    for a free worker. `init` runs once in every worker before its first job
    (to register extra player kinds, say); it must be picklable. Every worker
    plays the `warm_up` jobs before its first job (see the module docstring);
    `preparing` says whether that is what the computer is waiting for now."""

    def __init__(
        self,
        workers: int = 2,
        *,
        init: Optional[Callable[[], None]] = None,
        build_seconds: float = BUILD_SECONDS,
        warm_up: Sequence[ThinkJob] = (),
        warm_up_seconds: float = WARM_UP_SECONDS,
    ) -> None:
        if workers < 1:
            raise ValueError(f"a computer pool needs at least one worker, got {workers}")
        self._init = init
        self.build_seconds = build_seconds
        self.warm_up_jobs = tuple(warm_up)
        self.warm_up_seconds = warm_up_seconds
        self._slots: list[Optional[_Worker]] = [None] * workers
        self._busy = [False] * workers
        self._warming = 0
        self._cond = threading.Condition()
        self._closed = False
        self._started = False
        self._warmed = threading.Event()
        self.warm_up_report: Optional[tuple[float, list[str]]] = None
        """After `start`'s warm-up: (seconds it took, the failures of its workers)."""

    def start(self) -> None:
        """Start and warm up every worker now, in the background, so that the first move waits for neither."""
        with self._cond:
            if self._started:
                return
            self._started = True
            # Every slot waits for its turn to warm up: no job may start a worker of its own meanwhile.
            slots = [i for i in range(len(self._slots)) if not self._busy[i] and self._slots[i] is None]
            for i in slots:
                self._busy[i] = True
            self._warming += 1  # from now on, until the last of them is warm
        threading.Thread(target=self._start_all, args=(slots,), daemon=True, name="computer-pool-start").start()

    def wait_warm(self, timeout: Optional[float] = None) -> Optional[tuple[float, list[str]]]:
        """Block until `start`'s warm-up is over; its `warm_up_report` (None on timeout)."""
        self._warmed.wait(timeout)
        return self.warm_up_report

    @property
    def preparing(self) -> bool:
        """Whether a worker is warming up and none is warm yet (a job would wait for the warm-up)."""
        with self._cond:
            return self._warming > 0 and not any(w is not None and w.ready for w in self._slots)

    def _start_all(self, slots: list[int]) -> None:
        began = time.monotonic()
        failures: list[str] = []
        try:
            for i in slots:  # one after the other: the first compiles, the next read numba's cache
                worker, problems = self._start_worker(None)
                failures.extend(p for p in problems if p not in failures)
                self._release(i, worker)
        finally:
            with self._cond:
                self._warming -= 1
            self.warm_up_report = (time.monotonic() - began, failures)
            self._warmed.set()

    def _restart(self, i: int) -> None:
        """Start a worker in an empty slot, in the background (after a kill), if no job took the slot first."""
        with self._cond:
            if self._closed or self._busy[i] or self._slots[i] is not None:
                return
            self._busy[i] = True
        worker, _ = self._start_worker(None)
        self._release(i, worker)

    def _start_worker(self, cancel: Optional[threading.Event]) -> tuple[Optional[_Worker], list[str]]:
        """A new worker once warm, with the failures of its warm-up; (None, [why]) if it could not start."""
        with self._cond:
            self._warming += 1
        try:
            try:
                worker = _Worker(self._init, self.warm_up_jobs)
            except Exception as e:  # noqa: BLE001 - out of processes or memory: the next job tries again
                return None, [f"a worker process could not start: {e}"]
            try:
                return worker, self._await_ready(worker, cancel)
            except Cancelled:
                worker.kill()
                if cancel is not None and cancel.is_set():
                    raise
                return None, []
            except ComputerError as e:
                worker.kill()
                return None, [str(e)]
        finally:
            with self._cond:
                self._warming -= 1

    def _await_ready(self, worker: _Worker, cancel: Optional[threading.Event]) -> list[str]:
        """Wait for the worker's warm-up (Cancelled when the pool closes or `cancel` is set); its failures."""
        deadline = time.monotonic() + self.warm_up_seconds
        while True:
            if self._closed or (cancel is not None and cancel.is_set()):
                raise Cancelled()
            left = deadline - time.monotonic()
            if left <= 0:
                raise ComputerError(
                    f"the computer took more than {self.warm_up_seconds:g} s to warm up and was stopped"
                )
            if not worker.conn.poll(min(left, 0.05)):
                continue
            try:
                tag, failures = worker.conn.recv()
            except (EOFError, OSError):
                raise worker.stopped(" while warming up") from None
            if tag == "ready":
                worker.ready = True
                return [str(f) for f in failures]

    def run(self, kind: str, job: ThinkJob, *, time_limit: float, cancel: Optional[threading.Event] = None) -> str:
        """`kind="move"`: the chosen move; `kind="build"`: build the player only (checks the spec), `''`."""
        if kind not in ("move", "build"):
            raise ValueError(f"unknown job kind {kind!r}")
        i = self._acquire(job.key, cancel)
        worker = self._slots[i]
        failed = False
        try:
            if worker is None or not worker.process.is_alive():
                if worker is not None:
                    worker.kill()
                    worker = self._slots[i] = None
                worker, problems = self._start_worker(cancel)  # warms up before the job's clocks start
                if worker is None:
                    raise ComputerError("; ".join(problems) or "the computer's worker process could not start")
            tag, text = self._exchange(worker, kind, job, time_limit, cancel)
            worker.keys = [k for k in worker.keys if k != job.key][-PLAYERS_PER_WORKER + 1 :] + [job.key]
        except BaseException:
            if worker is not None:
                worker.kill()  # mid-search: a killed worker is the only way to stop it
            worker, failed = None, True
            raise
        finally:
            self._release(i, worker, restart=failed)
        if tag == "error":
            raise ComputerError(text)
        return text

    def _exchange(
        self, worker: _Worker, kind: str, job: ThinkJob, time_limit: float, cancel: Optional[threading.Event]
    ) -> tuple[str, str]:
        """Send the job and wait for its answer: ("move" | "built" | "error", text)."""
        try:
            worker.conn.send((kind, job))
        except (OSError, ValueError):  # the worker died between two jobs (its pipe is broken or closed)
            raise worker.stopped() from None
        deadline = time.monotonic() + self.build_seconds
        limit_text = f"{self.build_seconds:g} s to start"
        while True:
            if self._closed or (cancel is not None and cancel.is_set()):
                raise Cancelled()
            left = deadline - time.monotonic()
            if left <= 0:
                raise ComputerError(f"the computer took more than {limit_text} and was stopped")
            if not worker.conn.poll(min(left, 0.05)):
                continue
            try:
                tag, text = worker.conn.recv()
            except (EOFError, OSError):
                raise worker.stopped() from None
            if tag == "started":
                deadline = time.monotonic() + time_limit
                limit_text = f"its limit of {time_limit:g} s for a move"
            else:
                return str(tag), str(text)

    def _acquire(self, key: str, cancel: Optional[threading.Event]) -> int:
        with self._cond:
            while True:
                if self._closed:
                    raise Cancelled()
                if cancel is not None and cancel.is_set():
                    raise Cancelled()
                free = [i for i, busy in enumerate(self._busy) if not busy]
                if free:
                    # The worker that served this key before still holds its player.
                    warm = [i for i in free if (w := self._slots[i]) is not None and key in w.keys]
                    i = (warm or free)[0]
                    self._busy[i] = True
                    return i
                self._cond.wait(0.05)

    def _release(self, i: int, worker: Optional[_Worker], restart: bool = False) -> None:
        """Give slot `i` back with its worker; `restart`: start a new one there now (a job's was killed)."""
        with self._cond:
            if self._closed and worker is not None:
                worker.kill()
                worker = None
            self._slots[i] = worker
            self._busy[i] = False
            self._cond.notify_all()
            restart = restart and worker is None and self._started and not self._closed
        if restart:  # warmed up again now, not when the next move needs it
            threading.Thread(target=self._restart, args=(i,), daemon=True, name="computer-pool-restart").start()

    def close(self) -> None:
        """Stop every worker (a running job ends with Cancelled)."""
        with self._cond:
            self._closed = True
            idle = [(i, w) for i, w in enumerate(self._slots) if w is not None and not self._busy[i]]
            for i, _ in idle:
                self._slots[i] = None
            self._cond.notify_all()
        for _, w in idle:
            w.kill()

    def __enter__(self) -> "ComputerWorkers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

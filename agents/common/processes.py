"""A pool of child processes, each holding one worker object: tournaments' game players, self-play workers.

    with WorkerProcesses(2, SelfPlayWorker, settings) as pool:     # each process builds SelfPlayWorker(settings) once
        for index, data in pool.run("play", [(weights, seed, 0, 32), (weights, seed, 32, 32)]):
            ...                                                 # results as they finish, with their call's index

Each process is an `agents.common.child` child: it ignores Ctrl-C (the parent decides
what a stop means) and exits when its parent dies. It takes one call at a time
on its pipe; the calls go to the idle processes in order. A worker's exception
is raised again in the parent when its result comes, with the worker's
traceback as a note. A process that dies ends the pool with `ChildDiedError`
naming it (``worker 1 (pid 4711) died: killed by SIGKILL``) instead of a hang.
Leaving the `with` block on an exception stops the processes at once, without
waiting for running calls; so does closing the pool for the processes still
working on a call of a run left early (a Ctrl-C during self-play), whose
answers would be dropped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any, Callable, Iterator, Optional, Sequence

from agents.common.child import Child, ChildDiedError, messages, receive, start_child

STOP_GRACE = 2.0
"""Seconds a process told to stop (SIGTERM) has to end cleanly before it is killed."""


_stopping = False
"""Whether this worker process is unwinding from its SIGTERM."""


def _end_on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM in a worker process: unwind and exit (status 128 + signal), so that multiprocessing's finalizers
    run and the named semaphores it made (tqdm's lock) are given back instead of reported leaked."""
    global _stopping
    _stopping = True
    raise SystemExit(128 + signum)


def _exit_when_swallowed(unraisable: Any) -> None:
    """`sys.unraisablehook` of a worker process.

    The SystemExit of a SIGTERM that arrived inside a callback Python cannot unwind (numba writing its cache
    through an LLVM callback, say) would only be printed, with its traceback, and the work would go on; the
    process exits at once instead, quietly, with its status. Once the stop unwinds, the errors of destructors
    of objects it cut short halfway through their construction (an llvmlite string whose ``__init__`` never
    set its pointer, while numba compiled) are dropped: they say nothing about the work, only that it
    stopped. Any other unraisable exception is reported as Python reports it."""
    if isinstance(unraisable.exc_value, SystemExit):
        code = unraisable.exc_value.code
        os._exit(code if isinstance(code, int) else 1)
    if _stopping:
        return
    sys.__unraisablehook__(unraisable)


def _serve_calls(conn: Connection, factory: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """A worker process: builds ``factory(*args)``, then answers each ``(method, index, args)`` on `conn` with
    ``(index, result, None)`` or ``(index, exception, its traceback)`` until None or end-of-file."""
    signal.signal(signal.SIGTERM, _end_on_sigterm)
    sys.unraisablehook = _exit_when_swallowed
    try:
        held, failed = factory(*args), None
    except Exception as e:  # every call answers with it
        held, failed = None, (e, traceback.format_exc())
    for method, index, call_args in messages(conn):
        if failed is not None:
            reply: tuple[Any, ...] = (index, *failed)
        else:
            try:
                reply = (index, getattr(held, method)(*call_args), None)
            except Exception as e:
                reply = (index, e, traceback.format_exc())
        try:
            conn.send(reply)
        except Exception as e:  # a result or an exception that does not pickle
            conn.send((index, RuntimeError(repr(reply[1])), f"{type(e).__name__}: {e}\n{reply[2] or ''}"))


class WorkerProcesses:
    """`processes` processes started with `start_method`, each holding ``factory(*args)``; `factory`
    and `args` must pickle (a module-level class or function, plain data). `role` names a process in
    messages (``worker 1 (pid 4711)``)."""

    def __init__(
        self, processes: int, factory: Callable[..., Any], *args: Any, start_method: str = "spawn", role: str = "worker"
    ) -> None:
        if processes < 1:
            raise ValueError(f"a worker pool needs at least one process, got {processes}")
        self.processes = processes
        self.role = role
        self._children: list[Child] = []
        self._conns: list[Connection] = []
        self._busy: dict[int, tuple[int, int]] = {}
        """Process -> (the run, the call index) it is working on."""
        self._runs = 0
        self._broken = False
        try:
            for k in range(processes):
                here, there = Pipe()
                self._children.append(
                    start_child(
                        _serve_calls,
                        (there, factory, args),
                        start_method=start_method,
                        name=f"{role.replace(' ', '-')}-{k}",
                    )
                )
                self._conns.append(here)
        except BaseException:
            self.close(at_once=True)
            raise

    @property
    def pids(self) -> list[Optional[int]]:
        """The processes' pids, in order."""
        return [child.pid for child in self._children]

    def _died(self, child: Child) -> ChildDiedError:
        self._broken = True
        return child.died(f"{self.role} {self._children.index(child)}")

    def run(self, method: str, calls: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """``worker.method(*calls[i])`` for every i, spread over the processes; yields ``(i, result)`` as
        each call finishes."""
        if self._broken or not self._children:
            raise RuntimeError("this worker pool is closed (or stopped by a worker's death)")
        self._runs += 1
        run = self._runs
        todo = list(enumerate(calls))
        todo.reverse()
        left = len(todo)
        while left:
            for k in range(self.processes):  # the calls go to the idle processes in order
                if todo and k not in self._busy:
                    i, args = todo.pop()
                    try:
                        self._conns[k].send((method, i, tuple(args)))
                    except OSError:  # its process has died
                        raise self._died(self._children[k]) from None
                    self._busy[k] = (run, i)
            busy = sorted(self._busy)
            j, (i, result, remote) = next(receive([self._conns[k] for k in busy], self._children, self._died))
            k = busy[j]
            if self._busy.pop(k)[0] != run:  # the answer of a call whose run was abandoned
                continue
            left -= 1
            if remote is not None:
                result.add_note(f"in {self.role} {k} (pid {self._children[k].pid}):\n{remote}")
                raise result
            yield i, result

    def close(self, at_once: bool = False) -> None:
        """Stop the processes: the idle ones after a goodbye; those still working on a call of a run left early
        (its answer would be dropped), and every one `at_once`, at once (calls in flight are lost)."""
        children, conns, self._children, self._conns = self._children, self._conns, [], []
        stop_now = [at_once or self._broken or k in self._busy for k in range(len(children))]
        for child, conn, now in zip(children, conns, stop_now):
            with contextlib.suppress(OSError):
                if now:
                    child.process.terminate()
                else:
                    conn.send(None)
        for child, conn, now in zip(children, conns, stop_now):
            if not now:
                # Whatever it still sends comes before the end of its pipe: read it, so no answer blocks a full pipe.
                with contextlib.suppress(EOFError, OSError):
                    while True:
                        conn.recv()
            else:
                child.process.join(STOP_GRACE)  # a call inside a long compiled loop sees SIGTERM only after it
                if child.process.is_alive():
                    child.process.kill()
            child.process.join()
            conn.close()
        self._busy.clear()

    def __enter__(self) -> "WorkerProcesses":
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.close(at_once=exc_type is not None)

"""A pool of spawned processes, each holding one worker object: tournaments' game players, self-play workers.

    with WorkerPool(2, SelfPlayWorker, settings) as pool:     # each process builds SelfPlayWorker(settings) once
        for index, data in pool.run("play", [(weights, seed, 0, 32), (weights, seed, 32, 32)]):
            ...                                                 # results as they finish, with their call's index

Each process ignores Ctrl-C (the parent decides what a stop means) and exits
when its parent dies (`agents.stopping`). A worker's exception is raised again
in the parent when its result comes; a process that died takes the pool down
with BrokenProcessPool instead of a hang. Leaving the `with` block on an
exception stops the processes at once, without waiting for running calls.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterator, Optional, Sequence

from agents.stopping import exit_with_parent, ignore_interrupts

_HELD: Any = None
"""This process's worker object (built by `_hold` when the process starts)."""


def _hold(factory: Callable[..., Any], args: tuple[Any, ...], parent_pid: int) -> None:
    global _HELD
    ignore_interrupts()
    exit_with_parent(parent_pid)
    _HELD = factory(*args)


def _call(method: str, index: int, args: tuple[Any, ...]) -> tuple[int, Any]:
    return index, getattr(_HELD, method)(*args)


class WorkerPool:
    """`processes` processes started with `start_method`, each holding ``factory(*args)``; `factory`
    and `args` must pickle (a module-level class or function, plain data)."""

    def __init__(self, processes: int, factory: Callable[..., Any], *args: Any, start_method: str = "spawn") -> None:
        if processes < 1:
            raise ValueError(f"a worker pool needs at least one process, got {processes}")
        self.processes = processes
        self._executor: Optional[ProcessPoolExecutor] = ProcessPoolExecutor(
            max_workers=processes,
            mp_context=multiprocessing.get_context(start_method),
            initializer=_hold,
            initargs=(factory, args, os.getpid()),
        )

    def run(self, method: str, calls: Sequence[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """``worker.method(*calls[i])`` for every i, spread over the processes; yields ``(i, result)`` as
        each call finishes."""
        if self._executor is None:
            raise RuntimeError("this worker pool is closed")
        pending: set[Future[tuple[int, Any]]] = {
            self._executor.submit(_call, method, i, tuple(args)) for i, args in enumerate(calls)
        }
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()  # a worker's exception is raised here

    def close(self, at_once: bool = False) -> None:
        """Stop the processes: after their current calls, or `at_once` (calls in flight are lost)."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if at_once:
            for process in list(getattr(executor, "_processes", {}).values()):
                process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.close(at_once=exc_type is not None)

"""Child processes, started one way and their deaths named one way (tournaments, self-play, the inference server,
the play page's computer; external programs such as engines by `start_program`).

    here, there = multiprocessing.Pipe()
    child = start_child(serve, (there, settings), name="selfplay-0")   # `there` is now the child's alone
    here.send(job)
    for _, answer in receive([here], [child], died=lambda c: c.died("self-play worker 0")):
        ...                                 # or ChildDiedError: self-play worker 0 (pid 4711) died: killed by SIGKILL

A child ignores Ctrl-C (the terminal's Ctrl-C reaches the whole process group;
the parent decides what a stop means) and exits within a second of its
parent's death, even by ``kill -9`` (`agents.common.stopping`). The pipe ends handed
to a child are closed in the parent once it runs, so that each end is held by
its own side only: a death then reads as end-of-file on the other side, never
as a hang. A death is a `ChildDiedError` that names the child, its pid and how
it ended.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
import time
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from agents.common.stopping import exit_with_parent, ignore_interrupts


def start_program(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start an external program (an engine) with its three standard streams as pipes, in a session of its own:
    its process group is apart, so a terminal's Ctrl-C reaches the parent alone, which decides how it ends.
    OSError when it cannot be started."""
    return subprocess.Popen(
        list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


ProgramResult = subprocess.CompletedProcess
"""What `run_program` returns: the exit status and the captured output."""


def run_program(
    argv: Sequence[str], *, timeout: float, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None
) -> subprocess.CompletedProcess[str]:
    """Run an external program to its end (`timeout` seconds at most: TimeoutExpired), its output captured as text."""
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, env=dict(env) if env is not None else None, cwd=cwd
    )


def wait_program(process: subprocess.Popen[bytes], timeout: float) -> Optional[int]:
    """The program's exit status once it ends within `timeout` seconds (0: at once), else None: it runs on."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def kill_program(process: subprocess.Popen[bytes]) -> None:
    """Kill a program started by `start_program`, with whatever it started in its process group, and reap it."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - no process groups
            process.kill()
    except ProcessLookupError:
        pass
    process.wait()


class ChildDiedError(RuntimeError):
    """A child process died while its parent counted on it; the message names it, its pid and how it ended."""


def how_it_ended(exitcode: Optional[int]) -> str:
    """``killed by SIGKILL``, ``exit code 1``, or ``still running``, from an exit status as
    `multiprocessing.Process.exitcode` and `subprocess.Popen.returncode` give it (a signal as its negative)."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-exitcode).name}"
        return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


class Child:
    """A child process started by `start_child`: its `process` (to join, kill, ...), and its death named."""

    def __init__(self, process: BaseProcess) -> None:
        self.process = process
        self.name = process.name
        self.pid = process.pid
        self.sentinel = process.sentinel
        """Ready for `multiprocessing.connection.wait` once the process has ended."""

    def death(self, who: str) -> str:
        """``{who} (pid N) died: killed by SIGKILL`` (`how_it_ended`), once its exit status is there (a moment
        after its sentinel is ready)."""
        self.process.join(1.0)
        return f"{who} (pid {self.pid}) died: {how_it_ended(self.process.exitcode)}"

    def died(self, who: str) -> ChildDiedError:
        """The error for its death, named as `death` says."""
        return ChildDiedError(self.death(who))


def _run(target: Callable[..., Any], args: tuple[Any, ...], parent_pid: Optional[int]) -> None:
    ignore_interrupts()
    exit_with_parent(parent_pid)
    target(*args)


def _pipe_ends(args: Sequence[Any]) -> list[Connection]:
    """The `Connection`s among `args`, and in the lists and tuples among them."""
    ends = []
    for a in args:
        for x in a if isinstance(a, (list, tuple)) else [a]:
            if isinstance(x, Connection):
                ends.append(x)
    return ends


def start_child(
    target: Callable[..., Any], args: tuple[Any, ...] = (), *, name: str, start_method: str = "spawn"
) -> Child:
    """``target(*args)`` in a new process called `name`, started with `start_method` (``spawn``,
    ``forkserver`` or ``fork``; `target` and `args` must pickle for the first two).

    The child ignores Ctrl-C and exits with this process. Every `Connection` among `args` (or in a list or
    tuple among them) is the child's end of a pipe: it is closed here once the child has started (or failed
    to), so that only the child holds it."""
    # A forkserver's child is the server's, which exits when this process does: the child watches its own
    # parent. Any other child watches this process (it may die before the child's watch begins).
    parent = None if start_method == "forkserver" else os.getpid()
    context: Any = multiprocessing.get_context(start_method)
    process = context.Process(target=_run, args=(target, args, parent), name=name, daemon=True)
    try:
        process.start()
    finally:
        for end in _pipe_ends(args):
            end.close()
    return Child(process)


def messages(conn: Connection) -> Iterator[Any]:
    """In a child: each message that comes on `conn`, until None or end-of-file (the parent is gone)."""
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        yield message


def receive(
    pipes: Sequence[Connection],
    children: Sequence[Child],
    died: Callable[[Child], BaseException] = lambda child: child.died(child.name),
) -> Iterator[tuple[int, Any]]:
    """``(i, message)``: one message from each of `pipes`, as they come; as soon as one of `children` dies,
    the error ``died(child)`` is raised (a message the child sent before it ended comes first)."""
    by_sentinel = {child.sentinel: child for child in children}
    waiting = {pipe: i for i, pipe in enumerate(pipes)}
    while waiting:
        ready = wait([*waiting, *by_sentinel])
        for pipe in ready:  # messages first: a child may have said why before it ended
            if not isinstance(pipe, Connection):
                continue
            i = waiting.pop(pipe)
            try:
                message = pipe.recv()
            except (EOFError, ConnectionResetError):  # its child is ending (a reset: unread data): a wait names it
                waiting[pipe] = i
                time.sleep(0.05)
                continue
            yield i, message
        for child in (by_sentinel[r] for r in ready if isinstance(r, int)):
            raise died(child)

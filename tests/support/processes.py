"""Processes in the tests: which run, whose children they are, and light worker objects to run in children.

A child started with ``spawn`` imports the module of its target, so the
targets here import next to nothing.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from multiprocessing.connection import Connection
from pathlib import Path


def children(pid: int) -> list[int]:
    """Live child processes of `pid` (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def survivors(pids: list[int], seconds: float) -> list[int]:
    """The processes of `pids` still running after waiting up to `seconds` for every one to end."""
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return [p for p in pids if alive(p)]


def echo(conn: Connection) -> None:
    """Answer each message on `conn` with (the message, this pid) until None."""
    while (message := conn.recv()) is not None:
        conn.send((message, os.getpid()))


class Napper:
    """A worker object whose calls take a while and say where they ran."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def nap(self, seconds: float) -> tuple[str, int]:
        time.sleep(seconds)
        return self.tag, os.getpid()

    def fail(self, text: str) -> None:
        raise ValueError(text)

    def stopped_inside_a_callback(self) -> str:
        """SIGTERM this process while a C callback runs Python (as numba's cache writes do): the handler's
        SystemExit cannot unwind through C and is only reported, unless the worker's hook ends the process."""

        def body() -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)

        ctypes.CFUNCTYPE(None)(body)()
        return "went on"

    def stopped_while_building(self) -> str:
        """SIGTERM this process halfway through an object's construction, before it sets the attribute its
        destructor reads (as llvmlite's strings are cut short while numba compiles): unwinding the stop
        collects the half-built object, whose destructor fails."""
        Unfinished()
        return "went on"


class Unfinished:
    """An object whose construction is stopped before it sets `_handle`, which its destructor reads."""

    def __init__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)
        self._handle: int | None = 1

    def __del__(self) -> None:
        if self._handle is not None:
            self._handle = None

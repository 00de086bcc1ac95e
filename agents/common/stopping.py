"""Stopping long jobs cleanly: the first Ctrl-C or SIGTERM asks for a stop, a second one stops at once.

    with GracefulStop() as stop:
        for it in ...:
            data = stop.abandonable(play_some_games)   # None: a stop abandoned the phase
            if data is None:
                break
            learn(data)                                # a stop here waits for the phase to end
            if stop.requested:
                break

A job runs its phases in one of two ways. An *abandonable* phase (one whose
work changes no state until it returns: playing games, an evaluation) is cut
short by the first signal, which says so at once (one line: the workers' games
in flight are dropped, not waited for): `abandonable` returns None and the job
is as it was before the phase. Any other phase runs to its end and the job sees
`stop.requested` afterwards. Either way the job then saves what it safely can
and says how to continue (`stop_line`). The second signal ends the process at
once (``os._exit``) after one line on stderr: the job then continues from its
last saved state.

Child processes (`agents.common.child.start_child`) call `ignore_interrupts` (the
terminal's Ctrl-C reaches the whole process group; the parent decides) and
`exit_with_parent` (a worker whose parent died, even by ``kill -9``, exits
within a second instead of playing on as an orphan).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Optional, TypeVar

T = TypeVar("T")

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequested(BaseException):
    """Raised inside an abandonable phase by the first stop signal (a BaseException, like KeyboardInterrupt,
    so that no ``except Exception`` on the way swallows it)."""


def signal_name(signum: int) -> str:
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


class GracefulStop:
    """Installs the SIGINT/SIGTERM handlers for a `with` block (main thread only; elsewhere it does nothing).

    `on_second` is printed (after the signal's name) when a second signal ends the process at once."""

    def __init__(self, on_second: str = "stopped at once") -> None:
        self.on_second = on_second
        self.requested: Optional[int] = None
        """The first stop signal received (None: none yet)."""
        self.waiting_for = "the current phase"
        """What a stop outside an abandonable phase waits for (said when the signal arrives)."""
        self._abandon = False
        self._previous: dict[int, Any] = {}

    @property
    def exit_code(self) -> int:
        """The shell's status for a process ended by the signal received (130 for Ctrl-C, 143 for SIGTERM)."""
        return 128 + (self.requested or signal.SIGINT)

    def install(self) -> "GracefulStop":
        """Take over the signals now (idempotent; `with` does it too, and gives them back at its end)."""
        if not self._previous and threading.current_thread() is threading.main_thread():
            for s in SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def __enter__(self) -> "GracefulStop":
        return self.install()

    def __exit__(self, *exc: object) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested is not None:
            sys.stderr.write(f"\n{signal_name(signum)} again: {self.on_second}\n")
            sys.stderr.flush()
            os._exit(128 + signum)
        self.requested = signum
        if self._abandon:
            sys.stderr.write(
                f"\n{signal_name(signum)}: stopping now; the work in progress is dropped "
                f"(press Ctrl-C again to stop at once)\n"
            )
            sys.stderr.flush()
            raise StopRequested(signum)
        sys.stderr.write(
            f"\n{signal_name(signum)}: stopping after {self.waiting_for} (press Ctrl-C again to stop at once)\n"
        )
        sys.stderr.flush()

    def abandonable(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Optional[T]:
        """``fn(*args, **kwargs)``, or None when a stop signal came before or during it.

        `fn` must change no state of the job's until it returns: what it did is dropped."""
        self._abandon = True
        try:
            if self.requested is not None:
                return None
            return fn(*args, **kwargs)
        except StopRequested:
            return None
        finally:
            self._abandon = False


def ignore_interrupts() -> None:
    """In a worker process: leave Ctrl-C to the parent, which stops the workers itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def exit_with_parent(parent_pid: Optional[int] = None, interval: float = 0.5) -> threading.Thread:
    """In a worker process: a daemon thread ends this process once its parent is gone (checked every
    `interval` seconds). `parent_pid` defaults to the current parent."""
    parent = os.getppid() if parent_pid is None else parent_pid

    def watch() -> None:
        while True:
            if os.getppid() != parent:  # re-parented: the parent died
                os._exit(1)
            time.sleep(interval)

    thread = threading.Thread(target=watch, name="exit-with-parent", daemon=True)
    thread.start()
    return thread

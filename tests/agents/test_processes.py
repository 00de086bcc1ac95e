"""The worker pool under tournaments and self-play: calls spread over processes, errors and deaths named."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents.arena.settings import TournamentSettings
from agents.arena.tournament import run_tournament
from agents.common import processes
from agents.common.child import ChildDiedError
from agents.common.processes import WorkerProcesses
from tests.support.processes import Napper, children


@pytest.mark.slow
def test_calls_spread_over_the_processes_and_come_back_with_their_index() -> None:
    with WorkerProcesses(2, Napper, "napper") as pool:
        assert len(set(pool.pids)) == 2
        results = dict(pool.run("nap", [(0.3,)] * 5))
        assert sorted(results) == list(range(5))
        assert {tag for tag, _ in results.values()} == {"napper"}
        assert {pid for _, pid in results.values()} == set(pool.pids)  # both processes took calls
        assert dict(pool.run("nap", [])) == {}


@pytest.mark.slow
def test_a_workers_exception_is_raised_with_its_traceback_and_the_pool_goes_on() -> None:
    with WorkerProcesses(2, Napper, "napper") as pool:
        with pytest.raises(ValueError, match="bad call") as caught:
            for _ in pool.run("fail", [("bad call",)]):
                pass
        note = "\n".join(caught.value.__notes__)
        assert f"in worker 0 (pid {pool.pids[0]})" in note and "raise ValueError(text)" in note
        # A run left early (a call still running) does not leak its answer into the next run.
        for _ in pool.run("nap", [(0.0,), (1.0,)]):
            break
        assert dict(pool.run("nap", [(0.0,), (0.0,), (0.0,)])).keys() == {0, 1, 2}
    with pytest.raises(RuntimeError, match="closed"):
        next(pool.run("nap", [(0.0,)]))


@pytest.mark.slow
def test_a_killed_worker_is_named_with_its_pid_and_signal() -> None:
    with WorkerProcesses(2, Napper, "napper", role="test worker") as pool:
        victim = pool.pids[1]
        timer = threading.Timer(0.5, os.kill, (victim, signal.SIGKILL))
        timer.start()
        with pytest.raises(ChildDiedError, match=rf"^test worker 1 \(pid {victim}\) died: killed by SIGKILL$"):
            for _ in pool.run("nap", [(0.0,), (60.0,), (0.0,)]):
                pass
        with pytest.raises(RuntimeError, match="stopped by a worker's death"):
            next(pool.run("nap", [(0.0,)]))


def spawned_children() -> set[int]:
    """This process's live children started by multiprocessing's spawn."""
    out = set()
    for pid in children(os.getpid()):
        with contextlib.suppress(OSError):
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.add(pid)
    return out


@pytest.mark.slow
def test_a_killed_tournament_worker_is_named_with_its_pid_and_signal() -> None:
    before = spawned_children()
    killed: list[int] = []

    def kill_a_worker() -> None:  # the first worker that appears, while the games are played
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            new = spawned_children() - before
            if new:
                killed.append(min(new))
                os.kill(killed[0], signal.SIGKILL)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_worker, daemon=True)
    with pytest.raises(ChildDiedError, match=r"^worker [01] \(pid \d+\) died: killed by SIGKILL$") as caught:
        run_tournament(
            ["alphabeta:time=0.5", "alphabeta:time=0.5,noise=20"],
            TournamentSettings(games_per_pair=2, seed=1, max_plies=200),
            workers=2,
            progress=False,
            on_start=killer.start,
        )  # minutes of games if none died
    killer.join()
    assert f"(pid {killed[0]})" in str(caught.value)


@pytest.mark.slow
@pytest.mark.parametrize("start_method", ["forkserver", "fork"])
def test_every_start_method_plays_the_tournament_of_one_process(start_method: str) -> None:
    # A forkserver's child is the server's: it once took the server for a dead parent and exited at once.
    settings = TournamentSettings(games_per_pair=2, seed=3, max_plies=60)
    here = run_tournament(["random", "alphabeta:depth=1"], settings, workers=0, progress=False)
    there = run_tournament(
        ["random", "alphabeta:depth=1"], settings, workers=2, start_method=start_method, progress=False
    )
    assert [(g.red, g.blue, g.moves, g.result) for g in there.games] == [
        (g.red, g.blue, g.moves, g.result) for g in here.games
    ]


@pytest.mark.slow
def test_closing_stops_at_once_the_processes_still_working_for_an_abandoned_run() -> None:
    """A run left with a call in flight (a Ctrl-C during self-play): close() ends the process working on it
    instead of waiting for an answer it would drop; an idle process still ends after its goodbye."""
    pool = WorkerProcesses(2, Napper, "napper")
    for _ in pool.run("nap", [(0.0,), (20.0,)]):
        break  # call 1 sleeps on in its process
    processes = [child.process for child in pool._children]  # for their exit codes once closed
    pool.close()
    # the sleeper ended by SIGTERM: cleanly (143) once its handler is in place, by the signal (-15) before that
    assert processes[0].exitcode == 0 and processes[1].exitcode in (128 + signal.SIGTERM, -signal.SIGTERM)


@pytest.mark.slow
def test_a_stop_that_arrives_inside_a_callback_ends_the_worker_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    """A SIGTERM whose SystemExit is raised inside a C callback (numba writing its cache when a tournament is
    stopped) ends the worker at once with the stop's status, no traceback printed; before, Python printed the
    swallowed exception's traceback and the call went on."""
    with WorkerProcesses(1, Napper, "napper", role="test worker") as pool:
        pid = pool.pids[0]
        with pytest.raises(ChildDiedError, match=rf"^test worker 0 \(pid {pid}\) died: exit code 143$"):
            for _ in pool.run("stopped_inside_a_callback", [()]):
                pass
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.slow
def test_a_stop_that_cuts_an_object_short_ends_the_worker_without_its_destructors_traceback(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A SIGTERM that lands halfway through a constructor (a tournament stopped while a worker's numba
    compiles): the half-built object's destructor fails as the stop unwinds; the worker ends with the stop's
    status and prints nothing. Before, Python printed that destructor's AttributeError with its traceback."""
    with WorkerProcesses(1, Napper, "napper", role="test worker") as pool:
        pid = pool.pids[0]
        with pytest.raises(ChildDiedError, match=rf"^test worker 0 \(pid {pid}\) died: exit code 143$"):
            for _ in pool.run("stopped_while_building", [()]):
                pass
    err = capfd.readouterr().err
    assert "Traceback" not in err and "_handle" not in err


def test_any_other_unraisable_exception_is_reported_as_python_reports_it(monkeypatch: pytest.MonkeyPatch) -> None:
    reported: list[object] = []
    monkeypatch.setattr(processes.sys, "__unraisablehook__", reported.append)
    other = SimpleNamespace(
        exc_type=ValueError, exc_value=ValueError("x"), exc_traceback=None, err_msg=None, object=None
    )
    processes._exit_when_swallowed(other)
    assert reported == [other]


def test_once_the_stop_unwinds_a_destructors_error_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    reported: list[object] = []
    monkeypatch.setattr(processes.sys, "__unraisablehook__", reported.append)
    monkeypatch.setattr(processes, "_stopping", True)
    cut_short = SimpleNamespace(
        exc_type=AttributeError, exc_value=AttributeError("_ptr"), exc_traceback=None, err_msg=None, object=None
    )
    processes._exit_when_swallowed(cut_short)
    assert reported == []

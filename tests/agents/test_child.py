"""Child processes: started in one place, deaf to Ctrl-C, gone with their parent, their deaths named."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from multiprocessing import Pipe
from pathlib import Path

import pytest

from agents.common.child import ChildDiedError, how_it_ended, receive, start_child
from tests.support import ROOT
from tests.support.processes import children, echo, survivors


def test_how_it_ended_reads_exit_codes_of_processes_and_popen() -> None:
    assert how_it_ended(None) == "still running"
    assert how_it_ended(0) == "exit code 0"
    assert how_it_ended(2) == "exit code 2"
    assert how_it_ended(-signal.SIGKILL) == "killed by SIGKILL"
    assert how_it_ended(-signal.SIGTERM) == "killed by SIGTERM"
    assert how_it_ended(-200) == "killed by signal 200"
    run = subprocess.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert how_it_ended(run.returncode) == "killed by SIGKILL"


@pytest.mark.slow
def test_a_child_ignores_ctrl_c_and_holds_its_pipe_end_alone() -> None:
    here, there = Pipe()
    child = start_child(echo, (there,), name="echo")
    try:
        assert there.closed  # the parent let go of the child's end
        here.send("up")
        assert here.recv() == ("up", child.pid)
        os.kill(child.pid, signal.SIGINT)  # the terminal's Ctrl-C reaches the whole process group
        here.send("still")
        assert here.recv() == ("still", child.pid)
        os.kill(child.pid, signal.SIGKILL)
        # Nobody else holds the child's end: its death is end-of-file here, not a hang.
        with pytest.raises(EOFError):
            here.recv()
        assert child.death("the echo") == f"the echo (pid {child.pid}) died: killed by SIGKILL"
    finally:
        child.process.kill()
        child.process.join()
        here.close()


@pytest.mark.slow
def test_receive_gives_the_messages_then_names_the_child_that_died() -> None:
    pipes, children = [], []
    for k in range(2):
        here, there = Pipe()
        pipes.append(here)
        children.append(start_child(echo, (there,), name=f"echo-{k}"))
    try:
        for k, here in enumerate(pipes):
            here.send(f"call {k}")
        answers = dict(receive(pipes, children))
        assert answers == {0: ("call 0", children[0].pid), 1: ("call 1", children[1].pid)}
        pipes[1].send("last words")
        time.sleep(1.0)  # answered, then killed: the answer comes first, then the death, while 0 is awaited
        os.kill(children[1].pid, signal.SIGKILL)
        got = []
        with pytest.raises(ChildDiedError, match=rf"^echo 1 \(pid {children[1].pid}\) died: killed by SIGKILL$"):
            for i, message in receive(pipes, children, died=lambda c: c.died(f"echo {children.index(c)}")):
                got.append((i, message))
        assert got == [(1, ("last words", children[1].pid))]
    finally:
        for child in children:
            child.process.kill()
            child.process.join()


def test_a_served_pool_death_is_a_child_death() -> None:
    from agents.alphazero.distributed.inference import WorkerDiedError

    assert issubclass(WorkerDiedError, ChildDiedError)


STARTERS = {"Process", "ProcessPoolExecutor", "Pool", "Popen", "fork", "forkpty", "posix_spawn"}
"""Callables that start a process (multiprocessing, concurrent.futures, subprocess, os)."""


@pytest.mark.slow
def test_every_child_process_is_started_in_agents_common_child() -> None:
    found = []
    for path in sorted([*(ROOT / "agents").rglob("*.py"), *(ROOT / "envs").rglob("*.py")]):
        if path == ROOT / "agents" / "common" / "child.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in STARTERS:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}(...)")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                found += [
                    f"{path.relative_to(ROOT)}:{node.lineno} import {m}"
                    for m in modules
                    if m in ("subprocess", "concurrent.futures", "concurrent.futures.process")
                ]
    assert not found, "start child processes with agents.common.child.start_child:\n" + "\n".join(found)


ORPHANS = """
import sys, threading, time
from pathlib import Path
from agents.arena.tournament import GameWorker, Opening, schedule
from agents.common.processes import WorkerProcesses
from agents.play.computer import ComputerWorkers, ThinkJob
from envs import RuleSet
from envs.board import START_JFEN
from envs.players import register_player

SEARCHING = Path(sys.argv[1])


class Busy:
    name = "busy"

    def select_move(self, board):
        SEARCHING.touch()
        time.sleep(600)

    def reset(self):
        pass


def register_busy():
    register_player("busy", lambda rules=None, seed=None: Busy())


if __name__ == "__main__":
    tournament = WorkerProcesses(2, GameWorker, ["random", "random"], {}, 10)
    games = list(tournament.run("play", [(task,) for task in schedule(2, 2, [Opening()], seed=1)]))
    computer = ComputerWorkers(workers=1, init=register_busy)
    job = ThinkJob(key="game:computer", spec="busy", rules=tuple(RuleSet().to_dict().items()), seed=1, start=START_JFEN)
    threading.Thread(target=computer.run, args=("move", job), kwargs={"time_limit": 600}, daemon=True).start()
    while not SEARCHING.exists():
        time.sleep(0.05)
    print("searching", flush=True)
    threading.Event().wait()
"""


@pytest.mark.slow
def test_every_kind_of_child_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    """Tournament workers, and a computer worker in the middle of a search (which once played on as an orphan)."""
    script = tmp_path / "parent.py"
    script.write_text(ORPHANS)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    parent = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "searching")], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        line = parent.stdout.readline()  # type: ignore[union-attr]
        assert line.strip() == "searching", line
        kids = children(parent.pid)
        assert len(kids) >= 3, kids  # two tournament workers and the computer's (and spawn's resource tracker)
    finally:
        parent.kill()  # SIGKILL: no clean-up of its own
        parent.wait()
    assert not survivors(kids, 30), "child processes outlived their killed parent"

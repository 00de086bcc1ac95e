"""agents/alphazero/training/progress.py: the CPU seconds of a run's process tree, whatever else shares the machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.alphazero.training.progress import process_tree_cpu_seconds

TICK = os.sysconf("SC_CLK_TCK")


def fake_stat(proc: Path, pid: int, ppid: int, command: str, ticks: tuple[int, int, int, int]) -> None:
    """A /proc/<pid>/stat with `ticks` as utime, stime, cutime and cstime (fields 14-17)."""
    (proc / str(pid)).mkdir(parents=True)
    fields = ["S", str(ppid)] + ["0"] * 9 + [str(t) for t in ticks] + ["0"] * 30
    (proc / str(pid) / "stat").write_text(f"{pid} ({command}) " + " ".join(fields) + "\n")


def test_the_tree_below_a_process_is_summed_and_its_neighbours_are_not(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    fake_stat(proc, 10, 1, "python", (100, 20, 7, 3))  # itself, and its children already waited for
    fake_stat(proc, 11, 10, "a) (worker", (300, 30, 0, 0))  # a command name with a ") " in it
    fake_stat(proc, 12, 11, "server", (50, 0, 0, 0))  # a grandchild
    fake_stat(proc, 13, 1, "other", (9999, 0, 0, 0))  # another job on the machine
    (proc / "self").mkdir()
    (proc / "14").mkdir()  # a process gone between the listing and the read
    assert process_tree_cpu_seconds(10, proc=str(proc)) == pytest.approx(510 / TICK)
    assert process_tree_cpu_seconds(12, proc=str(proc)) == pytest.approx(50 / TICK)
    assert process_tree_cpu_seconds(99, proc=str(proc)) is None
    assert process_tree_cpu_seconds(10, proc=str(tmp_path / "none")) is None


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")
def test_a_child_that_burns_cpu_is_counted_alive_and_after_it_ended() -> None:
    before, own = process_tree_cpu_seconds(), time.process_time()
    assert before is not None
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.8: pass"]
    )
    time.sleep(0.5)
    during = process_tree_cpu_seconds()
    child.wait(timeout=60)
    after = process_tree_cpu_seconds()
    assert during is not None and after is not None
    assert after - before >= 0.75  # the child's 0.8 s (and its start), counted once it was waited for
    assert before <= during <= after
    assert time.process_time() - own < 0.3  # the parent itself mostly slept

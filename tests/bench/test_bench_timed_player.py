"""bench/bench_timed_player.py follows a recorded game with each player and prints a line per player."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import ROOT


@pytest.mark.slow  # a subprocess that imports torch
def test_the_bench_prints_each_players_simulations_and_cache_hits() -> None:
    specs = [
        "checkpoint:path=shipped:campaign-1084,time=0.05,leaf_batch=8,cache=0",
        "checkpoint:path=shipped:campaign-1084,time=0.05,leaf_batch=16",
    ]
    out = subprocess.run(
        [sys.executable, "bench/bench_timed_player.py", "--moves", "3", *specs],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("3 positions of game 0")
    rows = lines[1:]
    assert len(rows) == 2 and rows[0].endswith(specs[0]) and rows[1].endswith(specs[1])
    assert "x1.00" in rows[0] and "cache hits" not in rows[0]
    assert "cache hits" in rows[1]
    assert all(float(row.split()[0]) > 0 for row in rows)  # simulations a move

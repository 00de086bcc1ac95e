"""bench/bench_selfplay.py runs and prints its table, refilled slots included (more games than slots)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT


@pytest.mark.slow  # imports torch and compiles every kernel afresh
def test_the_bench_times_games_that_refill_their_slots(tmp_path: Path) -> None:
    # 5 games in 2 slots: slots are refilled while the kernels are timed. With an empty numba cache a
    # kernel first compiled then once failed (the timing wrappers stood where it looked for the
    # kernels it calls), so the bench compiles the refill path before it wraps them. In this tree the
    # GameBatch constructor already compiles that path (reset_many), so what this test guards is the
    # table with refills; the bench's own compile step serves the older commits it times (--before).
    # NUMBA_OPT=1: every kernel still compiles afresh and is cached, in less time.
    model = "tiny"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), NUMBA_OPT="1")
    out = subprocess.run(
        [
            sys.executable,
            "bench/bench_selfplay.py",
            "--model",
            model,
            "--games",
            "5",
            "--parallel",
            "2",
            "--max-plies",
            "20",
            "--sims",
            "4",
            "--before",
            "none",
            "--rounds",
            "1",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    row = next(line for line in out.stdout.splitlines() if line.startswith("| this tree"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) > 0 and float(cells[2]) > 0  # positions per CPU and per wall second
    assert cells[4].count("%") == 3


@pytest.mark.slow  # imports torch
def test_the_bench_times_mixed_self_play_beside_single_rule_self_play() -> None:
    out = subprocess.run(
        [sys.executable, "bench/bench_selfplay.py", "--model", "tiny", "--games", "3", "--parallel", "2"]
        + ["--max-plies", "12", "--sims", "2", "--before", "none", "--rules-mix", "default,keeps_rank:2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows = {line.split("[")[0].strip("| ") for line in out.stdout.splitlines() if line.startswith("| this tree")}
    assert rows == {"this tree, rules mix", "this tree"}
    assert "rules mix default,keeps_rank:2" in out.stdout and "this tree / this tree, rules mix:" in out.stdout

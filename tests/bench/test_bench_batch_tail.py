"""bench/bench_batch_tail.py plays its games to their end and prints the batch sizes of its calls."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import ROOT


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "bench/bench_batch_tail.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow  # a subprocess that imports torch
def test_the_bench_prints_the_batches_of_the_iterations_end() -> None:
    run = _bench("games=3", "simulations=2")
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert lines[0].startswith("3 games at once, 2 simulations, shipped:default-180: ")
    assert "last tenth" in lines[1] and "of the positions" in lines[2]
    assert lines[-1].startswith("  game length: mean ")


@pytest.mark.slow  # a subprocess that imports torch
def test_a_bad_argument_is_refused_in_one_line() -> None:
    run = _bench("games")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "error: unknown argument 'games': use games=... simulations=... checkpoint=... seed=..."
    ]
    run = _bench("games=0")
    assert run.returncode == 2 and run.stderr.strip() == "error: games='0' must be an integer of at least 1"

"""bench/pipeline_ceiling.py prints self-play on a free network, says which rows it leaves out, prints the
per-leaf costs of the served path, and refuses bad input in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agents.alphazero.distributed.slots import ROW_BYTES
from agents.alphazero.net.packing import PACKED_MASK_BYTES, PACKED_OBS_BYTES
from tests.support import ROOT


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "bench/pipeline_ceiling.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.mark.slow  # a subprocess that imports torch, plays games and starts a server process
def test_the_bench_prints_the_free_pipelines_and_the_costs_of_a_leaf() -> None:
    run = _bench("--quick", "--device", "cpu", "--batches", "8,16")
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    rows = {_cells(line)[0]: _cells(line)[1:] for line in lines if line.startswith("| in process")}
    assert set(rows) == {"in process, free network", "in process, uniform inside the search (no calls)"}
    for figures in rows.values():
        assert all(float(x) > 0 for x in figures)  # positions and simulations per CPU s, per wall s, mean plies
    assert "served rows (one server, two servers, Ray-served): not measured in this version" in lines
    packed = PACKED_OBS_BYTES + 4 * 11 + PACKED_MASK_BYTES
    assert any(
        line.startswith(f"bytes a leaf: 8316 as float32 planes and a bool mask, {packed} packed") for line in lines
    )
    assert any(line.endswith(f"a slot holds {ROW_BYTES} a position") for line in lines)
    costs = {
        _cells(line)[0]: _cells(line)[1:]
        for line in lines[lines.index("| microseconds a leaf | batch 8 | batch 16 |") + 2 :]
    }
    assert set(costs) == {
        "pack (numpy, CPU)",
        "unpack (numpy, CPU)",
        "copy to cpu and unpack there (torch, CPU)",
        "slot round trip, packing included (wall)",
    }
    assert all(len(v) == 2 and all(float(x) > 0 for x in v) for v in costs.values())


@pytest.mark.slow  # a subprocess that imports torch
@pytest.mark.parametrize(
    "args, message",
    [
        (["--device", "tpu"], "--device='tpu' must be auto, cpu or cuda"),
        (["--batches", "64,0"], "--batches='64,0' must be batch sizes of at least 1, separated by commas"),
        (["--seconds", "0"], "--seconds=0 must be above 0 and at most 60"),
        (["--games", "0"], "--games=0 must be at least 1"),
    ],
)
def test_bad_input_is_refused_in_one_line(args: list[str], message: str) -> None:
    run = _bench(*args)
    assert (run.returncode, run.stderr.strip()) == (2, f"pipeline_ceiling.py: error: {message}")

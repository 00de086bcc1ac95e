"""bench/pipeline_ceiling.py prints self-play on a free network in process, served by one and two servers and by
Ray, the per-leaf costs of the served path and the server's per-batch overhead, and refuses bad input in one
line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agents.alphazero.distributed.slots import ROW_BYTES
from agents.alphazero.net.packing import PACKED_MASK_BYTES, PACKED_OBS_BYTES
from tests.support import ROOT
from tests.support.bench_scripts import refused


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "bench/pipeline_ceiling.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]


SERVED = {
    "one server (process backend, 1 worker)",
    "two servers (devices [cpu, cpu], 2 workers)",
}
RAY = "Ray-served (1 actor, its node's CPU server)"


def _rows(lines: list[str]) -> dict[str, list[str]]:
    """The self-play table's rows: label -> figures."""
    first = lines.index(next(line for line in lines if line.startswith("| pipeline |")))
    rows = {}
    for line in lines[first + 2 :]:
        if not line.startswith("| "):
            break
        rows[_cells(line)[0]] = _cells(line)[1:]
    return rows


def _assert_figures(figures: list[str], served: bool) -> None:
    """Positions and simulations per CPU s, per wall s, CPU s, wall s, mean plies; the mean leaf batch of a
    served row."""
    rates, seconds, plies = figures[:3], figures[3:5], figures[5]
    assert all(float(x) > 0 for x in rates) and float(plies) > 0, figures
    # CPU and wall seconds are printed to 0.01 s: a quick row on a fast CPU can read 0.00 (its rates say it ran)
    assert all(float(x) >= 0 for x in seconds), figures
    assert (figures[6] != "-" and float(figures[6]) >= 1) if served else figures[6] == "-"


@pytest.mark.slow  # a subprocess that plays games, starts server processes and a Ray in a network namespace
def test_the_bench_prints_the_free_pipelines_served_rows_and_the_costs_of_a_leaf() -> None:
    run = _bench("--quick", "--device", "cpu", "--batches", "8,16", "--rows", "free,server,servers,ray")
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    rows = _rows(lines)
    # The Ray row: the bench itself again, in a loopback-only namespace with a Ray of its own.
    assert set(rows) == {"in process, free network", RAY} | SERVED, run.stdout
    for label, figures in rows.items():
        _assert_figures(figures, served=label in SERVED | {RAY})
    packed = PACKED_OBS_BYTES + 4 * 11 + PACKED_MASK_BYTES
    assert any(
        line.startswith(f"bytes a leaf: 8316 as float32 planes and a bool mask, {packed} packed") for line in lines
    )
    assert any(line.endswith(f"a slot holds {ROW_BYTES} a position") for line in lines)
    per_leaf = lines.index("| microseconds a leaf | batch 8 | batch 16 |")
    per_batch = lines.index("| microseconds a batch | batch 8 | batch 16 |")
    costs = {_cells(line)[0]: _cells(line)[1:] for line in lines[per_leaf + 2 : per_batch] if line.strip()}
    server = {
        "server's batcher, an evaluator that does nothing (wall)",
        "server's batcher and the free network: masks unpacked, answers built (wall)",
    }
    assert (
        set(costs)
        == {
            "pack (numpy, CPU)",
            "unpack (numpy, CPU)",
            "copy to cpu and unpack there (torch, CPU)",
            "slot round trip, packing included (wall)",
        }
        | server
    )
    assert all(len(v) == 2 and all(float(x) > 0 for x in v) for v in costs.values())
    batches = {_cells(line)[0]: _cells(line)[1:] for line in lines[per_batch + 2 :]}
    assert set(batches) == server and all(len(v) == 2 and all(float(x) > 0 for x in v) for v in batches.values())


@pytest.mark.parametrize(
    "args, message",
    [
        (["--device", "tpu"], "--device='tpu' must be auto, cpu or cuda"),
        (["--batches", "64,0"], "--batches='64,0' must be batch sizes of at least 1, separated by commas"),
        (["--seconds", "0"], "--seconds=0 must be above 0 and at most 60"),
        (["--games", "0"], "--games=0 must be at least 1"),
        (
            ["--rows", "free,gpu"],
            "--rows='free,gpu' must name rows of free,kernels,server,servers,ray, separated by commas",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert refused("pipeline_ceiling", capsys, monkeypatch, *args) == (2, f"pipeline_ceiling.py: error: {message}")

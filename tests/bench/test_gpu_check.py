"""bench/gpu_check.py --cpu: the GPU check's table at small sizes on CPU, every row present (figures not judged)."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from types import ModuleType

import pytest

from tests.support import ROOT

NUMBER = r"\d[\d,]*"


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    """bench/gpu_check.py as a module (it imports bench_network beside it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(ROOT / "bench"))
        return importlib.import_module("gpu_check")


@pytest.mark.slow
def test_the_cpu_check_prints_one_table_with_every_row(gpu_check: ModuleType) -> None:
    run = subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--cpu"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    assert lines[0].startswith("gpu_check --cpu:")
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == len(lines) - 1 >= 2, run.stdout  # nothing but the heading line and the table
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table[2:]]
    plan = gpu_check.CPU
    expected = [(f"inference {m}", f"batch {b}") for m in plan.models for b in plan.batches]
    expected += [("self-play", gpu_check.processes(w)) for w in plan.processes] + [("training", "")]
    assert len(rows) == len(expected), run.stdout
    for (check, setting, result), (what, where) in zip(rows, expected):
        assert check.startswith(what) and setting.startswith(where), (check, setting)
        assert result, check
    # The first figures of each part are measured whatever the machine's load (the budgets cut later rows).
    inference, selfplay, training = rows[0][2], rows[len(plan.models) * len(plan.batches)][2], rows[-1][2]
    assert re.fullmatch(rf"fp32 {NUMBER} · bf16 ({NUMBER}|.+) · compile .+ positions/s", inference), inference
    assert re.match(rf"{NUMBER} positions/s, mean server batch {NUMBER}", selfplay), selfplay
    assert re.match(r"total \d+\.\d+ -> \d+\.\d+, policy .* value .*\((not )?falling\)", training), training


def test_the_table_is_one_markdown_table(gpu_check: ModuleType) -> None:
    text = gpu_check.table(
        [
            ("inference tiny", "batch 1", "fp32 1 · bf16 2 · compile 3 positions/s"),
            ("training", "5 s", "skipped (time budget)"),
        ]
    )
    lines = text.splitlines()
    assert len(lines) == 4 and len({len(line) for line in lines}) == 1
    assert lines[0].split("|")[1:4] == [" check          ", " setting ", " result                                  "]
    assert set(lines[1]) <= {"|", "-", " "}

"""bench/gpu_check.py --cpu: the GPU check's steps at small sizes on CPU, each row printed and recorded in the
JSON file (figures not judged)."""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support import ROOT


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    """bench/gpu_check.py as a module (it imports bench_network beside it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(ROOT / "bench"))
        return importlib.import_module("gpu_check")


def _check(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--cpu", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _records(path: Path) -> list[dict]:
    records = json.loads(path.read_text())
    assert isinstance(records, list)
    return records


@pytest.mark.slow  # a subprocess that imports torch
def test_the_quick_steps_print_their_rows_and_append_them_to_the_json_file(
    tmp_path: Path, gpu_check: ModuleType
) -> None:
    out = tmp_path / "check.json"
    run = _check("--steps", "device,shm,inference", "--json", str(out), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    records = _records(out)
    plan = gpu_check.CPU
    assert [r["step"] for r in records] == ["device", "shm"] + ["inference"] * (len(plan.models) * len(plan.batches))
    for r in records:
        assert f"| {r['check']} | {r['setting']} | {r['result']} |" in run.stdout  # printed as it ended
        assert r["device"] == "cpu" and r["commit"] and r["step_seconds"] >= 0
    assert records[0]["figures"]["torch"] and records[0]["figures"]["numba"]
    shm = records[1]["figures"]
    assert shm["size_mb"] > 0 and shm["need_mb"] > 0 and isinstance(shm["enough"], bool)
    for r in records[2:]:
        got = r["figures"]
        assert got["fp32"] > 0 and got["forward_only"] > 0 and 0 <= got["host_copy_share"] < 1
        assert {"bf16", "chlast", "compile"} <= set(got)
    again = _check("--steps", "device", "--json", str(out), timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _records(out)[:-1] == records and _records(out)[-1]["step"] == "device"  # appended, nothing lost


@pytest.mark.slow  # a subprocess that imports torch
def test_an_unknown_step_or_a_json_file_that_is_not_a_list_is_refused_in_one_line(tmp_path: Path) -> None:
    run = _check("--steps", "device,speed", timeout=120)
    assert run.returncode == 2 and "unknown step(s) speed" in run.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    run = _check("--steps", "device", "--json", str(bad), timeout=120)
    assert run.returncode != 0 and "error: --json" in run.stderr and bad.read_text() == "{}"


@pytest.mark.slow
def test_every_step_of_the_cpu_check_records_its_rows(tmp_path: Path, gpu_check: ModuleType) -> None:
    out = tmp_path / "check.json"
    run = _check("--json", str(out))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    records = _records(out)
    by_step: dict[str, list[dict]] = {}
    for r in records:
        by_step.setdefault(r["step"], []).append(r)
    assert list(by_step) == list(gpu_check.STEPS)
    plan = gpu_check.CPU
    assert [r["setting"] for r in by_step["warm-up"]] == ["first process", "second process"]
    # The first figures of each step are measured whatever the machine's load (budgets cut later rows only).
    assert by_step["warm-up"][0]["figures"]["seconds"] > 0
    served = by_step["selfplay"]
    assert [r["setting"] for r in served] == [gpu_check.processes(w) for w in plan.processes]
    assert served[0]["figures"]["positions_per_s"] > 0 and served[0]["figures"]["mean_batch"] >= 1
    assert by_step["inprocess"][0]["figures"]["positions_per_s"] > 0
    devices = by_step["devices"]
    assert [r["setting"] for r in devices] == [
        "2 CPU servers, 2 processes",
        f"{plan.stand_ins} CPU servers, 3 processes",
    ]
    assert [r["figures"]["servers"] for r in devices] == [2, plan.stand_ins]
    assert all(r["figures"]["positions_per_s"] > 0 and r["figures"]["mean_batch"] >= 1 for r in devices)
    (ray,) = by_step["ray"]
    if not ray["result"].startswith("skipped:"):  # a machine without Ray or unshare says why instead
        assert ray["setting"] == "local Ray, 1 process" and ray["figures"]["servers"] == 1
        assert ray["figures"]["positions_per_s"] > 0 and ray["figures"]["mean_batch"] >= 1
    training = by_step["training"][0]["figures"]
    assert training["iterations"] == 3 and len(training["loss_total"]) == 3
    assert training["loss_finite"] and all(math.isfinite(t) for t in training["loss_total"])
    assert training["learner_ms_per_step"] and all(m > 0 for m in training["learner_ms_per_step"])
    assert training["loads_on_cpu"], by_step["training"][0]["result"]
    assert isinstance(training["loss_falling"], bool)


@pytest.mark.parametrize(
    "gpus, shown",
    [
        (1, ["skipped: this machine has 1 GPU", "skipped: this machine has 1 GPU"]),
        (2, [["cuda:0", "cuda:1"], "skipped: this machine has 2 GPUs (the row above is all of them)"]),
        (4, [["cuda:0", "cuda:1"], ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]]),
    ],
)
def test_the_devices_step_serves_on_2_and_all_gpus_or_says_why_not(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch, gpus: int, shown: list
) -> None:
    monkeypatch.setattr(gpu_check.torch.cuda, "device_count", lambda: gpus)
    rows = gpu_check.server_devices(gpu_check.GPU)
    assert [setting for setting, _, _ in rows] == ["2 GPUs", "all GPUs"]
    assert [reason if devices is None else [str(d) for d in devices] for _, devices, reason in rows] == shown


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

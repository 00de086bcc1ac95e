"""bench/ppo_baseline.py (the MaskablePPO baseline): a smoke run in a subprocess, a few hundred steps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from tests.support import ROOT


@pytest.mark.slow
def test_ppo_baseline_smoke_run(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "bench/ppo_baseline.py",
            "--steps",
            "256",
            "--envs",
            "2",
            "--n-steps",
            "64",
            "--eval-games",
            "2",
            "--max-plies",
            "60",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads((tmp_path / "results.json").read_text())
    results = report["results"]
    assert [(x["phase"], x["opponent"]) for x in results] == [
        (f"vs {phase}", opp)
        for phase in ("random", "alphabeta:level=beginner")
        for opp in ("random", "alphabeta:level=beginner", "alphabeta:depth=1")
    ]
    for x in results:
        assert x["wins"] + x["draws"] + x["losses"] == 2 and sum(x["as_red"]) == sum(x["as_blue"]) == 1  # one pair
        assert x["score"] == (x["wins"] + 0.5 * x["draws"]) / 2
    assert results[0]["steps"] >= 256 and results[-1]["steps"] > results[0]["steps"]
    assert (tmp_path / "maskable_ppo_phase2.zip").is_file()
    runs = [p.parent for p in (tmp_path / "tb").rglob("events.out.tfevents.*")]
    tags: set[str] = set()
    for run in runs:
        acc = EventAccumulator(str(run), size_guidance={"scalars": 0})
        acc.Reload()
        tags |= set(acc.Tags()["scalars"])
    assert "eval/score_random" in tags and "eval/score_alphabeta_level_beginner" in tags
    assert any(t.startswith("train/") for t in tags)

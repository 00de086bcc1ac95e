"""bench/learner_share.py prints the learner's share of an iteration against self-play, and refuses bad input in
one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import ROOT
from tests.support.bench_scripts import refused


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "bench/learner_share.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow  # a subprocess that imports torch and plays games
def test_the_bench_prints_a_row_a_model_with_the_learners_share() -> None:
    run = _bench("--quick", "--models", "tiny,tiny", "--device", "cpu")
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert lines[0].startswith("device cpu, 1 torch threads; self-play: 4 games at once, Gumbel 4 simulations")
    assert "replay ratio 4 (one learner step per 8 new positions)" in lines[0]
    rows = [line for line in lines if line.startswith("| tiny |")]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        played, steps, ceiling = (tuple(float(x) for x in cells[k].split(" / ")) for k in (2, 3, 4))
        assert all(x > 0 for x in played + steps + ceiling)
        assert ceiling[0] == pytest.approx(steps[0] * 32 / 4, rel=0.01, abs=1)  # batch 32, ratio 4
        shares = [float(s.rstrip("%")) for s in cells[5].split(" / ")]
        assert all(0 < s < 100 for s in shares)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--device", "tpu"], "--device='tpu' must be auto, cpu or cuda"),
        (["--models", "huge"], "--models: no model 'huge' (configs/model/ has: large, medium, small, tiny)"),
        (["--steps", "0"], "--steps=0 must be at least 1"),
        (["--games", "many"], "argument --games: invalid int value: 'many'"),
    ],
)
def test_bad_input_is_refused_in_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert refused("learner_share", capsys, monkeypatch, *args) == (2, f"learner_share.py: error: {message}")

"""The `python -m envs` command line, run in a subprocess."""

from __future__ import annotations

import subprocess
import sys

import pytest

from envs import START_JFEN
from tests.support import ROOT


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envs", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_perft() -> None:
    out = run("perft", START_JFEN, "3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "12240"


@pytest.mark.slow
def test_perft_divide() -> None:
    out = run("perft", START_JFEN, "2", "--divide")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == "total 576"
    body = [line.split() for line in lines[:-1]]
    assert len(body) == 24 and all(int(n) == 24 for _, n in body)
    assert [m for m, _ in body] == sorted(m for m, _ in body)


@pytest.mark.slow
def test_moves_sorted_one_per_line() -> None:
    out = run("moves", START_JFEN)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert len(lines) == 24 and lines == sorted(lines) and "a3a4" in lines


@pytest.mark.slow
def test_rules_overrides_and_rule_set() -> None:
    jfen = "7/7/7/3w3/3D3/7/7/7/7 r 0 1"  # Red Dog d5 under a Blue Wolf d6
    assert "d5d6" not in run("moves", jfen).stdout.split()
    assert "d5d6" in run("moves", jfen, "--rules", "rank_order=dog_over_wolf").stdout.split()
    assert "d5d6" in run("moves", jfen, "--rule-set", "dog_over_wolf").stdout.split()
    both = run("moves", jfen, "--rule-set", "dog_over_wolf", "--rules", "rank_order=standard")
    assert "d5d6" not in both.stdout.split()


@pytest.mark.slow
def test_bad_input_exits_non_zero_with_a_message() -> None:
    bad_jfen = run("moves", "7/7/7 r 0 1")
    assert bad_jfen.returncode == 2 and "error:" in bad_jfen.stderr and "7/7/7 r 0 1" in bad_jfen.stderr
    bad_key = run("perft", START_JFEN, "2", "--rules", "colour=green")
    assert bad_key.returncode == 2 and "colour" in bad_key.stderr
    bad_value = run("perft", START_JFEN, "2", "--rules", "rank_order=cat_first")
    assert bad_value.returncode == 2 and "cat_first" in bad_value.stderr
    bad_set = run("moves", START_JFEN, "--rule-set", "no_such_set")
    assert bad_set.returncode == 2 and "no_such_set" in bad_set.stderr
    bad_depth = run("perft", START_JFEN, "-1")
    assert bad_depth.returncode == 2 and "depth" in bad_depth.stderr
    huge_depth = run("perft", START_JFEN, str(10**10))  # once a 93 GiB allocation
    assert huge_depth.returncode == 2 and huge_depth.stderr.strip() == "error: depth 10000000000 must lie in [0, 64]"
    huge_divide = run("perft", START_JFEN, str(10**10), "--divide")
    assert huge_divide.returncode == 2 and "must lie in [1, 64]" in huge_divide.stderr

"""The `python -m envs` command line, run in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envs import START_JFEN, RuleSet
from envs.__main__ import _parser
from envs.rules import RuleSetError, rules_from_arguments
from tests.support import ROOT
from tests.support.hostile import HOSTILE_RULE_FILES


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envs", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


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
    """`--rules NAME` and `--rule KEY=VALUE`, as play.py takes them."""
    jfen = "7/7/7/3w3/3D3/7/7/7/7 r 0 1"  # Red Dog d5 under a Blue Wolf d6
    assert "d5d6" not in run("moves", jfen).stdout.split()
    assert "d5d6" in run("moves", jfen, "--rule", "rank_order=dog_over_wolf").stdout.split()
    assert "d5d6" in run("moves", jfen, "--rules", "dog_over_wolf").stdout.split()
    both = run("moves", jfen, "--rules", "dog_over_wolf", "--rule", "rank_order=standard")
    assert "d5d6" not in both.stdout.split()


@pytest.mark.parametrize(
    "command",
    [
        ["perft", START_JFEN, "1"],
        ["moves", START_JFEN],
        ["tablebase", "build"],
        ["tablebase", "probe", START_JFEN],
        ["tablebase", "stats"],
    ],
)
def test_every_command_takes_a_rule_set_and_single_rules_as_play_does(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--rules NAME` (a set of configs/rules, or a yaml file) and `--rule KEY=VALUE` on top, the words of
    play.py (envs.rules.add_rule_arguments); the old `--rule-set` is refused, and a rule given to `--rules`
    names `--rule`."""

    def rules(*words: str) -> RuleSet:
        return rules_from_arguments(_parser().parse_args([*command, *words]))

    assert rules() == RuleSet()
    assert rules("--rules", "dog_over_wolf", "--rule", "no_capture_draw=200") == RuleSet(
        rank_order="dog_over_wolf", no_capture_draw=200
    )
    assert rules("--rule", "repetition=off", "--rule", "jump_blocking=enemy_rat") == RuleSet(
        repetition="off", jump_blocking="enemy_rat"
    )
    mine = tmp_path / "mine.yaml"
    mine.write_text("trapped_attacker: keeps_rank\n")
    assert rules("--rules", str(mine)) == RuleSet(trapped_attacker="keeps_rank")
    with pytest.raises(RuleSetError, match=r"^--rules no_capture_draw=200: .* set one rule with --rule no_capture_dr"):
        rules("--rules", "no_capture_draw=200")
    with pytest.raises(RuleSetError, match=r"'dog_overwolf' \(did you mean dog_over_wolf\?\)"):
        rules("--rules", "dog_overwolf")
    with pytest.raises(SystemExit) as refused:
        rules("--rule-set", "dog_over_wolf")
    assert refused.value.code == 2 and "unrecognized arguments: --rule-set" in capsys.readouterr().err


@pytest.mark.slow
def test_bad_input_exits_non_zero_with_a_message() -> None:
    bad_jfen = run("moves", "7/7/7 r 0 1")
    assert bad_jfen.returncode == 2 and "error:" in bad_jfen.stderr and "7/7/7 r 0 1" in bad_jfen.stderr
    bad_key = run("perft", START_JFEN, "2", "--rule", "colour=green")
    assert bad_key.returncode == 2 and "colour" in bad_key.stderr
    bad_value = run("perft", START_JFEN, "2", "--rule", "rank_order=cat_first")
    assert bad_value.returncode == 2 and "cat_first" in bad_value.stderr
    bad_set = run("moves", START_JFEN, "--rules", "no_such_set")
    assert bad_set.returncode == 2 and "no_such_set" in bad_set.stderr
    bad_depth = run("perft", START_JFEN, "-1")
    assert bad_depth.returncode == 2 and "depth" in bad_depth.stderr
    huge_depth = run("perft", START_JFEN, str(10**10))  # once a 93 GiB allocation
    assert huge_depth.returncode == 2 and huge_depth.stderr.strip() == "error: depth 10000000000 must lie in [0, 64]"
    huge_divide = run("perft", START_JFEN, str(10**10), "--divide")
    assert huge_divide.returncode == 2 and "must lie in [1, 64]" in huge_divide.stderr


@HOSTILE_RULE_FILES
def test_a_hostile_rule_file_is_one_line_and_exit_status_2(
    text: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once a RecursionError, a TypeError and a game drawn after one ply; the file and the fault are named."""
    from envs.__main__ import main

    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    assert main(["moves", START_JFEN, "--rules", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and str(path) in err and words in err


def test_a_rules_name_too_long_for_the_file_system_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from envs.__main__ import main

    assert main(["moves", START_JFEN, "--rules", "a" * 300]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: rule set 'aaa") and err.count("\n") == 1 and "File name too long" in err


@pytest.mark.parametrize(
    "command", [["moves", START_JFEN], ["perft", START_JFEN, "1"], ["perft", START_JFEN, "1", "--divide"]]
)
def test_a_reader_that_goes_away_ends_the_command_quietly(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m envs moves ... | head -1``: the pipe's reader is gone before anything is written, and the
    command stops without a BrokenPipeError traceback (stdout then points at the null device)."""
    import os

    from envs.__main__ import EXIT_BROKEN_PIPE, main

    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as closed_pipe:
        monkeypatch.setattr(sys, "stdout", closed_pipe)
        assert main(command) == EXIT_BROKEN_PIPE
        closed_pipe.write("after the reader went away\n" * 1000)
        closed_pipe.flush()  # goes to the null device now
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_command_piped_into_head_exits_without_a_traceback() -> None:
    """The whole program, as a shell runs ``python -m envs perft ... --divide | head -1``."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "envs", "perft", START_JFEN, "2", "--divide"],
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert out.stderr == "" and out.returncode == 1


def test_startpos_is_taken_where_a_jfen_is(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m envs moves startpos`` and ``perft startpos 3`` answer as for the start position's JFEN."""
    from envs.__main__ import main

    for command in (["moves"], ["perft", "--divide"], ["perft"]):
        depth = ["3"] if command[0] == "perft" else []
        assert main([command[0], START_JFEN, *depth, *command[1:]]) == 0
        expected = capsys.readouterr().out
        assert main([command[0], "startpos", *depth, *command[1:]]) == 0
        assert capsys.readouterr().out == expected != ""
    with pytest.raises(SystemExit):
        main(["moves", "--help"])
    assert "or startpos" in " ".join(capsys.readouterr().out.split())

"""``jungle-engine`` end to end in a subprocess: a bad command line is one line and exit status 2; garbage on
its input is answered line by line and never stops it; the end of its input ends it quietly."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

import pytest
import tomllib

from agents.engine.__main__ import main
from tests.support import ROOT

ENGINE = [sys.executable, "-m", "agents.engine"]


def test_the_console_script_and_the_module_run_one_main() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["jungle-engine"].partition(":")
    assert getattr(import_module(module), name) is main


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (["--player", "nonsense"], "jungle-engine: error: unknown player kind 'nonsense' in spec 'nonsense'"),
        (
            ["--player", "alphabeta:depth=x"],
            "jungle-engine: error: player 'alphabeta': depth='x' must be an integer in [1, 48]",
        ),
        (["--player", "random", "--rules", "no_such_rules"], "jungle-engine: error: unknown rule set 'no_such_rules'"),
    ],
)
def test_a_bad_command_line_is_one_line_and_status_2(args: list[str], message: str) -> None:
    done = subprocess.run([*ENGINE, *args], input="jep\n", capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.slow
def test_garbage_on_the_input_is_answered_and_the_engine_plays_on() -> None:
    lines = [
        "\x00\x01 garbage",
        "go depth banana",
        "position startpos moves a3a4 a3a4",
        "position jfen not a jfen at all",
        "setoption name Rules value nowhere",
        "setoption name Colour value red",
        "",
        "position startpos moves a3a4",
        "go depth 1",
    ]
    done = subprocess.run(
        [*ENGINE, "--player", "alphabeta:depth=1"],
        input="\n".join(lines) + "\n",  # no quit: the end of the input ends it once the search is done
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    out = done.stdout.splitlines()
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert out[0] == (  # the control characters escaped: one line, readable
        "info string error unknown command '\\x00\\x01 garbage' (the commands are jep, setoption, isready, "
        "newgame, position, go, stop, quit)"
    )
    assert [line.split(":")[0] for line in out[1:6]] == [
        "info string error go",
        "info string error position",
        "info string error position",
        "info string error setoption",
        "info string error setoption",
    ]
    assert out[6].startswith("info depth 1 score wp ") and out[7].startswith("bestmove ") and len(out) == 8

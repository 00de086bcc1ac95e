"""`python play.py --terminal` driven through its stdin in a subprocess (no tty)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from agents.play.game import PlayGame
from agents.play.terminal import run_terminal
from tests.support import ROOT


def run_play(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "play.py"), "--terminal", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_terminal_game_against_the_computer() -> None:
    script = "\n".join(["help", "a3a4", "a3a5", "c3d4", "hello", "hint", "undo", "undo", "resign", "a4a5", "quit"])
    p = run_play(script + "\n", "--opponent", "random", "--seed", "5")
    out = p.stdout
    assert p.returncode == 0, p.stderr
    assert "Commands:" in out and "a3a4" in out
    assert out.count("The computer plays") == 1
    assert "Refused: illegal move a3a5: there is no piece on a3" in out
    assert "Refused: illegal move c3d4: pieces move one square up, down, left or right, never diagonally" in out
    assert "Unknown command 'hello'" in out
    assert "Hint: " in out and "(2 left)" in out
    assert "Took back 2 plies." in out and "Refused: there is no move to undo" in out
    assert "Game over: 0-1, Red resigned" in out
    assert "Refused: the game is over" in out
    assert out.rstrip().endswith("Bye.")
    # The board is the project's text board (render_ansi): coordinates on all sides, Red at the bottom.
    lines = out.splitlines()
    assert " 1  T  .  #  *  #  .  L  1" in lines and " 9  l  .  #  *  #  .  t  9" in lines
    assert "The computer plays " in out and "Last move: E a3a4" not in out  # the reply is the last move


@pytest.mark.slow
def test_terminal_two_players_until_end_of_input() -> None:
    p = run_play("a3a4\na7a6\nundo\nboard\n", "--two-players")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "Blue to move." in out and "Took back 1 ply." in out
    assert "The computer" not in out
    assert out.rstrip().endswith("End of input; bye.")


@pytest.mark.slow
def test_terminal_playing_blue_and_bad_options() -> None:
    p = run_play("quit\n", "--opponent", "random", "--side", "blue")
    assert p.returncode == 0 and "The computer plays" in p.stdout and "Your move (Blue)" in p.stdout
    # Blue sits at the bottom when the person plays Blue (the same renderer, turned around).
    lines = p.stdout.splitlines()
    files = "    g  f  e  d  c  b  a"
    assert files in lines
    top = lines.index(files)
    assert lines[top + 1].startswith(" 1 ") and lines[top + 9] == " 9  t  .  #  *  #  .  l  9"  # Blue not moved yet
    bad = run_play("", "--opponent", "nosuchplayer")
    assert bad.returncode == 2 and "opponent 'nosuchplayer' is not a level" in bad.stderr
    bad = run_play("", "--rule", "rank_order=sideways")
    assert bad.returncode == 2 and "rank_order" in bad.stderr


@pytest.mark.slow
def test_play_page_server_entry_point(tmp_path: Path) -> None:
    """`play.py --port 0 --no-browser` prints its URL and answers the API until stopped."""
    import json
    import urllib.request

    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "play.py"),
            "--port",
            "0",
            "--no-browser",
            "--state-dir",
            str(tmp_path),
            "--rules",
            "dog_over_wolf",
            "--rule",
            "no_capture_draw=200",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.startswith("Building the opponent"):  # a first run compiles its search before the page
            line = proc.stdout.readline()
        assert line.startswith("Jungle play page: http://127.0.0.1:"), line
        url = line.split()[3]
        with urllib.request.urlopen(url + "api/info", timeout=60) as resp:
            info = json.loads(resp.read())
        assert info["rules_name"] == "dog_over_wolf" and info["rules"]["no_capture_draw"] == 200
        assert info["ranks"][3:5] == [4, 3]  # Dog 4 over Wolf 3
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    bad = subprocess.run(
        [sys.executable, str(ROOT / "play.py"), "--rules", "nosuchset", "--no-browser"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert bad.returncode == 2 and "unknown rule set 'nosuchset'" in bad.stderr
    near = run_page("--rules", "dog_overwolf")
    assert near.returncode == 2 and "unknown rule set 'dog_overwolf' (did you mean dog_over_wolf?)" in near.stderr


def run_page(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """play.py for the page, expected to stop at start-up (a server that starts would run until the timeout)."""
    return subprocess.run(
        [sys.executable, str(ROOT / "play.py"), "--no-browser", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_opponent_typos_name_the_levels_and_help_names_every_level(tmp_path: Path) -> None:
    from agents.play.levels import LEVELS

    names = [level.name for level in LEVELS]
    for p in (run_play("", "--opponent", "netwrok"), run_page("--opponent", "netwrok", "--state-dir", str(tmp_path))):
        assert p.returncode == 2 and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr  # one line
        assert f"is not a level ({', '.join(names)})" in p.stderr and "did you mean 'network'?" in p.stderr
    assert not (tmp_path / "last_game.json").exists()
    text = subprocess.run(
        [sys.executable, str(ROOT / "play.py"), "--help"], capture_output=True, text=True, timeout=120, cwd=ROOT
    ).stdout
    assert f"a level ({', '.join(names)})" in " ".join(text.split())
    assert all(f"  {level.name:<10} {level.about}" in text for level in LEVELS)


@pytest.mark.slow
def test_a_corrupt_checkpoint_opponent_stops_the_page_at_start(tmp_path: Path) -> None:
    good = next((ROOT / "checkpoints" / "shipped").glob("*.pt")).read_bytes()  # a real checkpoint, cut below
    for name, data in (("noise.pt", bytes(range(256)) * 8), ("cut.pt", good[: len(good) // 2]), ("empty.pt", b"")):
        bad = tmp_path / name
        bad.write_bytes(data)
        p = run_page("--opponent", str(bad), "--state-dir", str(tmp_path / "state"))
        assert p.returncode == 2 and "Jungle play page" not in p.stdout, (name, p.stdout)
        assert p.stderr.startswith("play.py: --opponent: ") and str(bad) in p.stderr, (name, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, (name, p.stderr)


@pytest.mark.slow  # the board's kernels load on the first move
def test_a_mistyped_command_names_the_closest_one() -> None:
    """The terminal's unknown-command line offers the closest command, as the config errors do."""
    out = io.StringIO()
    game = PlayGame.new(mode="two_players")
    assert run_terminal(game, io.StringIO("udno\nhnit\nresing\nxyzzy\na3a4\nqiut\n"), out, pace_sleep=False) == 0
    lines = out.getvalue().splitlines()
    assert "Unknown command 'udno' (did you mean undo?): type a move like a3a4, or 'help' for the commands." in lines
    assert any(line.startswith("Unknown command 'hnit' (did you mean hint?)") for line in lines)
    assert any(line.startswith("Unknown command 'resing' (did you mean resign?)") for line in lines)
    assert any(line.startswith("Unknown command 'qiut' (did you mean quit?)") for line in lines)
    assert "Unknown command 'xyzzy': type a move like a3a4, or 'help' for the commands." in lines
    assert game.plies and game.result()[0] == "*"  # the typos changed nothing, the move was played

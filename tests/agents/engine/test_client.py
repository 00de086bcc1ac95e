"""The ``engine:`` player: a program speaking the Jungle Engine Protocol, its faults the engine's own.

Small programs written here stand in for engines that misbehave: one that answers an illegal move, one that
prints garbage, one that never answers ``go``, one that exits mid-game, one that never says ``jepok`` (and a
few more: one that has no move, one that refuses the position, one that refuses an option). Each
writes its pid to a file as it starts, so every test can check that no program it started is left running.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from agents.arena.records import GameRecord, read_jsonl
from agents.arena.settings import TournamentSettings
from agents.arena.tournament import run_tournament
from agents.engine.client import ENGINE_FAULT, EngineFault, EnginePlayer, engine_settings
from envs import Board
from envs.players import PlayerSpecError, make_player
from envs.rules import RuleSet

FAKE_ENGINE = """\
import os, sys, time

BEHAVIOUR = {behaviour!r}
with open({pids!r}, "a") as f:
    f.write(f"{{os.getpid()}}\\n")
goes = 0
moves = []


def say(line):
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()


for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "jep":
        if BEHAVIOUR == "silent":
            continue
        say("id name fake-" + BEHAVIOUR)
        say("option name Rules type string default default")
        say("option name Style type string default calm")
        say("jepok")
    elif words[0] == "setoption" and BEHAVIOUR == "refuses" and "Style" in words:
        say("info string error setoption: Style " + words[-1] + " is not calm or wild")
    elif words[0] == "isready":
        say("readyok")
    elif words[0] == "newgame":
        goes = 0
    elif words[0] == "position":
        moves = words[words.index("moves") + 1 :] if "moves" in words else []
        if BEHAVIOUR == "confused":
            say("info string error position: this engine knows no Jungle")
    elif words[0] == "go":
        goes += 1
        if BEHAVIOUR == "illegal":
            say("bestmove a1c3")
        elif BEHAVIOUR == "garbage":
            say("\\u2603 ~~ 12 ## not a reply")
            say("bestmove !!")
        elif BEHAVIOUR == "hang":
            time.sleep(3600)
        elif BEHAVIOUR == "none":
            say("bestmove (none)")
        elif BEHAVIOUR == "crash" and goes > 1:
            sys.stderr.write("fake engine: out of memory\\n")
            sys.exit(3)
        else:  # Red's first move, or Blue's first answer to any first move of Red's
            say("info depth 1 score wp 0.500 cp 0 nodes 1 pv a3a4")
            say("bestmove " + ("a3a4" if not moves else "g7g6"))
    elif words[0] == "quit":
        break
"""


def fake_engine(tmp_path: Path, behaviour: str) -> tuple[str, Path]:
    """The command line of a fake engine that behaves as `behaviour` says, and the file its pids go to."""
    pids = tmp_path / f"{behaviour}.pids"
    script = tmp_path / f"{behaviour}.py"
    script.write_text(FAKE_ENGINE.format(behaviour=behaviour, pids=str(pids)))
    return shlex.join([sys.executable, str(script)]), pids


def started(pids: Path) -> list[int]:
    """The pids of the fake engine's runs so far."""
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def running(pid: int) -> bool:
    """Whether process `pid` still exists (a zombie counts: nobody reaped it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # the number went to another user's process
        return False
    return True


def engine(tmp_path: Path, behaviour: str, limits: str = "time=0.05") -> tuple[EnginePlayer, Path]:
    cmd, pids = fake_engine(tmp_path, behaviour)
    player = make_player(f"engine:cmd={cmd},name=fake,{limits}")
    assert isinstance(player, EnginePlayer)
    return player, pids


@pytest.mark.slow  # starts programs
def test_an_engine_plays_the_moves_its_program_answers_and_its_program_ends_with_it(tmp_path: Path) -> None:
    player, pids = engine(tmp_path, "legal")
    assert player.engine_name == "fake-legal" and player.engine_options == ["Rules", "Style"]
    assert player.name == "fake"
    board = Board()
    assert str(player.select_move(board)) == "a3a4"
    board.push("a3a4")
    assert str(player.select_move(board)) == "g7g6"
    pid = player.pid
    assert pid is not None and started(pids) == [pid]
    player.close()
    assert player.pid is None and not running(pid)


@pytest.mark.slow  # starts programs
@pytest.mark.parametrize(
    ("behaviour", "limits", "reason"),
    [
        ("illegal", "time=0.05", "it played a1c3, not a legal move"),
        ("garbage", "time=0.05", "its answer 'bestmove !!' names no move"),
        ("hang", "time=0.05,margin=0.3", "no bestmove within 0.35 s (time=0.05 + margin=0.3)"),
        ("hang", "depth=3,margin=0.3", "no bestmove within 0.3 s (margin=0.3)"),
        ("none", "depth=3", "it answered 'bestmove (none)' with 24 legal moves"),
        ("confused", "depth=3", "it refused the position: position: this engine knows no Jungle"),
        ("crash", "nodes=100", "it ended before its bestmove (exit code 3; its stderr ends 'fake engine: out of"),
    ],
)
def test_a_fault_names_what_the_engine_did_kills_it_and_the_next_move_starts_it_again(
    tmp_path: Path, behaviour: str, limits: str, reason: str
) -> None:
    player, pids = engine(tmp_path, behaviour, limits)
    board = Board()
    if behaviour == "crash":  # its first move is a good one
        board.push(player.select_move(board))
        board.push("g7g6")
    with pytest.raises(EngineFault, match="^" + reason.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        player.select_move(board)
    assert player.pid is None and not any(running(pid) for pid in started(pids))
    player.reset()
    if behaviour != "crash":
        with pytest.raises(EngineFault):
            player.select_move(board)
    else:
        assert str(player.select_move(Board())) == "a3a4"
    assert len(started(pids)) == 2
    player.close()
    assert not any(running(pid) for pid in started(pids))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"time": "1"}, "an engine player needs the command that starts the program: cmd=..."),
        ({"cmd": "  "}, "an engine player needs the command that starts the program: cmd=..."),
        ({"cmd": "'unclosed"}, 'engine option cmd="\'unclosed" cannot be split into words: No closing quotation'),
        ({"cmd": "x"}, "an engine player needs a limit for its moves: time= (seconds), depth= or nodes="),
        ({"cmd": "x", "time": "0"}, "engine option time=0.0 must lie in [0.001, 1000000]"),
        ({"cmd": "x", "depth": "two"}, "engine option depth='two' is not an integer"),
        ({"cmd": "x", "depth": "2", "hash": "16"}, "unknown engine option(s) hash; known: cmd, name, time, depth"),
    ],
)
def test_a_bad_engine_spec_is_one_line(options: dict[str, str], message: str) -> None:
    with pytest.raises(PlayerSpecError) as e:
        engine_settings(options)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_the_settings_of_a_spec_make_its_go_command() -> None:
    from agents.engine.protocol import format_command

    settings = engine_settings({"cmd": "eng --fast", "time": "0.25", "depth": "6", "option.Hash": "16"})
    assert settings.argv == ("eng", "--fast") and settings.options == (("Hash", "16"),)
    assert format_command(settings.go()) == "go movetime 250 depth 6"
    assert settings.answer_within() == 10.25 and settings.shown_name == "eng"


@pytest.mark.slow  # starts programs
def test_a_program_that_does_not_start_or_answer_or_refuses_an_option_is_refused_in_one_line(tmp_path: Path) -> None:
    def refusal(spec: str) -> str:
        with pytest.raises(PlayerSpecError) as e:
            make_player(spec)
        assert "\n" not in str(e.value)
        return str(e.value)

    missing = tmp_path / "no-such-engine"
    assert refusal(f"engine:cmd={missing},depth=1") == (
        f"engine {str(missing)!r}: {str(missing)!r} cannot be started: No such file or directory"
    )
    silent, silent_pids = fake_engine(tmp_path, "silent")
    assert refusal(f"engine:cmd={silent},depth=1,startup=0.5").endswith(
        "no 'jepok' in answer to 'jep' within 0.5 s (startup=)"
    )
    legal, legal_pids = fake_engine(tmp_path, "legal")
    assert refusal(f"engine:cmd={legal},depth=1,option.Hash=16").endswith(
        "it offers no option 'Hash' (its options: Rules, Style)"
    )
    refuses, refuses_pids = fake_engine(tmp_path, "refuses")
    assert refusal(f"engine:cmd={refuses},depth=1,option.style=loud").endswith(
        "it refused its settings: setoption: Style loud is not calm or wild"
    )
    assert refusal(f"engine:cmd={sys.executable} -c 'import sys; sys.exit(5)',depth=1").endswith(
        "it ended before its 'jepok' in answer to 'jep' (exit code 5)"
    )
    pids = started(silent_pids) + started(legal_pids) + started(refuses_pids)
    assert len(pids) == 3 and not any(running(pid) for pid in pids)


@pytest.mark.slow  # starts programs
def test_rules_outside_the_kits_named_sets_reach_the_engine_as_a_rule_file(tmp_path: Path) -> None:
    log = tmp_path / "sent.txt"
    script = tmp_path / "echo.py"
    script.write_text(
        "import sys\n"
        f"log = open({str(log)!r}, 'a')\n"
        "for line in sys.stdin:\n"
        "    log.write(line); log.flush()\n"
        "    if line.startswith('jep'): print('option name Rules type string default default'); print('jepok')\n"
        "    if line.startswith('isready'): print('readyok')\n"
        "    if line.startswith('quit'): break\n"
        "    sys.stdout.flush()\n"
    )
    spec = f"engine:cmd={sys.executable} {script},depth=1"
    make_player(spec, rules=RuleSet(rank_order="dog_over_wolf")).close()
    make_player(spec, rules=RuleSet(no_capture_draw=77)).close()
    sent = [line for line in log.read_text().splitlines() if line.startswith("setoption")]
    assert sent[0] == "setoption name Rules value dog_over_wolf"
    path = Path(sent[1].removeprefix("setoption name Rules value "))
    assert path.suffix == ".yaml" and not path.exists()  # written for the engine's life only


def tournament(tmp_path: Path, behaviour: str, limits: str = "time=0.05", **kwargs: object) -> tuple[list, Path]:
    """A gauntlet of the fake engine against `random`, two games from the start position."""
    cmd, pids = fake_engine(tmp_path, behaviour)
    spec = f"engine:cmd={cmd},name=fake,{limits}"
    result = run_tournament(
        [spec, "random"],
        TournamentSettings(
            games_per_pair=kwargs.pop("games_per_pair", 2),  # type: ignore[arg-type]
            mode="gauntlet",
            opening_plies=0,
            max_plies=40,
        ),
        progress=False,
        engine_logs=tmp_path / "engines",
        **kwargs,  # type: ignore[arg-type]
    )
    return result.games, pids


@pytest.mark.slow  # starts programs
@pytest.mark.parametrize(
    ("behaviour", "limits", "reason"),
    [
        ("illegal", "time=0.05", "it played a1c3, not a legal move"),
        ("garbage", "time=0.05", "its answer 'bestmove !!' names no move"),
        ("hang", "time=0.05,margin=0.2", "no bestmove within 0.25 s"),
        (
            "crash",
            "time=0.05",
            "it ended before its bestmove (exit code 3; its stderr ends 'fake engine: out of memory')",
        ),
    ],
)
def test_an_engines_fault_loses_its_game_and_the_tournament_goes_on_with_it_restarted(
    tmp_path: Path, behaviour: str, limits: str, reason: str
) -> None:
    games, pids = tournament(tmp_path, behaviour, limits)
    assert len(games) == 2
    for rec, side in zip(games, ("red", "blue")):
        assert rec.termination == ENGINE_FAULT and rec.extra["fault"]["side"] == side
        assert rec.result == ("0-1" if side == "red" else "1-0")
        assert rec.extra["fault"]["reason"].startswith(reason)
        assert GameRecord.from_dict(rec.__dict__) == rec  # a record that reads back (a resume reads it)
        rec.replay()
    # the spec check's run played the first game; the second game started it again
    assert len(started(pids)) == 2 and not any(running(pid) for pid in started(pids))
    log = (tmp_path / "engines" / "P1-fake-0.stderr.log").read_text()
    assert log.count("=== ") == 2
    if behaviour == "crash":
        assert log.count("fake engine: out of memory") == 2


@pytest.mark.slow  # worker processes and programs
def test_each_worker_process_runs_its_own_engine_and_ends_it(tmp_path: Path) -> None:
    games, pids = tournament(tmp_path, "crash", games_per_pair=4, workers=2)
    assert [rec.termination for rec in games] == [ENGINE_FAULT] * 4
    assert all("exit code 3" in rec.extra["fault"]["reason"] for rec in games)
    logs = sorted(p.name for p in (tmp_path / "engines").iterdir())
    assert logs == ["P1-fake-0.stderr.log", "P1-fake-1.stderr.log"]
    # the spec check's run, then one run a game in the workers (each game ends in a crash)
    assert len(started(pids)) == 5 and not any(running(pid) for pid in started(pids))


@pytest.mark.slow  # starts programs
def test_a_tournament_resumed_from_its_games_file_keeps_the_engines_faults(tmp_path: Path) -> None:
    games, _ = tournament(tmp_path, "illegal")
    path = tmp_path / "games.jsonl"
    path.write_text(games[0].to_json() + "\n")
    played = list(read_jsonl(path))
    again, _ = tournament(tmp_path, "illegal", played=played)
    assert again[0] == played[0]
    assert [(g.moves, g.result, g.termination, g.extra["fault"]) for g in again] == [
        (g.moves, g.result, g.termination, g.extra["fault"]) for g in games
    ]

"""Tournaments end to end: evaluate.py in a subprocess, colour swapping, seeding, bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agents.arena.config import checked_config, compose_config
from agents.arena.errors import OpeningsError, TournamentError
from agents.arena.openings import read_openings
from agents.arena.records import read_jsonl
from agents.arena.run import TournamentRun
from agents.arena.settings import TournamentSettings
from agents.arena.tournament import run_tournament
from envs.config import ConfigError
from envs.players import PlayerSpecError, RandomPlayer
from envs.rules import RuleSet
from tests.support import ROOT

PLAYERS = ["random", "alphabeta:depth=1", "alphabeta:depth=2"]


def run_evaluate(tmp_path: Path, *overrides: str, code: str = "") -> subprocess.CompletedProcess:
    """evaluate.py in a subprocess, in `tmp_path`; with `code`, that Python first (then the script as __main__)."""
    script = (
        [str(ROOT / "evaluate.py")]
        if not code
        else ["-c", f"{code}\nimport runpy\nrunpy.run_path({str(ROOT / 'evaluate.py')!r}, run_name='__main__')"]
    )
    return subprocess.run(
        [sys.executable, *script, *overrides, "progress=false"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def evaluate_tournament(tmp_path: Path, *args: str, code: str = "") -> tuple[int, str]:
    """evaluate.py in a subprocess, no worker processes, no image: (exit status, stderr)."""
    proc = run_evaluate(tmp_path, *args, "workers=0", "image=false", code=code)
    return proc.returncode, proc.stderr


@pytest.fixture(scope="module")
def finished_tournament(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The out_dir of a finished 2-game tournament (each test copies it)."""
    out = tmp_path_factory.mktemp("tournament") / "out"
    code, err = evaluate_tournament(
        out.parent, 'players=[random,"alphabeta:depth=1"]', "games_per_pair=2", f"out_dir={out}"
    )
    assert code == 0, err
    return out


@pytest.mark.slow
def test_evaluate_end_to_end_writes_files_and_replays_in_process(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_evaluate(
        tmp_path,
        'players=[random,"alphabeta:depth=1","alphabeta:depth=2"]',
        "games_per_pair=4",
        "workers=2",
        "seed=5",
        "opening_plies=3",
        f"out_dir={out}",
    )
    assert proc.returncode == 0, proc.stderr
    assert "Ratings" in proc.stdout and "Crosstable" in proc.stdout
    for name in ("results.json", "ratings.csv", "pairings.csv", "games.jsonl"):
        assert (out / name).is_file(), name
    results = json.loads((out / "results.json").read_text())
    assert results["players"] == PLAYERS
    assert {p["games"] for p in results["pairings"]} == {4}
    games = list(read_jsonl(out / "games.jsonl"))
    assert len(games) == 12
    for rec in games:
        assert rec.replay().outcome() is not None or rec.termination == "ply_cap"
        assert rec.extra["opening_plies"] == 3 and rec.seed is not None
    # Colour-swapped pairs: same opening, colours exchanged.
    for a, b in zip(games[::2], games[1::2]):
        assert (a.red, a.blue) == (b.blue, b.red)
        assert a.moves[:3] == b.moves[:3] and a.extra["opening_index"] == b.extra["opening_index"]
    # Random plays worse than alpha-beta: it scores below half.
    rows = {r["name"]: r for r in results["ratings"]["ratings"]}
    assert rows["random"]["score"] < 0.5
    assert (out / "ratings.csv").read_text().splitlines()[0].startswith("rank,player,elo")
    # The same seed in this process (no workers) replays the very same games.
    again = run_tournament(PLAYERS, TournamentSettings(games_per_pair=4, seed=5, opening_plies=3), progress=False)
    assert [g.moves for g in again.games] == [g.moves for g in games]
    assert [g.result for g in again.games] == [g.result for g in games]


def test_seeds_decide_the_openings() -> None:
    a = run_tournament(["random", "alphabeta:depth=1"], TournamentSettings(games_per_pair=4, seed=1), progress=False)
    b = run_tournament(["random", "alphabeta:depth=1"], TournamentSettings(games_per_pair=4, seed=1), progress=False)
    c = run_tournament(["random", "alphabeta:depth=1"], TournamentSettings(games_per_pair=4, seed=2), progress=False)
    assert [g.moves for g in a.games] == [g.moves for g in b.games]
    assert [g.moves[:4] for g in a.games] != [g.moves[:4] for g in c.games]
    assert a.games[0].moves[:4] != a.games[2].moves[:4]  # pairs start from different openings
    p = a.pair("alphabeta:depth=1", "random")
    assert p.games == 4 and p.wins + p.draws + p.losses == 4
    assert a.score("alphabeta:depth=1", "random") == pytest.approx(1 - a.score("random", "alphabeta:depth=1"))


@pytest.mark.slow
def test_bad_input_fails_before_any_game(tmp_path: Path) -> None:
    played = []
    with pytest.raises(PlayerSpecError, match="nosuch"):
        run_tournament(
            ["random", "nosuch:x=1"], TournamentSettings(games_per_pair=2), on_game=played.append, progress=False
        )
    with pytest.raises(PlayerSpecError, match="does not exist"):
        run_tournament(
            ["random", f"checkpoint:path={tmp_path / 'missing.pt'}"],
            TournamentSettings(games_per_pair=2),
            on_game=played.append,
            progress=False,
        )
    bad = tmp_path / "openings.txt"
    bad.write_text("# two openings\na3a4 g7g6\na3a4 a3a5\n")
    with pytest.raises(OpeningsError, match=r"openings.txt:3"):
        run_tournament(
            ["random", "alphabeta:depth=1"],
            TournamentSettings(games_per_pair=2, openings_file=str(bad)),
            on_game=played.append,
            progress=False,
        )
    with pytest.raises(TournamentError, match="workers"):
        run_tournament([RandomPlayer(seed=1, name="r1"), RandomPlayer(seed=2, name="r2")], workers=2, progress=False)
    assert played == []
    proc = run_evaluate(tmp_path, "players=[random,nosuch]", f"out_dir={tmp_path / 'never'}")
    assert proc.returncode != 0 and "unknown player kind 'nosuch'" in proc.stderr
    assert not (tmp_path / "never" / "games.jsonl").exists()
    proc = run_evaluate(tmp_path, "no_such_key=1")
    assert proc.returncode != 0 and "no_such_key" in proc.stderr


def test_openings_file_and_player_objects(tmp_path: Path) -> None:
    f = tmp_path / "openings.txt"
    f.write_text("a3a4 g7g6  # Elephant and Rat\nl5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1 | g3g4\n")
    openings = read_openings(f)
    assert [o.moves for o in openings] == [("a3a4", "g7g6"), ("g3g4",)]
    players = [RandomPlayer(seed=1, name="r1"), RandomPlayer(seed=2, name="r2")]
    settings = TournamentSettings(games_per_pair=4, openings_file=str(f), mode="gauntlet")
    res = run_tournament(players, settings, workers=0, progress=False)
    assert len(res.games) == 4
    assert [g.moves[:2] for g in res.games[:2]] == [["a3a4", "g7g6"]] * 2
    assert res.games[2].moves[0] == "g3g4"


def test_schedules_pair_the_right_players() -> None:
    from agents.arena.tournament import Opening, schedule

    openings = [Opening(), Opening(moves=("a3a4",))]
    for mode, pairs in (
        ("round_robin", {(0, 1), (0, 2), (1, 2)}),
        ("gauntlet", {(0, 1), (0, 2)}),
        ("ladder", {(0, 1), (1, 2)}),
    ):
        tasks = schedule(3, 4, openings, seed=0, mode=mode)
        assert {(min(t.red, t.blue), max(t.red, t.blue)) for t in tasks} == pairs
        assert len(tasks) == 4 * len(pairs)
        assert [t.opening_index for t in tasks[:4]] == [0, 0, 1, 1]
        assert len({t.seed for t in tasks}) == len(tasks)
    with pytest.raises(TournamentError, match="swiss"):
        schedule(3, 2, openings, seed=0, mode="swiss")


@pytest.mark.slow
def test_the_printed_tables_fit_100_columns_and_the_files_keep_the_full_specs(tmp_path: Path) -> None:
    """Twelve players with long specs (one path longer than a line): every printed line fits 100 columns,
    each player appears by label with its spec in the legend, and results.json and ratings.csv keep the specs."""
    import csv

    import numpy as np

    from agents.arena.records import GameRecord
    from agents.arena.reporting import TABLE_WIDTH, summarize

    long_path = "checkpoints/" + "a-very-long-run-name-" * 8 + "/iter_000060.pt"
    players = (
        [f"checkpoint:path={long_path},sims={s},algorithm=puct,device=cpu,leaf_batch=8" for s in (64, 128)]
        + [f"alphabeta:depth={d},noise=25,tt=20,nodes=1000000000,random=0.05" for d in range(1, 10)]
        + ["random"]
    )
    rng = np.random.default_rng(0)
    games = [
        GameRecord(
            red=players[i], blue=players[j], result=str(rng.choice(["1-0", "0-1", "1/2-1/2"])), termination="den"
        )
        for i in range(len(players))
        for j in range(len(players))
        if i != j
        for _ in range(50)
    ]
    result = summarize(games, players)
    text = result.table()
    lines = text.splitlines()
    too_long = [line for line in lines if len(line) > TABLE_WIDTH]
    assert TABLE_WIDTH == 100 and not too_long, too_long
    entries: dict[str, str] = {}
    for line in text.split("\n\n")[0].splitlines()[1:]:  # the legend: "  P1  = spec", wrapped lines indented
        key, eq, spec = line.strip().partition(" = ")
        if eq and key.startswith("P") and line.startswith("  P"):
            entries[key.strip()] = spec
        else:
            entries[next(reversed(entries))] += line.strip()
    assert entries == {f"P{k}": spec for k, spec in enumerate(players, 1)}
    assert "P12" in text and "[+" in text and "Crosstable" in text
    out = result.write(tmp_path, image=False)
    assert json.loads(out["json"].read_text())["players"] == players
    assert {row["player"] for row in csv.DictReader(out["ratings_csv"].open())} == set(players)


def test_short_specs_are_named_in_the_ratings_as_well() -> None:
    from agents.arena.records import GameRecord
    from agents.arena.tournament import summarize

    games = [GameRecord(red=a, blue=b, result="1-0", termination="den") for a, b in (PLAYERS[1:], PLAYERS[::2])] * 2
    text = summarize(games, PLAYERS).table()
    assert "  P2 = alphabeta:depth=1\n" in text
    ratings = text.split("Ratings")[1].split("\n\n")[0]
    assert "P2  alphabeta:depth=1" in ratings and max(map(len, text.splitlines())) <= 100


def evaluate_refused(*overrides: str) -> str:
    """The one-line error that evaluate.py's config checks give for `overrides` (composed in this process)."""
    with pytest.raises(ConfigError) as e:
        checked_config(compose_config(overrides))
    assert "\n" not in str(e.value)
    return str(e.value)


@pytest.mark.slow
def test_unknown_keys_and_bad_values_are_refused_with_the_closest_key() -> None:
    """`gamesperpair=4` (Hydra's error) and `+gamesperpair=4` (which Hydra adds, and which once ran the default
    tournament) are both refused, naming the key meant; values out of range name their bounds."""
    assert evaluate_refused("gamesperpair=4") == "unknown config key 'gamesperpair' (did you mean games_per_pair?)"
    assert evaluate_refused("+gamesperpair=4").startswith(
        "unknown evaluate.py config key(s) gamesperpair (did you mean games_per_pair?)"
    )
    assert evaluate_refused("games_per_pair=0") == "games_per_pair=0 must lie in [1, 100000]"
    assert evaluate_refused("seed=-1") == "seed=-1 must lie in [0, 2**63 - 1]"
    assert evaluate_refused("prior_games=nan") == "prior_games=nan must lie in [0, 1000]"
    assert evaluate_refused("max_plies=100000000") == "max_plies=100000000 must lie in [1, 30000]"
    assert evaluate_refused("mode=swiss") == "mode='swiss' is not one of round_robin, gauntlet, ladder"
    assert evaluate_refused("games_per_pair=abc").startswith("games_per_pair=abc: Value 'abc'")
    conf = checked_config(compose_config(["games_per_pair=4"]))
    assert conf.games_per_pair == 4 and conf.players[0] == "random"
    assert evaluate_refused("+rules.bogus=1").startswith("unknown rules key(s) bogus; known keys: anti_chase, ")
    assert evaluate_refused("rules.no_capture_draw=-1") == "rule no_capture_draw=-1 must lie in [0, 30000]"
    assert evaluate_refused("rules=keeps_ranks").startswith("could not find 'rules/keeps_ranks'; the options are ")
    assert evaluate_refused("rules=my/rules.yaml").endswith(
        "(a file of one's own, DIR/rules/NAME.yaml: hydra.searchpath=[file://DIR] rules=NAME)"
    )


@pytest.mark.slow
def test_a_rules_group_and_a_rule_override_decide_the_games(tmp_path: Path) -> None:
    """`rules=NAME rules.KEY=VALUE`, as train.py takes them: tournament.json stores that rule set and every
    game is played under it."""
    out = tmp_path / "out"
    code, err = evaluate_tournament(
        tmp_path,
        'players=[random,"alphabeta:depth=1"]',
        "games_per_pair=2",
        "rules=dog_over_wolf",
        "rules.no_capture_draw=200",
        f"out_dir={out}",
    )
    assert code == 0, err
    wanted = RuleSet(rank_order="dog_over_wolf", no_capture_draw=200).to_dict()
    assert json.loads((out / "tournament.json").read_text())["rules"] == wanted
    games = list(read_jsonl(out / "games.jsonl"))
    assert len(games) == 2 and all(g.rules == wanted for g in games)
    assert all(g.replay().rules == RuleSet.from_dict(wanted) for g in games)


@pytest.mark.slow
def test_a_rule_file_of_ones_own_is_found_on_hydras_searchpath(tmp_path: Path) -> None:
    """A rule set of one's own is DIR/rules/NAME.yaml, found with `hydra.searchpath=[file://DIR] rules=NAME`
    (DIR relative to the working directory or absolute); its keys may be overridden as the group's."""
    (tmp_path / "mine" / "rules").mkdir(parents=True)
    (tmp_path / "mine" / "rules" / "house.yaml").write_text("rank_order: dog_over_wolf\nno_capture_draw: 80\n")
    out = tmp_path / "out"
    code, err = evaluate_tournament(
        tmp_path,
        'players=[random,"alphabeta:depth=1"]',
        "games_per_pair=2",
        "hydra.searchpath=[file://mine]",
        "rules=house",
        "rules.repetition=off",
        f"out_dir={out}",
    )
    assert code == 0, err
    wanted = RuleSet(rank_order="dog_over_wolf", no_capture_draw=80, repetition="off").to_dict()
    assert json.loads((out / "tournament.json").read_text())["rules"] == wanted
    assert {tuple(sorted(g.rules.items())) for g in read_jsonl(out / "games.jsonl")} == {tuple(sorted(wanted.items()))}
    absolute = checked_config(compose_config([f"hydra.searchpath=[file://{tmp_path / 'mine'}]", "rules=house"]))
    assert absolute.rules.rule_set() == RuleSet(rank_order="dog_over_wolf", no_capture_draw=80)


@pytest.mark.slow
def test_a_resumed_tournament_keeps_its_rules(finished_tournament: Path) -> None:
    """tournament.json holds the rules: a resume refuses `rules=` and `rules.KEY=` (they would change its
    games) and lets `workers`, `progress`, `image` and `start_method` change."""
    again = f"resume={finished_tournament}"
    for override in ("rules=keeps_rank", "rules.no_capture_draw=200", "+rules.bogus=1"):
        with pytest.raises(TournamentError) as e:
            TournamentRun.resume(finished_tournament, [again, override])
        key = override.lstrip("+").split("=")[0]
        assert f"{key} cannot change (only workers, progress, image, start_method can)" in str(e.value)
    with TournamentRun.resume(
        finished_tournament, [again, "workers=3", "progress=false", "image=false", "start_method=fork"]
    ) as resumed:
        settings = resumed.settings
    assert settings.rules.to_dict() == RuleSet().to_dict() and settings.games_per_pair == 2


@pytest.mark.slow
@pytest.mark.parametrize("override", ["gamesperpair=4", "+gamesperpair=4"])
def test_the_command_line_refuses_an_unknown_key_in_one_line(override: str, tmp_path: Path) -> None:
    proc = run_evaluate(tmp_path, override, f"out_dir={tmp_path / 'out'}")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluate.py: error: unknown ")
    assert "(did you mean games_per_pair?)" in lines[0]
    assert not (tmp_path / "out").exists() and proc.stdout == ""


@pytest.mark.slow
@pytest.mark.parametrize(
    "out_dir, words",
    [("/dev/null", "out_dir='/dev/null' is not a directory"), ("/proc/x", "out_dir='/proc/x' cannot be written")],
)
def test_an_out_dir_that_is_not_a_writable_directory_is_refused_before_any_game(
    out_dir: str, words: str, tmp_path: Path
) -> None:
    proc = run_evaluate(tmp_path, f"out_dir={out_dir}", "workers=0")
    err = proc.stderr
    assert proc.returncode == 2 and err.startswith(f"evaluate.py: error: {words}")
    assert err.count("\n") == 1


ANOTHER_BEGINS_MEANWHILE = """
from pathlib import Path
import agents.arena.config as config
real = config.tournament_settings
def another_begins_meanwhile(cfg):
    settings = real(cfg)
    out = Path(cfg.out_dir)
    out.mkdir()
    (out / "tournament.json").write_text('{"the": "other tournament"}\\n')
    return settings
config.tournament_settings = another_begins_meanwhile
"""
"""Run before evaluate.py: another tournament's settings appear in out_dir between the first check and the lock."""


@pytest.mark.slow
def test_a_second_tournament_into_one_out_dir_is_refused_under_the_lock(tmp_path: Path) -> None:
    """Another evaluate.py begins in the same out_dir after this one's first check: the check made again under
    the lock refuses it, and it changes nothing of the other's."""
    out = tmp_path / "out"
    code, err = evaluate_tournament(
        tmp_path,
        'players=[random,"alphabeta:depth=1"]',
        "games_per_pair=2",
        f"out_dir={out}",
        code=ANOTHER_BEGINS_MEANWHILE,
    )
    assert (
        code == 2 and err.startswith("evaluate.py: error: ") and "already holds a tournament (tournament.json)" in err
    )
    assert err.count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == [".lock", "tournament.json"]
    assert (out / "tournament.json").read_text() == '{"the": "other tournament"}\n'


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage, words",
    [
        ({"players": "random"}, "players='random' is not what a tournament's settings hold (list)"),
        ({"games_per_pair": "4"}, "games_per_pair='4'"),
        ({"seed": True}, "seed=True"),
        ({"rules": None}, "rules=None"),
        ({"players": [1, 2]}, "players must be a list of strings"),
        ("games.jsonl is a directory", "games.jsonl' is not a file"),
    ],
)
def test_resume_of_a_damaged_tournament_is_one_line(
    damage: object, words: str, tmp_path: Path, finished_tournament: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(finished_tournament, out)
    if isinstance(damage, dict):
        settings = json.loads((out / "tournament.json").read_text())
        (out / "tournament.json").write_text(json.dumps(dict(settings, **damage)))
    else:
        (out / "games.jsonl").unlink()
        (out / "games.jsonl").mkdir()
    code, err = evaluate_tournament(tmp_path, f"resume={out}")
    assert code == 2 and words in err and err.count("\n") == 1, err


@pytest.mark.slow  # two evaluate.py subprocesses
def test_a_torn_last_game_is_cut_with_a_warning_and_played_again(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ('players=[random,"alphabeta:depth=1"]', "games_per_pair=4", "seed=3")
    code, err = evaluate_tournament(tmp_path, *args, f"out_dir={out}")
    assert code == 0, err
    whole = [(g.moves, g.result, g.seed) for g in read_jsonl(out / "games.jsonl")]
    lines = (out / "games.jsonl").read_bytes().splitlines(keepends=True)
    (out / "games.jsonl").write_bytes(b"".join(lines[:2]) + lines[2][:40])  # killed while writing game 3
    (out / "results.json").unlink()
    code, err = evaluate_tournament(tmp_path, f"resume={out}")
    assert code == 0, err
    assert "cut 40 bytes of an unfinished last line" in err
    assert [(g.moves, g.result, g.seed) for g in read_jsonl(out / "games.jsonl")] == whole  # each game once


@pytest.mark.slow
def test_two_tournaments_started_at_once_into_one_out_dir_leave_one_whole_tournament(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [
        sys.executable,
        str(ROOT / "evaluate.py"),
        'players=[random,"alphabeta:depth=1"]',
        "games_per_pair=4",
        "workers=0",
        "progress=false",
        "image=false",
        f"out_dir={out}",
    ]
    procs = [
        subprocess.Popen(
            [*args, f"seed={seed}"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for seed in (1, 2)
    ]
    done = [(p.wait(300), p.communicate()[1]) for p in procs]
    assert sorted(code for code, _ in done) == [0, 2], done
    refused = next(err for code, err in done if code == 2)
    assert refused.count("\n") == 1 and ("already holds a tournament" in refused or "is in use by" in refused)
    winner = 1 + [code for code, _ in done].index(0)
    games = list(read_jsonl(out / "games.jsonl"))
    assert len(games) == 4 and json.loads((out / "tournament.json").read_text())["seed"] == winner
    assert json.loads((out / "results.json").read_text())["players"] == ["random", "alphabeta:depth=1"]


def test_a_tournament_game_at_the_counters_limit_is_a_ply_cap_draw() -> None:
    from agents.arena.tournament import Opening, play_game
    from envs import RuleSet

    rules = RuleSet(repetition="off", no_capture_draw=0)
    rec = play_game(RandomPlayer(seed=0), RandomPlayer(seed=1), Opening("l6/7/7/7/7/7/7/7/L6 r 29998 1"), rules=rules)
    assert (rec.termination, rec.result, len(rec.moves)) == ("ply_cap", "1/2-1/2", 2)
    board = rec.replay()
    assert board.jfen().endswith(" r 30000 2") and board.at_counter_limit()


@pytest.mark.slow  # a checkpoint player: torch and a network in the subprocess
def test_a_tournament_under_one_variant_plays_a_mixed_checkpoint_under_it_and_refuses_one_outside(
    tmp_path: Path,
) -> None:
    """`rules=keeps_rank` with a network trained on a mix holding it: every game under keeps_rank; a variant
    outside the mix is refused in one line naming the mix, before any game."""
    from tests.support.checkpoints import mixed_checkpoint

    net = mixed_checkpoint(tmp_path / "mix.pt", ["default", "keeps_rank"])
    players = f'players=["checkpoint:path={net},sims=2,device=cpu","alphabeta:depth=1"]'
    out = tmp_path / "out"
    code, err = evaluate_tournament(tmp_path, players, "games_per_pair=2", "rules=keeps_rank", f"out_dir={out}")
    assert code == 0, err
    wanted = RuleSet(trapped_attacker="keeps_rank").to_dict()
    assert json.loads((out / "tournament.json").read_text())["rules"] == wanted
    games = list(read_jsonl(out / "games.jsonl"))
    assert len(games) == 2 and all(g.rules == wanted for g in games)
    assert all(g.replay().rules == RuleSet.from_dict(wanted) for g in games)
    code, err = evaluate_tournament(
        tmp_path, players, "games_per_pair=2", "rules=dog_over_wolf", f"out_dir={tmp_path / 'refused'}"
    )
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("evaluate.py: error: "), err
    assert "another rule set (its mix of rule sets default, keeps_rank;" in lines[0] and "any_rules=true" in lines[0]
    assert not (tmp_path / "refused" / "games.jsonl").exists()


def engine_log_pids(out: Path) -> list[int]:
    """The pids of the engine runs an out_dir's stderr logs name (``=== <command> (pid <n>)``)."""
    return [
        int(line.rsplit("(pid ", 1)[1].rstrip(")"))
        for log in sorted((out / "engines").iterdir())
        for line in log.read_text().splitlines()
        if line.startswith("=== ")
    ]


@pytest.mark.slow  # evaluate.py and the kit's engine in subprocesses
def test_the_kits_engine_over_the_protocol_plays_a_gauntlet_in_evaluate(tmp_path: Path) -> None:
    from tests.agents.engine.test_client import running

    engine = f"engine:cmd={sys.executable} -m agents.engine --player alphabeta:depth=1,name=ab1,depth=1,startup=600"
    out = tmp_path / "out"
    code, err = evaluate_tournament(
        tmp_path, f'players=["{engine}",random]', "mode=gauntlet", "games_per_pair=2", "max_plies=30", f"out_dir={out}"
    )
    assert code == 0, err
    games = list(read_jsonl(out / "games.jsonl"))
    assert len(games) == 2 and {g.red for g in games} == {engine, "random"}
    assert all(g.termination != "engine_fault" and len(g.moves) > 1 for g in games)
    for g in games:
        g.replay()
    pids = engine_log_pids(out)
    assert [p.name for p in (out / "engines").iterdir()] == ["P1-ab1-0.stderr.log"]
    assert len(pids) == 1 and not running(pids[0])  # the spec check's run played both games, then quit


@pytest.mark.slow  # evaluate.py subprocesses
def test_an_engines_faults_lose_its_games_in_evaluate_and_a_resume_keeps_them(tmp_path: Path) -> None:
    from tests.agents.engine.test_client import fake_engine, running, started

    cmd, pids = fake_engine(tmp_path, "crash")
    players = f'players=["engine:cmd={cmd},name=fake,time=0.05",random]'
    args = (players, "mode=gauntlet", "games_per_pair=2", "opening_plies=0", "max_plies=30")
    out = tmp_path / "out"
    proc = run_evaluate(tmp_path, *args, "workers=0", "image=false", f"out_dir={out}")
    assert proc.returncode == 0, proc.stderr
    assert "engine_fault 2" in proc.stdout
    assert json.loads((out / "results.json").read_text())["terminations"] == {"engine_fault": 2}
    games = (out / "games.jsonl").read_text().splitlines()
    assert [json.loads(g)["extra"]["fault"]["side"] for g in games] == ["red", "blue"]
    (out / "games.jsonl").write_text(games[0] + "\n")  # as if stopped after the first game
    proc = run_evaluate(tmp_path, f"resume={out}", "workers=0", "image=false")
    assert proc.returncode == 0, proc.stderr
    again = list(read_jsonl(out / "games.jsonl"))
    assert [g.termination for g in again] == ["engine_fault", "engine_fault"]
    assert "exit code 3" in again[1].extra["fault"]["reason"]
    # the first run: its check's run (the first game), a second for the second game; the resume: one more
    assert len(started(pids)) == 3 and not any(running(pid) for pid in started(pids))


@pytest.mark.slow  # evaluate.py subprocesses
def test_a_bad_engine_spec_is_refused_in_one_line_before_any_game(tmp_path: Path) -> None:
    from tests.agents.engine.test_client import fake_engine, running, started

    silent, pids = fake_engine(tmp_path, "silent")
    for spec, says in [
        ("engine:depth=1", "an engine player needs the command that starts the program: cmd=..."),
        (f"engine:cmd={tmp_path / 'nothing'},depth=1", "cannot be started: No such file or directory"),
        (f"engine:cmd={silent},depth=1,startup=0.5", "no 'jepok' in answer to 'jep' within 0.5 s (startup=)"),
    ]:
        out = tmp_path / "out"
        code, err = evaluate_tournament(tmp_path, f'players=["{spec}",random]', f"out_dir={out}")
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("evaluate.py: error: "), err
        assert says in lines[0]
        assert not out.exists()
    assert len(started(pids)) == 1 and not running(started(pids)[0])


@pytest.mark.slow  # evaluate.py and the kit's engine in subprocesses
@pytest.mark.parametrize("mode", ["round_robin", "ladder"])
def test_the_kits_engine_plays_round_robins_and_ladders_in_evaluate(tmp_path: Path, mode: str) -> None:
    engine = f"engine:cmd={sys.executable} -m agents.engine --player alphabeta:depth=1,name=ab1,depth=1,startup=600"
    out = tmp_path / "out"
    code, err = evaluate_tournament(
        tmp_path,
        f'players=["{engine}",random,"alphabeta:depth=1"]',
        f"mode={mode}",
        "games_per_pair=2",
        "max_plies=30",
        f"out_dir={out}",
    )
    assert code == 0, err
    games = list(read_jsonl(out / "games.jsonl"))
    assert len(games) == (6 if mode == "round_robin" else 4)
    played = [g for g in games if engine in (g.red, g.blue)]
    assert len(played) == (4 if mode == "round_robin" else 2)
    assert all(g.termination != "engine_fault" and len(g.moves) > 1 for g in played)

"""A tournament's settings: one object, what tournament.json holds, checked once; its run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.arena.errors import TournamentError
from agents.arena.openings import Opening
from agents.arena.records import read_jsonl
from agents.arena.run import GAMES_FILE, SETTINGS_FILE, TournamentRun
from agents.arena.settings import TournamentSettings, read_tournament_file, write_tournament_file
from agents.arena.tournament import run_tournament
from agents.common.rundir import RunDirBusyError, claim_run_dir
from envs.rules import RuleSet

TOURNAMENT_KEYS = {
    "players",
    "mode",
    "games_per_pair",
    "seed",
    "opening_plies",
    "openings",
    "openings_file",
    "max_plies",
    "rules",
    "anchor",
    "prior_games",
    "elo0",
    "elo1",
    "alpha",
    "beta",
    "sprt_stop",
}
"""The keys of tournament.json, as every version of the kit has written them."""


def test_the_settings_round_trip_through_tournament_json(tmp_path: Path) -> None:
    settings = TournamentSettings(
        mode="gauntlet",
        games_per_pair=6,
        seed=7,
        openings=(Opening(), Opening(moves=("a3a4", "g7g6"))),
        openings_file="mine.txt",
        max_plies=300,
        rules=RuleSet(rank_order="dog_over_wolf", no_capture_draw=80),
        anchor="random",
        prior_games=0.5,
        elo1=10.0,
        sprt_stop=True,
    )
    path = tmp_path / SETTINGS_FILE
    write_tournament_file(path, ["alphabeta:depth=1", "random"], settings)
    assert read_tournament_file(path) == (["alphabeta:depth=1", "random"], settings)
    stored = json.loads(path.read_text())
    assert set(stored) == TOURNAMENT_KEYS
    assert stored["openings"][1].endswith("| a3a4 g7g6") and stored["rules"]["no_capture_draw"] == 80
    assert read_tournament_file(path)[1] == TournamentSettings(**{k: getattr(settings, k) for k in vars(settings)})


@pytest.mark.parametrize(
    "damage, words",
    [
        ({"games_per_pair": 0}, "games_per_pair=0 must lie in [1, 100000]"),
        ({"max_plies": 4.5}, "max_plies=4.5 is not what a tournament's settings hold (int)"),
        ({"mode": "swiss"}, "mode='swiss'"),
        ({"gamesperpair": 4}, "unknown tournament key(s) gamesperpair (did you mean games_per_pair?)"),
        ({"openings": ["nonsense"]}, "openings[0]"),
        ({"rules": {"rank_order": "upside_down"}}, "rank_order"),
        ({"elo0": 50.0}, "elo0=50.0 must be below elo1=30.0"),
    ],
)
def test_a_bad_key_or_value_in_tournament_json_is_refused_in_one_line(damage: dict, words: str, tmp_path: Path) -> None:
    path = tmp_path / SETTINGS_FILE
    write_tournament_file(path, ["random", "random:name=b"], TournamentSettings(games_per_pair=2))
    path.write_text(json.dumps({**json.loads(path.read_text()), **damage}))
    with pytest.raises(TournamentError) as refused:
        read_tournament_file(path)
    line = str(refused.value)
    assert line.startswith(f"{path}: ") and words in line and "\n" not in line


def test_a_resumed_tournament_run_cuts_a_torn_last_game_holds_the_directory_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    players = ["random", "alphabeta:depth=1"]
    settings = TournamentSettings(games_per_pair=4, max_plies=20)
    whole = run_tournament(players, settings, progress=False)
    write_tournament_file(tmp_path / SETTINGS_FILE, players, settings)
    lines = [g.to_json() + "\n" for g in whole.games]
    (tmp_path / GAMES_FILE).write_text(lines[0] + lines[1] + lines[2][:30])  # killed while writing game 3
    with TournamentRun.resume(tmp_path, overrides=[f"resume={tmp_path}", "workers=3"]) as run:
        assert run.cut == 30 and (run.players, run.settings) == (players, settings)
        assert [g.moves for g in run.played] == [g.moves for g in whole.games[:2]]
        assert (tmp_path / GAMES_FILE).read_text() == lines[0] + lines[1]
        with pytest.raises(RunDirBusyError):
            claim_run_dir(tmp_path)
        rest = run.play(progress=False)
    assert [g.moves for g in rest.games] == [g.moves for g in whole.games]
    kept = [(g.red, g.seed, g.moves) for g in read_jsonl(tmp_path / GAMES_FILE)]
    assert kept == [(g.red, g.seed, g.moves) for g in whole.games]  # each game once, the torn one again
    claim_run_dir(tmp_path).release()  # given up at the end

"""The lobby's rule-set choice and a network level that plays the rule sets its network was trained on."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.play import errors as play_errors
from agents.play import game as play_game
from agents.play import levels as play_levels
from agents.play import replay as play_replay
from agents.play.computer import ComputerWorkers
from envs import RuleSet
from envs.rules import load_rules, rule_set_names
from tests.support.checkpoints import mixed_checkpoint
from tests.support.play_helpers import Client, start_server, stop_server


@pytest.mark.slow
def test_the_lobby_offers_every_rule_set_and_a_game_starts_under_the_chosen_one(client: Client) -> None:
    info = client.call("GET", "/api/info")
    assert [r["name"] for r in info["rule_sets"]] == ["default", *(n for n in rule_set_names() if n != "default")]
    chosen = next(r for r in info["rule_sets"] if r["name"] == "dog_over_wolf")
    assert chosen["rules"] == load_rules("dog_over_wolf").to_dict() and chosen["ranks"][3:5] == [4, 3]
    network = next(lv for lv in info["levels"] if lv["name"] == "network")
    assert network["rules"] == ["default"]  # the shipped network's manifest entry
    variants = next(lv for lv in info["levels"] if lv["name"] == "variants")
    assert variants["rules"] == [
        "default",
        "keeps_rank",
        "enemy_rat",
        "rats_ignore_water",
        "dog_over_wolf",
        "anti_chase",
    ]
    alphabeta = [lv for lv in info["levels"] if lv["spec"].startswith("alphabeta:")]
    assert len(alphabeta) == 3 and all(lv["rules"] is None for lv in alphabeta)  # alpha-beta: any rules
    v = client.new(rules="dog_over_wolf", opponent="random")
    assert v["rules_name"] == "dog_over_wolf" and v["rules"] == load_rules("dog_over_wolf").to_dict()
    assert client.new()["rules_name"] == "default"  # no choice: the server's rule set
    two = client.call("POST", "/api/games", {"mode": "two_players", "rules": "anti_chase"}, status=201)
    assert two["rules"] == RuleSet(anti_chase="7-3+17-5").to_dict()
    assert "not a rule set of the page (anti_chase, " in client.error("POST", "/api/games", {"rules": "bogus"})
    refused = client.error("POST", "/api/games", {"opponent": "network", "rules": "keeps_rank"})
    assert refused == (
        "the network level plays the rule sets default, not keeps_rank: choose one of those rule sets or another level"
    )


@pytest.mark.slow  # the worker imports torch and loads a network
def test_a_game_under_a_chosen_rule_set_against_a_network_trained_on_a_mix(
    tmp_path: Path, pool: ComputerWorkers, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = mixed_checkpoint(tmp_path / "mix" / "best.pt", ["default", "keeps_rank", "enemy_rat"])
    # 30 s a move: a worker's first move of a network imports torch and may compile the search (a cold cache).
    level = play_levels.Level("mixed", "Mixed", f"checkpoint:path={path},sims=4", "a network of three rule sets", 30.0)
    monkeypatch.setattr(play_levels, "LEVELS", (*play_levels.LEVELS, level))
    server = start_server(tmp_path / "state", pool)
    try:
        client = Client(server)
        levels = {lv["name"]: lv for lv in client.call("GET", "/api/info")["levels"]}
        assert levels["mixed"]["rules"] == ["default", "keeps_rank", "enemy_rat"]
        v = client.new(opponent="mixed", rules="keeps_rank", human="blue")
        assert v["rules_name"] == "keeps_rank" and v["rules"] == load_rules("keeps_rank").to_dict()
        done = client.settled(v["id"])
        assert len(done["moves"]) == 1 and done["turn"] == "human" and done["computer_error"] is None, done
        assert done["rules_name"] == "keeps_rank"
        move = done["legal"][0]
        after = client.call("POST", f"/api/games/{v['id']}/move", {"move": move})
        assert after["moves"][:2] == [done["moves"][0], move]
        assert len(client.settled(v["id"])["moves"]) == 3  # the network answered under keeps_rank
        refused = client.error("POST", "/api/games", {"opponent": "mixed", "rules": "dog_over_wolf"})
        assert "plays the rule sets default, keeps_rank, enemy_rat, not dog_over_wolf" in refused
    finally:
        stop_server(server)


@pytest.mark.parametrize("value", [True, False, "120"])
def test_a_saved_game_or_record_whose_rules_hold_a_bool_for_a_number_is_refused_in_one_line(value: object) -> None:
    """``"no_capture_draw": true`` once loaded as 1: the game was drawn after one ply without a capture. A saved
    game, a record replayed by the viewer and a record replayed by the arena check their rules as a rule file
    does (`envs.rules.RuleSet.from_dict`)."""
    from agents.arena.records import GameRecord, RecordError
    from envs import START_JFEN

    saved = {
        "format": "jungle-zero-play-game",
        "version": 1,
        "id": "abc",
        "mode": "two_players",
        "human": None,
        "opponent": None,
        "pace": "instant",
        "rules": dict(RuleSet().to_dict(), no_capture_draw=value),
        "rules_name": "default",
        "start": START_JFEN,
        "seed": 1,
        "moves": ["a3a4"],
        "hints_left": 3,
        "resigned": None,
    }
    with pytest.raises(play_errors.PlayError) as refused:
        play_game.PlayGame.from_saved(saved)
    assert "no_capture_draw" in str(refused.value) and "\n" not in str(refused.value)
    record = GameRecord(moves=["a3a4"], rules=dict(RuleSet().to_dict(), no_capture_draw=value))
    for replay in (record.replay, lambda: play_replay.replay_frames(record)):
        with pytest.raises(RecordError) as refused_record:
            replay()
        assert "no_capture_draw" in str(refused_record.value) and "\n" not in str(refused_record.value)

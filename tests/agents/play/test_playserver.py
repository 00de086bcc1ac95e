"""The play page's JSON API, in-process on a free port: every endpoint, bad input, undo, hints, saving, replays."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import pytest

from agents.arena.records import GameRecord
from agents.play import levels as play_levels
from agents.play.computer import Cancelled, ComputerError, ComputerWorkers, PlayerCache, ThinkJob, choose_move
from agents.play.errors import PlayError
from agents.play.game import PlayGame
from agents.play.replay import MAX_REPLAY_PLIES, replay_frames
from agents.play.server import MAX_LIVE_GAMES, SOCKET_TIMEOUT
from agents.play.specs import bounded_spec
from envs import Board, Move, RuleSet
from envs.rules import resolve_rules
from tests.support.play_helpers import Client, register_test_players, snapshot, start_server, stop_server

DEN_IN_ONE = "2R4/7/6e/7/7/7/7/7/7 r 0 1"  # Red's Rat on c9 steps into Blue's den d9


@pytest.fixture
def gate(tmp_path: Path) -> Path:
    """A gate file for the `gated` player: it 'thinks' until the file exists."""
    return tmp_path / "gate"


# --- static files and info ------------------------------------------------------------------
def test_page_and_static_files_are_served(client: Client) -> None:
    code, body, headers = client.raw("GET", "/")
    assert code == 200 and b'id="board"' in body and headers["Content-Type"].startswith("text/html")
    for path in ("/app.js", "/style.css"):
        code, body, _ = client.raw("GET", path)
        assert code == 200 and len(body) > 1000
    assert client.raw("GET", "/nothing.html")[0] == 404
    assert client.raw("GET", "/../playgame.py")[0] == 404
    assert client.raw("GET", "/%2e%2e/playgame.py")[0] == 404


def test_info_describes_rules_and_choices(client: Client) -> None:
    info = client.call("GET", "/api/info")
    assert info["rules"] == RuleSet().to_dict() and info["rules_name"] == "default"
    assert [lv["name"] for lv in info["levels"]] == ["beginner", "normal", "network", "expert", "variants"]
    assert info["levels"][2]["spec"].startswith("checkpoint:path=shipped:")
    assert info["levels"][3]["spec"] == "alphabeta:level=expert" and info["levels"][2]["seconds"] > 0
    # The level list says which rule sets each network level plays: the strongest network the default rules,
    # the variants network the six of its mix; alpha-beta any.
    assert info["levels"][2]["rules"] == ["default"] and info["levels"][3]["rules"] is None
    mix = ["default", "keeps_rank", "enemy_rat", "rats_ignore_water", "dog_over_wolf", "anti_chase"]
    assert info["levels"][4]["rules"] == mix
    terrain = info["terrain"]
    assert len(terrain["squares"]) == 63 and terrain["squares"][0] == "a1" and len(terrain["water"]) == 12
    assert terrain["dens"] == {"d1": "red", "d9": "blue"} and terrain["traps"]["d8"] == "blue"
    assert info["paces"] == ["instant", "quick", "natural"] and info["hints_per_game"] == 3
    assert info["ranks"][1:] == [1, 2, 3, 4, 5, 6, 7, 8] and info["last_game"] is None


def test_unknown_endpoints_and_methods(client: Client) -> None:
    assert "no API endpoint" in client.error("GET", "/api/nothing", status=404)
    assert "no API endpoint" in client.error("POST", "/api/games/x/fly", status=404)
    assert client.raw("POST", "/index.html", b"")[0] == 405


# --- creating games ---------------------------------------------------------------------------
@pytest.mark.slow
def test_new_game_view(client: Client) -> None:
    v = client.new()
    assert v["mode"] == "computer" and v["human"] == "red" and v["turn"] == "human"
    assert v["jfen"] == Board().jfen() and v["moves"] == [] and v["result"] == "*"
    assert sorted(v["legal"]) == sorted(str(m) for m in Board().legal_moves)
    assert len(v["board"]) == 63 and v["board"][0] == "T" and v["board"][62] == "t"
    assert v["hints_left"] == 3 and v["can_undo"] is False and v["last"] is None


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"mode": "solo"}, "mode"),
        ({"pace": "fast"}, "pace"),
        ({"human": "green"}, "side"),
        ({"opponent": "nosuchkind"}, "is not a level"),
        ({"opponent": "random:depth=3"}, "random"),
        ({"opponent": "alphabeta:depth"}, "key=value"),
        ({"start": "not a jfen"}, "JFEN"),
        ({"seed": "x"}, "seed"),
        ({"colour": "red"}, "unknown field"),
    ],
)
def test_new_game_rejects_bad_fields(client: Client, body: dict[str, Any], needle: str) -> None:
    body.setdefault("opponent", "random")
    assert needle in client.error("POST", "/api/games", body)
    assert client.call("GET", "/api/info")["last_game"] is None


@pytest.mark.parametrize(
    "raw, needle",
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b"\xff\xfe", "not valid JSON"),
    ],
)
def test_malformed_json_is_refused_and_game_unchanged(client: Client, raw: bytes, needle: str) -> None:
    v = client.new()
    for path in ("/api/games", f"/api/games/{v['id']}/move", f"/api/games/{v['id']}/undo", "/api/replay"):
        code, body, _ = client.raw("POST", path, raw)
        assert code == 400 and needle in json.loads(body)["error"], (path, body)
    assert snapshot(client.call("GET", f"/api/games/{v['id']}")) == snapshot(v)


def test_posts_must_be_json_for_this_host(client: Client) -> None:
    req = urllib.request.Request(client.base + "/api/games", data=b'{"opponent": "random"}', method="POST")
    req.add_header("Content-Type", "text/plain")
    req.add_header("X-Jungle-Token", client.server.token)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 415 and "application/json" in json.loads(e.value.read())["error"]
    req = urllib.request.Request(client.base + "/api/info", headers={"Host": "evil.example:80"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 400 and "evil.example" in json.loads(e.value.read())["error"]
    assert client.call("GET", "/api/info")["last_game"] is None


def test_a_refused_body_does_not_spill_into_the_next_request(client: Client) -> None:
    port = client.server.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/index.html", body=b'{"x": 1}', headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 405 and "not supported" in json.loads(resp.read())["error"]
        conn.request("GET", "/api/info")  # same client; reconnects if the server closed
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["rules_name"] == "default"
    finally:
        conn.close()


def test_unknown_game_is_404_everywhere(client: Client) -> None:
    for method, path in (
        ("GET", "/api/games/nope"),
        ("POST", "/api/games/nope/move"),
        ("POST", "/api/games/nope/undo"),
        ("POST", "/api/games/nope/hint"),
        ("POST", "/api/games/nope/resign"),
        ("POST", "/api/games/nope/settings"),
        ("GET", "/api/games/nope/record"),
    ):
        body = {"move": "a3a4"} if path.endswith("move") else None
        assert "no game with id 'nope'" in client.error(method, path, body, status=404)
    assert "no saved game" in client.error("GET", "/api/games/last", status=404)


# --- moves ------------------------------------------------------------------------------------
def test_move_then_computer_replies(client: Client) -> None:
    v = client.new()
    after = client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    assert after["moves"][0] == "a3a4" and after["version"] > v["version"]
    done = client.settled(v["id"])
    assert len(done["moves"]) == 2 and done["turn"] == "human" and done["side_to_move"] == "red"
    board = Board()
    for m in done["moves"]:
        board.push(m)
    assert done["jfen"] == board.jfen()
    assert done["last"]["from"] == done["moves"][1][:2] and done["last"]["piece"].islower()


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"move": "a3a5"}, "illegal move a3a5"),
        ({"move": "c3d4"}, "never diagonally"),
        ({"move": "a1b2"}, "your own Cat"),
        ({"move": "b2b4"}, "one square at a time"),
        ({"move": "a7a6"}, "Blue's"),
        ({"move": "d4d5"}, "no piece on d4"),
        ({"move": "a3a9x"}, "a3a9x"),
        ({"move": 42}, "string"),
        ({"move": ""}, "''"),
        ({}, "missing field 'move'"),
        ({"move": "a3a4", "extra": 1}, "unknown field"),
    ],
)
def test_illegal_or_malformed_moves_leave_the_game_unchanged(client: Client, body: dict[str, Any], needle: str) -> None:
    v = client.new()
    assert needle in client.error("POST", f"/api/games/{v['id']}/move", body)
    assert snapshot(client.call("GET", f"/api/games/{v['id']}")) == snapshot(v)


def test_out_of_turn_while_the_computer_thinks(client: Client, gate: Path) -> None:
    v = client.new(opponent=f"gated:gate={gate}")
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    thinking = client.call("GET", f"/api/games/{v['id']}")
    assert thinking["turn"] == "computer" and thinking["thinking"] is True and thinking["legal"] == []
    assert "computer's turn" in client.error("POST", f"/api/games/{v['id']}/move", {"move": "g3g4"})
    assert "computer's turn" in client.error("POST", f"/api/games/{v['id']}/hint")
    assert snapshot(client.call("GET", f"/api/games/{v['id']}")) == snapshot(thinking)
    gate.touch()
    assert len(client.settled(v["id"])["moves"]) == 2


def test_computer_moves_first_when_the_person_plays_blue(client: Client) -> None:
    v = client.new(human="blue")
    done = client.settled(v["id"])
    assert done["human"] == "blue" and len(done["moves"]) == 1 and done["turn"] == "human"
    assert done["side_to_move"] == "blue" and done["legal"]
    assert "no move of yours" in client.error("POST", f"/api/games/{v['id']}/undo")


def tiny_checkpoint(path: Path) -> Path:
    from agents.alphazero.net.checkpoint import save_checkpoint
    from agents.alphazero.net.network import NetworkConfig, build_network

    tiny = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
    return save_checkpoint(
        path,
        {
            "model": build_network(tiny).state_dict(),
            "network": tiny.to_dict(),
            "rules": RuleSet().to_dict(),
            "config": "",
        },
    )


@pytest.mark.slow  # the worker imports torch and loads a network
def test_checkpoint_opponent(tmp_path: Path, pool: ComputerWorkers) -> None:
    path = tiny_checkpoint(tmp_path / "ours" / "run" / "latest.pt")
    server = start_server(tmp_path / "state", pool, checkpoint_dirs=[tmp_path / "ours"])
    try:
        client = Client(server)
        assert "no checkpoint at" in client.error("POST", "/api/games", {"opponent": str(tmp_path / "ours" / "x.pt")})
        v = client.new(opponent=f"checkpoint:path={path},sims=4", human="blue")
        done = client.settled(v["id"])
        assert len(done["moves"]) == 1 and done["turn"] == "human" and done["computer_error"] is None, done
        v = client.new(opponent=str(tmp_path / "ours" / "run"))
        assert v["opponent"] == f"checkpoint:path={tmp_path / 'ours' / 'run'}"
        # Outside the allowed directories: refused alike whether a file is there or not.
        outside = tiny_checkpoint(tmp_path / "elsewhere.pt")
        there = client.error("POST", "/api/games", {"opponent": str(outside)})
        missing = client.error("POST", "/api/games", {"opponent": str(tmp_path / "missing.pt")})
        assert there.replace("elsewhere", "missing") == missing and "checkpoints from" in there
        assert "outside the page's limits" in client.error(
            "POST", "/api/games", {"opponent": f"checkpoint:path={path},sims=100000"}
        )
    finally:
        stop_server(server)


@pytest.mark.slow  # the worker imports torch and loads a network
def test_a_shipped_network_becomes_a_level_with_one_entry(
    tmp_path: Path, pool: ComputerWorkers, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tiny_checkpoint(tmp_path / "shipped" / "best.pt")
    level = play_levels.Level("master", "Master", f"checkpoint:path={path},sims=4", "a network", seconds=4.0)
    gone = play_levels.Level("ghost", "Ghost", f"checkpoint:path={tmp_path / 'none.pt'}", "not shipped yet")
    monkeypatch.setattr(play_levels, "LEVELS", (*play_levels.LEVELS, level, gone))
    server = start_server(tmp_path / "state", pool)
    try:
        client = Client(server)
        levels = client.call("GET", "/api/info")["levels"]
        assert [lv["name"] for lv in levels] == [
            "beginner",
            "normal",
            "network",
            "expert",
            "variants",
            "master",
        ]  # ghost: no file yet
        assert levels[-1]["seconds"] == 4.0
        v = client.new(opponent="master", human="blue")
        assert v["opponent"] == level.spec and v["seconds"] == 4.0
        assert len(client.settled(v["id"])["moves"]) == 1
    finally:
        stop_server(server)


def test_bounded_specs() -> None:
    assert bounded_spec("alphabeta:level=expert", 10) == "alphabeta:level=expert,time=10"
    assert bounded_spec("alphabeta:depth=16,time=0.5", 10) == "alphabeta:depth=16,time=0.5"
    assert bounded_spec("random", 10) == "random"
    for spec, needle in (
        ("alphabeta:time=100", "limit of 10 s"),
        ("alphabeta:depth=99", "depth=99"),
        ("alphabeta:tt=28", "tt=28"),
        ("alphabeta:time=x", "not a number"),
        ("checkpoint:path=a.pt,sims=99999", "sims=99999"),
    ):
        with pytest.raises(PlayError, match=needle):
            bounded_spec(spec, 10)


def test_two_players_take_turns(client: Client) -> None:
    v = client.call("POST", "/api/games", {"mode": "two_players"}, status=201)
    assert v["human"] is None and v["turn"] == "human"
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    b = client.call("POST", f"/api/games/{v['id']}/move", {"move": "a7a6"})
    assert b["moves"] == ["a3a4", "a7a6"] and b["side_to_move"] == "red"
    assert "Blue's" in client.error("POST", f"/api/games/{v['id']}/move", {"move": "g7g6"})


def test_game_end_is_reported_and_further_moves_refused(client: Client) -> None:
    v = client.new(start=DEN_IN_ONE)
    end = client.call("POST", f"/api/games/{v['id']}/move", {"move": "c9d9"})
    assert end["result"] == "1-0" and end["termination"] == "den" and end["turn"] == "over"
    assert end["reason"] == "Red entered Blue's den" and end["winner"] == "red"
    assert "game is over" in client.error("POST", f"/api/games/{v['id']}/move", {"move": "d9c9"})
    assert "over" in client.error("POST", f"/api/games/{v['id']}/hint")
    back = client.call("POST", f"/api/games/{v['id']}/undo")
    assert back["undone"] == 1 and back["result"] == "*" and back["moves"] == []


# --- undo, hints, resign, settings ----------------------------------------------------------------
def test_undo_against_the_computer_takes_back_reply_and_move(client: Client) -> None:
    v = client.new()
    gid = v["id"]
    assert "no move" in client.error("POST", f"/api/games/{gid}/undo")
    client.call("POST", f"/api/games/{gid}/move", {"move": "a3a4"})
    first = client.settled(gid)
    client.call("POST", f"/api/games/{gid}/move", {"move": "g3g4"})
    assert len(client.settled(gid)["moves"]) == 4
    back = client.call("POST", f"/api/games/{gid}/undo")
    assert back["undone"] == 2 and back["moves"] == first["moves"] and back["jfen"] == first["jfen"]
    assert back["turn"] == "human"
    back = client.call("POST", f"/api/games/{gid}/undo")
    assert back["undone"] == 2 and back["moves"] == [] and back["can_undo"] is False


def test_undo_while_thinking_takes_back_one_ply_and_drops_the_stale_reply(client: Client, gate: Path) -> None:
    v = client.new(opponent=f"gated:gate={gate}")
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    assert client.call("GET", f"/api/games/{v['id']}")["thinking"] is True
    back = client.call("POST", f"/api/games/{v['id']}/undo")
    assert back["undone"] == 1 and back["moves"] == [] and back["turn"] == "human" and back["thinking"] is False
    gate.touch()
    done = client.settled(v["id"])
    assert done["moves"] == [] and done["jfen"] == Board().jfen()


def test_resign_while_the_computer_thinks(client: Client, gate: Path) -> None:
    v = client.new(opponent=f"gated:gate={gate}")
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    r = client.call("POST", f"/api/games/{v['id']}/resign")
    assert (r["result"], r["reason"], r["turn"], r["thinking"]) == ("0-1", "Red resigned", "over", False)
    gate.touch()
    assert client.settled(v["id"])["moves"] == ["a3a4"]  # the search in progress was dropped


def test_undo_with_two_players_takes_back_one_ply(client: Client) -> None:
    v = client.call("POST", "/api/games", {"mode": "two_players"}, status=201)
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "a7a6"})
    back = client.call("POST", f"/api/games/{v['id']}/undo")
    assert back["undone"] == 1 and back["moves"] == ["a3a4"] and back["side_to_move"] == "blue"


def test_three_hints_per_game(client: Client) -> None:
    v = client.new()
    gid = v["id"]
    for left in (2, 1, 0):
        h = client.call("POST", f"/api/games/{gid}/hint")
        assert h["hints_left"] == left and h["hint"] in h["legal"]
        again = client.call("POST", f"/api/games/{gid}/hint")
        assert again["hint"] == h["hint"] and again["hints_left"] == left  # the same position's hint is free
        client.call("POST", f"/api/games/{gid}/move", {"move": h["hint"]})
        client.settled(gid)
    before = client.call("GET", f"/api/games/{gid}")
    assert "no hints left" in client.error("POST", f"/api/games/{gid}/hint")
    assert snapshot(client.call("GET", f"/api/games/{gid}")) == snapshot(before)
    # Undo does not give hints back.
    assert client.call("POST", f"/api/games/{gid}/undo")["hints_left"] == 0


def test_resign_ends_the_game(client: Client) -> None:
    v = client.new(human="blue")
    client.settled(v["id"])
    r = client.call("POST", f"/api/games/{v['id']}/resign")
    assert r["result"] == "1-0" and r["termination"] == "resign" and r["reason"] == "Blue resigned"
    assert r["turn"] == "over" and r["can_undo"] is False
    assert "already over" in client.error("POST", f"/api/games/{v['id']}/resign")
    assert "resignation" in client.error("POST", f"/api/games/{v['id']}/undo")
    assert "over" in client.error("POST", f"/api/games/{v['id']}/move", {"move": "a7a6"})
    assert "unknown field" in client.error("POST", f"/api/games/{v['id']}/resign", {"really": True})


def test_settings_change_the_pace(client: Client) -> None:
    v = client.new()
    assert client.call("POST", f"/api/games/{v['id']}/settings", {"pace": "natural"})["pace"] == "natural"
    assert "pace" in client.error("POST", f"/api/games/{v['id']}/settings", {"pace": "slow"})
    assert "unknown field" in client.error("POST", f"/api/games/{v['id']}/settings", {"speed": 1})
    assert client.call("GET", f"/api/games/{v['id']}")["pace"] == "natural"


# --- saving and records --------------------------------------------------------------------------
def test_saved_game_continues_after_a_restart(tmp_path: Path, pool: ComputerWorkers) -> None:
    server = start_server(tmp_path, pool)
    c = Client(server)
    v = c.new(human="blue", seed=7)
    gid = v["id"]
    first = c.settled(gid)
    legal = first["legal"][0]
    c.call("POST", f"/api/games/{gid}/move", {"move": legal})
    c.settled(gid)
    c.call("POST", f"/api/games/{gid}/hint")
    before = c.settled(gid)
    stop_server(server)
    saved = json.loads((tmp_path / "last_game.json").read_text())
    assert saved["id"] == gid and saved["moves"] == before["moves"]

    server = start_server(tmp_path, pool)
    try:
        c = Client(server)
        assert c.call("GET", "/api/info")["last_game"]["id"] == gid
        again = c.call("GET", "/api/games/last")
        assert again["id"] == gid and again["moves"] == before["moves"] and again["jfen"] == before["jfen"]
        assert again["hints_left"] == 2 and again["human"] == "blue" and again["opponent"] == "random"
        nxt = again["legal"][0]
        assert len(c.call("POST", f"/api/games/{gid}/move", {"move": nxt})["moves"]) == len(before["moves"]) + 1
        assert len(c.settled(gid)["moves"]) == len(before["moves"]) + 2
    finally:
        stop_server(server)


def test_damaged_save_does_not_stop_the_server(tmp_path: Path, pool: ComputerWorkers) -> None:
    (tmp_path / "last_game.json").write_text('{"format": "jungle-zero-play-game", "moves": ["a3a9"]}')
    server = start_server(tmp_path, pool)
    try:
        c = Client(server)
        assert "could not be loaded" in c.error("GET", "/api/games/last", status=404)
        assert "could not be loaded" in c.call("GET", "/api/info")["load_error"]
        c.new()
    finally:
        stop_server(server)


def test_record_download_and_replay_round_trip(client: Client) -> None:
    v = client.new(start=DEN_IN_ONE)
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "c9d9"})
    done = client.settled(v["id"])
    assert done["reason"] == "Red entered Blue's den"
    code, raw, headers = client.raw("GET", f"/api/games/{v['id']}/record")
    assert code == 200 and "attachment" in headers["Content-Disposition"]
    text = raw.decode()
    rec = GameRecord.from_dict(json.loads(text))
    assert rec.moves == done["moves"] and rec.start == DEN_IN_ONE and rec.red == "human" and rec.blue == "random"
    assert rec.replay().jfen() == done["jfen"] and rec.result == done["result"]

    other = GameRecord(moves=["a3a4", "a7a6", "a4a5"], result="*", red="x", blue="y")
    two = text + "\n" + other.to_json() + "\n"
    r = client.call("POST", "/api/replay", {"jsonl": two, "index": 1})
    assert r["count"] == 2 and [g["moves"] for g in r["games"]] == [len(rec.moves), 3]
    assert len(r["frames"]) == 4 and r["frames"][-1]["jfen"] == other.replay().jfen()
    assert r["plies"][2]["move"] == "a4a5" and r["frames"][0]["trapped"] == []
    assert [p["notation"] for p in r["plies"]] == ["E a3a4", "R a7a6", "E a4a5"] and r["end"] is None
    r0 = client.call("POST", "/api/replay", {"jsonl": text})
    assert r0["index"] == 0 and r0["frames"][-1]["jfen"] == done["jfen"]
    assert r0["end"]["result"] == done["result"] and r0["end"]["reason"] == done["reason"]


def test_replay_names_the_end_and_refuses_moves_after_it() -> None:
    shuffle = ["a1a2", "g9g8", "a2a1", "g8g9"]
    drawn = GameRecord(moves=shuffle * 2, result="1/2-1/2", termination="repetition")
    shown = replay_frames(drawn)
    assert len(shown["frames"]) == 9 and shown["end"]["termination"] == "repetition"
    assert shown["end"]["reason"] == "the same position occurred for the third time"
    with pytest.raises(ValueError, match=r"move 9 \('a1a2'\) comes after the end of the game \(repetition at ply 8\)"):
        replay_frames(GameRecord(moves=shuffle * 3))
    resigned = replay_frames(GameRecord(moves=["a3a4"], result="1-0", termination="resign"))
    assert resigned["end"]["reason"] == "Blue resigned"
    with pytest.raises(ValueError, match=f"at most {MAX_REPLAY_PLIES}"):
        replay_frames(GameRecord(moves=["a1a2"] * (MAX_REPLAY_PLIES + 1)))


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"jsonl": ""}, "jsonl"),
        ({"jsonl": "{bad"}, "line 1"),
        ({"jsonl": json.dumps({"moves": ["a3a5"]})}, "does not replay"),
        ({"jsonl": json.dumps({"moves": [], "colour": 1})}, "unknown field"),
        ({"jsonl": json.dumps({"moves": []}), "index": 3}, "index"),
        ({"jsonl": json.dumps({"moves": []}), "index": "0"}, "index"),
        ({"jsonl": json.dumps({"moves": []}), "what": 1}, "unknown field"),
    ],
)
def test_replay_rejects_bad_records(client: Client, body: dict[str, Any], needle: str) -> None:
    assert needle in client.error("POST", "/api/replay", body)


# --- the game object directly ----------------------------------------------------------------
@pytest.mark.parametrize(
    "jfen, move, needle",
    [
        ("6e/7/7/7/7/7/7/1D5/7 r 0 1", "b2d2", "one square at a time"),
        ("6e/7/7/7/7/3P3/7/7/7 r 0 1", "d4c4", "only the Rat"),
        ("6e/7/7/7/7/Lr5/7/7/7 r 0 1", "a4d4", "rat in the river"),
        ("7/7/7/7/7/7/1Er4/7/7 r 0 1", "b3c3", "Elephant cannot capture the Rat"),
        ("7/7/7/7/7/7/1Ce4/7/7 r 0 1", "b3c3", "Cat (rank 2) cannot capture the Elephant (rank 8)"),
        ("7/7/7/7/7/1R5/1e5/7/7 r 0 1", "b4b3", "in the water and a piece on land"),
        ("6e/7/7/7/7/7/7/3E3/7 r 0 1", "d2d1", "own den"),
    ],
)
def test_reasons_for_refused_moves(jfen: str, move: str, needle: str) -> None:
    board = Board.from_jfen(jfen)
    m = Move.from_str(move)
    assert m not in board.legal_moves
    assert needle in board.why_illegal(m)
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        board.push(m)
    assert board.why_illegal(board.legal_moves.__iter__().__next__()) == ""


def test_rules_from_name_and_overrides() -> None:
    rules = resolve_rules("default", ["rank_order=dog_over_wolf", "no_capture_draw=200"])
    assert rules.rank_order == "dog_over_wolf" and rules.no_capture_draw == 200
    with pytest.raises(ValueError, match="nosuchrules"):
        resolve_rules("nosuchrules")
    with pytest.raises(ValueError, match="bogus"):
        resolve_rules("default", ["bogus=1"])
    assert resolve_rules(None) == RuleSet() and resolve_rules({"repetition": "off"}).repetition == "off"
    import envs.env

    assert envs.env.resolve_rules is resolve_rules  # one helper for the env and play.py


def test_saved_game_round_trip_refuses_tampering() -> None:
    g = PlayGame.new(opponent="random", seed=3)
    g.human_move("a3a4")
    assert g.apply_computer_move(choose_move(g.job("computer"), PlayerCache()), g.version)
    assert not g.apply_computer_move("a7a6", g.version - 1)  # a stale answer is dropped
    again = PlayGame.from_saved(g.to_saved())
    assert again.board.jfen() == g.board.jfen() and again.id == g.id and again.seed == 3
    bad = g.to_saved()
    bad["moves"] = ["a3a4", "a3a4"]
    with pytest.raises(ValueError, match="does not replay"):
        PlayGame.from_saved(bad)


@pytest.mark.parametrize(
    "start, rules, moves, result, termination, reason",
    [
        (DEN_IN_ONE, RuleSet(), ["c9d9"], "1-0", "den", "Red entered Blue's den"),
        ("7/7/7/7/7/7/1Tc4/7/7 r 0 1", RuleSet(), ["b3c3"], "1-0", "all_captured", "Red captured Blue's last piece"),
        ("cL5/T6/7/7/7/7/7/7/6E r 0 1", RuleSet(), ["g1g2"], "1-0", "no_moves", "Blue has no legal move"),
        (
            None,
            RuleSet(),
            ["a1a2", "g9g8", "a2a1", "g8g9"] * 2,
            "1/2-1/2",
            "repetition",
            "the same position occurred for the third time",
        ),
        (
            None,
            RuleSet(no_capture_draw=3),
            ["a1a2", "g9g8", "a2a1"],
            "1/2-1/2",
            "no_capture_limit",
            "3 plies passed without a capture",
        ),
    ],
)
def test_every_ending_is_named(
    start: Optional[str], rules: RuleSet, moves: list[str], result: str, termination: str, reason: str
) -> None:
    g = PlayGame.new(mode="two_players", start=start, rules=rules)
    for m in moves:
        assert g.view()["turn"] == "human"
        g.human_move(m)
    v = g.view()
    assert (v["result"], v["termination"], v["reason"], v["turn"]) == (result, termination, reason, "over")
    assert g.record().termination == termination and g.record().result == result


def test_the_view_shows_captures_notation_and_trapped_pieces() -> None:
    # Red's Tiger takes the Cat; Blue's Rat stands in Red's trap d2 (rank 0 there).
    g = PlayGame.new(mode="two_players", start="6l/7/7/7/7/7/1Tc4/3r3/7 r 0 1")
    g.human_move("b3c3")
    v = g.view()
    assert v["plies"][0]["notation"] == "T b3xc3" and v["last"]["captured"] == "c"
    assert v["captured"] == {"red": [], "blue": ["c"]}
    assert v["trapped"] == [10]  # d2


def test_live_games_are_bounded_and_the_saved_one_kept(client: Client) -> None:
    first = client.new()
    client.call("POST", f"/api/games/{first['id']}/move", {"move": "a3a4"})
    ids = [client.new()["id"] for _ in range(MAX_LIVE_GAMES + 4)]
    store = client.server.store
    assert len(store.games) == MAX_LIVE_GAMES and store.last_id == ids[-1]
    assert set(store.games) == set(ids[-MAX_LIVE_GAMES:])
    assert "no game with id" in client.error("GET", f"/api/games/{first['id']}", status=404)
    assert client.call("GET", "/api/games/last")["id"] == ids[-1]


@pytest.mark.slow  # starts its own worker process twice
def test_a_cancelled_search_frees_its_only_worker(tmp_path: Path) -> None:
    """An undo stops the search in progress: with one worker, the next job runs only if that one was killed."""
    with ComputerWorkers(workers=1, init=register_test_players) as one:
        stuck = PlayGame.new(opponent=f"gated:gate={tmp_path / 'never'},wait=600").job("computer")
        cancel = threading.Event()
        outcome: list[str] = []

        def run(job: Any, **kw: Any) -> None:
            try:
                outcome.append(one.run("move", job, time_limit=600, **kw))
            except Cancelled:
                outcome.append("cancelled")

        first = threading.Thread(target=run, args=(stuck,), kwargs={"cancel": cancel})
        first.start()
        time.sleep(1.0)  # let it reach the search (an earlier cancel is also a pass, just a weaker one)
        cancel.set()
        first.join(30)
        second = threading.Thread(target=run, args=(PlayGame.new(opponent="random").job("computer"),))
        second.start()
        second.join(120)
        assert outcome[0] == "cancelled" and outcome[1] in Board().legal_moves, outcome


def test_a_worker_that_dies_in_a_search_is_named_with_its_pid_and_signal(pool: ComputerWorkers) -> None:
    """A worker killed mid-search (say, by the out-of-memory killer) is named, and a fresh one takes its place."""
    dying = replace(PlayGame.new(opponent="random").job("computer"), spec="dying")
    with pytest.raises(ComputerError, match=r"^the computer's worker process \(pid \d+\) died: killed by SIGKILL$"):
        pool.run("move", dying, time_limit=60)
    assert pool.run("move", PlayGame.new(opponent="random").job("computer"), time_limit=60) in Board().legal_moves


def test_every_named_level_is_offered_from_a_checkout() -> None:
    # A level naming a checkpoint is hidden while its file is missing: the shipped ones must be there.
    assert [lv.name for lv in play_levels.available_levels()] == [lv.name for lv in play_levels.LEVELS]
    assert any(lv.spec.startswith("checkpoint:") for lv in play_levels.LEVELS)


# --- the computer warms up before any move's clock starts ----------------------------------------
def _slow_start_job(key: str, first: float = 4.0) -> ThinkJob:
    return PlayGame.new(opponent=f"slowstart:first={first:g}", game_id=key).job("computer")


@pytest.mark.slow  # starts its own worker processes
def test_workers_warm_up_before_any_move_clock_starts(tmp_path: Path) -> None:
    """A first move that compiles for 4 s fits a 1 s limit once the warm-up paid for it, in every worker."""
    bad = replace(_slow_start_job("bad"), spec="nosuchkind")
    with ComputerWorkers(workers=2, init=register_test_players, warm_up=[_slow_start_job("warm-up"), bad]) as pool:
        pool.start()
        assert pool.preparing  # until a worker is warm, a job would wait for the warm-up
        report = pool.wait_warm(timeout=300)
        assert report is not None and not pool.preparing
        seconds, failures = report
        assert seconds >= 8.0  # the two workers one after the other, each paying the 4 s once
        assert len(failures) == 1 and failures[0].startswith("nosuchkind: unknown player kind")
        moves: list[str] = []

        def two_at_once(keys: tuple[str, str]) -> None:  # one game in each worker
            both = [
                threading.Thread(target=lambda k=k: moves.append(pool.run("move", _slow_start_job(k), time_limit=1.0)))
                for k in keys
            ]
            for t in both:
                t.start()
            for t in both:
                t.join(300)

        two_at_once(("one", "two"))
        assert len(moves) == 2 and all(m in Board().legal_moves for m in moves)
        # A worker started after a kill warms up too: the runaway below is stopped, its place warmed up again.
        stuck = PlayGame.new(opponent=f"gated:gate={tmp_path / 'never'}").job("computer")
        with pytest.raises(ComputerError, match="limit of 0.3 s"):
            pool.run("move", stuck, time_limit=0.3)
        two_at_once(("three", "four"))
        assert len(moves) == 4 and all(m in Board().legal_moves for m in moves)


@pytest.mark.slow  # starts its own worker process
def test_the_page_says_preparing_while_the_computer_warms_up(tmp_path: Path) -> None:
    with ComputerWorkers(workers=1, init=register_test_players, warm_up=[_slow_start_job("warm-up", 6.0)]) as own:
        own.start()
        server = start_server(tmp_path, own, move_seconds=0.5)
        try:
            c = Client(server)
            assert c.call("GET", "/api/info")["preparing"] is True
            v = c.new(opponent="slowstart:first=6", human="blue")  # waits for the warm worker, off any clock
            done = c.settled(v["id"])
            assert len(done["moves"]) == 1 and done["computer_error"] is None
            assert done["preparing"] is False and c.call("GET", "/api/info")["preparing"] is False
        finally:
            stop_server(server)


# --- connections ------------------------------------------------------------------------------
def _open_silent_connections(port: int, count: int) -> list[socket.socket]:
    """`count` connections to the server on 127.0.0.1 that never send a byte."""
    return [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(count)]


@pytest.mark.slow
def test_the_page_answers_while_many_idle_connections_are_open(client: Client) -> None:
    """Silent connections wait apart from the 32 served at once; past their own cap the oldest is closed."""
    port = client.server.server_address[1]
    page = urllib.request.Request(client.base + "/")
    idle = _open_silent_connections(port, 200)
    try:
        # Answered before any idle connection could time out (SOCKET_TIMEOUT): they hold no serving place.
        with urllib.request.urlopen(page, timeout=SOCKET_TIMEOUT / 2) as resp:
            assert resp.status == 200 and b'id="board"' in resp.read()
        assert client.server.live_connections <= client.server.max_connections
        client.server.max_idle_connections = 8
        idle += _open_silent_connections(port, 20)
        with urllib.request.urlopen(page, timeout=SOCKET_TIMEOUT / 2) as resp:
            assert resp.status == 200
        deadline = time.monotonic() + 30
        while client.server.idle_connections > 8:
            assert time.monotonic() < deadline, "the oldest idle connections were never closed"
            time.sleep(0.01)
        idle[0].settimeout(30)
        assert idle[0].recv(1) == b""  # the oldest was closed to make room
    finally:
        for s in idle:
            s.close()

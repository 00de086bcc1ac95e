"""The play page's JSON API, in-process on a free port: every endpoint, bad input, undo and saving."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from envs.players import RandomPlayer, register_player
from agents.play.game import PlayGame, explain_illegal
from agents.play.server import PlayServer, make_server, resolve_rules
from agents.arena.records import GameRecord
from envs import Board, Move, RuleSet

DEN_IN_ONE = "2R4/7/6e/7/7/7/7/7/7 r 0 1"  # Red's Rat on c9 steps into Blue's den d9


class GatedPlayer:
    """A random player that waits until the test opens its gate: the computer 'thinks' for as long as needed."""

    gate = threading.Event()

    def __init__(self, seed: Optional[int] = None) -> None:
        self.name = "gated"
        self.inner = RandomPlayer(seed=seed)

    def select_move(self, board: Board) -> Move:
        assert self.gate.wait(20), "test gate never opened"
        return self.inner.select_move(board)

    def reset(self) -> None:
        pass


register_player("gated", lambda rules=None, seed=None: GatedPlayer(seed))


class Client:
    def __init__(self, server: PlayServer) -> None:
        self.server = server
        self.base = server.url.rstrip("/")

    def raw(self, method: str, path: str, data: Optional[bytes] = None) -> tuple[int, bytes, Any]:
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=180) as resp:
                return resp.status, resp.read(), resp.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read(), e.headers

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        data = None if body is None else json.dumps(body).encode()
        if method == "POST" and data is None:
            data = b""
        code, raw, _ = self.raw(method, path, data)
        out = json.loads(raw)
        assert code == status, (code, out)
        return out

    def error(self, method: str, path: str, body: Any = None, status: int = 400) -> str:
        out = self.call(method, path, body, status=status)
        assert set(out) == {"error"} and out["error"], out
        return str(out["error"])

    def new(self, **body: Any) -> dict[str, Any]:
        body.setdefault("opponent", "random")
        body.setdefault("pace", "instant")
        return self.call("POST", "/api/games", body, status=201)

    def settled(self, game_id: str) -> dict[str, Any]:
        self.server.store.wait_idle(game_id, timeout=180)  # a cold numba cache compiles on first use
        return self.call("GET", f"/api/games/{game_id}")


def start_server(state_dir: Optional[Path]) -> PlayServer:
    server = make_server(port=0, state_dir=state_dir, default_opponent="random", default_pace="instant")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop_server(server: PlayServer) -> None:
    server.shutdown()
    server.server_close()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    GatedPlayer.gate.set()
    server = start_server(tmp_path)
    yield Client(server)
    GatedPlayer.gate.set()
    stop_server(server)


def snapshot(view: dict[str, Any]) -> tuple[Any, ...]:
    return view["version"], view["jfen"], tuple(view["moves"]), view["hints_left"], view["result"]


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
    assert info["levels"] == ["beginner", "normal", "expert"]
    assert info["paces"] == ["instant", "quick", "natural"] and info["hints_per_game"] == 3
    assert info["ranks"][1:] == [1, 2, 3, 4, 5, 6, 7, 8] and info["last_game"] is None


def test_unknown_endpoints_and_methods(client: Client) -> None:
    assert "no API endpoint" in client.error("GET", "/api/nothing", status=404)
    assert "no API endpoint" in client.error("POST", "/api/games/x/fly", status=404)
    assert client.raw("POST", "/index.html", b"")[0] == 405


# --- creating games ---------------------------------------------------------------------------
def test_new_game_view(client: Client) -> None:
    v = client.new()
    assert v["mode"] == "computer" and v["human"] == "red" and v["turn"] == "human"
    assert v["jfen"] == Board().jfen() and v["moves"] == [] and v["result"] == "*"
    assert sorted(v["legal"]) == sorted(str(m) for m in Board().legal_moves)
    assert len(v["board"]) == 63 and v["board"][0] == "T" and v["board"][62] == "t"
    assert v["hints_left"] == 3 and v["can_undo"] is False and v["last"] is None


@pytest.mark.parametrize("body, needle", [
    ({"mode": "solo"}, "mode"),
    ({"pace": "fast"}, "pace"),
    ({"human": "green"}, "side"),
    ({"opponent": "nosuchkind"}, "unknown player kind"),
    ({"opponent": "random:depth=3"}, "random"),
    ({"opponent": "alphabeta:depth"}, "key=value"),
    ({"start": "not a jfen"}, "JFEN"),
    ({"seed": "x"}, "seed"),
    ({"colour": "red"}, "unknown field"),
])
def test_new_game_rejects_bad_fields(client: Client, body: dict[str, Any], needle: str) -> None:
    body.setdefault("opponent", "random")
    assert needle in client.error("POST", "/api/games", body)
    assert client.call("GET", "/api/info")["last_game"] is None


@pytest.mark.parametrize("raw, needle", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "JSON object"),
    (b"\xff\xfe", "not valid JSON"),
])
def test_malformed_json_is_refused_and_game_unchanged(client: Client, raw: bytes, needle: str) -> None:
    v = client.new()
    for path in ("/api/games", f"/api/games/{v['id']}/move", f"/api/games/{v['id']}/undo", "/api/replay"):
        code, body, _ = client.raw("POST", path, raw)
        assert code == 400 and needle in json.loads(body)["error"], (path, body)
    assert snapshot(client.call("GET", f"/api/games/{v['id']}")) == snapshot(v)


def test_posts_must_be_json_for_this_host(client: Client) -> None:
    req = urllib.request.Request(client.base + "/api/games", data=b'{"opponent": "random"}', method="POST")
    req.add_header("Content-Type", "text/plain")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 400 and "application/json" in json.loads(e.value.read())["error"]
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
    for method, path in (("GET", "/api/games/nope"), ("POST", "/api/games/nope/move"),
                         ("POST", "/api/games/nope/undo"), ("POST", "/api/games/nope/hint"),
                         ("POST", "/api/games/nope/resign"), ("POST", "/api/games/nope/settings"),
                         ("GET", "/api/games/nope/record")):
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


@pytest.mark.parametrize("body, needle", [
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
])
def test_illegal_or_malformed_moves_leave_the_game_unchanged(client: Client, body: dict[str, Any],
                                                               needle: str) -> None:
    v = client.new()
    assert needle in client.error("POST", f"/api/games/{v['id']}/move", body)
    assert snapshot(client.call("GET", f"/api/games/{v['id']}")) == snapshot(v)


def test_out_of_turn_while_the_computer_thinks(client: Client) -> None:
    GatedPlayer.gate.clear()
    v = client.new(opponent="gated")
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    thinking = client.call("GET", f"/api/games/{v['id']}")
    assert thinking["turn"] == "computer" and thinking["thinking"] is True and thinking["legal"] == []
    assert "computer's turn" in client.error("POST", f"/api/games/{v['id']}/move", {"move": "g3g4"})
    assert "computer's turn" in client.error("POST", f"/api/games/{v['id']}/hint")
    assert snapshot(client.call("GET", f"/api/games/{v['id']}")) == snapshot(thinking)
    GatedPlayer.gate.set()
    assert len(client.settled(v["id"])["moves"]) == 2


def test_computer_moves_first_when_the_person_plays_blue(client: Client) -> None:
    v = client.new(human="blue")
    done = client.settled(v["id"])
    assert done["human"] == "blue" and len(done["moves"]) == 1 and done["turn"] == "human"
    assert done["side_to_move"] == "blue" and done["legal"]
    assert "no move of yours" in client.error("POST", f"/api/games/{v['id']}/undo")


def test_checkpoint_opponent(client: Client, tmp_path: Path) -> None:
    from agents.alphazero.checkpoint import save_checkpoint
    from agents.alphazero.network import NetworkConfig, build_network

    tiny = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
    path = save_checkpoint(tmp_path / "run" / "latest.pt", {"model": build_network(tiny).state_dict(),
                                                            "network": tiny.to_dict(),
                                                            "rules": RuleSet().to_dict(), "config": ""})
    assert "no checkpoint at" in client.error("POST", "/api/games", {"opponent": str(tmp_path / "missing.pt")})
    v = client.new(opponent=f"checkpoint:path={path},sims=4", human="blue")
    done = client.settled(v["id"])
    assert len(done["moves"]) == 1 and done["turn"] == "human" and done["computer_error"] is None
    v = client.new(opponent=str(tmp_path / "run"))
    assert v["opponent"] == f"checkpoint:path={tmp_path / 'run'}"


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


def test_undo_while_thinking_takes_back_one_ply_and_drops_the_stale_reply(client: Client) -> None:
    GatedPlayer.gate.clear()
    v = client.new(opponent="gated")
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    back = client.call("POST", f"/api/games/{v['id']}/undo")
    assert back["undone"] == 1 and back["moves"] == [] and back["turn"] == "human"
    GatedPlayer.gate.set()
    done = client.settled(v["id"])
    assert done["moves"] == [] and done["jfen"] == Board().jfen()


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
def test_saved_game_continues_after_a_restart(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    c = Client(server)
    v = c.new(human="blue", seed=7)
    gid = v["id"]
    first = c.settled(gid)
    legal = first["legal"][0]
    c.call("POST", f"/api/games/{gid}/move", {"move": legal})
    c.call("POST", f"/api/games/{gid}/hint")
    before = c.settled(gid)
    stop_server(server)
    saved = json.loads((tmp_path / "last_game.json").read_text())
    assert saved["id"] == gid and saved["moves"] == before["moves"]

    server = start_server(tmp_path)
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


def test_damaged_save_does_not_stop_the_server(tmp_path: Path) -> None:
    (tmp_path / "last_game.json").write_text('{"format": "jungle-zero-play-game", "moves": ["a3a9"]}')
    server = start_server(tmp_path)
    try:
        c = Client(server)
        assert "could not be loaded" in c.error("GET", "/api/games/last", status=404)
        assert "could not be loaded" in c.call("GET", "/api/info")["load_error"]
        c.new()
    finally:
        stop_server(server)


def test_record_download_and_replay_round_trip(client: Client) -> None:
    v = client.new(start=DEN_IN_ONE)
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "c9c8"})
    done = client.settled(v["id"])
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
    assert r["frames"][0]["last"] is None and r["frames"][3]["last"]["move"] == "a4a5"
    r0 = client.call("POST", "/api/replay", {"jsonl": text})
    assert r0["index"] == 0 and r0["frames"][-1]["jfen"] == done["jfen"]


@pytest.mark.parametrize("body, needle", [
    ({"jsonl": ""}, "jsonl"),
    ({"jsonl": "{bad"}, "line 1"),
    ({"jsonl": json.dumps({"moves": ["a3a5"]})}, "does not replay"),
    ({"jsonl": json.dumps({"moves": [], "colour": 1})}, "unknown field"),
    ({"jsonl": json.dumps({"moves": []}), "index": 3}, "index"),
    ({"jsonl": json.dumps({"moves": []}), "index": "0"}, "index"),
    ({"jsonl": json.dumps({"moves": []}), "what": 1}, "unknown field"),
])
def test_replay_rejects_bad_records(client: Client, body: dict[str, Any], needle: str) -> None:
    assert needle in client.error("POST", "/api/replay", body)


# --- the game object directly ----------------------------------------------------------------
@pytest.mark.parametrize("jfen, move, needle", [
    ("6e/7/7/7/7/7/7/1D5/7 r 0 1", "b2d2", "one square at a time"),
    ("6e/7/7/7/7/3P3/7/7/7 r 0 1", "d4c4", "only the Rat"),
    ("6e/7/7/7/7/Lr5/7/7/7 r 0 1", "a4d4", "rat in the river"),
    ("7/7/7/7/7/7/1Er4/7/7 r 0 1", "b3c3", "Elephant cannot capture the Rat"),
    ("7/7/7/7/7/7/1Ce4/7/7 r 0 1", "b3c3", "Cat (rank 2) cannot capture the Elephant (rank 8)"),
    ("7/7/7/7/7/1R5/1e5/7/7 r 0 1", "b4b3", "in the water and a piece on land"),
    ("6e/7/7/7/7/7/7/3E3/7 r 0 1", "d2d1", "own den"),
])
def test_reasons_for_refused_moves(jfen: str, move: str, needle: str) -> None:
    board = Board.from_jfen(jfen)
    m = Move.from_str(move)
    assert m not in board.legal_moves
    assert needle in explain_illegal(board, m)


def test_rules_from_name_and_overrides() -> None:
    rules = resolve_rules("default", ["rank_order=dog_over_wolf", "no_capture_draw=200"])
    assert rules.rank_order == "dog_over_wolf" and rules.no_capture_draw == 200
    with pytest.raises(ValueError, match="nosuchrules"):
        resolve_rules("nosuchrules")
    with pytest.raises(ValueError, match="bogus"):
        resolve_rules("default", ["bogus=1"])


def test_saved_game_round_trip_refuses_tampering() -> None:
    g = PlayGame.new(opponent="random", seed=3)
    g.human_move("a3a4")
    g.apply_computer_move(g.computer_think(), g.version)
    again = PlayGame.from_saved(g.to_saved())
    assert again.board.jfen() == g.board.jfen() and again.id == g.id and again.seed == 3
    bad = g.to_saved()
    bad["moves"] = ["a3a4", "a3a4"]
    with pytest.raises(ValueError, match="does not replay"):
        PlayGame.from_saved(bad)


@pytest.mark.parametrize("start, rules, moves, result, termination, reason", [
    (DEN_IN_ONE, RuleSet(), ["c9d9"], "1-0", "den", "Red entered Blue's den"),
    ("7/7/7/7/7/7/1Tc4/7/7 r 0 1", RuleSet(), ["b3c3"], "1-0", "all_captured", "Red captured Blue's last piece"),
    ("cL5/T6/7/7/7/7/7/7/6E r 0 1", RuleSet(), ["g1g2"], "1-0", "no_moves", "Blue has no legal move"),
    (None, RuleSet(), ["a1a2", "g9g8", "a2a1", "g8g9"] * 2, "1/2-1/2", "repetition",
     "the same position occurred for the third time"),
    (None, RuleSet(no_capture_draw=3), ["a1a2", "g9g8", "a2a1"], "1/2-1/2", "no_capture_limit",
     "3 plies passed without a capture"),
])
def test_every_ending_is_named(start: Optional[str], rules: RuleSet, moves: list[str], result: str,
                               termination: str, reason: str) -> None:
    g = PlayGame.new(mode="two_players", start=start, rules=rules)
    for m in moves:
        assert g.view()["turn"] == "human"
        g.human_move(m)
    v = g.view()
    assert (v["result"], v["termination"], v["reason"], v["turn"]) == (result, termination, reason, "over")
    assert g.record().termination == termination and g.record().result == result

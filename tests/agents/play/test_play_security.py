"""The play server probed as a hostile page would: cross-site requests, slow opponents, big uploads, bad connections.

Real HTTP against an in-process server, and a real Chromium for the
cross-origin cases: a page served from another origin posts forms and
no-cors fetches at the play server, and tries to frame it; nothing changes.
"""

from __future__ import annotations

import errno
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from agents.arena.records import GameRecord
from agents.play import server as server_module
from agents.play.computer import ComputerWorkers
from agents.play.errors import PlayError
from agents.play.game import PlayGame
from agents.play.server import MAX_BODY, MAX_RECORDS, TOKEN_HEADER, PlayHandler, PlayServer, replay
from tests.support import ROOT
from tests.support.play_helpers import Client, start_server, stop_server


def request(
    server: PlayServer,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    timeout: float = 60,
) -> tuple[int, dict[str, Any], http.client.HTTPMessage]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        raw = resp.read()
        return (
            resp.status,
            (json.loads(raw) if raw and resp.headers.get_content_type() == "application/json" else {}),
            resp.headers,
        )
    finally:
        conn.close()


def game_with_moves(client: Client) -> dict[str, Any]:
    """A saved game against `random` with two plies played (so undo and resign would show)."""
    v = client.new()
    client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    return client.settled(v["id"])


def unchanged(client: Client, before: dict[str, Any], state_dir: Path) -> None:
    after = client.call("GET", "/api/games/last")
    assert (after["id"], after["moves"], after["result"]) == (before["id"], before["moves"], "*")
    saved = json.loads((state_dir / "last_game.json").read_text())
    assert saved["id"] == before["id"] and saved["moves"] == before["moves"] and saved["resigned"] is None


# --- 1. cross-site request forgery ----------------------------------------------------------------
EVIL = "http://evil.example"


@pytest.mark.slow
@pytest.mark.parametrize(
    "headers, status",
    [
        ({"Origin": EVIL}, 403),  # curl -X POST -H 'Origin: http://evil.example' with an empty body
        ({"Content-Type": "text/plain"}, 403),  # a no-cors fetch: a simple request, no token
        ({"Content-Type": "application/x-www-form-urlencoded"}, 403),  # an auto-submitted form
        ({"Content-Type": "application/json"}, 403),  # JSON without the page's token
        ({"Content-Type": "application/json", TOKEN_HEADER: "guessed"}, 403),
        ({"Content-Type": "application/json", "token": "right", "Origin": EVIL}, 403),
        ({"Content-Type": "application/json", "token": "right", "Origin": "null"}, 403),
        ({"Content-Type": "application/json", "token": "right", "Sec-Fetch-Site": "cross-site"}, 403),
        ({"Content-Type": "application/json", "token": "right", "Sec-Fetch-Site": "same-site"}, 403),
        ({"Content-Type": "text/plain", "token": "right"}, 415),
        ({"token": "right"}, 415),  # no content type at all, even with an empty body
    ],
)
def test_a_post_not_from_the_page_changes_nothing(
    client: Client, tmp_path: Path, headers: dict[str, str], status: int
) -> None:
    before = game_with_moves(client)
    gid = before["id"]
    if headers.pop("token", None):
        headers[TOKEN_HEADER] = client.server.token
    for path, body in (
        ("/api/games", b""),
        ("/api/games", b'{"mode": "two_players"}'),
        (f"/api/games/{gid}/undo", b""),
        (f"/api/games/{gid}/resign", b""),
        (f"/api/games/{gid}/move", b'{"move": "g3g4"}'),
        (f"/api/games/{gid}/settings", b'{"pace": "natural"}'),
    ):
        code, out, _ = request(client.server, "POST", path, body, headers)
        assert code == status and out["error"], (path, code, out)
    unchanged(client, before, tmp_path)
    assert client.call("GET", f"/api/games/{gid}")["pace"] == "instant"
    # The same request from the page itself is applied: the refusals above were the checks at work.
    page = {
        "Content-Type": "application/json",
        TOKEN_HEADER: client.server.token,
        "Origin": client.server.url.rstrip("/"),
        "Sec-Fetch-Site": "same-origin",
    }
    code, out, _ = request(client.server, "POST", f"/api/games/{gid}/undo", b"", page)
    assert code == 200 and out["undone"] == 2


def test_every_answer_forbids_framing_and_the_page_carries_its_token(client: Client) -> None:
    for method, path in (
        ("GET", "/"),
        ("GET", "/app.js"),
        ("GET", "/api/info"),
        ("GET", "/nothing"),
        ("PUT", "/api/games"),
        ("POST", "/api/games"),
    ):
        code, _, headers = request(client.server, method, path)
        assert headers["X-Frame-Options"] == "DENY", (method, path, code)
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
    code, _, _ = request(client.server, "GET", "/")
    page = client.raw("GET", "/")[1].decode()
    assert f'<meta name="jungle-token" content="{client.server.token}">' in page
    assert "__JUNGLE_TOKEN__" not in page and len(client.server.token) >= 24


# --- 2. a slow opponent never freezes the server -------------------------------------------------
@pytest.mark.slow
def test_a_deep_search_neither_stalls_requests_nor_a_restart(tmp_path: Path, pool: ComputerWorkers) -> None:
    server = start_server(tmp_path, pool, move_seconds=1.0)
    c = Client(server)
    v = c.new(opponent="alphabeta:depth=16")
    assert v["opponent"] == "alphabeta:depth=16" and v["seconds"] == 1.0
    c.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    # Answered while the computer searches (a search in the server would hold every request until it ends).
    assert c.call("GET", f"/api/games/{v['id']}")["thinking"] is True
    assert c.call("GET", "/api/info")["last_game"]["id"] == v["id"]
    done = c.settled(v["id"])  # the search stops at the time per move and plays its best move so far
    assert len(done["moves"]) == 2 and done["computer_error"] is None
    c.call("POST", f"/api/games/{v['id']}/move", {"move": done["legal"][0]})
    stop_server(server)  # the computer was to move: the saved game restarts its search

    server = start_server(tmp_path, pool, move_seconds=1.0)
    try:
        c = Client(server)
        again = c.call("GET", "/api/games/last")
        assert again["id"] == v["id"] and again["thinking"] is True  # the server answers while it searches
        assert len(c.settled(v["id"])["moves"]) == 4
    finally:
        stop_server(server)


@pytest.mark.slow
def test_a_runaway_player_is_stopped_at_its_time(tmp_path: Path, pool: ComputerWorkers) -> None:
    server = start_server(tmp_path, pool, move_seconds=0.5)
    try:
        c = Client(server)
        v = c.new(opponent=f"gated:gate={tmp_path / 'never'}")
        c.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
        stuck = c.settled(v["id"])
        assert "limit of 3.5 s for a move and was stopped" in stuck["computer_error"]  # 0.5 s and the grace
        assert stuck["turn"] == "computer"
        back = c.call("POST", f"/api/games/{v['id']}/undo")
        assert back["moves"] == [] and back["computer_error"] is None
    finally:
        stop_server(server)


def test_spec_limits_are_bounded(client: Client) -> None:
    assert "limit of 10 s" in client.error("POST", "/api/games", {"opponent": "alphabeta:time=600"})
    assert "outside the page's limits" in client.error("POST", "/api/games", {"opponent": "alphabeta:tt=28"})
    assert "outside the page's limits" in client.error("POST", "/api/games", {"opponent": "alphabeta:depth=60"})
    assert "too long" in client.error("POST", "/api/games", {"opponent": "alphabeta:" + "depth=3," * 100})


# --- 3. uploads are bounded ----------------------------------------------------------------------
@pytest.mark.slow
def test_a_record_going_on_after_its_end_is_refused_quickly(client: Client) -> None:
    shuffle = ["a1a2", "g9g8", "a2a1", "g8g9"]
    huge = GameRecord(moves=shuffle * 60_000).to_json()  # about 2 MB: a repetition draw, then on and on
    assert 1_500_000 < len(huge) < MAX_BODY
    code, out, _ = request(
        client.server,
        "POST",
        "/api/replay",
        json.dumps({"jsonl": huge}).encode(),
        {"Content-Type": "application/json", TOKEN_HEADER: client.server.token},
    )
    assert code == 400 and "at most 4000" in out["error"]
    longish = GameRecord(moves=shuffle * 5).to_json()
    assert "comes after the end of the game (repetition at ply 8)" in client.error(
        "POST", "/api/replay", {"jsonl": longish}
    )
    many = "{}\n" * (MAX_RECORDS + 1)
    assert f"more than {MAX_RECORDS} games" in client.error("POST", "/api/replay", {"jsonl": many})


def test_an_oversized_or_chunked_body_is_refused_unread(client: Client) -> None:
    headers = {"Content-Type": "application/json", TOKEN_HEADER: client.server.token}
    conn = http.client.HTTPConnection("127.0.0.1", client.server.server_address[1], timeout=10)
    try:
        conn.putrequest("POST", "/api/replay")
        for k, v in {**headers, "Content-Length": str(MAX_BODY + 1)}.items():
            conn.putheader(k, v)
        conn.endheaders()  # no body follows: the answer must not wait for it
        resp = conn.getresponse()
        assert resp.status == 413 and "too large" in json.loads(resp.read())["error"]
    finally:
        conn.close()
    code, out, _ = request(client.server, "POST", "/api/games", b"", {**headers, "Transfer-Encoding": "chunked"})
    assert code == 411 and "chunked" in out["error"]
    code, out, _ = request(client.server, "POST", "/api/games", b"{}", {**headers, "Content-Length": "2, 5"})
    assert code == 400
    assert client.call("GET", "/api/info")["last_game"] is None  # no game was created by any of them


# --- 5. connections and odd requests -------------------------------------------------------------
@pytest.mark.parametrize("method", ["PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "BREW"])
def test_other_methods_get_a_json_405(client: Client, method: str) -> None:
    code, out, headers = request(client.server, method, "/api/games")
    assert code == 405 and out["error"] and headers["Allow"] == "GET, HEAD, POST"


@pytest.mark.parametrize(
    "body, needle",
    [
        ({"pace": ["quick"]}, "pace"),
        ({"pace": {"a": 1}}, "pace"),
        ({"mode": ["computer"]}, "mode"),
        ({"human": {"side": "red"}}, "side"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"start": ["x"]}, "JFEN"),
        ({"opponent": ["random"]}, "opponent"),
    ],
)
def test_odd_values_are_a_400(client: Client, body: dict[str, Any], needle: str) -> None:
    assert needle in client.error("POST", "/api/games", body)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"seed": ' + b"7" * 4301 + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    ],
)
def test_huge_numbers_and_deep_nesting_are_a_400(client: Client, raw: bytes) -> None:
    code, out, _ = request(
        client.server,
        "POST",
        "/api/games",
        raw,
        {"Content-Type": "application/json", TOKEN_HEADER: client.server.token},
    )
    assert code == 400 and "not valid JSON" in out["error"]
    nested = json.dumps({"jsonl": "[" * 50_000 + "]" * 50_000})
    code, out, _ = request(
        client.server,
        "POST",
        "/api/replay",
        nested.encode(),
        {"Content-Type": "application/json", TOKEN_HEADER: client.server.token},
    )
    assert code == 400 and out["error"]


def test_a_body_on_a_get_does_not_become_the_next_request(client: Client) -> None:
    with socket.create_connection(("127.0.0.1", client.server.server_address[1]), timeout=30) as s:
        s.sendall(
            b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 33\r\n\r\nPOST /api/games HTTP/1.1\r\n\r\n{}"
        )
        answer = b""
        while chunk := s.recv(65536):  # one answer, then the server closes the connection
            answer += chunk
    assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 200")
    assert client.call("GET", "/api/info")["last_game"] is None


@pytest.mark.slow
def test_a_stalled_client_is_dropped_and_others_are_served(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PlayHandler, "timeout", 1.0)
    port = client.server.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(
            b"POST /api/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"{TOKEN_HEADER}: {client.server.token}\r\nContent-Length: 1000\r\n\r\n".encode()
            + b'{"jsonl"'
        )
        assert client.call("GET", "/api/info")["rules_name"] == "default"  # served meanwhile
        while s.recv(65536):  # the server gives up on the missing 992 bytes and closes the connection
            pass


@pytest.mark.slow
def test_a_burst_of_connections_is_served(client: Client) -> None:
    results: list[Any] = []

    def one() -> None:
        try:
            results.append(request(client.server, "GET", "/api/info", timeout=120)[0])
        except OSError as e:
            results.append(repr(e))

    threads = [threading.Thread(target=one) for _ in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 200


@pytest.mark.slow
def test_a_bad_port_is_a_message_not_a_traceback() -> None:
    p = subprocess.run(
        [sys.executable, str(ROOT / "play.py"), "--port", "99999", "--no-browser"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert p.returncode == 2 and "port 99999 is not in 0..65535" in p.stderr and "Traceback" not in p.stderr


# --- 6. one consistent state: no 500, nothing lost silently -----------------------------------------
def test_an_overlong_name_is_a_404_and_an_overlong_opponent_a_400(client: Client) -> None:
    for path in ("/" + "a" * 300, "/" + "a" * 5000, "/" + "/".join(["b" * 200] * 30)):  # ENAMETOOLONG
        code, out, _ = request(client.server, "GET", path)
        assert code == 404 and out["error"].startswith("no page"), (len(path), code, out)
    # A name the file system refuses is not an existing checkpoint: the spec is taken as written.
    assert "is not a level" in client.error("POST", "/api/games", {"opponent": "x" * 300})
    assert client.call("GET", "/api/info")["last_game"] is None


def test_an_infinite_rule_number_in_a_record_is_a_400(client: Client) -> None:
    line = GameRecord(moves=["a3a4"]).to_json().replace('"no_capture_draw": 120', '"no_capture_draw": 1e400')
    assert "1e400" in line
    code, out, _ = request(
        client.server,
        "POST",
        "/api/replay",
        json.dumps({"jsonl": line}).encode(),
        {"Content-Type": "application/json", TOKEN_HEADER: client.server.token},
    )
    assert code == 400 and out["error"].startswith("game 1: record cannot be set up"), out


ODD_VALUES = hs.one_of(
    hs.none(),
    hs.booleans(),
    hs.integers(-(2**70), 2**70),
    hs.floats(),
    hs.text(max_size=20),
    hs.lists(hs.integers(), max_size=3),
    hs.dictionaries(hs.text(max_size=4), hs.integers(), max_size=2),
)


def _with(d: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(d))
    if field.startswith("rules."):
        out["rules"][field[len("rules.") :]] = value
    else:
        out[field] = value
    return out


_RECORD = json.loads(GameRecord(moves=["a3a4", "a7a6"]).to_json())
_SAVED = {
    "format": "jungle-zero-play-game",
    "version": 1,
    "id": "abc",
    "mode": "computer",
    "human": "red",
    "opponent": "random",
    "pace": "instant",
    "rules": dict(_RECORD["rules"]),
    "rules_name": "default",
    "start": _RECORD["start"],
    "seed": 1,
    "moves": ["a3a4", "a7a6"],
    "hints_left": 3,
    "resigned": None,
}


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(hs.sampled_from([*_RECORD, *(f"rules.{k}" for k in _RECORD["rules"])]), ODD_VALUES)
def test_a_record_with_any_odd_value_is_replayed_or_refused_in_one_line(field: str, value: Any) -> None:
    try:
        replay({"jsonl": json.dumps(_with(_RECORD, field, value))})  # what POST /api/replay runs
    except PlayError as e:  # answered 400 with its message; anything else would be a 500
        assert str(e) and "\n" not in str(e)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(hs.sampled_from([*_SAVED, *(f"rules.{k}" for k in _SAVED["rules"])]), ODD_VALUES)
def test_a_saved_game_with_any_odd_value_is_continued_or_refused_in_one_line(field: str, value: Any) -> None:
    try:
        PlayGame.from_saved(_with(_SAVED, field, value))  # what the server runs at start-up
    except PlayError as e:  # the page shows why the game cannot be continued
        assert str(e) and "\n" not in str(e)


def test_a_saved_game_with_an_infinite_rule_does_not_stop_the_server(tmp_path: Path, pool: ComputerWorkers) -> None:
    saved = dict(_SAVED, rules=dict(_SAVED["rules"], no_capture_draw=float("inf")))
    (tmp_path / "last_game.json").write_text(json.dumps(saved))  # json writes Infinity
    server = start_server(tmp_path, pool)
    try:
        c = Client(server)
        assert "saved game is malformed" in c.call("GET", "/api/info")["load_error"]
        assert "saved game is malformed" in c.error("GET", "/api/games/last", status=404)
    finally:
        stop_server(server)


def test_a_move_that_cannot_be_saved_is_played_and_says_so(tmp_path: Path, pool: ComputerWorkers) -> None:
    state = tmp_path / "state"
    server = start_server(state, pool)
    try:
        c = Client(server)
        v = c.new()
        assert v["save_error"] is None and (state / "last_game.json").is_file()
        shutil.rmtree(state)
        state.write_text("not a directory")  # the state directory is gone and a file has its name
        after = c.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
        assert after["moves"][:1] == ["a3a4"]  # applied, and the answer says it is not saved
        assert "could not be saved" in after["save_error"] and str(state) in after["save_error"]
        replied = c.settled(v["id"])
        assert len(replied["moves"]) == 2 and "could not be saved" in replied["save_error"]
        assert "could not be saved" in c.call("GET", "/api/games/last")["save_error"]
        state.unlink()  # the directory can be written again: the next change saves the whole game
        back = c.call("POST", f"/api/games/{v['id']}/move", {"move": replied["legal"][0]})
        assert back["save_error"] is None
        live = c.settled(v["id"])
    finally:
        stop_server(server)
    assert json.loads((state / "last_game.json").read_text())["moves"] == live["moves"]
    server = start_server(state, pool)
    try:
        assert Client(server).call("GET", "/api/games/last")["moves"] == live["moves"]
    finally:
        stop_server(server)


def test_a_full_disk_is_reported_the_same_way(client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v = client.new(mode="two_players")

    def full(path: Any, obj: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(server_module, "atomic_write_json", full)
    after = client.call("POST", f"/api/games/{v['id']}/move", {"move": "a3a4"})
    assert after["moves"] == ["a3a4"] and "No space left on device" in after["save_error"]
    assert json.loads((tmp_path / "last_game.json").read_text())["moves"] == []  # the file holds the last save
    monkeypatch.undo()
    after = client.call("POST", f"/api/games/{v['id']}/move", {"move": "a7a6"})
    assert after["save_error"] is None
    assert json.loads((tmp_path / "last_game.json").read_text())["moves"] == ["a3a4", "a7a6"]


def _connection_threads() -> int:
    return sum(1 for t in threading.enumerate() if "process_request_thread" in t.name)


@pytest.mark.slow
def test_connections_beyond_the_cap_wait_their_turn(client: Client) -> None:
    server = client.server
    server.max_connections = 3
    port = server.server_address[1]
    threads = _connection_threads()
    # They stall inside a request, each holding a serving place (a silent connection holds none: see
    # test_playserver.py::test_the_page_answers_while_many_idle_connections_are_open).
    idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(5)]
    for s in idle:
        s.sendall(b"GET /api/info HTTP/1.1\r\n")
    try:
        deadline = time.monotonic() + 30
        while server.live_connections < 3:
            assert time.monotonic() < deadline, "the server never took the first connections"
            time.sleep(0.01)
        late = socket.create_connection(("127.0.0.1", port), timeout=30)
        late.sendall(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        late.settimeout(0.5)
        with pytest.raises(socket.timeout):
            late.recv(1)  # not answered while the cap is taken: it waits its turn
        assert _connection_threads() - threads <= 6 and server.live_connections == 3
        for s in idle:
            s.close()  # the stalled ones give their places back, one by one
        late.settimeout(30)
        answer = late.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
        late.close()
    finally:
        for s in idle:
            s.close()


FD_SERVER = """
import os, resource, sys, threading
from agents.play.computer import ComputerWorkers
from agents.play.server import make_server
server = make_server(port=0, state_dir=None, pool=ComputerWorkers(workers=1))  # a pool never started: no search here
threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.readline()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
hog = []
try:
    while True:
        hog.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
print("full", len(hog), flush=True)
sys.stdin.readline()
for fd in hog:
    os.close(fd)
print("freed", flush=True)
sys.stdin.readline()
"""


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@pytest.mark.slow
def test_out_of_file_descriptors_the_server_neither_stalls_nor_spins() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", FD_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert proc.stdin is not None and proc.stdout is not None

    def say(word: str) -> str:
        proc.stdin.write(word + "\n")
        proc.stdin.flush()
        return proc.stdout.readline()

    def info(conn: http.client.HTTPConnection) -> int:
        conn.request("GET", "/api/info")
        resp = conn.getresponse()
        resp.read()
        return resp.status

    try:
        port = int(proc.stdout.readline())
        before = http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # open before the descriptors run out
        assert info(before) == 200
        assert say("fill").startswith("full")
        spare = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        assert info(spare) == 200  # a new connection is still taken, on the spare descriptor
        waiting = socket.create_connection(("127.0.0.1", port), timeout=10)  # no descriptor left for this one
        waiting.sendall(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        cpu = _cpu_seconds(proc.pid)
        time.sleep(2.0)
        assert info(before) == 200  # the open connections are served meanwhile
        assert _cpu_seconds(proc.pid) - cpu < 0.5, "the accept loop spins on the connection it cannot take"
        spare.close()  # its descriptor goes back to the spare, which takes the waiting connection
        assert waiting.recv(65536).startswith(b"HTTP/1.1 200")
        waiting.close()
        assert say("free").startswith("freed")
        assert all(info(http.client.HTTPConnection("127.0.0.1", port, timeout=10)) == 200 for _ in range(5))
        before.close()
    finally:
        proc.kill()
        proc.wait(timeout=30)


# --- the cross-origin cases in a real browser -----------------------------------------------------
HOSTILE = """<!doctype html><html><body>
<iframe name="sink" id="sink"></iframe>
<iframe id="framed" src="{target}"></iframe>
<form id="f1" method="POST" action="{target}api/games" target="sink" enctype="text/plain">
  <input name='{{"mode": "two_players", "x": "' value='"}}'></form>
<form id="f2" method="POST" action="{target}api/games/{gid}/resign" target="sink"><input name="a" value="b"></form>
<script src="hostile.js"></script>
</body></html>"""
HOSTILE_JS = """
const target = {target!r}, gid = {gid!r};
async function attack() {{
  const posts = [
    fetch(target + "api/games", {{method: "POST", mode: "no-cors"}}),
    fetch(target + "api/games/" + gid + "/undo",
          {{method: "POST", mode: "no-cors", body: "", headers: {{"Content-Type": "text/plain"}}}}),
    fetch(target + "api/games/" + gid + "/resign",
          {{method: "POST", mode: "no-cors", body: "{{}}", headers: {{"Content-Type": "text/plain"}}}}),
    fetch(target + "api/games", {{method: "POST", body: "{{}}", headers: {{"Content-Type": "application/json"}}}}),
  ];
  const results = await Promise.allSettled(posts);
  for (const id of ["f1", "f2"]) {{
    await new Promise((done) => {{
      document.getElementById("sink").onload = done; document.getElementById(id).submit(); setTimeout(done, 5000);
    }});
  }}
  document.title = "done " + results.map((r) => r.status).join(",");
}}
attack();
"""


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
@pytest.mark.slow
def test_a_page_from_another_origin_changes_nothing(
    browser: Any, client: Client, tmp_path: Path, host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = game_with_moves(client)
    answers: list[tuple[str, str, int]] = []
    monkeypatch.setattr(
        PlayHandler,
        "log_request",
        lambda self, code="-", size="-": answers.append((self.command, self.path, int(code))),
    )
    site = tmp_path / "evil"
    site.mkdir()
    target = client.server.url
    (site / "index.html").write_text(HOSTILE.format(target=target, gid=before["id"]))
    (site / "hostile.js").write_text(HOSTILE_JS.format(target=target, gid=before["id"]))

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(site), **kw)

        def log_message(self, *args: Any) -> None:
            pass

    evil = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=evil.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    context = browser.new_context()
    try:
        pg = context.new_page()
        pg.goto(f"http://{host}:{evil.server_address[1]}/index.html")
        deadline = time.monotonic() + 60
        while not pg.title().startswith("done"):
            assert time.monotonic() < deadline, "the hostile page never finished"
            time.sleep(0.1)
        # The framed play page did not load: the browser refused to show it inside another site.
        framed = pg.query_selector("#framed").content_frame()
        assert not framed.url.startswith(target), framed.url  # Chromium shows its own error page instead
    finally:
        context.close()
        evil.shutdown()
        evil.server_close()
    posts = [(path, code) for method, path, code in answers if method == "POST"]
    assert len(posts) >= 4, answers  # the attacks reached the server ...
    assert all(code in (403, 415) for _, code in posts), posts  # ... and every one was refused
    assert not any(method == "OPTIONS" and code < 300 for method, _, code in answers)  # no preflight granted
    unchanged(client, before, tmp_path)

"""The play server probed as a hostile page would: cross-site requests, slow opponents, big uploads, bad connections.

Real HTTP against an in-process server, and a real Chromium for the
cross-origin cases: a page served from another origin posts forms and
no-cors fetches at the play server, and tries to frame it; nothing changes.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agents.arena.records import GameRecord
from agents.play.computer import ComputerPool
from agents.play.server import MAX_BODY, MAX_RECORDS, TOKEN_HEADER, PlayHandler, PlayServer
from tests.play_helpers import Client, browser, client, pool, start_server, stop_server  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parent.parent


def request(server: PlayServer, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
            timeout: float = 60) -> tuple[int, dict[str, Any], http.client.HTTPMessage]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, (json.loads(raw) if raw and resp.headers.get_content_type() == "application/json" else {}), resp.headers
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


@pytest.mark.parametrize("headers, status", [
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
])
def test_a_post_not_from_the_page_changes_nothing(client: Client, tmp_path: Path, headers: dict[str, str],
                                                 status: int) -> None:
    before = game_with_moves(client)
    gid = before["id"]
    if headers.pop("token", None):
        headers[TOKEN_HEADER] = client.server.token
    for path, body in (("/api/games", b""), ("/api/games", b'{"mode": "two_players"}'), (f"/api/games/{gid}/undo", b""),
                       (f"/api/games/{gid}/resign", b""), (f"/api/games/{gid}/move", b'{"move": "g3g4"}'),
                       (f"/api/games/{gid}/settings", b'{"pace": "natural"}')):
        code, out, _ = request(client.server, "POST", path, body, headers)
        assert code == status and out["error"], (path, code, out)
    unchanged(client, before, tmp_path)
    assert client.call("GET", f"/api/games/{gid}")["pace"] == "instant"
    # The same request from the page itself is applied: the refusals above were the checks at work.
    page = {"Content-Type": "application/json", TOKEN_HEADER: client.server.token,
            "Origin": client.server.url.rstrip("/"), "Sec-Fetch-Site": "same-origin"}
    code, out, _ = request(client.server, "POST", f"/api/games/{gid}/undo", b"", page)
    assert code == 200 and out["undone"] == 2


def test_every_answer_forbids_framing_and_the_page_carries_its_token(client: Client) -> None:
    for method, path in (("GET", "/"), ("GET", "/app.js"), ("GET", "/api/info"), ("GET", "/nothing"),
                         ("PUT", "/api/games"), ("POST", "/api/games")):
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
def test_a_deep_search_neither_stalls_requests_nor_a_restart(tmp_path: Path, pool: ComputerPool) -> None:
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
def test_a_runaway_player_is_stopped_at_its_time(tmp_path: Path, pool: ComputerPool) -> None:
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
def test_a_record_going_on_after_its_end_is_refused_quickly(client: Client) -> None:
    shuffle = ["a1a2", "g9g8", "a2a1", "g8g9"]
    huge = GameRecord(moves=shuffle * 60_000).to_json()  # about 2 MB: a repetition draw, then on and on
    assert 1_500_000 < len(huge) < MAX_BODY
    code, out, _ = request(client.server, "POST", "/api/replay", json.dumps({"jsonl": huge}).encode(),
                           {"Content-Type": "application/json", TOKEN_HEADER: client.server.token})
    assert code == 400 and "at most 4000" in out["error"]
    longish = GameRecord(moves=shuffle * 5).to_json()
    assert "comes after the end of the game (repetition at ply 8)" in client.error("POST", "/api/replay",
                                                                                  {"jsonl": longish})
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
    code, out, _ = request(client.server, "POST", "/api/games", b"{}",
                           {**headers, "Content-Length": "2, 5"})
    assert code == 400
    assert client.call("GET", "/api/info")["last_game"] is None  # no game was created by any of them


# --- 5. connections and odd requests -------------------------------------------------------------
@pytest.mark.parametrize("method", ["PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "BREW"])
def test_other_methods_get_a_json_405(client: Client, method: str) -> None:
    code, out, headers = request(client.server, method, "/api/games")
    assert code == 405 and out["error"] and headers["Allow"] == "GET, HEAD, POST"


@pytest.mark.parametrize("body, needle", [
    ({"pace": ["quick"]}, "pace"),
    ({"pace": {"a": 1}}, "pace"),
    ({"mode": ["computer"]}, "mode"),
    ({"human": {"side": "red"}}, "side"),
    ({"seed": -1}, "seed"),
    ({"seed": 2**64}, "seed"),
    ({"start": ["x"]}, "JFEN"),
    ({"opponent": ["random"]}, "opponent"),
])
def test_odd_values_are_a_400(client: Client, body: dict[str, Any], needle: str) -> None:
    assert needle in client.error("POST", "/api/games", body)


@pytest.mark.parametrize("raw", [b'{"seed": ' + b"7" * 4301 + b"}", b"[" * 100_000 + b"]" * 100_000,
                                 b'{"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"])
def test_huge_numbers_and_deep_nesting_are_a_400(client: Client, raw: bytes) -> None:
    code, out, _ = request(client.server, "POST", "/api/games", raw,
                           {"Content-Type": "application/json", TOKEN_HEADER: client.server.token})
    assert code == 400 and "not valid JSON" in out["error"]
    nested = json.dumps({"jsonl": "[" * 50_000 + "]" * 50_000})
    code, out, _ = request(client.server, "POST", "/api/replay", nested.encode(),
                           {"Content-Type": "application/json", TOKEN_HEADER: client.server.token})
    assert code == 400 and out["error"]


def test_a_body_on_a_get_does_not_become_the_next_request(client: Client) -> None:
    with socket.create_connection(("127.0.0.1", client.server.server_address[1]), timeout=30) as s:
        s.sendall(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 33\r\n\r\n"
                  b"POST /api/games HTTP/1.1\r\n\r\n{}")
        answer = b""
        while chunk := s.recv(65536):  # one answer, then the server closes the connection
            answer += chunk
    assert answer.count(b"HTTP/1.1 ") == 1 and answer.startswith(b"HTTP/1.1 200")
    assert client.call("GET", "/api/info")["last_game"] is None


def test_a_stalled_client_is_dropped_and_others_are_served(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PlayHandler, "timeout", 1.0)
    port = client.server.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"POST /api/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  + f"{TOKEN_HEADER}: {client.server.token}\r\nContent-Length: 1000\r\n\r\n".encode() + b'{"jsonl"')
        assert client.call("GET", "/api/info")["rules_name"] == "default"  # served meanwhile
        while s.recv(65536):  # the server gives up on the missing 992 bytes and closes the connection
            pass


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
    p = subprocess.run([sys.executable, str(ROOT / "play.py"), "--port", "99999", "--no-browser"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 2 and "port 99999 is not in 0..65535" in p.stderr and "Traceback" not in p.stderr


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
    fetch(target + "api/games/" + gid + "/undo", {{method: "POST", mode: "no-cors", body: "", headers: {{"Content-Type": "text/plain"}}}}),
    fetch(target + "api/games/" + gid + "/resign", {{method: "POST", mode: "no-cors", body: "{{}}", headers: {{"Content-Type": "text/plain"}}}}),
    fetch(target + "api/games", {{method: "POST", body: "{{}}", headers: {{"Content-Type": "application/json"}}}}),
  ];
  const results = await Promise.allSettled(posts);
  for (const id of ["f1", "f2"]) {{
    await new Promise((done) => {{ document.getElementById("sink").onload = done; document.getElementById(id).submit(); setTimeout(done, 5000); }});
  }}
  document.title = "done " + results.map((r) => r.status).join(",");
}}
attack();
"""


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
@pytest.mark.slow
def test_a_page_from_another_origin_changes_nothing(browser: Any, client: Client, tmp_path: Path, host: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    before = game_with_moves(client)
    answers: list[tuple[str, str, int]] = []
    monkeypatch.setattr(PlayHandler, "log_request",
                        lambda self, code="-", size="-": answers.append((self.command, self.path, int(code))))
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

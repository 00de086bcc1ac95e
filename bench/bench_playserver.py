"""Play server figures: request latency, latency while the computer searches, memory per game, replay cost.

    python bench/bench_playserver.py [--requests N]

Serves in-process on a free port with a temporary state directory. The first
figures use a `random` opponent at the instant pace, so they are the server's
own cost (HTTP, JSON, rules checks, the atomic save). Then the page's poll is
timed while a worker process runs a deep alpha-beta search (the search never
runs in the server, so the poll should cost about the same), the server's
memory is read before and after many new games (the live games are bounded
and players live in the workers), and the largest replay the server accepts
is timed. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

from agents.arena.records import GameRecord  # noqa: E402
from agents.play.replay import MAX_REPLAY_PLIES  # noqa: E402
from agents.play.server import MAX_LIVE_GAMES, TOKEN_HEADER, make_server  # noqa: E402


def rss_mb() -> float:
    """This process's resident memory in MB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per kind (default 300)")
    args = parser.parse_args()
    n = args.requests
    with tempfile.TemporaryDirectory() as state_dir:
        server = make_server(
            port=0, state_dir=state_dir, default_opponent="random", default_pace="instant", move_seconds=5.0
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=60)
        headers = {"Content-Type": "application/json", TOKEN_HEADER: server.token}

        def call(method: str, path: str, body: Any = None) -> tuple[Any, int]:
            data = json.dumps(body if body is not None else {}) if method == "POST" else None
            conn.request(method, path, body=data, headers=headers if method == "POST" else {})
            raw = conn.getresponse().read()
            return json.loads(raw), len(raw)

        def timed_polls(gid: str, count: int) -> list[float]:
            out = []
            for _ in range(count):
                t0 = time.perf_counter()
                call("GET", f"/api/games/{gid}")
                out.append((time.perf_counter() - t0) * 1e3)
            return out

        game, _ = call("POST", "/api/games", {"opponent": "random", "pace": "instant"})
        gid = game["id"]
        call("GET", f"/api/games/{gid}")  # warm up

        print(f"GET game view (the page's poll): {statistics.mean(timed_polls(gid, n)):.2f} ms/request")

        t0 = time.perf_counter()
        for _ in range(n):
            call("POST", f"/api/games/{gid}/move", {"move": "a3a5"})
        print(f"refused illegal move:            {(time.perf_counter() - t0) / n * 1e3:.2f} ms/request")

        t0 = time.perf_counter()
        cycles = max(1, n // 5)
        for _ in range(cycles):
            call("POST", f"/api/games/{gid}/move", {"move": "a3a4"})
            server.store.wait_idle(gid)
            call("POST", f"/api/games/{gid}/undo")
        print(
            f"move + computer reply (worker) + 2 saves + undo: {(time.perf_counter() - t0) / cycles * 1e3:.2f} ms/cycle"
        )

        deep, _ = call("POST", "/api/games", {"opponent": "alphabeta:depth=16", "pace": "instant"})
        call("POST", f"/api/games/{deep['id']}/move", {"move": "a3a4"})
        polls, thinking = [], 0
        while True:
            view, _ = call("GET", f"/api/games/{deep['id']}")
            if not view["thinking"]:
                break
            thinking += 1
            polls.extend(timed_polls(deep["id"], 1))
        print(
            f"GET game view while alpha-beta depth 16 searches (5 s cap): median {statistics.median(polls):.2f} ms, "
            f"max {max(polls):.1f} ms over {len(polls)} polls; reply after the cap: {len(view['moves']) == 2}"
        )

        before = rss_mb()
        games = 200
        t0 = time.perf_counter()
        for _ in range(games):
            call("POST", "/api/games", {"opponent": "beginner", "pace": "instant"})
        took = (time.perf_counter() - t0) / games * 1e3
        print(
            f"{games} new games (beginner, built in a worker): {took:.1f} ms each; server memory "
            f"{before:.0f} -> {rss_mb():.0f} MB ({len(server.store.games)} live games kept, at most {MAX_LIVE_GAMES})"
        )

        shuffle = ["a1a2", "g9g8", "a2a1", "g8g9"]
        longest = GameRecord(
            moves=(shuffle * MAX_REPLAY_PLIES)[:MAX_REPLAY_PLIES],
            rules={**GameRecord().rules, "repetition": "off", "no_capture_draw": 0},
        )
        t0 = time.perf_counter()
        out, size = call("POST", "/api/replay", {"jsonl": longest.to_json()})
        print(
            f"replay of the longest game accepted ({MAX_REPLAY_PLIES} plies): "
            f"{(time.perf_counter() - t0) * 1e3:.0f} ms, {size / 1e6:.2f} MB of JSON, {len(out['frames'])} frames"
        )
        conn.close()
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()

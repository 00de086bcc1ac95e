"""Play server latency: milliseconds per API request over one keep-alive connection.

    python bench/bench_playserver.py [--requests N]

Serves in-process on a free port with a temporary state directory and a
`random` opponent at the instant pace, so the figures are the server's own
cost (HTTP, JSON, rules checks, the atomic save), not the computer's thinking.
Prints one line per kind of request.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

from agents.play.server import make_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per kind (default 300)")
    args = parser.parse_args()
    n = args.requests
    with tempfile.TemporaryDirectory() as state_dir:
        server = make_server(port=0, state_dir=state_dir, default_opponent="random", default_pace="instant")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=60)

        def call(method: str, path: str, body: Any = None) -> Any:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers={"Content-Type": "application/json"})
            return json.loads(conn.getresponse().read())

        game = call("POST", "/api/games", {"opponent": "random", "pace": "instant"})
        gid = game["id"]
        call("GET", f"/api/games/{gid}")  # warm up

        t0 = time.perf_counter()
        for _ in range(n):
            call("GET", f"/api/games/{gid}")
        print(f"GET game view (the page's poll): {(time.perf_counter() - t0) / n * 1e3:.2f} ms/request")

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
        print(f"move + computer reply + 2 saves + undo: {(time.perf_counter() - t0) / cycles * 1e3:.2f} ms/cycle")
        conn.close()
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()

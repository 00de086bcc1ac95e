"""Helpers of the play tests: an HTTP client that speaks as the page, servers on a shared worker pool, a gated player.

The `pool`, `client` and `browser` fixtures built from them are in tests/conftest.py.

The computer thinks in worker processes, so a test player that "thinks" for
as long as a test wants must exist there too: `register_test_players` runs in
every worker (the pool's `init`) and registers `gated:gate=<file>`, a random
player that waits until the file exists, `slowstart`, and `dying`, whose
search kills its own process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional

import pytest

from agents.play.computer import ComputerWorkers
from agents.play.server import TOKEN_HEADER, PlayServer, make_server
from envs import Board, Move
from envs.players import RandomPlayer, register_player


class GatedPlayer:
    """A random player that waits (up to `wait` seconds) until its gate file exists."""

    def __init__(self, gate: str, seed: Optional[int] = None, wait: float = 60.0) -> None:
        self.name = "gated"
        self.gate = Path(gate)
        self.wait = wait
        self.inner = RandomPlayer(seed=seed)

    def select_move(self, board: Board) -> Move:
        deadline = time.monotonic() + self.wait
        while not self.gate.exists():
            if time.monotonic() > deadline:
                raise ValueError("the test gate never opened")
            time.sleep(0.01)
        return self.inner.select_move(board)

    def reset(self) -> None:
        pass


class SlowStartPlayer:
    """A random player whose first move in a process takes `first` seconds, as a cold numba cache compiles."""

    compiled = False  # per process, like numba's compiled kernels

    def __init__(self, first: float, seed: Optional[int] = None) -> None:
        self.name = "slowstart"
        self.first = first
        self.inner = RandomPlayer(seed=seed)

    def select_move(self, board: Board) -> Move:
        if not SlowStartPlayer.compiled:
            time.sleep(self.first)
            SlowStartPlayer.compiled = True
        return self.inner.select_move(board)

    def reset(self) -> None:
        pass


class DyingPlayer:
    """A player whose search kills its own process, as the kernel's out-of-memory killer would."""

    name = "dying"

    def select_move(self, board: Board) -> Move:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("a killed process returned")

    def reset(self) -> None:
        pass


def register_test_players() -> None:
    """Runs in every worker of the test pools (and may run in the test process)."""
    register_player("gated", lambda rules=None, seed=None, gate="", wait="60": GatedPlayer(gate, seed, float(wait)))
    register_player("slowstart", lambda rules=None, seed=None, first="3": SlowStartPlayer(float(first), seed))
    register_player("dying", lambda rules=None, seed=None: DyingPlayer())


def make_pool() -> ComputerWorkers:
    pool = ComputerWorkers(workers=2, init=register_test_players)
    pool.start()
    return pool


def start_server(state_dir: Optional[Path], pool: ComputerWorkers, **kwargs: Any) -> PlayServer:
    kwargs.setdefault("default_opponent", "random")
    kwargs.setdefault("default_pace", "instant")
    server = make_server(port=0, state_dir=state_dir, pool=pool, **kwargs)
    # A short poll interval: shutdown() waits for one poll, and every test stops a server.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def stop_server(server: PlayServer) -> None:
    server.shutdown()
    server.server_close()


class Client:
    """Calls the API as the page does: JSON bodies and the page's token on every POST."""

    def __init__(self, server: PlayServer) -> None:
        self.server = server
        self.base = server.url.rstrip("/")

    def raw(
        self, method: str, path: str, data: Optional[bytes] = None, headers: Optional[dict[str, str]] = None
    ) -> tuple[int, bytes, Any]:
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if method == "POST":
            req.add_header("Content-Type", "application/json")
            req.add_header(TOKEN_HEADER, self.server.token)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=180) as resp:
                return resp.status, resp.read(), resp.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read(), e.headers

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        data = None if body is None else json.dumps(body).encode()
        if method == "POST" and data is None:
            data = b"{}"
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


def snapshot(view: dict[str, Any]) -> tuple[Any, ...]:
    return view["version"], view["jfen"], tuple(view["moves"]), view["hints_left"], view["result"]


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    path = os.environ.get("JUNGLE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        pytest.fail(
            "the browser tests need Debian's chromium: run `apt-get install -y chromium` "
            "(as .ci/run does), or set JUNGLE_CHROMIUM to a Chromium binary",
            pytrace=False,
        )
    return path

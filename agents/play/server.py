"""The play page's server: static files plus a small JSON API on 127.0.0.1, standard library only.

    server = make_server(port=0, state_dir="~/.jungle-zero")
    print(server.url)
    server.serve_forever()

API (JSON bodies; every error is `{"error": "..."}`: 400 bad input, 403 not
from the page, 404 unknown, 405 method, 411/413/415 body refused):

    GET  /api/info                     rule set in force, the lobby's rule sets, terrain, levels (a network's with
                                       the rule sets it plays), paces, hints per game, the last game,
                                       `preparing` while the computer warms up
    POST /api/games                    {mode, human, opponent, pace, rules?, start?, seed?} -> a new game's view
                                       (201), under the rule set `rules` names (default: the server's)
    GET  /api/games/last               the saved game (404 if none) - "continue last game"
    GET  /api/games/<id>               the game's view (`thinking` while the computer chooses, `preparing` while
                                       that waits for its warm-up, `computer_error`, `save_error`)
    POST /api/games/<id>/move          {move: "a3a4"}
    POST /api/games/<id>/undo          against the computer: its reply and your move (one ply while it thinks)
    POST /api/games/<id>/hint          a suggested move (three per game; the same position's hint again is free)
    POST /api/games/<id>/resign        also while the computer thinks
    POST /api/games/<id>/settings      {pace}
    GET  /api/games/<id>/record        the game as a GameRecord JSONL download
    POST /api/replay                   {jsonl, index?} -> the records in the text and the frames of one

What the server guarantees:

- **Loopback and same origin only.** It listens on 127.0.0.1 and refuses a
  `Host` other than 127.0.0.1/localhost (DNS rebinding). Every POST must
  prove it comes from the page itself: `Content-Type: application/json`
  (so a browser asks before another site may send it), the page's token in
  `X-Jungle-Token` (written into `/` for this server run, readable only by
  the page), an `Origin` naming this server when there is one and no
  `Sec-Fetch-Site: cross-site`/`same-site`. Every answer forbids framing
  (`X-Frame-Options: DENY`, CSP `frame-ancestors 'none'`).
- **Bounded work per request.** The computer searches in worker processes
  (`agents.play.computer`), never in the server, each move within its time
  (`bounded_spec`; the worker is killed past it), so a slow opponent never
  stalls a request, also after a restart. The workers warm up first (every
  level plays a move), so a move's time is never spent compiling; a move
  that fails anyway ends the `thinking` with its `computer_error`. Bodies are at most `MAX_BODY`
  bytes with a Content-Length (no chunked bodies); a replay takes at most
  `MAX_RECORDS` records of `MAX_REPLAY_PLIES` plies that stop at the game's
  end; at most `MAX_LIVE_GAMES` games are kept (the saved one and the most
  recent); an idle or stalled connection is closed after `SOCKET_TIMEOUT`.
  At most `MAX_CONNECTIONS` requests are served at once (more wait their
  turn). A connection that has sent nothing yet (new, or kept alive between
  requests) holds no serving place: at most `MAX_IDLE_CONNECTIONS` wait so,
  and a new one closes the longest waiting past that, so silent connections
  never keep the page from answering. Out of file descriptors, a spare one
  still takes one connection at a time and the accept loop pauses rather
  than spins.
- **What is saved.** The game in progress (mode, sides, opponent, rules,
  moves, hints left) is written atomically to `<state_dir>/last_game.json`
  after every change, so it survives a reload of the page and a restart.
  A change whose write fails (the directory gone, the disk full) stays
  applied, and every view of the game carries `save_error` saying it is not
  saved until a later write succeeds.
- **Bad input is a 4xx.** A name the file system refuses answers 404, a
  record or saved game with odd values (an infinite rule number, say) a 400
  or a `load_error`; a 500 is a bug.
"""

from __future__ import annotations

import errno
import hmac
import json
import mimetypes
import os
import random
import secrets
import socket
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional
from urllib.parse import urlsplit

from agents.arena.records import RecordError, parse_jsonl
from agents.common.io import atomic_write_json, remove_stale_temp_files
from agents.play.computer import Cancelled, ComputerError, ComputerWorkers
from agents.play.errors import PlayError, UnknownGameError
from agents.play.game import HINTS_PER_GAME, MODES, PACES, PlayGame
from agents.play.levels import (
    GRACE_SECONDS,
    MOVE_SECONDS,
    available_levels,
    check_level_rules,
    game_rules,
    rule_set_choices,
)
from agents.play.replay import MAX_REPLAY_PLIES, replay_frames
from agents.play.specs import CHECKPOINT_DIRS, warm_up_jobs
from agents.play.view import terrain
from envs.rules import RuleSet, RuleSetError

WEB_DIR = Path(__file__).resolve().parent / "web"
DEFAULT_PORT = 8765
DEFAULT_STATE_DIR = Path("~/.jungle-zero")
SAVE_NAME = "last_game.json"
STALE_TEMP_SECONDS = 60.0
"""A temp file of a save older than this was left by a killed server (see agents.common.io)."""
MAX_BODY = 8 * 1024 * 1024
"""Largest request body: a replay upload of a few thousand games."""
MAX_RECORDS = 10_000
"""Most games one replay upload may hold."""
MAX_LIVE_GAMES = 8
"""Games kept in memory: the saved one and the most recently used; older ones are dropped."""
SOCKET_TIMEOUT = 20.0
"""Seconds a connection may stay silent (mid-request or idle between requests) before it is closed."""
MAX_CONNECTIONS = 32
"""Requests served at once, each connection by its own thread (a browser opens six); more wait their turn."""
MAX_IDLE_CONNECTIONS = 256
"""Connections kept open that have sent nothing yet (new, or kept alive between requests); past this the
longest waiting one is closed. They hold no serving place, so silent connections never block the page."""
ACCEPT_PAUSE = 0.05
"""Seconds the accept loop waits before it tries again when it may not accept (the cap, no descriptor left)."""
TOKEN_HEADER = "X-Jungle-Token"
TOKEN_PLACEHOLDER = b"__JUNGLE_TOKEN__"
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
"""Sent with every answer: no framing, no inline script, nothing read by another origin."""


class RequestRefused(PlayError):
    """A request refused before it reaches a game (wrong origin, token, method or body), with its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class GameStore:
    """The server's games (a bounded few), the saved last game, and the computer's moves in progress."""

    def __init__(
        self,
        *,
        rules: RuleSet,
        rules_name: str = "default",
        state_dir: Optional[Path] = None,
        default_opponent: str = "beginner",
        default_pace: str = "quick",
        pool: Optional[ComputerWorkers] = None,
        checkpoint_dirs: Iterable[Path] = CHECKPOINT_DIRS,
        move_seconds: float = MOVE_SECONDS,
    ) -> None:
        self.rules = rules
        self.move_seconds = move_seconds
        """The time per move of an opponent that is not a level (a level has its own)."""
        self.rules_name = rules_name
        self.state_dir = state_dir
        self.default_opponent = default_opponent
        self.default_pace = default_pace
        self.checkpoint_dirs = tuple(Path(d) for d in checkpoint_dirs)
        self._own_pool = pool is None
        self.pool = (
            pool
            if pool is not None
            else ComputerWorkers(warm_up=warm_up_jobs(rules, [default_opponent], seconds=move_seconds))
        )
        self.lock = threading.RLock()
        self.games: OrderedDict[str, PlayGame] = OrderedDict()  # least recently used first
        self.last_id: Optional[str] = None
        self._thinking: dict[str, tuple[int, threading.Event]] = {}  # game id -> (version, its cancel switch)
        self._stop = threading.Event()
        self.load_error: Optional[str] = None
        self.save_error: Optional[str] = None
        """Why the last game's latest change is not on disk (None once a save succeeds)."""
        if self._own_pool:
            self.pool.start()
        self._load_saved()

    # -- saving -------------------------------------------------------------------------
    @property
    def save_path(self) -> Optional[Path]:
        return None if self.state_dir is None else self.state_dir / SAVE_NAME

    def _load_saved(self) -> None:
        path = self.save_path
        if path is not None:  # temp files of saves cut short by a kill (another server's saves take milliseconds)
            remove_stale_temp_files(path.parent, older_than=STALE_TEMP_SECONDS)
        if path is None or not path.is_file():
            return
        try:
            if path.stat().st_size > MAX_BODY:
                raise PlayError(f"the file is larger than {MAX_BODY} bytes")
            game = PlayGame.from_saved(json.loads(path.read_text(encoding="utf-8")), seconds=self.move_seconds)
        except (ValueError, OSError, RecursionError) as e:
            # A damaged save must not stop the server; the page says why it cannot continue.
            self.load_error = f"the saved game in {path} could not be loaded: {e}"
            return
        with self.lock:
            self._add(game)
            self._schedule(game)  # in a worker: a slow opponent cannot hold up the start

    def _save(self, game: PlayGame) -> None:
        """Write the last game to disk (lock held); a failed write is kept in `save_error` for every view to show.

        The change stays applied in memory either way: the answer says whether
        it is saved, and the next change tries again."""
        path = self.save_path
        if path is None or game.id != self.last_id:
            return
        try:
            atomic_write_json(path, game.to_saved())
        except OSError as e:  # the directory gone or not a directory, the disk full, no permission...
            self.save_error = (
                f"this game could not be saved to {path} ({e.strerror or e}); it goes on here, "
                "but a restart of the server would lose it"
            )
        else:
            self.save_error = None

    def _add(self, game: PlayGame) -> None:
        """Keep `game` as the last one and drop the oldest games beyond MAX_LIVE_GAMES."""
        self.games[game.id] = game
        self.games.move_to_end(game.id)
        self.last_id = game.id
        while len(self.games) > MAX_LIVE_GAMES:
            old = next(iter(self.games))
            self._cancel(old)
            del self.games[old]

    # -- requests -----------------------------------------------------------------------
    def get(self, game_id: str) -> PlayGame:
        with self.lock:
            game = self.games.get(game_id)
            if game is None:
                raise UnknownGameError(
                    f"no game with id {game_id[:40]!r} (the server keeps its {MAX_LIVE_GAMES} "
                    "most recent games and may have been restarted; use 'continue last game')"
                )
            self.games.move_to_end(game_id)
            return game

    def view(self, game: PlayGame) -> dict[str, Any]:
        with self.lock:
            thinking = self._thinking.get(game.id)
            view = game.view(thinking=thinking is not None and thinking[0] == game.version)
            view["preparing"] = view["thinking"] and self.pool.preparing  # waiting for the warm-up, off its clock
            view["save_error"] = self.save_error if game.id == self.last_id else None
            return view

    def create(self, body: dict[str, Any]) -> PlayGame:
        allowed = {"mode", "human", "opponent", "pace", "start", "seed", "rules"}
        _only(body, allowed, "new-game")
        opponent = body.get("opponent", self.default_opponent)
        chosen = body.get("rules", self.rules_name)  # the server's own rule set (maybe a file of one's own) or a set
        rules_name, rules = (self.rules_name, self.rules) if chosen == self.rules_name else game_rules(chosen)
        if body.get("mode", "computer") == "computer":
            check_level_rules(opponent, rules, rules_name)
        # The command line's opponent is trusted; one typed on the page must be a checkpoint of ours.
        dirs = None if opponent == self.default_opponent else self.checkpoint_dirs
        game = PlayGame.new(
            mode=body.get("mode", "computer"),
            human=body.get("human", "red"),
            opponent=opponent,
            pace=body.get("pace", self.default_pace),
            rules=rules,
            rules_name=rules_name,
            start=body.get("start"),
            seed=body.get("seed"),
            checkpoint_dirs=dirs,
            seconds=self.move_seconds,
        )
        if game.engine is not None:
            # Build the player now (in a worker) so that a bad spec or checkpoint is refused here.
            try:
                self.pool.run("build", game.job("computer"), time_limit=game.seconds + GRACE_SECONDS)
            except ComputerError as e:
                raise PlayError(str(e)) from None
            except Cancelled:
                raise RequestRefused(HTTPStatus.SERVICE_UNAVAILABLE, "the server is stopping") from None
        with self.lock:
            self._add(game)
            self._save(game)
            self._schedule(game)
        return game

    def last(self) -> PlayGame:
        with self.lock:
            if self.last_id is None:
                raise UnknownGameError(self.load_error or "there is no saved game")
            game = self.get(self.last_id)
            self._schedule(game)
            return game

    def act(self, game_id: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
        """Apply one of move/undo/resign/settings under the lock; returns the new view."""
        if action == "hint":
            _only(body, set(), "hint")
            return self.hint(game_id)
        with self.lock:
            game = self.get(game_id)
            extra: dict[str, Any] = {}
            if action == "move":
                _only(body, {"move"}, "move")
                if "move" not in body:
                    raise PlayError("missing field 'move' (a move like 'a3a4')")
                game.human_move(body["move"])
            elif action == "undo":
                _only(body, set(), "undo")
                extra["undone"] = game.undo()
                self._cancel(game.id)
            elif action == "resign":
                _only(body, set(), "resign")
                game.resign()
                self._cancel(game.id)
            elif action == "settings":
                _only(body, {"pace"}, "settings")
                if "pace" in body:
                    game.set_pace(body["pace"])
            else:
                raise PlayError(f"unknown action {action!r}")
            self.last_id = game.id
            self._save(game)
            self._schedule(game)
            view = self.view(game)
            view.update(extra)
            return view

    def hint(self, game_id: str) -> dict[str, Any]:
        """A suggested move, searched in a worker without holding the lock; the same position's is free."""
        with self.lock:
            game = self.get(game_id)
            move = game.check_hint()
            version = game.version
            job = game.job("hint")
        if move is None:
            try:
                move = self.pool.run("move", job, time_limit=MOVE_SECONDS + GRACE_SECONDS)
            except ComputerError as e:
                raise PlayError(f"no hint could be found: {e}") from None
            except Cancelled:
                raise RequestRefused(HTTPStatus.SERVICE_UNAVAILABLE, "the server is stopping") from None
        with self.lock:
            hint = game.apply_hint(move, version)
            self.last_id = game.id
            self._save(game)
            view = self.view(game)
            view["hint"] = hint
            return view

    # -- the computer -------------------------------------------------------------------
    def _schedule(self, game: PlayGame) -> None:
        """Start the computer's move if it is to move and nobody works on this version yet (lock held)."""
        if game.id not in self.games or not game.computer_to_move():
            return
        running = self._thinking.get(game.id)
        if running is not None and running[0] == game.version:
            return
        self._cancel(game.id)
        cancel = threading.Event()
        self._thinking[game.id] = (game.version, cancel)
        threading.Thread(
            target=self._think,
            args=(game, game.version, game.job("computer"), cancel),
            daemon=True,
            name=f"computer-{game.id}",
        ).start()

    def _cancel(self, game_id: str) -> None:
        """Stop the computer's move in progress for this game, if any (its worker is killed)."""
        running = self._thinking.pop(game_id, None)
        if running is not None:
            running[1].set()

    def _think(self, game: PlayGame, version: int, job: Any, cancel: threading.Event) -> None:
        began = time.monotonic()
        least, most = PACES.get(game.pace, (0.0, 0.0))
        pause = random.uniform(least, most)
        move: Optional[str] = None
        error = ""
        try:
            move = self.pool.run("move", job, time_limit=game.seconds + GRACE_SECONDS, cancel=cancel)
        except Cancelled:
            return
        except ComputerError as e:
            error = f"the computer ({game.opponent}) could not move: {e}. Undo, resign or start a new game."
        except Exception as e:  # noqa: BLE001 - whatever went wrong, the page must stop showing "thinking"
            error = (
                f"the computer ({game.opponent}) could not move: {type(e).__name__}: {e}. "
                "Undo, resign or start a new game."
            )
        # The pace is the whole time from the person's move to the reply; stop early if undone.
        while not (self._stop.is_set() or cancel.is_set()) and time.monotonic() - began < pause:
            cancel.wait(min(0.05, pause))
        with self.lock:
            if self._thinking.get(game.id, (None, None))[1] is not cancel:
                return
            del self._thinking[game.id]
            if move is not None and game.apply_computer_move(move, version):
                self._save(game)
                self._schedule(game)
            elif error and game.version == version:
                game.error = error

    def wait_idle(self, game_id: str, timeout: float = 30.0) -> None:
        """Block until the computer is not thinking about this game (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if game_id not in self._thinking:
                    return
            time.sleep(0.01)
        raise TimeoutError(f"the computer is still thinking about game {game_id} after {timeout} s")

    def close(self) -> None:
        self._stop.set()
        with self.lock:
            for game_id in list(self._thinking):
                self._cancel(game_id)
        if self._own_pool:
            self.pool.close()

    # -- information --------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        with self.lock:
            last = self.games.get(self.last_id) if self.last_id else None
            last_summary = None
            if last is not None:
                result, termination, _ = last.result()
                last_summary = {
                    "id": last.id,
                    "mode": last.mode,
                    "result": result,
                    "termination": termination,
                    "moves": len(last.board.move_stack),
                    "opponent": last.opponent,
                    "human": last.view()["human"],
                }
            return {
                "rules_name": self.rules_name,
                "rules": self.rules.to_dict(),
                "ranks": list(self.rules.ranks()),
                "terrain": terrain(),
                "levels": [level.to_dict() for level in available_levels()],
                "rule_sets": rule_set_choices(self.rules_name, self.rules),
                "modes": list(MODES),
                "paces": list(PACES),
                "hints_per_game": HINTS_PER_GAME,
                "default_opponent": self.default_opponent,
                "default_pace": self.default_pace,
                "last_game": last_summary,
                "load_error": self.load_error,
                "preparing": self.pool.preparing,
                "limits": {
                    "body_bytes": MAX_BODY,
                    "records": MAX_RECORDS,
                    "replay_plies": MAX_REPLAY_PLIES,
                    "live_games": MAX_LIVE_GAMES,
                    "move_seconds": self.move_seconds,
                },
            }


def replay(body: dict[str, Any]) -> dict[str, Any]:
    """Parse uploaded JSONL text and return a summary of every record plus the frames of one."""
    _only(body, {"jsonl", "index"}, "replay")
    text = body.get("jsonl")
    if not isinstance(text, str) or not text.strip():
        raise PlayError("field 'jsonl' must hold the text of a JSONL game-record file")
    records = []
    try:
        for rec in parse_jsonl(text.splitlines(), lambda i: f"line {i} of the record file"):
            records.append(rec)
            if len(records) > MAX_RECORDS:
                raise PlayError(f"the file holds more than {MAX_RECORDS} games; split it")
    except (RecordError, TypeError, ValueError, RecursionError) as e:
        if isinstance(e, PlayError):
            raise
        raise PlayError(str(e) if not isinstance(e, RecursionError) else "a record is nested too deeply") from None
    index = body.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(records):
        raise PlayError(f"index {str(index)[:20]!r} is not a game number in 0..{len(records) - 1}")
    rec = records[index]
    try:
        shown = replay_frames(rec)
        ranks = list(RuleSet.from_dict(rec.rules).ranks())
    except (RecordError, RuleSetError) as e:
        raise PlayError(f"game {index + 1}: {e}") from None
    games = [
        {
            "index": i,
            "red": str(r.red)[:80],
            "blue": str(r.blue)[:80],
            "result": r.result,
            "termination": r.termination,
            "moves": len(r.moves),
        }
        for i, r in enumerate(records)
    ]
    record = {
        "start": rec.start,
        "moves": rec.moves,
        "result": rec.result,
        "termination": rec.termination,
        "red": str(rec.red)[:200],
        "blue": str(rec.blue)[:200],
        "rules": rec.rules,
    }
    return {"count": len(records), "games": games, "index": index, "record": record, "ranks": ranks, **shown}


def _only(body: dict[str, Any], allowed: set[str], what: str) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise PlayError(
            f"unknown field(s) {', '.join(k[:40] for k in unknown[:5])} in {what} request"
            + (f"; allowed: {', '.join(sorted(allowed))}" if allowed else "")
        )


class PlayHandler(BaseHTTPRequestHandler):
    """Routes requests to the server's GameStore; every answer is JSON or a page file, every error JSON."""

    server: "PlayServer"
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT  # a client that stalls (or lies about Content-Length) loses its connection
    _consumed = False  # whether this request's body has been read
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def handle(self) -> None:
        """Serve the connection's requests, each in one of the server's places; wait for each apart."""
        self.close_connection = True
        kept_alive = False
        while self.server.await_request(self.connection, self.rfile, kept_alive):
            with self.server.serving_place():
                self.handle_one_request()
            if self.close_connection:
                return
            kept_alive = True

    # -- responses ----------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str, headers: Optional[dict[str, str]] = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in {**SECURITY_HEADERS, **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj: Any, status: int = 200) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), "application/json; charset=utf-8")

    def _error(self, status: int, message: str, headers: Optional[dict[str, str]] = None) -> None:
        headers = dict(headers or {})
        if not self._consumed and (
            (self.headers.get("Content-Length") or "0").strip() not in ("", "0")
            or self.headers.get("Transfer-Encoding")
        ):
            # The body was never read: it would be taken for the next request on this connection.
            self.close_connection = True
            headers["Connection"] = "close"
        self._send(status, json.dumps({"error": message}).encode("utf-8"), "application/json; charset=utf-8", headers)

    def send_error(self, code: int, message: Optional[str] = None, explain: Optional[str] = None) -> None:
        """The standard library's own refusals (bad request line, unknown method...) as JSON, not HTML."""
        self.close_connection = True
        text = message or HTTPStatus(code).phrase
        if code == HTTPStatus.NOT_IMPLEMENTED:
            code, text = HTTPStatus.METHOD_NOT_ALLOWED, f"{text}; the server answers GET, HEAD and POST"
        body = json.dumps({"error": text}).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.send_header("Allow", "GET, HEAD, POST")
        for k, v in SECURITY_HEADERS.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    # -- checks -------------------------------------------------------------------------
    def _check_host(self) -> None:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]").lower()
        if host not in ("127.0.0.1", "localhost", "::1", ""):
            # A page on another site reaching us through its own DNS name (DNS rebinding).
            raise RequestRefused(
                HTTPStatus.BAD_REQUEST, f"requests must be addressed to 127.0.0.1 or localhost, not {host[:80]!r}"
            )

    def _check_from_page(self) -> None:
        """A state-changing request must come from the page itself (see the module docstring)."""
        origin = self.headers.get("Origin")
        if origin is not None and origin not in self.server.origins:
            raise RequestRefused(
                HTTPStatus.FORBIDDEN, f"requests from other sites are refused (Origin {origin[:80]!r})"
            )
        site = (self.headers.get("Sec-Fetch-Site") or "").lower()
        if site not in ("", "same-origin", "none"):
            raise RequestRefused(
                HTTPStatus.FORBIDDEN, f"requests from other sites are refused (Sec-Fetch-Site {site[:20]!r})"
            )
        token = self.headers.get(TOKEN_HEADER) or ""
        if not hmac.compare_digest(token.encode("utf-8", "replace"), self.server.token.encode("ascii")):
            raise RequestRefused(
                HTTPStatus.FORBIDDEN,
                f"missing or wrong {TOKEN_HEADER}: the page's requests carry "
                "it; reload the page (the server may have been restarted)",
            )

    def _body(self) -> dict[str, Any]:
        if self.headers.get("Transfer-Encoding"):
            raise RequestRefused(
                HTTPStatus.LENGTH_REQUIRED, "chunked request bodies are not accepted; send a Content-Length"
            )
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            # Only a JSON body makes a browser ask (CORS preflight) before another site may send it.
            raise RequestRefused(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                f"request body must be sent as application/json, not {ctype[:60] or 'no content type'!r}",
            )
        lengths = self.headers.get_all("Content-Length") or ["0"]
        if len(set(lengths)) != 1:
            raise RequestRefused(HTTPStatus.BAD_REQUEST, "conflicting Content-Length headers")
        text = lengths[0].strip()
        if not text.isdigit() or len(text) > 12:
            raise RequestRefused(HTTPStatus.BAD_REQUEST, f"bad Content-Length {text[:20]!r}")
        length = int(text)
        if length > MAX_BODY:
            raise RequestRefused(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"request body of {length} bytes is too large (at most {MAX_BODY})"
            )
        raw = self.rfile.read(length) if length else b""
        self._consumed = True
        if len(raw) != length:
            self.close_connection = True
            raise RequestRefused(HTTPStatus.BAD_REQUEST, f"request body ended after {len(raw)} of {length} bytes")
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise PlayError(f"request body is not valid JSON: {str(e)[:200]}") from None
        except RecursionError:
            raise PlayError("request body is not valid JSON: nested too deeply") from None
        if not isinstance(data, dict):
            raise PlayError(f"request body must be a JSON object, got {type(data).__name__}")
        return data

    # -- routing ------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    # Any other method (PUT, DELETE, OPTIONS: no CORS preflight is ever granted...) reaches `send_error`
    # as 501 from the standard library and is answered there as a JSON 405.

    def _dispatch(self, method: str) -> None:
        self._consumed = False
        path = urlsplit(self.path).path
        if method != "POST" and (
            (self.headers.get("Content-Length") or "0").strip() != "0" or self.headers.get("Transfer-Encoding")
        ):
            self.close_connection = True  # a body nobody reads must not be taken for the next request
        try:
            self._check_host()
            if path.startswith("/api/"):
                self._api(method, [p for p in path[len("/api/") :].split("/") if p])
            elif method in ("GET", "HEAD"):
                self._static(path)
            else:
                raise RequestRefused(HTTPStatus.METHOD_NOT_ALLOWED, f"{method} {path[:80]} is not supported")
        except RequestRefused as e:
            self._error(e.status, str(e), {"Allow": "GET, HEAD, POST"} if e.status == 405 else None)
        except PlayError as e:
            self._error(e.status, str(e))
        except TimeoutError:
            self.close_connection = True  # the client stalled mid-body; nothing sensible to answer
        except Exception as e:  # noqa: BLE001 - report, never kill the server thread silently
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {type(e).__name__}")

    def _static(self, path: str) -> None:
        if path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            return
        name = "index.html" if path in ("/", "/index.html") else path.lstrip("/")
        try:
            target = (WEB_DIR / name).resolve()
            found = WEB_DIR in target.parents and target.is_file()
        except OSError:  # a name the file system refuses (too long, say) names no page
            found = False
        if not found:
            raise RequestRefused(HTTPStatus.NOT_FOUND, f"no page {path[:80]!r}")
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if ctype.startswith("text/") or ctype.endswith("javascript"):
            ctype += "; charset=utf-8"
        try:
            data = target.read_bytes()
        except OSError as e:  # out of file descriptors, say: the page is there, it cannot be read now
            raise RequestRefused(
                HTTPStatus.SERVICE_UNAVAILABLE, f"the page file {target.name} cannot be read now: {e.strerror or e}"
            ) from None
        if target.name == "index.html":
            data = data.replace(TOKEN_PLACEHOLDER, self.server.token.encode("ascii"))
        self._send(HTTPStatus.OK, data, ctype)

    def _api(self, method: str, parts: list[str]) -> None:
        store = self.server.store
        body: dict[str, Any] = {}
        if method == "POST":
            self._check_from_page()
            body = self._body()
        route = "/".join(parts)
        get = method in ("GET", "HEAD")
        if get and route == "info":
            self._json(store.info())
        elif method == "POST" and route == "games":
            game = store.create(body)
            self._json(store.view(game), HTTPStatus.CREATED)
        elif get and route == "games/last":
            self._json(store.view(store.last()))
        elif method == "POST" and route == "replay":
            self._json(replay(body))
        elif len(parts) == 2 and parts[0] == "games" and get:
            self._json(store.view(store.get(parts[1])))
        elif len(parts) == 3 and parts[0] == "games" and get and parts[2] == "record":
            game = store.get(parts[1])
            with store.lock:
                text = game.record().to_json() + "\n"
            self._send(
                HTTPStatus.OK,
                text.encode("utf-8"),
                "application/x-ndjson; charset=utf-8",
                {"Content-Disposition": f'attachment; filename="jungle-{game.id}.jsonl"'},
            )
        elif (
            len(parts) == 3
            and parts[0] == "games"
            and method == "POST"
            and parts[2] in ("move", "undo", "hint", "resign", "settings")
        ):
            self._json(store.act(parts[1], parts[2], body))
        else:
            raise RequestRefused(HTTPStatus.NOT_FOUND, f"no API endpoint {method} /api/{route[:80]}")


class PlayServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer on 127.0.0.1 holding one GameStore and this run's page token.

    At most `max_connections` requests are served at once; the next ones wait
    their turn. A connection waits for its next request (its first byte) apart,
    holding no place: at most `max_idle_connections` wait so, and accepting one
    more closes the longest waiting; past `max_connections +
    max_idle_connections` open connections the next wait in the listen queue.
    A spare file descriptor is held so that a process out of descriptors still
    accepts (and answers) one connection at a time, and the accept loop pauses
    instead of spinning on a connection it cannot take."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # a burst of the page's requests must queue, not be reset
    max_connections = MAX_CONNECTIONS
    max_idle_connections = MAX_IDLE_CONNECTIONS

    def __init__(self, store: GameStore, port: int = DEFAULT_PORT, verbose: bool = False) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port {port!r} is not in 0..65535")
        self.store = store
        self.verbose = verbose
        self.token = secrets.token_urlsafe(24)
        """The page's proof of origin: written into `/`, required on every POST."""
        self._live: set[socket.socket] = set()
        self._idle: OrderedDict[socket.socket, None] = OrderedDict()  # waiting for a request, oldest first
        self._serving = 0
        self._live_changed = threading.Condition()
        self._spare = _open_spare()
        self._spare_holder: Optional[socket.socket] = None
        try:
            super().__init__(("127.0.0.1", port), PlayHandler)
        except BaseException:
            if self._spare is not None:
                os.close(self._spare)
            raise
        p = self.server_address[1]
        self.origins = frozenset({f"http://127.0.0.1:{p}", f"http://localhost:{p}", f"http://[::1]:{p}"})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    @property
    def live_connections(self) -> int:
        """Requests being served now (at most `max_connections`)."""
        with self._live_changed:
            return self._serving

    @property
    def idle_connections(self) -> int:
        """Connections open now that wait for a request (at most `max_idle_connections`)."""
        with self._live_changed:
            return len(self._idle)

    def _make_room_for_idle(self) -> None:
        """Close the longest waiting idle connections until one more fits (under `_live_changed`)."""
        while self._idle and len(self._idle) >= self.max_idle_connections:
            oldest, _ = self._idle.popitem(last=False)
            try:
                oldest.shutdown(socket.SHUT_RDWR)  # its thread wakes up to an end of input and closes it
            except OSError:
                pass

    def await_request(self, connection: socket.socket, rfile: Any, kept_alive: bool) -> bool:
        """Wait, holding no serving place, until `connection` brings a request; False: it closed,
        stayed silent past `SOCKET_TIMEOUT`, or was closed to make room for a newer one.

        A new connection waits from its accept on (`get_request`); a kept-alive one from here."""
        with self._live_changed:
            if kept_alive:
                self._make_room_for_idle()
                self._idle[connection] = None
        try:
            arrived = bool(rfile.peek(1))  # what is buffered already, else waits for the first byte
        except OSError:  # the socket timeout, or the connection reset
            arrived = False
        with self._live_changed:
            if connection not in self._idle:
                return False  # closed to make room meanwhile
            del self._idle[connection]
        return arrived

    @contextmanager
    def serving_place(self) -> Iterator[None]:
        """One of the `max_connections` places, held while one request is read and answered."""
        with self._live_changed:
            self._live_changed.wait_for(lambda: self._serving < self.max_connections)
            self._serving += 1
        try:
            yield
        finally:
            with self._live_changed:
                self._serving -= 1
                self._live_changed.notify_all()

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept one connection, within the caps; out of descriptors, on the spare one (OSError: none now)."""
        with self._live_changed:
            self._make_room_for_idle()
            cap = self.max_connections + self.max_idle_connections
            if not self._live_changed.wait_for(lambda: len(self._live) < cap, ACCEPT_PAUSE):
                raise BlockingIOError(errno.EAGAIN, "the connection cap is reached")  # the loop comes back
        on_spare = False
        try:
            request, address = self.socket.accept()
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            request, address = self._accept_on_spare()
            on_spare = True
        with self._live_changed:
            self._live.add(request)
            self._idle[request] = None  # a new connection waits for its request like a kept-alive one
            if on_spare:
                self._spare_holder = request
        return request, address

    def _accept_on_spare(self) -> tuple[socket.socket, Any]:
        """Free the spare descriptor for the waiting connection; pause first when there is none."""
        with self._live_changed:
            if self._spare is None:
                self._spare = _open_spare()
            spare, self._spare = self._spare, None
        if spare is None:
            time.sleep(ACCEPT_PAUSE)  # a connection is waiting that no descriptor can take: do not spin
            raise OSError(errno.EMFILE, "out of file descriptors")
        os.close(spare)
        try:
            return self.socket.accept()
        except OSError:
            with self._live_changed:
                self._spare = _open_spare()
            time.sleep(ACCEPT_PAUSE)
            raise

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        with self._live_changed:
            self._live.discard(request)
            self._idle.pop(request, None)
            if request is self._spare_holder:
                self._spare_holder = None
                if self._spare is None:
                    self._spare = _open_spare()  # the descriptor this connection just gave back
            self._live_changed.notify_all()

    def server_close(self) -> None:
        self.store.close()
        super().server_close()
        with self._live_changed:
            spare, self._spare = self._spare, None
        if spare is not None:
            os.close(spare)


def _open_spare() -> Optional[int]:
    """A descriptor held in reserve for a connection accepted when the process has none left."""
    try:
        return os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return None


def make_server(
    *,
    port: int = DEFAULT_PORT,
    state_dir: Optional[str | Path] = DEFAULT_STATE_DIR,
    rules: Optional[RuleSet] = None,
    rules_name: str = "default",
    default_opponent: str = "beginner",
    default_pace: str = "quick",
    verbose: bool = False,
    pool: Optional[ComputerWorkers] = None,
    checkpoint_dirs: Iterable[str | Path] = CHECKPOINT_DIRS,
    move_seconds: float = MOVE_SECONDS,
) -> PlayServer:
    """A ready server (not yet serving); `port=0` picks a free port (see `.url`). `state_dir=None`: no saving.

    `pool` shares the computer's worker processes between servers (they are
    the caller's to close); by default the server starts and stops its own.
    `checkpoint_dirs` are where the page may load checkpoints from;
    `move_seconds` is the time per move of an opponent that is not a level."""
    sd = None if state_dir is None else Path(state_dir).expanduser()
    store = GameStore(
        rules=rules if rules is not None else RuleSet(),
        rules_name=rules_name,
        state_dir=sd,
        default_opponent=default_opponent,
        default_pace=default_pace,
        pool=pool,
        checkpoint_dirs=[Path(d) for d in checkpoint_dirs],
        move_seconds=move_seconds,
    )
    try:
        return PlayServer(store, port=port, verbose=verbose)
    except BaseException:
        store.close()
        raise

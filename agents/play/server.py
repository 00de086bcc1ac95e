"""The play page's server: static files plus a small JSON API, standard library only.

    server = make_server(port=0, state_dir="~/.jungle-zero")
    print(server.url)
    server.serve_forever()

API (JSON bodies; every error is `{"error": "..."}` with status 400, or 404 for an unknown game):

    GET  /api/info                     rule set in force, levels, paces, hints per game, the last game
    POST /api/games                    {mode, human, opponent, pace, start?, seed?} -> a new game's view
    GET  /api/games/last               the saved game (404 if none) - "continue last game"
    GET  /api/games/<id>               the game's view (`thinking` while the computer chooses)
    POST /api/games/<id>/move          {move: "a3a4"}
    POST /api/games/<id>/undo          against the computer: its reply and your move (one ply while it thinks)
    POST /api/games/<id>/hint          a suggested move (three per game)
    POST /api/games/<id>/resign
    POST /api/games/<id>/settings      {pace}
    GET  /api/games/<id>/record        the game as a GameRecord JSONL download
    POST /api/replay                   {jsonl, index?} -> the records in the text and the frames of one

The computer's move runs in a background thread per request; the game's
`version` makes a move computed before an undo harmless. The game in progress
is written atomically to `<state_dir>/last_game.json` after every change, so
it survives a reload of the page and a restart of the server.
"""

from __future__ import annotations

import json
import mimetypes
import random
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable, Optional
from urllib.parse import urlsplit

from envs.board import Board, Move
from envs.rules import RuleSet, RuleSetError, load_rules

from agents.io import atomic_write_json
from agents.play.game import HINTS_PER_GAME, LEVELS, MODES, PACES, PlayError, PlayGame, UnknownGameError, replay_frames
from agents.arena.records import GameRecord, RecordError, parse_jsonl

WEB_DIR = Path(__file__).resolve().parent / "web"
DEFAULT_PORT = 8765
DEFAULT_STATE_DIR = Path("~/.jungle-zero")
SAVE_NAME = "last_game.json"
MAX_BODY = 32 * 1024 * 1024  # a replay upload may be a whole tournament's JSONL


def resolve_rules(name: str = "default", overrides: Iterable[str] = ()) -> RuleSet:
    """The rule set `configs/rules/<name>.yaml` (or a yaml path) with `key=value` overrides; RuleSetError if unknown."""
    return load_rules(name).with_overrides(list(overrides))


class GameStore:
    """All games of this server, the saved last game, and the computer's thinking threads."""

    def __init__(self, *, rules: RuleSet, rules_name: str = "default", state_dir: Optional[Path] = None,
                 default_opponent: str = "beginner", default_pace: str = "quick") -> None:
        self.rules = rules
        self.rules_name = rules_name
        self.state_dir = state_dir
        self.default_opponent = default_opponent
        self.default_pace = default_pace
        self.lock = threading.RLock()
        self.games: dict[str, PlayGame] = {}
        self.last_id: Optional[str] = None
        self._thinking: dict[str, int] = {}  # game id -> version being thought about
        self._stop = threading.Event()
        self.load_error: Optional[str] = None
        self._load_saved()

    # -- saving -------------------------------------------------------------------------
    @property
    def save_path(self) -> Optional[Path]:
        return None if self.state_dir is None else self.state_dir / SAVE_NAME

    def _load_saved(self) -> None:
        path = self.save_path
        if path is None or not path.is_file():
            return
        try:
            game = PlayGame.from_saved(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, OSError) as e:
            # A damaged save must not stop the server; the page says why it cannot continue.
            self.load_error = f"the saved game in {path} could not be loaded: {e}"
            return
        self.games[game.id] = game
        self.last_id = game.id
        self._schedule(game)

    def _save(self, game: PlayGame) -> None:
        path = self.save_path
        if path is None or game.id != self.last_id:
            return
        atomic_write_json(path, game.to_saved())

    # -- requests -----------------------------------------------------------------------
    def get(self, game_id: str) -> PlayGame:
        game = self.games.get(game_id)
        if game is None:
            raise UnknownGameError(f"no game with id {game_id!r} (the server may have been restarted; "
                                   "use 'continue last game')")
        return game

    def view(self, game: PlayGame) -> dict[str, Any]:
        with self.lock:
            return game.view(thinking=self._thinking.get(game.id) == game.version)

    def create(self, body: dict[str, Any]) -> PlayGame:
        allowed = {"mode", "human", "opponent", "pace", "start", "seed"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise PlayError(f"unknown field(s) {', '.join(unknown)} in new-game request; allowed: {', '.join(sorted(allowed))}")
        game = PlayGame.new(mode=body.get("mode", "computer"), human=body.get("human", "red"),
                            opponent=body.get("opponent", self.default_opponent),
                            pace=body.get("pace", self.default_pace), rules=self.rules, rules_name=self.rules_name,
                            start=body.get("start"), seed=body.get("seed"))
        with self.lock:
            self.games[game.id] = game
            self.last_id = game.id
            self._save(game)
            self._schedule(game)
        return game

    def last(self) -> PlayGame:
        with self.lock:
            if self.last_id is None:
                raise UnknownGameError(self.load_error or "there is no saved game")
            game = self.games[self.last_id]
            self._schedule(game)
            return game

    def act(self, game_id: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
        """Apply one of move/undo/hint/resign/settings under the lock; returns the new view."""
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
                self._thinking.pop(game.id, None)
            elif action == "hint":
                _only(body, set(), "hint")
                extra["hint"] = game.request_hint()
            elif action == "resign":
                _only(body, set(), "resign")
                game.resign()
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

    # -- the computer -------------------------------------------------------------------
    def _schedule(self, game: PlayGame) -> None:
        """Start the computer's thread if it is to move and nobody thinks about this version yet."""
        if not game.computer_to_move() or self._thinking.get(game.id) == game.version:
            return
        self._thinking[game.id] = game.version
        threading.Thread(target=self._think, args=(game, game.version, game.board.copy()), daemon=True,
                         name=f"computer-{game.id}").start()

    def _think(self, game: PlayGame, version: int, board: Board) -> None:
        began = time.monotonic()
        least, most = PACES.get(game.pace, (0.0, 0.0))
        pause = random.uniform(least, most)
        try:
            move: Optional[Move] = game.computer_think(board)
        except Exception as e:  # noqa: BLE001 - the player failed; say so instead of hanging
            move = None
            error = f"the computer could not move: {e}"
        else:
            error = ""
        # The pace is the whole time from the person's move to the reply; stop early if undone.
        while not self._stop.is_set() and time.monotonic() - began < pause:
            if game.version != version:
                break
            self._stop.wait(min(0.05, pause))
        with self.lock:
            if self._thinking.get(game.id) == version:
                del self._thinking[game.id]
            if move is not None and game.apply_computer_move(move, version):
                self._save(game)
                self._schedule(game)
            elif error and game.version == version:
                game.error = error

    def wait_idle(self, game_id: str, timeout: float = 30.0) -> None:
        """Block until the computer is not thinking about this game (tests, terminal)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if game_id not in self._thinking:
                    return
            time.sleep(0.01)
        raise TimeoutError(f"the computer is still thinking about game {game_id} after {timeout} s")

    def close(self) -> None:
        self._stop.set()

    # -- records ------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        with self.lock:
            last = self.games.get(self.last_id) if self.last_id else None
            last_summary = None
            if last is not None:
                result, termination, _ = last.result()
                last_summary = {"id": last.id, "mode": last.mode, "result": result, "termination": termination,
                                "moves": len(last.board.move_stack), "opponent": last.opponent,
                                "human": last.view()["human"]}
            return {"rules_name": self.rules_name, "rules": self.rules.to_dict(), "ranks": list(self.rules.ranks()),
                    "levels": list(LEVELS), "modes": list(MODES), "paces": list(PACES),
                    "hints_per_game": HINTS_PER_GAME, "default_opponent": self.default_opponent,
                    "default_pace": self.default_pace, "last_game": last_summary, "load_error": self.load_error}


def replay(body: dict[str, Any]) -> dict[str, Any]:
    """Parse uploaded JSONL text and return a summary of every record plus the frames of one."""
    _only(body, {"jsonl", "index"}, "replay")
    text = body.get("jsonl")
    if not isinstance(text, str) or not text.strip():
        raise PlayError("field 'jsonl' must hold the text of a JSONL game-record file")
    try:
        records = list(parse_jsonl(text.splitlines(), lambda i: f"line {i} of the record file"))
    except (RecordError, TypeError) as e:
        raise PlayError(str(e)) from None
    index = body.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(records):
        raise PlayError(f"index {index!r} is not a game number in 0..{len(records) - 1}")
    rec = records[index]
    try:
        frames = replay_frames(rec)
    except RecordError as e:
        raise PlayError(f"game {index}: {e}") from None
    games = [{"index": i, "red": r.red, "blue": r.blue, "result": r.result, "termination": r.termination,
              "moves": len(r.moves)} for i, r in enumerate(records)]
    try:
        ranks = list(RuleSet.from_dict(rec.rules).ranks())
    except RuleSetError as e:
        raise PlayError(f"game {index}: {e}") from None
    return {"count": len(records), "games": games, "index": index, "record": json.loads(rec.to_json()),
            "ranks": ranks, "frames": frames}


def _only(body: dict[str, Any], allowed: set[str], what: str) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise PlayError(f"unknown field(s) {', '.join(unknown)} in {what} request")


class PlayHandler(BaseHTTPRequestHandler):
    """Routes requests to the server's GameStore; every error is a JSON body."""

    server: "PlayServer"
    protocol_version = "HTTP/1.1"
    _consumed = False  # whether this request's body has been read
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    # -- responses ----------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str, headers: Optional[dict[str, str]] = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj: Any, status: int = 200) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        headers = {}
        if not self._consumed and (self.headers.get("Content-Length") or "0").strip() not in ("", "0"):
            # The body was never read: it would be taken for the next request on this connection.
            self.close_connection = True
            headers["Connection"] = "close"
        self._send(status, json.dumps({"error": message}).encode("utf-8"), "application/json; charset=utf-8", headers)

    def _body(self) -> dict[str, Any]:
        # Requiring JSON makes a browser ask (CORS preflight) before another site may post here.
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        length_text = self.headers.get("Content-Length", "0") or "0"
        try:
            length = int(length_text)
        except ValueError:
            raise PlayError(f"bad Content-Length {length_text!r}") from None
        if length < 0 or length > MAX_BODY:
            raise PlayError(f"request body of {length} bytes is not allowed (at most {MAX_BODY})")
        raw = self.rfile.read(length) if length else b""
        self._consumed = True
        if not raw.strip():
            return {}
        if ctype != "application/json":
            raise PlayError(f"request body must be sent as application/json, not {ctype or 'no content type'!r}")
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise PlayError(f"request body is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise PlayError(f"request body must be a JSON object, got {type(data).__name__}")
        return data

    # -- routing ------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        self._consumed = False
        path = urlsplit(self.path).path
        try:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]").lower()
            if host not in ("127.0.0.1", "localhost", "::1", ""):
                # A page on another site reaching us through its own DNS name (DNS rebinding).
                raise PlayError(f"requests must be addressed to 127.0.0.1 or localhost, not {host!r}")
            if path.startswith("/api/"):
                self._api(method, [p for p in path[len("/api/"):].split("/") if p])
            elif method == "GET":
                self._static(path)
            else:
                self._error(HTTPStatus.METHOD_NOT_ALLOWED, f"{method} {path} is not supported")
        except PlayError as e:
            self._error(e.status, str(e))
        except Exception as e:  # noqa: BLE001 - report, never kill the server thread silently
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {type(e).__name__}: {e}")

    def _static(self, path: str) -> None:
        if path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            return
        name = "index.html" if path in ("/", "/index.html") else path.lstrip("/")
        target = (WEB_DIR / name).resolve()
        if WEB_DIR not in target.parents or not target.is_file():
            self._error(HTTPStatus.NOT_FOUND, f"no page {path!r}")
            return
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if ctype.startswith("text/") or ctype.endswith("javascript"):
            ctype += "; charset=utf-8"
        self._send(HTTPStatus.OK, target.read_bytes(), ctype)

    def _api(self, method: str, parts: list[str]) -> None:
        store = self.server.store
        body = self._body() if method == "POST" else {}
        route = "/".join(parts)
        if method == "GET" and route == "info":
            self._json(store.info())
        elif method == "POST" and route == "games":
            game = store.create(body)
            self._json(store.view(game), HTTPStatus.CREATED)
        elif method == "GET" and route == "games/last":
            self._json(store.view(store.last()))
        elif method == "POST" and route == "replay":
            self._json(replay(body))
        elif len(parts) == 2 and parts[0] == "games" and method == "GET":
            self._json(store.view(store.get(parts[1])))
        elif len(parts) == 3 and parts[0] == "games" and method == "GET" and parts[2] == "record":
            game = store.get(parts[1])
            with store.lock:
                text = game.record().to_json() + "\n"
            self._send(HTTPStatus.OK, text.encode("utf-8"), "application/x-ndjson; charset=utf-8",
                       {"Content-Disposition": f'attachment; filename="jungle-{game.id}.jsonl"'})
        elif len(parts) == 3 and parts[0] == "games" and method == "POST" and \
                parts[2] in ("move", "undo", "hint", "resign", "settings"):
            self._json(store.act(parts[1], parts[2], body))
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no API endpoint {method} /api/{route}")


class PlayServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer on 127.0.0.1 holding one GameStore."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, store: GameStore, port: int = DEFAULT_PORT, verbose: bool = False) -> None:
        self.store = store
        self.verbose = verbose
        super().__init__(("127.0.0.1", port), PlayHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def server_close(self) -> None:
        self.store.close()
        super().server_close()


def make_server(*, port: int = DEFAULT_PORT, state_dir: Optional[str | Path] = DEFAULT_STATE_DIR,
                rules: Optional[RuleSet] = None, rules_name: str = "default", default_opponent: str = "beginner",
                default_pace: str = "quick", verbose: bool = False) -> PlayServer:
    """A ready server (not yet serving); `port=0` picks a free port (see `.url`). `state_dir=None`: no saving."""
    sd = None if state_dir is None else Path(state_dir).expanduser()
    store = GameStore(rules=rules if rules is not None else RuleSet(), rules_name=rules_name, state_dir=sd,
                      default_opponent=default_opponent, default_pace=default_pace)
    return PlayServer(store, port=port, verbose=verbose)

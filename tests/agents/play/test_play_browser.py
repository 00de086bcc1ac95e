"""The play page end to end in a real headless Chromium (Debian's `chromium`, driven by Playwright).

The browser is never downloaded: `.ci/run` installs Debian's package. Missing
Chromium or Playwright is a failure with the fix in its message, never a skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from agents.arena.records import GameRecord
from agents.play.computer import ComputerWorkers
from agents.play.levels import LEVELS
from agents.play.server import PlayServer
from envs import Board
from envs.players import RandomPlayer
from tests.support import ROOT
from tests.support.play_helpers import start_server, stop_server

pytestmark = pytest.mark.slow  # every test here drives Chromium or a server end to end

VIEWPORT = {"width": 1100, "height": 780}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def server(tmp_path: Path, pool: ComputerWorkers) -> Iterator[PlayServer]:
    srv = start_server(tmp_path / "state", pool, default_opponent="beginner")
    yield srv
    stop_server(srv)


def page_at(browser: Any, server: PlayServer | str, viewport: dict[str, int]) -> Iterator[Any]:
    """The play page (of a server or at a URL) in a fresh browser context; JavaScript errors fail the test."""
    context = browser.new_context(viewport=viewport)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # Refused requests (an illegal move, say) are part of play; script errors are not.
    pg.on(
        "console",
        lambda m: (
            errors.append(m.text) if m.type == "error" and not m.text.startswith("Failed to load resource") else None
        ),
    )
    pg.set_default_timeout(120_000)  # a cold numba cache compiles the computer player on first use
    pg.goto(server if isinstance(server, str) else server.url)
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def page(browser: Any, server: PlayServer) -> Iterator[Any]:
    yield from page_at(browser, server, VIEWPORT)


@pytest.fixture
def phone(browser: Any, server: PlayServer) -> Iterator[Any]:
    yield from page_at(browser, server, PHONE)


def start_game(pg: Any, side: str = "red", opponent: str = "beginner") -> None:
    pg.wait_for_selector("#newgame:not([hidden])")
    pg.select_option("#ng-opponent", opponent)
    pg.check(f'input[name="side"][value="{side}"]')
    pg.select_option("#ng-pace", "instant")
    pg.click("#ng-start")
    pg.wait_for_selector("#newgame", state="hidden")


def wait_until(pg: Any, script: str, arg: Any = None, timeout: float = 120.0) -> None:
    """Poll `script` (a function of `arg`) until it is true. Not `wait_for_function`: its predicate is an
    eval inside the page, which the page's Content-Security-Policy rightly forbids."""
    deadline = time.monotonic() + timeout
    while not pg.evaluate(script, arg):
        assert time.monotonic() < deadline, f"timed out waiting for {script}"
        time.sleep(0.05)


def wait_plies(pg: Any, n: int) -> None:
    """Wait until the game shows `n` moves and it is the person's turn."""
    wait_until(pg, "n => document.body.dataset.turn === 'human' && state.game && state.game.moves.length === n", n)


def game(pg: Any) -> dict[str, Any]:
    return dict(pg.evaluate("state.game"))


def centre(pg: Any, square: str) -> tuple[float, float]:
    box = pg.locator(f'.sq[data-square="{square}"]').bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def drag(pg: Any, src: str, dst: str) -> None:
    x0, y0 = centre(pg, src)
    x1, y1 = centre(pg, dst)
    pg.mouse.move(x0, y0)
    pg.mouse.down()
    pg.mouse.move(x0 + 4, y0 + 8, steps=3)
    pg.mouse.move(x1, y1, steps=8)
    assert pg.locator(".ghost").count() == 1  # the piece follows the pointer
    pg.mouse.up()


def test_play_a_game_by_clicking_and_dragging(page: Any) -> None:
    pg = page
    start_game(pg)
    wait_plies(pg, 0)
    assert pg.locator(".piece").count() == 16

    # Click-to-move: a selected piece shows dots on its legal destinations.
    pg.click('.sq[data-square="a3"]')
    assert pg.locator('.sq[data-square="a3"].selected').count() == 1
    dots = sorted(pg.eval_on_selector_all(".sq .dot", "els => els.map(e => e.parentElement.dataset.square)"))
    assert dots == ["a2", "a4", "b3"]
    pg.uncheck("#opt-hints")  # the hints switch hides them
    assert pg.locator(".sq .dot").count() == 0
    pg.check("#opt-hints")
    pg.click('.sq[data-square="a4"]')
    wait_plies(pg, 2)
    g = game(pg)
    assert g["moves"][0] == "a3a4"
    last = g["moves"][1]
    assert sorted(pg.eval_on_selector_all(".sq.last", "els => els.map(e => e.dataset.square)")) == sorted(
        [last[:2], last[2:]]
    )

    # An illegal attempt is refused with the server's reason; nothing changes.
    pg.click('.sq[data-square="g3"]')
    pg.click('.sq[data-square="g5"]')
    pg.wait_for_selector("#message.error")
    assert "one square at a time" in pg.inner_text("#message")
    assert game(pg)["moves"] == g["moves"]

    # Esc clears a selection.
    pg.click('.sq[data-square="c3"]')
    assert pg.locator(".sq.selected").count() == 1
    pg.keyboard.press("Escape")
    assert pg.locator(".sq.selected").count() == 0

    # Drag-and-drop.
    legal = game(pg)["legal"]
    move = next(m for m in ("g3g4", "e3e4", "c3d3", *legal) if m in legal)
    drag(pg, move[:2], move[2:])
    wait_plies(pg, 4)
    assert game(pg)["moves"][2] == move and pg.locator(".ghost").count() == 0

    # A hint (H) highlights a suggested move; three per game.
    pg.keyboard.press("h")
    pg.wait_for_selector(".sq.hint")
    hint = game(pg)["hint"]
    assert hint in game(pg)["legal"] and pg.inner_text("#hints-left") == "2"
    assert sorted(pg.eval_on_selector_all(".sq.hint", "els => els.map(e => e.dataset.square)")) == sorted(
        [hint[:2], hint[2:]]
    )
    pg.click(f'.sq[data-square="{hint[:2]}"]')
    pg.click(f'.sq[data-square="{hint[2:]}"]')
    wait_plies(pg, 6)
    moves_after_six = game(pg)["moves"]

    # Undo takes back the computer's reply and the person's move: Z, then the button.
    pg.keyboard.press("z")
    wait_plies(pg, 4)
    pg.click("#btn-undo")
    wait_plies(pg, 2)
    assert game(pg)["moves"] == moves_after_six[:2]
    saved = game(pg)

    # Sounds were played for moves and for "your turn".
    log = pg.evaluate("window.jungleSoundLog")
    assert "move" in log and "turn" in log

    # Reload: the game in progress continues without a dialog.
    pg.reload()
    wait_plies(pg, 2)
    assert pg.locator("#newgame").is_hidden()
    again = game(pg)
    assert again["id"] == saved["id"] and again["moves"] == saved["moves"] and again["jfen"] == saved["jfen"]
    assert again["hints_left"] == 2
    assert pg.locator(".piece").count() == sum(1 for x in again["board"] if x)

    # Resign asks to confirm; the end is announced with its reason.
    pg.click("#btn-resign")
    pg.wait_for_selector("#confirm:not([hidden])")
    pg.click("#confirm-no")
    assert game(pg)["result"] == "*"
    pg.click("#btn-resign")
    pg.click("#confirm-yes")
    pg.wait_for_selector("#banner:not([hidden])")
    assert pg.inner_text("#banner-title") == "The computer wins"
    assert "Red resigned" in pg.inner_text("#banner-reason")
    assert "Red resigned" in pg.inner_text("#status")

    # The finished game downloads as a GameRecord line.
    href = pg.get_attribute("#banner-download", "href")
    text = pg.evaluate("url => fetch(url).then(r => r.text())", href)
    rec = GameRecord.from_dict(json.loads(text))
    assert rec.result == "0-1" and rec.termination == "resign" and rec.moves == saved["moves"]
    assert rec.blue == "alphabeta:level=beginner"


def test_board_renders(page: Any, tmp_path: Path) -> None:
    from PIL import Image

    pg = page
    start_game(pg)
    wait_plies(pg, 0)
    shot = tmp_path / "board.png"
    pg.locator("#board-frame").screenshot(path=str(shot))
    img = Image.open(shot).convert("RGB")
    sq = pg.evaluate("document.querySelector('.sq').getBoundingClientRect().width")
    # 7 x 9 squares plus the coordinate margins.
    assert 7 * sq <= img.width <= 7 * sq + 80 and 9 * sq <= img.height <= 9 * sq + 80
    colours = img.getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 200, "the board looks blank"
    px = img.load()

    # Water is blue-ish, land green-ish: sample b5 (water) and d5 (land).
    def sample(square: str) -> tuple[int, int, int]:
        box = pg.locator(f'.sq[data-square="{square}"]').bounding_box()
        frame = pg.locator("#board-frame").bounding_box()
        return px[int(box["x"] - frame["x"] + 8), int(box["y"] - frame["y"] + 8)]

    r, g, b = sample("b5")
    assert b > r + 40 and b > g, (r, g, b)
    r, g, b = sample("d5")
    assert g > r and g > b, (r, g, b)
    # Pieces with names and ranks.
    assert pg.inner_text('.sq[data-square="a3"] .piece .name') == "Elephant"
    assert pg.inner_text('.sq[data-square="a3"] .piece .rank') == "8"
    assert pg.locator(".sq.den").count() == 2 and pg.locator(".sq.trap").count() == 6
    assert pg.locator(".sq.water").count() == 12
    assert pg.inner_text("#files").split() == list("abcdefg")
    # The rules panel summarises the rules and shows the rule set in force.
    pg.click("#rules summary")
    assert "Only the Rat swims" in pg.inner_text("#rules")
    assert pg.inner_text("#rules-name") == "default"
    table = pg.inner_text("#rules-table")
    assert "rank order" in table and "120 plies" in table and "Elephant 8" in table
    keep = os.environ.get("JUNGLE_SCREENSHOT")
    if keep:
        pg.screenshot(path=keep)


def test_play_blue_flips_the_board_and_replay_viewer(page: Any, tmp_path: Path) -> None:
    pg = page
    start_game(pg, side="blue")
    wait_plies(pg, 1)  # the computer moved first
    assert pg.eval_on_selector(".sq", "e => e.dataset.square") == "g1"  # Blue at the bottom
    assert pg.inner_text("#files").split() == list("gfedcba")

    records = [
        GameRecord(moves=["a3a4", "a7a6"], result="*", red="x", blue="y"),
        GameRecord(moves=["g3g4", "g7g6", "g4g5"], result="*", red="p", blue="q"),
    ]
    f = tmp_path / "games.jsonl"
    f.write_text("".join(r.to_json() + "\n" for r in records))
    pg.set_input_files("#record-file", str(f))
    pg.wait_for_selector("#replay-controls:not([hidden])")
    assert pg.locator("#replay-game option").count() == 2
    pg.select_option("#replay-game", "1")
    wait_until(pg, "() => state.replay && state.replay.index === 1")
    assert pg.eval_on_selector(".sq", "e => e.dataset.square") == "a9"  # replays show Red at the bottom
    assert pg.inner_text("#rp-pos") == "0 / 3"
    pg.keyboard.press("ArrowRight")
    pg.click("#rp-next")
    assert pg.inner_text("#rp-pos") == "2 / 3"
    assert pg.locator('.sq[data-square="g6"] .piece[data-piece="e"]').count() == 1
    assert sorted(pg.eval_on_selector_all(".sq.last", "els => els.map(e => e.dataset.square)")) == ["g6", "g7"]
    pg.click("#rp-last")
    assert pg.locator('.sq[data-square="g5"] .piece[data-piece="R"]').count() == 1
    pg.click("#rp-close")
    wait_plies(pg, 1)
    assert pg.eval_on_selector(".sq", "e => e.dataset.square") == "g1"

    # Two players on one screen, with the sound switched off.
    pg.click("#btn-new")
    pg.check('input[name="mode"][value="two_players"]')
    pg.click("#ng-start")
    wait_plies(pg, 0)
    assert pg.eval_on_selector(".sq", "e => e.dataset.square") == "a9"
    pg.uncheck("#opt-sound")
    sounds = pg.evaluate("window.jungleSoundLog.length")
    for move, n in (("a3a4", 1), ("a7a6", 2)):
        pg.click(f'.sq[data-square="{move[:2]}"]')
        pg.click(f'.sq[data-square="{move[2:]}"]')
        wait_plies(pg, n)
    assert pg.evaluate("window.jungleSoundLog.length") == sounds
    assert "Red to move" in pg.inner_text("#status")
    pg.keyboard.press("u")
    wait_plies(pg, 1)
    assert "Blue to move" in pg.inner_text("#status")


# --- polish: phone layout, move list, captures, trapped ranks, hints, navigation --------------------
def quiet_moves(n: int, seed: int = 3) -> list[str]:
    """`n` legal plies from the start that do not end the game (a long game for the move list)."""
    board, player, moves = Board(), RandomPlayer(seed=seed), []
    while len(moves) < n:
        m = player.select_move(board)
        trial = board.copy()
        trial.push(m)
        if trial.outcome() is None:
            board.push(m)
            moves.append(str(m))
    return moves


def api_game(pg: Any, body: dict[str, Any], moves: list[str]) -> None:
    """Start a game and play `moves` through the page's own API helper, then show it."""
    pg.evaluate(
        """async ([body, moves]) => {
        let v = await api('POST', 'games', body);
        for (const m of moves) v = await api('POST', `games/${v.id}/move`, {move: m});
        hideNewGame(); setGame(v, true);
    }""",
        [body, moves],
    )


def boxes_inside(pg: Any, selector: str, width: int, height: int) -> list[str]:
    """Every visible element matching `selector` whose box leaves the viewport (an empty list when all fit)."""
    return pg.evaluate(
        """([sel, w, h]) => [...document.querySelectorAll(sel)]
        .filter(e => e.offsetParent !== null || getComputedStyle(e).position === 'fixed')
        .map(e => [e.id || e.className || e.tagName, e.getBoundingClientRect()])
        .filter(([, r]) => r.width > 0 && (r.left < -0.5 || r.top < -0.5 || r.right > w + 0.5 || r.bottom > h + 0.5))
        .map(([n, r]) => `${n}: ${Math.round(r.left)},${Math.round(r.top)}-`
                         + `${Math.round(r.right)},${Math.round(r.bottom)}`)""",
        [selector, width, height],
    )


def test_phone_layout_long_move_list_and_end_of_game_box(phone: Any, tmp_path: Path) -> None:
    from PIL import Image

    pg = phone
    pg.wait_for_selector("#newgame:not([hidden])")
    assert boxes_inside(pg, "#newgame .card, #newgame .card *", PHONE["width"], PHONE["height"]) == []
    moves = quiet_moves(60)
    api_game(pg, {"mode": "two_players"}, moves)
    wait_plies(pg, 60)
    assert pg.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # nothing spills sideways
    assert boxes_inside(pg, "#board-frame, #panel, #movelist", PHONE["width"], 10_000) == []

    # One scrolling list numbered in moves, each ply with its animal and a capture mark.
    rows = pg.eval_on_selector_all("#movelist li", "els => els.map(e => [e.innerText, e.getBoundingClientRect().left])")
    assert len(rows) == 30 and len({left for _, left in rows}) == 1
    assert rows[0][0].split() == [
        "1.",
        *game(pg)["plies"][0]["notation"].split(),
        *game(pg)["plies"][1]["notation"].split(),
    ]
    notations = pg.eval_on_selector_all("#movelist .mv", "els => els.map(e => e.textContent)")
    assert len(notations) == 60 and all(re.fullmatch(r"[RCDWPTLE] [a-g][1-9]x?[a-g][1-9]", n) for n in notations)
    assert pg.inner_text("#moves-count") == "(30)"
    assert pg.evaluate(
        "(() => { const l = document.getElementById('movelist'); return l.scrollHeight > l.clientHeight; })()"
    )
    current = pg.evaluate("""(() => { const l = document.getElementById('movelist').getBoundingClientRect();
        const c = document.querySelector('#movelist .current').getBoundingClientRect();
        return c.top >= l.top - 1 && c.bottom <= l.bottom + 1; })()""")
    assert current, "the last move is scrolled into view"

    # The end-of-game box fits the phone's screen, buttons included.
    pg.click("#btn-resign")
    pg.click("#confirm-yes")
    pg.wait_for_selector("#banner:not([hidden])")
    assert boxes_inside(pg, "#banner, #banner *", PHONE["width"], PHONE["height"]) == []
    shot = tmp_path / "phone-over.png"
    pg.screenshot(path=str(shot))
    assert Image.open(shot).size == (PHONE["width"], PHONE["height"])
    keep = os.environ.get("JUNGLE_SCREENSHOT_DIR")
    if keep:
        pg.screenshot(path=str(Path(keep) / "phone-over.png"))


def test_captures_trapped_ranks_hint_arrow_and_typed_moves(page: Any) -> None:
    pg = page
    pg.wait_for_selector("#newgame:not([hidden])")
    # Blue's Rat stands in Red's trap d2; Red's Tiger can take the Cat on c3.
    api_game(pg, {"mode": "two_players", "start": "6l/7/7/7/7/7/1Tc4/3r3/L6 r 0 1"}, [])
    wait_plies(pg, 0)
    rat = pg.locator('.sq[data-square="d2"] .piece')
    assert rat.locator(".rank").inner_text() == "0" and "trapped" in (rat.get_attribute("class") or "")
    assert pg.inner_text('.sq[data-square="g9"] .piece .rank') == "7"
    # Keyboard: type the piece's square, then the destination.
    for key in "b3c3":
        pg.keyboard.press(key)
    wait_plies(pg, 1)
    assert game(pg)["moves"] == ["b3c3"]
    assert pg.inner_text("#movelist .mv.red") == "T b3xc3"
    assert pg.eval_on_selector_all("#captured-red .chip", "els => els.length") == 1
    assert pg.inner_text("#captured-red .lead") == "+2"  # the Cat's rank
    # A hint is an arrow; asking again in the same position is free.
    pg.keyboard.press("h")
    pg.wait_for_selector("#arrows line.hint-arrow", state="attached")
    hint = game(pg)["hint"]
    assert pg.get_attribute("#arrows line.hint-arrow", "data-move") == hint and pg.inner_text("#hints-left") == "2"
    pg.click("#btn-hint")
    pg.wait_for_selector("#message:has-text('asking again here is free')")
    assert game(pg)["hint"] == hint and pg.inner_text("#hints-left") == "2"


def test_levels_from_the_server_and_remembered_choices(page: Any) -> None:
    pg = page
    pg.wait_for_selector("#newgame:not([hidden])")
    levels = pg.evaluate("state.info.levels.map(l => l.name)")
    options = pg.eval_on_selector_all("#ng-opponent option", "els => els.map(e => e.value)")
    assert options == [*levels, "custom"] and levels[:4] == ["beginner", "normal", "network", "expert"]
    assert pg.locator(".sq.water").count() == len(pg.evaluate("state.info.terrain.water"))  # terrain from the server
    pg.select_option("#ng-opponent", "normal")
    pg.check('input[name="side"][value="blue"]')
    pg.select_option("#ng-pace", "natural")
    pg.click("#ng-start")
    wait_plies(pg, 1)
    assert game(pg)["opponent"] == "alphabeta:level=normal" and game(pg)["pace"] == "natural"
    assert "Normal" in pg.inner_text("#matchup")
    pg.click("#btn-new")
    assert pg.input_value("#ng-opponent") == "normal" and pg.input_value("#ng-pace") == "natural"
    assert pg.is_checked('input[name="side"][value="blue"]')


def test_a_record_before_the_first_game_and_its_end(page: Any, tmp_path: Path) -> None:
    pg = page
    pg.wait_for_selector("#newgame:not([hidden])")
    f = tmp_path / "won.jsonl"
    f.write_text(
        GameRecord(start="2R4/7/6e/7/7/7/7/7/7 r 0 1", moves=["c9d9"], result="1-0", termination="den").to_json() + "\n"
    )
    pg.set_input_files("#ng-record-file", str(f))
    pg.wait_for_selector("#replay-controls:not([hidden])")
    assert pg.locator("#newgame").is_hidden()
    pg.click("#rp-last")
    assert "1-0: Red entered Blue's den" in pg.inner_text("#status")
    pg.click("#rp-close")
    pg.wait_for_selector("#newgame:not([hidden])")  # no game yet: back to the dialog


# --- the first hour: a cold numba cache, failures shown -------------------------------------------
def _level(name: str) -> Any:
    return next(level for level in LEVELS if level.name == name)


def test_the_network_level_opens_on_an_empty_numba_cache(browser: Any, tmp_path: Path) -> None:
    """A fresh install: the page says it is preparing, then the network plays its first move, no error."""
    # Empty: every kernel compiles, and is cached for the workers. NUMBA_OPT=1 (less of LLVM's optimisation than
    # numba's default) compiles them in less time.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), NUMBA_OPT="1")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "play.py"), "--port", "0", "--no-browser", "--state-dir", str(tmp_path / "state")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=env,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True).start()

    def line(prefix: str, timeout: float = 900) -> str:
        deadline = time.monotonic() + timeout
        while not any(x.startswith(prefix) for x in lines):
            assert proc.poll() is None, f"play.py stopped: {lines}"
            assert time.monotonic() < deadline, f"no line {prefix!r} in {lines}"
            time.sleep(0.05)
        return next(x for x in lines if x.startswith(prefix))

    try:
        url = line("Jungle play page: ").split()[3]
        assert line("Preparing the computer", timeout=60)  # said at start-up, right after the URL
        for pg in page_at(browser, url, VIEWPORT):
            pg.wait_for_selector("#newgame:not([hidden])")
            pg.select_option("#ng-opponent", "network")
            pg.check('input[name="side"][value="blue"]')  # the network opens
            pg.select_option("#ng-pace", "instant")
            pg.click("#ng-start")
            wait_until(
                pg,
                "() => document.getElementById('message').textContent.startsWith('Preparing the computer')",
                timeout=60,
            )  # the first Start on an empty cache says why it waits
            wait_until(
                pg, "() => !!(state.game && (state.game.moves.length === 1 || state.game.computer_error))", timeout=900
            )
            g = game(pg)
            assert g["computer_error"] is None and pg.locator("#message.error").count() == 0, g["computer_error"]
            assert len(g["moves"]) == 1 and g["opponent"] == _level("network").spec and g["turn"] == "human"
            assert line("The computer is ready (warm-up ")  # the warm-up it waited for is announced
            assert not any(x.startswith("warning:") for x in lines), lines
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_a_failed_computer_move_and_an_unsaved_game_are_shown(
    browser: Any, tmp_path: Path, pool: ComputerWorkers
) -> None:
    state = tmp_path / "state"
    srv = start_server(state, pool, move_seconds=0.5, default_opponent=f"gated:gate={tmp_path / 'never'}")
    try:
        for pg in page_at(browser, srv, VIEWPORT):
            pg.wait_for_selector("#newgame:not([hidden])")
            assert pg.input_value("#ng-opponent") == "custom"  # the command line's opponent, a spec
            pg.check('input[name="side"][value="red"]')
            pg.select_option("#ng-pace", "instant")
            pg.click("#ng-start")
            wait_plies(pg, 0)
            assert pg.locator("#save-warning").is_hidden()
            shutil.rmtree(state)
            state.write_text("")  # the state directory is gone, a file has its name
            pg.click('.sq[data-square="a3"]')
            pg.click('.sq[data-square="a4"]')
            pg.wait_for_selector("#save-warning:not([hidden])")
            assert "could not be saved" in pg.inner_text("#save-warning") and str(state) in pg.inner_text(
                "#save-warning"
            )
            assert game(pg)["moves"] == ["a3a4"]
            # The computer never answers: stopped at its limit, the page says so and stops "thinking".
            pg.wait_for_selector("#message.error", timeout=60_000)
            assert "could not move" in pg.inner_text("#message")
            assert "thinking" not in pg.inner_text("#status") and pg.locator("#status .thinking").count() == 0
            assert "the computer could not move" in pg.inner_text("#status")
            assert pg.evaluate("document.body.dataset.thinking") == "0"
    finally:
        stop_server(srv)

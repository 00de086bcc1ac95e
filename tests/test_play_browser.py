"""The play page end to end in a real headless Chromium (Debian's `chromium`, driven by Playwright).

The browser is never downloaded: `.ci/run` installs Debian's package. Missing
Chromium or Playwright is a failure with the fix in its message, never a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from agents.play.server import PlayServer, make_server
from agents.arena.records import GameRecord

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1100, "height": 780}


def chromium_path() -> str:
    path = os.environ.get("JUNGLE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        pytest.fail("the browser tests need Debian's chromium: run `apt-get install -y chromium` "
                    "(as .ci/run does), or set JUNGLE_CHROMIUM to a Chromium binary", pytrace=False)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need Playwright for Python: pip install -e '.[test]' "
                    "(do not run `playwright install`; Debian's chromium is used)", pytrace=False)
    exe = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[PlayServer]:
    srv = make_server(port=0, state_dir=tmp_path / "state", default_opponent="beginner", default_pace="instant")
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def page(browser: Any, server: PlayServer) -> Iterator[Any]:
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_default_timeout(120_000)  # a cold numba cache compiles the computer player on first use
    pg.goto(server.url)
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def start_game(pg: Any, side: str = "red", opponent: str = "beginner") -> None:
    pg.wait_for_selector("#newgame:not([hidden])")
    pg.select_option("#ng-opponent", opponent)
    pg.check(f'input[name="side"][value="{side}"]')
    pg.select_option("#ng-pace", "instant")
    pg.click("#ng-start")
    pg.wait_for_selector("#newgame", state="hidden")


def wait_plies(pg: Any, n: int) -> None:
    """Wait until the game shows `n` moves and it is the person's turn."""
    pg.wait_for_function(
        "n => document.body.dataset.turn === 'human' && state.game && state.game.moves.length === n", arg=n)


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
    assert sorted(pg.eval_on_selector_all(".sq.last", "els => els.map(e => e.dataset.square)")) == \
        sorted([last[:2], last[2:]])

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
    assert sorted(pg.eval_on_selector_all(".sq.hint", "els => els.map(e => e.dataset.square)")) == \
        sorted([hint[:2], hint[2:]])
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

    # Reload: "Continue last game" resumes it.
    pg.reload()
    pg.wait_for_selector("#continue-box:not([hidden])")
    assert "2 moves" in pg.inner_text("#continue-info")
    pg.click("#btn-continue")
    wait_plies(pg, 2)
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

    records = [GameRecord(moves=["a3a4", "a7a6"], result="*", red="x", blue="y"),
               GameRecord(moves=["g3g4", "g7g6", "g4g5"], result="*", red="p", blue="q")]
    f = tmp_path / "games.jsonl"
    f.write_text("".join(r.to_json() + "\n" for r in records))
    pg.set_input_files("#record-file", str(f))
    pg.wait_for_selector("#replay-controls:not([hidden])")
    assert pg.locator("#replay-game option").count() == 2
    pg.select_option("#replay-game", "1")
    pg.wait_for_function("state.replay && state.replay.index === 1")
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

"""Fixtures shared by the play tests: a worker pool, a client of a server on it, a browser.

The helpers behind them (tests/support/play_helpers.py) are imported when a
fixture is first used, so collecting other tests imports nothing of the play page.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

if TYPE_CHECKING:
    from agents.play.computer import ComputerWorkers
    from tests.support.play_helpers import Client


@pytest.fixture(scope="module")
def pool() -> Iterator[ComputerWorkers]:
    """One set of worker processes for a test module (each takes a moment to start)."""
    from tests.support.play_helpers import make_pool

    with make_pool() as p:
        yield p


@pytest.fixture
def client(tmp_path: Path, pool: ComputerWorkers) -> Iterator[Client]:
    """A server saving into `tmp_path`, opponent `random` at the instant pace, and a client of it."""
    from tests.support.play_helpers import Client, start_server, stop_server

    server = start_server(tmp_path, pool)
    yield Client(server)
    stop_server(server)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium under Playwright (never a downloaded browser); a failure names the fix, never a skip."""
    from tests.support.play_helpers import CHROMIUM_ARGS, chromium_path

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "the browser tests need Playwright for Python: pip install -e '.[test]' "
            "(do not run `playwright install`; Debian's chromium is used)",
            pytrace=False,
        )
    exe = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()

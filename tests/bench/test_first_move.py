"""bench/first_move.py times a level's first move in a fresh process on an empty numba cache, then on the filled one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from envs.board import Board
from envs.notation import START_JFEN
from tests.support import ROOT

SPEC = importlib.util.spec_from_file_location("first_move", ROOT / "bench" / "first_move.py")
assert SPEC is not None and SPEC.loader is not None
first_move = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(first_move)


def test_a_level_name_is_played_as_the_page_plays_it() -> None:
    from agents.play.levels import LEVELS

    network = next(level for level in LEVELS if level.name == "network")
    spec, seconds = first_move.level_spec("network")
    assert spec.startswith(network.spec.split(",")[0] + ",") and "time=1" in spec
    assert seconds == network.seconds
    assert first_move.level_spec("random") == ("random", 10.0)  # a spec that is no level: the page's default time


def test_each_level_is_timed_on_an_empty_cache_then_on_the_one_it_filled(tmp_path: Path) -> None:
    rows = first_move.run(["random"], cache_dir=tmp_path)
    assert [row["cache"] for row in rows] == ["empty", "filled"]
    assert any((tmp_path / "random").rglob("*.nbi"))  # the first process compiled into the given directory
    for row in rows:
        board = Board.from_jfen(START_JFEN)
        first, second = row["moves"]
        board.push(first)  # both moves are legal, one after the other
        board.push(second)
        assert row["process_s"] >= row["imports_s"] + row["build_s"] + row["first_move_s"] + row["second_move_s"] > 0


def test_a_cache_directory_that_holds_kernels_is_refused(tmp_path: Path) -> None:
    (tmp_path / "random").mkdir()
    (tmp_path / "random" / "old.nbi").write_bytes(b"")
    with pytest.raises(SystemExit, match="not empty"):
        first_move.run(["random"], cache_dir=tmp_path)

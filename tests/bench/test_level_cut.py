"""bench/level_cut.py: where the level rule would have ended games played without it, and how those games ended."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np

from agents.alphazero.selfplay.games import SelfPlayConfig
from agents.arena.records import GameRecord
from envs.notation import START_JFEN
from tests.support import ROOT

SPEC = importlib.util.spec_from_file_location("level_cut", ROOT / "bench" / "level_cut.py")
assert SPEC is not None and SPEC.loader is not None
level_cut = importlib.util.module_from_spec(SPEC)
sys.modules.setdefault("level_cut", level_cut)  # its dataclass looks its module up
SPEC.loader.exec_module(level_cut)


def test_the_tally_finds_each_games_first_level_ply_and_sorts_the_games_by_how_they_ended() -> None:
    rule = SelfPlayConfig(level_plies=4, level_window=3, level_margin=0.1)
    quiet = np.full(12, 0.05, np.float32)  # level from the start: cut at ply 4, 8 positions saved
    late = np.array([0.5] * 6 + [0.0] * 4, np.float32)  # level once plies 6-8 are searched: cut at 9
    loud = np.full(12, 0.3, np.float32)  # never level
    won = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.08, -0.02, 0.08, 0.9, 0.9], np.float32)  # level at 8, then won
    games = [
        (GameRecord(result="1/2-1/2", termination="ply_cap"), quiet),
        (GameRecord(result="1/2-1/2", termination="repetition"), late),
        (GameRecord(result="1-0", termination="den"), loud),
        (GameRecord(start=START_JFEN, result="0-1", termination="den"), won),
    ]
    t = level_cut.tally(games, rule)
    assert (t.cut, t.drawn, t.won, t.ended) == (1, 1, 1, 3)
    assert t.saved == (12 - 4) + (10 - 9) + (10 - 8)
    # The won game's last three positions before ply 8 (plies 5, 6, 7: Blue, Red, Blue to move), from Red:
    # -0.08, -0.02, -0.08; signed toward Blue, the winner: +0.06.
    assert len(t.toward) == 1 and abs(t.toward[0] - 0.06) < 1e-6
    assert level_cut.tally(games, SelfPlayConfig(level_plies=20, level_window=3, level_margin=0.1)).ended == 0

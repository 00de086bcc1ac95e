"""bench/holes.py: a player's moves on mined positions, scored by the miner's alpha-beta check."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from envs import RuleSet
from tests.support import ROOT

SPEC = importlib.util.spec_from_file_location("holes", ROOT / "bench" / "holes.py")
assert SPEC is not None and SPEC.loader is not None
holes = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(holes)

POSITIONS = (
    "1d2c1t/7/l1pw2e/1r5/E6/3P3/5R1/2WD1L1/CT5 b 41 21",  # the Rat on b6 takes the Elephant on a6
    "l6/1d3c1/2p1we1/r6/6t/6R/1E2P2/CW3D1/1T4L r 12 7",
    "7/1d3c1/l1p1we1/r6/7/7/2E4/tW1PDL1/1T5 r 6 14",
)


def test_alpha_beta_at_the_miners_depth_has_no_holes_and_a_random_player_falls_in() -> None:
    rules = RuleSet()
    searched = holes.measure("alphabeta:depth=4", POSITIONS, 4, 300, rules)
    assert (searched["positions"], searched["holes"], searched["mean_deficit"]) == (3, 0, 0)
    shallow = holes.measure("random", POSITIONS, 4, 300, rules)
    assert shallow["holes"] >= 1 and shallow["mean_deficit"] > 0
    lo, hi = shallow["interval"]
    assert lo <= shallow["share"] <= hi


def test_the_wilson_interval() -> None:
    lo, hi = holes.wilson(5, 10)
    assert abs(lo - 0.2366) < 1e-3 and abs(hi - 0.7634) < 1e-3
    assert holes.wilson(0, 0) == (0.0, 1.0)


def test_the_script_prints_and_writes_its_figures(tmp_path) -> None:
    starts = tmp_path / "holes.txt"
    starts.write_text("# mined\n" + POSITIONS[0] + "\n")
    out = tmp_path / "holes.json"
    r = subprocess.run(
        [sys.executable, "bench/holes.py", "--starts", str(starts), "alphabeta:depth=4", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "1 positions of" in r.stdout and "alphabeta:depth=4" in r.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [(row["player"], row["holes"]) for row in rows] == [("alphabeta:depth=4", 0)]


def test_the_paired_comparison_counts_the_positions_one_player_alone_falls_into() -> None:
    first = {"deficits": [0, 400, 500, 0, 350]}
    other = {"deficits": [301, 0, 600, 0, 0]}
    assert holes.paired(first, other, 300) == (1, 2, 1.0)
    assert holes.mcnemar(0, 0) == 1.0
    assert abs(holes.mcnemar(0, 10) - 2 / 1024) < 1e-12  # all ten splits one way
    assert abs(holes.mcnemar(3, 7) - 0.34375) < 1e-9


def test_a_tagged_file_is_played_under_each_lines_rules_and_counted_by_rule_set() -> None:
    tagged = (f"{POSITIONS[0]} rules=enemy_rat", f"{POSITIONS[1]} rules=keeps_rank", POSITIONS[2])
    row = holes.measure("random", tagged, 4, 300, RuleSet())
    counts = {name: c["positions"] for name, c in row["by_rules"].items()}
    assert counts == {"enemy_rat": 1, "keeps_rank": 1, "untagged": 1}
    assert sum(c["holes"] for c in row["by_rules"].values()) == row["holes"]
    searched = holes.measure("alphabeta:depth=4", tagged, 4, 300, RuleSet())
    assert searched["holes"] == 0  # the player and the judge play the same rules on each line

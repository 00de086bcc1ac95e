"""bench/rule_inputs.py: positions where the rule sets differ, checked by the engine, and how a network reads them."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from envs.encoding import N_ACTIONS, RULE_FIRST_PLANE
from tests.support import ROOT
from tests.support.checkpoints import mixed_checkpoint

SPEC = importlib.util.spec_from_file_location("rule_inputs", ROOT / "bench" / "rule_inputs.py")
assert SPEC is not None and SPEC.loader is not None
rule_inputs = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = rule_inputs  # its dataclass looks its module up there
SPEC.loader.exec_module(rule_inputs)

# The key move of each position in the engine's words: under the default rules, and under each rule set that
# changes it (RULES.md read by hand; every other rule set of the position plays it as the default rules do).
KEY_MOVES = {
    "river rat beside a bank rat": ("illegal", {"rats_ignore_water": "legal, takes the Rat"}),
    "Lion jump over its own rat": ("illegal", {"enemy_rat": "legal, takes the Wolf"}),
    "Leopard in the enemy trap beside a Cat": ("illegal", {"keeps_rank": "legal, takes the Cat"}),
    "Dog facing a Wolf": ("illegal", {"dog_over_wolf": "legal, takes the Wolf"}),
    "third repetition, Red two pieces down": ("legal, draws (repetition)", {"no_repetition": "legal"}),
    "Tiger's fourth entry in seven moves (7-3)": ("legal", {"anti_chase": "illegal"}),
    "119 plies without capture, Red two pieces up": ("legal, draws (no capture limit)", {"hundred_rounds": "legal"}),
}
N_ROWS = sum(len(p.rule_sets()) for p in rule_inputs.PROBES)


def blind(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Logits from the pieces only (planes 0-15), never the rule planes; value 0.1."""
    pieces = obs[:, :16].reshape(len(obs), -1).sum(axis=1, keepdims=True)
    logits = np.tile(np.linspace(0.0, 3.0, N_ACTIONS, dtype=np.float32), (len(obs), 1)) + 0.01 * pieces
    return np.where(mask, logits, np.finfo(np.float32).min), np.full(len(obs), 0.1, np.float32)


def reads_two_rules(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value +0.5 under rats_ignore_water (rule plane 25), -0.25 under the anti-chase rules (plane 31)."""
    value = 0.5 * obs[:, RULE_FIRST_PLANE + 1, 0, 0] - 0.25 * obs[:, RULE_FIRST_PLANE + 7, 0, 0]
    return np.where(mask, 0.0, np.finfo(np.float32).min).astype(np.float32), value.astype(np.float32)


def test_every_position_shows_its_difference_under_the_engine_and_nowhere_else() -> None:
    rows = rule_inputs.measure(blind)
    assert len(rows) == N_ROWS and {r["position"] for r in rows} == set(KEY_MOVES)
    for r in rows:
        base, changed = KEY_MOVES[r["position"]]
        assert r["key_move_here"] == changed.get(r["rules"], base), r
        assert r["differs"] == (r["rules"] in changed), r
    assert sorted(r["rules"] for r in rows if r["differs"]) == sorted(n for _, c in KEY_MOVES.values() for n in c)


def test_the_priors_mask_the_rules_own_moves_and_the_shared_mask_is_one_per_position() -> None:
    rows = rule_inputs.measure(blind)
    for r in rows:
        assert (r["key_prior"] == 0.0) == (r["key_move_here"] == "illegal"), r
        assert 0.0 < r["key_prior_shared"] < 1.0 and r["value"] == pytest.approx(0.1)
        board = rule_inputs.probe_board(
            next(p for p in rule_inputs.PROBES if p.name == r["position"]), rule_inputs.load_rules(r["rules"])
        )
        assert board.is_legal(r["top_move"]) and r["top_prior"] >= r["key_prior"]
    for name in KEY_MOVES:  # an evaluator blind to the rule planes gives every rule set one shared-mask prior
        shared = {r["key_prior_shared"] for r in rows if r["position"] == name}
        assert len(shared) == 1, (name, shared)


def test_each_row_is_evaluated_under_its_own_rules() -> None:
    for r in rule_inputs.measure(reads_two_rules):
        expected = {"rats_ignore_water": 0.5, "anti_chase": -0.25}.get(r["rules"], 0.0)
        assert r["value"] == pytest.approx(expected), r


@pytest.mark.parametrize(
    "probe, wrong",
    [
        # Both rats on land: they capture each other under every rule set.
        (
            rule_inputs.Probe("land rats", "l5t/7/7/7/r6/R6/4E2/7/T5L r 0 1", (), "a4a5", ("rats_ignore_water",)),
            "differ",
        ),
        # The difference is there, under another rule set than the one named.
        (rule_inputs.Probe("river rat, wrong rules", rule_inputs.PROBES[0].jfen, (), "b5a5", ("enemy_rat",)), "differ"),
        # The difference is there, but not in the key move (b5b4 is a step in the river under every rule set).
        (
            rule_inputs.Probe(
                "river rat, other key",
                "l5t/1d3c1/2p1w1e/7/rR5/7/E1W1P2/1C3D1/T5L r 0 1",
                (),
                "b5b4",
                ("rats_ignore_water",),
            ),
            "key move b5b4 is the same",
        ),
        (rule_inputs.Probe("illegal history", rule_inputs.PROBES[0].jfen, ("a1a3",), "b5a5", ()), "illegal move"),
        (rule_inputs.Probe("game over", "3R3/7/7/7/7/7/7/7/T5l b 0 1", (), "g1g2", ()), "already over"),
    ],
)
def test_a_wrong_position_is_refused(probe: object, wrong: str) -> None:
    with pytest.raises(rule_inputs.PositionError, match=wrong):
        rule_inputs.check_probe(probe)


def test_the_script_measures_a_mixed_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = mixed_checkpoint(tmp_path / "mix.pt", rule_inputs.RULE_SETS)
    out = tmp_path / "rows.json"
    rule_inputs.main(["--checkpoint", str(path), "--json", str(out)])
    printed = capsys.readouterr().out
    assert "| position | rules | differs |" in printed and "trained on default, keeps_rank" in printed
    record = json.loads(out.read_text())
    rows = record["rows"]
    assert len(rows) == N_ROWS and printed.count("\n| ") >= N_ROWS + len(rule_inputs.PROBES)
    assert record["trained_rules"] == list(rule_inputs.RULE_SETS)
    assert {r["rules"] for r in rows if not r["trained"]} == {"no_repetition", "hundred_rounds"}
    for r in rows:
        base, changed = KEY_MOVES[r["position"]]
        assert r["key_move_here"] == changed.get(r["rules"], base)
        assert math.isfinite(r["value"]) and -1.0 <= r["value"] <= 1.0
        for key in ("key_prior", "key_prior_shared", "top_prior"):
            assert 0.0 <= r[key] <= 1.0
    assert [p["name"] for p in record["positions"]] == list(KEY_MOVES)


def test_a_missing_checkpoint_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        rule_inputs.main(["--checkpoint", str(tmp_path / "none.pt"), "--json", str(tmp_path / "rows.json")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "none.pt" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "rows.json").exists()

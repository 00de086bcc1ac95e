"""The checkpoint player's options: one dataclass, the same player by keywords or by spec."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agents.alphazero.player.options import CheckpointOptions
from agents.alphazero.player.player import CheckpointPlayer
from envs.players import PlayerSpecError, make_player
from tests import support

SHIPPED = support.ROOT / "checkpoints" / "shipped" / "results-only-60.pt"


def test_keywords_and_spec_build_the_same_player() -> None:
    """`CheckpointPlayer(path, time=0.5)` searches as `checkpoint:path=...,time=0.5` does: 32 simulations a round,
    and the same precision."""
    by_keywords = CheckpointPlayer(str(SHIPPED), time=0.5, leaf_batch=8)
    by_spec = make_player(f"checkpoint:path={SHIPPED},time=0.5,leaf_batch=8")
    assert isinstance(by_spec, CheckpointPlayer)
    assert by_keywords.mcts == by_spec.mcts


# one value other than the default and one refused value (None: the option refuses no string) per option
SAMPLES: dict[str, tuple[Any, Any]] = {
    "path": ("shipped:default-180", None),
    "sims": (200, 0),
    "time": (0.5, -1.0),
    "stretch": (2.0, 0.5),
    "algorithm": ("puct", "alphabeta"),
    "leaf_batch": (8, 1000),
    "max_actions": (4, 0),
    "c_scale": (0.5, -1.0),
    "reuse": (True, "yes"),
    "policy_temperature": (1.5, 0.0),
    "draw_value": (-0.5, 2.0),
    "tablebase": (True, "yes"),
    "device": ("cpu", "gpu9"),
    "threads": (2, 100000),
    "precision": ("bf16", "fp16"),
    "cache": (0, -1),
    "guard": (0.25, -1.0),
    "guard_margin": (200, -1),
    "name": ("mine", None),
    "any_rules": (True, "yes"),
}


NEEDS: dict[str, dict[str, Any]] = {"stretch": {"time": 1.0}}
"""Options that are refused without another one."""


def _spelled(value: Any) -> str:
    """`value` as a spec writes it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_every_option_has_samples() -> None:
    assert set(SAMPLES) == {f.name for f in dataclasses.fields(CheckpointOptions)}


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_keywords_and_spec_give_the_same_options(key: str) -> None:
    """Each option, given as a keyword or as a spec's string, makes the same resolved options (alone and with a
    time budget, whose defaults depend on it), and a refused value the same one line from both routes."""
    good, bad = SAMPLES[key]
    base = {"path": str(SHIPPED), **NEEDS.get(key, {})}
    for extra in ({}, {"time": 2.0}):
        keywords = {**base, **extra, key: good}
        spec = {k: _spelled(v) for k, v in keywords.items()}
        assert CheckpointOptions(**keywords).resolved() == CheckpointOptions.from_spec(spec).resolved()
    if bad is None:
        return
    with pytest.raises(PlayerSpecError) as by_keywords:
        CheckpointOptions(**base, **{key: bad})
    with pytest.raises(PlayerSpecError) as by_spec:
        CheckpointOptions.from_spec({**base, key: _spelled(bad)})
    assert str(by_keywords.value) == str(by_spec.value)
    line = str(by_keywords.value)
    assert line.startswith("player 'checkpoint': ") and _spelled(bad) in line and "\n" not in line


def test_defaults_that_depend_on_others_are_resolved_once() -> None:
    """`time` makes 32 simulations a round and Gumbel's timed settings the defaults; 16 leaves a call make bf16
    allowed (`auto`)."""
    plain = CheckpointOptions(path="p").resolved()
    timed = CheckpointOptions(path="p", time=0.5, leaf_batch=16).resolved()
    assert (plain.sims, plain.precision, plain.max_actions, plain.c_scale) == (100, "fp32", None, None)
    assert (timed.sims, timed.precision, timed.max_actions, timed.c_scale) == (32, "auto", 16, 0.1)


def test_spec_refusals_name_the_option() -> None:
    with pytest.raises(PlayerSpecError, match="has no option.s. simz; known: algorithm, any_rules"):
        CheckpointOptions.from_spec({"path": "p", "simz": "3"})
    with pytest.raises(PlayerSpecError, match="sims='many' must be an integer"):
        CheckpointOptions.from_spec({"path": "p", "sims": "many"})
    with pytest.raises(PlayerSpecError, match="needs path="):
        CheckpointOptions.from_spec({"sims": "3"})
    with pytest.raises(PlayerSpecError, match="guard=1.0 must be less than time=1.0"):
        CheckpointOptions(path="p", time=1.0, guard=1.0)


def test_the_page_table_is_the_generated_one() -> None:
    """docs/evaluation.md's table of the checkpoint options is `CheckpointOptions.table()`'s."""
    assert CheckpointOptions.table() in (support.ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")


def test_the_play_page_limits_read_the_options_bounds() -> None:
    """The page's limits of a checkpoint spec are the options' bounds, narrowed only by its named constants."""
    from agents.play import specs
    from agents.play.errors import PlayError

    limits = specs._spec_limits("checkpoint")
    assert limits["sims"] == (CheckpointOptions.option_bounds("sims")[0], specs.PAGE_MAX_SIMS)
    assert limits["threads"][0] == max(CheckpointOptions.option_bounds("threads")[0], specs.PAGE_MIN_THREADS)
    with pytest.raises(PlayError, match=f"sims={specs.PAGE_MAX_SIMS + 1} is outside the page's limits"):
        specs.bounded_spec(f"checkpoint:path=p,sims={specs.PAGE_MAX_SIMS + 1}", 1.0)

"""A training run's mix of rule sets (`train.rules_mix`): parsed and checked, drawn per self-play game from the
game's own seed, and written into the run's checkpoints.

    mix = parse_rules_mix(["default", "keeps_rank:2"])   # keeps_rank drawn twice as often as default
    draw_rules(mix, game_seed(seed, k)).rules              # the rules of self-play game k
    state["rules_mix"] = mix_state(mix)                    # [{"name", "weight", "rules": RuleSet.to_dict()}, ...]

An entry is a rule-set name of `configs/rules/` or a yaml path, optionally followed by ``:WEIGHT`` (a
positive finite number, 1 by default; the weights' sum must be finite too). A path's name is its file name
without the suffix. An empty mix means the run plays the single top-level `rules` group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from envs.config import ConfigError, shown
from envs.rules import RuleSet, RuleSetError, load_rules
from envs.seeding import derive_seed


class RulesMixError(ConfigError):
    """A bad `train.rules_mix` entry (names it)."""


@dataclass(frozen=True)
class MixEntry:
    """One rule set of a mix: its name (the tag of its evaluation, ``eval/<name>/...``), its weight and rules."""

    name: str
    weight: float
    rules: RuleSet


MIX_CONFLICTS: tuple[tuple[str, Callable[[Any, Any], bool]], ...] = (
    ("mcts.tablebase", lambda mcts, selfplay: bool(mcts.tablebase)),
    ("train.selfplay.tablebase_adjudicate", lambda mcts, selfplay: bool(selfplay.tablebase_adjudicate)),
    ("train.selfplay.tablebase_rescore", lambda mcts, selfplay: bool(selfplay.tablebase_rescore)),
    ("train.selfplay.opponent_fraction", lambda mcts, selfplay: selfplay.opponent_fraction > 0),
)
"""The settings a mix of rule sets cannot play with, each a key and whether (`MCTSConfig`, `SelfPlayConfig`) set
it: endgame tables belong to one rule set, and so do the opponents' players."""


def check_mix_compatible(mcts: Any, selfplay: Any) -> None:
    """RulesMixError naming the first of `MIX_CONFLICTS` that the search settings `mcts` or the self-play settings
    `selfplay` set: the one check of the run's config and of a self-play loop given a mix."""
    for key, on in MIX_CONFLICTS:
        if on(mcts, selfplay):
            raise RulesMixError(f"{key} cannot be used with train.rules_mix (the games play several rule sets)")


def parse_rules_mix(entries: Sequence[Any]) -> list[MixEntry]:
    """The mix of `entries` (``NAME`` or ``NAME:WEIGHT``, NAME a rule-set name or a yaml path); RulesMixError
    naming the entry for an unknown set, a bad rule file (`envs.rules.load_rules`' checks), a bad weight or a
    name given twice, and for weights whose sum is not a finite number (`check_weights`)."""
    if isinstance(entries, str):
        raise RulesMixError(
            f"train.rules_mix={shown(entries)} must be a list of rule sets, e.g. [default,keeps_rank:2]"
        )
    mix: list[MixEntry] = []
    for entry in entries:
        text = str(entry).strip()
        source, weight = text, 1.0
        head, sep, tail = text.rpartition(":")
        if sep:
            source = head.strip()
            try:
                weight = float(tail)
            except ValueError:
                raise RulesMixError(
                    f"train.rules_mix entry {shown(text)}: the weight {shown(tail.strip())} is not a number"
                ) from None
        if not source:
            raise RulesMixError(f"train.rules_mix entry {shown(text)} names no rule set")
        try:
            rules = load_rules(source)
        except RuleSetError as e:
            raise RulesMixError(f"train.rules_mix entry {shown(text)}: {e}") from None
        name = Path(source).stem if source.endswith((".yaml", ".yml")) else source
        if any(m.name == name for m in mix):
            raise RulesMixError(f"train.rules_mix entry {shown(text)}: the rule set {shown(name)} is in the mix twice")
        mix.append(MixEntry(name, weight, rules))
    check_weights(mix, [str(entry).strip() for entry in entries])
    return mix


def check_weights(mix: Sequence[MixEntry], entries: Optional[Sequence[str]] = None) -> None:
    """RulesMixError unless every weight of `mix` is a positive finite number and so is their sum (1e308 twice
    adds up to infinity, and every game would draw one rule set); `entries` name the entries, else their names."""
    shown_as = list(entries) if entries is not None else [m.name for m in mix]
    for m, text in zip(mix, shown_as):
        if not (isinstance(m.weight, (int, float)) and math.isfinite(m.weight) and m.weight > 0):
            raise RulesMixError(
                f"train.rules_mix entry {shown(text)}: the weight must be a positive finite number, "
                f"not {shown(m.weight)}"
            )
    total = sum(float(m.weight) for m in mix)
    if mix and not math.isfinite(total):
        raise RulesMixError(
            f"train.rules_mix: the weights add up to {total}, more than a float holds (scale them down; only "
            "their ratios count)"
        )


def draw_rules(mix: Sequence[MixEntry], seed: int) -> MixEntry:
    """The entry of `mix` a game seeded `seed` plays, drawn by weight from a generator of its own (so the
    game's other draws are those of the same game without a mix)."""
    weights = np.array([m.weight for m in mix], dtype=np.float64)
    u = np.random.default_rng(derive_seed(seed, "rules")).random()
    k = int(np.searchsorted(np.cumsum(weights) / weights.sum(), u, side="right"))
    return mix[min(k, len(mix) - 1)]


def mix_state(mix: Sequence[MixEntry]) -> list[dict[str, Any]]:
    """The mix as plain data: a checkpoint's ``rules_mix`` entry (`checkpoint.trained_rule_sets` reads it)."""
    return [{"name": m.name, "weight": float(m.weight), "rules": m.rules.to_dict()} for m in mix]

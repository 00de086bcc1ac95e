"""Rule sets: the named variants of RULES.md as one frozen dataclass.

A `RuleSet` is data. It compiles to a small int64 array (`RuleSet.flags()`)
that the numba kernels read; nothing else in the code base branches on a
variant name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, make_dataclass, replace
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Union, get_type_hints

import numpy as np

from envs.config import (
    ConfigError,
    check_choice,
    check_range,
    config_dir,
    config_kwargs,
    did_you_mean,
    group_options,
    read_config_file,
    shown,
)

if TYPE_CHECKING:
    import argparse

# Indices into the int64 flag array the kernels read.
F_DOG_OVER_WOLF = 0
F_RATS_IGNORE_WATER = 1
F_ENEMY_RAT_BLOCKS = 2
F_KEEPS_RANK = 3
F_REPETITION_DRAW = 4
F_NO_CAPTURE_LIMIT = 5
F_ANTI_CHASE = 6
F_RANK = 8  # F_RANK + animal (1..8) -> that animal's rank
N_FLAGS = 17

COUNTER_LIMIT = 30000
"""The most a game's counters reach: plies since its first position, plies since the last capture
(JFEN field 3) and the move number (JFEN field 4). JFEN writes and reads at most this, the kernels'
int16 state holds it, and a move that would take a counter past it is refused (`envs.board.Board.push`);
`no_capture_draw` is at most this too."""

_CHOICES: dict[str, tuple[str, ...]] = {
    "rank_order": ("standard", "dog_over_wolf"),
    "river_rats": ("strict", "rats_ignore_water"),
    "jump_blocking": ("any_rat", "enemy_rat"),
    "trapped_attacker": ("powerless", "keeps_rank"),
    "repetition": ("draw", "off"),
    "anti_chase": ("off", "7-3+17-5"),
}


class RuleSetError(ConfigError):
    """An unknown rule key or value."""


@dataclass(frozen=True)
class RuleSet:
    """One complete rule set of Jungle; the defaults are RULES.md's default rules."""

    rank_order: str = "standard"
    """`standard` (Wolf 4 > Dog 3) or `dog_over_wolf` (Dog 4 > Wolf 3)."""
    river_rats: str = "strict"
    """`strict` (water and land never capture each other) or `rats_ignore_water`."""
    jump_blocking: str = "any_rat"
    """`any_rat` (any rat in the river blocks a jump) or `enemy_rat`."""
    trapped_attacker: str = "powerless"
    """`powerless` (a piece in an opponent's trap captures nothing) or `keeps_rank`."""
    repetition: str = "draw"
    """`draw` (third occurrence of a position draws) or `off`."""
    no_capture_draw: int = 120
    """Plies without capture that draw the game; 0 switches the rule off. 0 to `COUNTER_LIMIT`."""
    anti_chase: str = "off"
    """`off` or `7-3+17-5` (the anti-chase rules of RULES.md)."""

    def __post_init__(self) -> None:
        check_choice(self, "rule ", RuleSetError, **_CHOICES)
        limit = self.no_capture_draw
        if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)):
            raise RuleSetError(f"rule no_capture_draw={shown(limit)} must be an integer")
        check_range(self, "rule ", RuleSetError, no_capture_draw=(0, COUNTER_LIMIT))

    # -- construction -------------------------------------------------------
    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "RuleSet":
        """Build from a mapping (a Hydra config node, a rule file, a checkpoint's, saved game's or record's rules).

        The one check of every rule mapping read: unknown keys, a choice that is not one of its strings and a
        `no_capture_draw` that is not a whole number (a bool, a text, a fraction) raise RuleSetError naming
        the key."""
        kwargs = config_kwargs(cls, values, "rule", RuleSetError)
        for key in _CHOICES:
            # YAML 1.1 readers turn a bare `off` into False; take it as meant.
            if kwargs.get(key) is False and "off" in _CHOICES[key]:
                kwargs[key] = "off"
        if "no_capture_draw" in kwargs:
            kwargs["no_capture_draw"] = _whole_number("no_capture_draw", kwargs["no_capture_draw"])
        return cls(**kwargs)

    def with_overrides(self, overrides: Iterable[str]) -> "RuleSet":
        """Apply `key=value` strings, e.g. `["rank_order=dog_over_wolf"]`."""
        changes: dict[str, Any] = {}
        known = {f.name for f in fields(self)}
        for item in overrides:
            if "=" not in item:
                raise RuleSetError(f"rule override {item!r} is not of the form key=value")
            key, value = (s.strip() for s in item.split("=", 1))
            if key not in known:
                raise RuleSetError(f"unknown rule key {key!r}; known keys: {', '.join(sorted(known))}")
            changes[key] = _as_int(key, value) if key == "no_capture_draw" else value
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    # -- compilation ---------------------------------------------------------
    def ranks(self) -> tuple[int, ...]:
        """Rank of each animal, indexed 0..8 (0 unused): Rat 1 ... Elephant 8."""
        r = [0, 1, 2, 3, 4, 5, 6, 7, 8]
        if self.rank_order == "dog_over_wolf":
            r[3], r[4] = 4, 3
        return tuple(r)

    def flags(self) -> np.ndarray:
        """The int64[N_FLAGS] array the kernels read."""
        f = np.zeros(N_FLAGS, dtype=np.int64)
        f[F_DOG_OVER_WOLF] = self.rank_order == "dog_over_wolf"
        f[F_RATS_IGNORE_WATER] = self.river_rats == "rats_ignore_water"
        f[F_ENEMY_RAT_BLOCKS] = self.jump_blocking == "enemy_rat"
        f[F_KEEPS_RANK] = self.trapped_attacker == "keeps_rank"
        f[F_REPETITION_DRAW] = self.repetition == "draw"
        f[F_NO_CAPTURE_LIMIT] = int(self.no_capture_draw)
        f[F_ANTI_CHASE] = self.anti_chase != "off"
        f[F_RANK : F_RANK + 9] = self.ranks()
        return f


RulesConfig: Any = make_dataclass(
    "RulesConfig",
    [(f.name, get_type_hints(RuleSet)[f.name], field(default=f.default)) for f in fields(RuleSet)],
    namespace={
        "__doc__": "The rule set (group `rules`): envs.rules.RuleSet's fields, documented there, in a dataclass "
        "that overrides can change (RuleSet is frozen).",
        "__post_init__": lambda self: self.rule_set(),
        "rule_set": lambda self: RuleSet.from_dict(asdict(self)),
    },
)


def _as_int(key: str, value: str) -> int:
    """The integer a ``--rule key=value`` text writes; RuleSetError for any other text (``true``, ``2.5``)."""
    try:
        return int(value)
    except ValueError:
        raise RuleSetError(f"rule {key}={shown(value)} must be an integer") from None


def _whole_number(key: str, value: Any) -> int:
    """`value` of a rule mapping as an int: an int or a whole float; RuleSetError for anything else (a bool,
    which yaml's ``true`` and JSON's ``true`` are and ``int`` would take as 1; a text; a fraction; NaN;
    infinity, which ``int`` would meet with OverflowError)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise RuleSetError(f"rule {key}={shown(value)} must be an integer")
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise RuleSetError(f"rule {key}={shown(value)} must be an integer")
    return int(value)


DEFAULT_RULES = RuleSet()


def rule_set_names() -> list[str]:
    """Names of the rule sets in the `rules` config group (`configs/rules/`), sorted."""
    return group_options("rules")


def load_rules(name_or_path: Union[str, Path]) -> RuleSet:
    """The RuleSet of a named set of the `rules` config group (`"dog_over_wolf"`) or of a yaml file.

    A file sets only RuleSet fields; the fields it leaves out keep their
    defaults. The named sets are found where the project is installed
    (`envs.config.config_dir`). Raises RuleSetError naming the set, the file
    or the key at fault."""
    text = str(name_or_path)
    path = Path(text)
    source: Union[Traversable, Path] = path
    if not (path.suffix in (".yaml", ".yml") or _is_file(path, text)):
        source = config_dir("rules") / f"{text}.yaml"
        if not _is_file(source, text):
            raise RuleSetError(
                f"unknown rule set {shown(text)}{did_you_mean(text, rule_set_names())}; known sets: "
                f"{', '.join(rule_set_names())} (or a path to a yaml file)"
            )
    elif not _is_file(path, text):
        raise RuleSetError(f"rule set file {shown(text)} does not exist")
    values = read_config_file(source, "rule set", RuleSetError)
    try:
        return RuleSet.from_dict(values)
    except RuleSetError as e:
        raise RuleSetError(f"rule set file {str(source)!r}: {e}") from None


def _is_file(path: Union[Traversable, Path], text: str) -> bool:
    """Whether `path` (named `text` by the caller) is a file; RuleSetError in one line for a name the file
    system refuses to look up (a component longer than it takes: ``OSError: File name too long``)."""
    try:
        return path.is_file()
    except OSError as e:
        raise RuleSetError(f"rule set {shown(text)} cannot be looked up: {e.strerror or e}") from None


RulesLike = Union[RuleSet, Mapping[str, Any], str, Path, None]
"""What a caller may pass for rules: a RuleSet, a mapping of rule keys, a rule-set name or yaml path, or None."""


def resolve_rules(rules: RulesLike = None, overrides: Optional[Iterable[str]] = None) -> RuleSet:
    """The one way from what a caller names to a RuleSet: the env, the vector env and play.py use it.

    `rules` is a RuleSet, a mapping of rule keys, a set of `configs/rules/`
    (`"dog_over_wolf"`) or a yaml path (`load_rules`), or None for the
    defaults; `overrides` are `key=value` strings applied on top
    (`RuleSet.with_overrides`). RuleSetError names what is wrong."""
    if rules is None:
        base = DEFAULT_RULES
    elif isinstance(rules, RuleSet):
        base = rules
    elif isinstance(rules, Mapping):
        base = RuleSet.from_dict(rules)
    elif isinstance(rules, (str, Path)):
        base = load_rules(rules)
    else:
        raise RuleSetError(f"rules must be a RuleSet, a mapping or a rule-set name, got {rules!r}")
    return base.with_overrides(list(overrides)) if overrides else base


def add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the rule options of every command line (play.py, ``python -m envs`` and its tablebase commands),
    read back by `rules_from_arguments`: ``--rules NAME``, a set of the `rules` config group (what train.py
    and evaluate.py call ``rules=NAME``) or a yaml file, and repeatable ``--rule KEY=VALUE`` on top (there
    ``rules.KEY=VALUE``)."""
    parser.add_argument(
        "--rules",
        default="default",
        metavar="NAME",
        help=f"rule set: {', '.join(rule_set_names())} (configs/rules/NAME.yaml) or a yaml file (default: default)",
    )
    parser.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one rule, e.g. --rule no_capture_draw=200 (repeatable)",
    )


def rules_from_arguments(args: argparse.Namespace) -> RuleSet:
    """The RuleSet that `add_rule_arguments`' options name; RuleSetError naming what is wrong (a single rule
    given to ``--rules`` names ``--rule``)."""
    if "=" in args.rules and not _is_file(Path(args.rules), args.rules):
        raise RuleSetError(f"--rules {args.rules}: --rules names a rule set; set one rule with --rule {args.rules}")
    return resolve_rules(args.rules, args.rule)

"""The page's opponents and rule sets: its named levels (`LEVELS`), the rule sets each plays, and the lobby's.

The page's opponents are data: `LEVELS` lists the named ones (a shipped network becomes a level with one more
entry), each with its time per move. A game is played under the rule set the person chose in the lobby
(`game_rules`); a level of a network plays the rule sets that network was trained on (`Level.rule_sets`) and
refuses others (`check_level_rules`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from agents.alphazero.net import shipped
from agents.play.errors import PlayError
from envs.players import parse_spec
from envs.rules import RuleSet, load_rules, rule_set_names

MOVE_SECONDS = 10.0
"""The most a computer move may take on the page unless its level says otherwise."""
GRACE_SECONDS = 3.0
"""Added to a move's time before its worker is killed (a search stopping at its own limit needs a moment)."""


@dataclass(frozen=True)
class Level:
    """A named opponent of the page: its spec, a line about it, and its time per move."""

    name: str
    label: str
    spec: str
    about: str
    seconds: float = MOVE_SECONDS
    """The most one move may take (alpha-beta stops its deepening there; any other player is stopped)."""

    def available(self) -> bool:
        """A level that names a checkpoint (a file, or a shipped network's entry) is offered only once that file is
        there."""
        kind, options = parse_spec(self.spec)
        try:
            return kind != "checkpoint" or shipped.resolve(options.get("path", "")).exists()
        except shipped.ShippedError:  # no manifest (an install without the shipped files) or no such entry
            return False

    def rule_sets(self) -> Optional[list[tuple[str, RuleSet]]]:
        """The (name, RuleSet) pairs a network level plays: its manifest entry's ``rules`` for a shipped network
        (a name or a list of names of `configs/rules/`), else those its checkpoint was trained on
        (`checkpoint.trained_rule_sets`, read once per file version); None for a level that plays any rules."""
        kind, options = parse_spec(self.spec)
        if kind != "checkpoint":
            return None
        path = options.get("path", "")
        if path.startswith(shipped.PREFIX):
            return [(name, _named_rules(name)) for name in shipped.network(path).rule_set_names]
        return _trained_rule_sets(Path(path))

    def to_dict(self) -> dict[str, Any]:
        rule_sets = self.rule_sets()
        return {
            "name": self.name,
            "label": self.label,
            "spec": self.spec,
            "about": self.about,
            "seconds": self.seconds,
            "rules": None if rule_sets is None else [name for name, _ in rule_sets],
        }


_TRAINED: dict[tuple[str, int, int], list[tuple[str, RuleSet]]] = {}
"""`Level.rule_sets` of checkpoint files read so far, by (path, size, mtime)."""


def _trained_rule_sets(path: Path) -> list[tuple[str, RuleSet]]:
    from agents.alphazero.net.checkpoint import load_checkpoint, resolve_checkpoint_path, trained_rule_sets

    file = resolve_checkpoint_path(path)
    stat = file.stat()
    key = (str(file), stat.st_size, stat.st_mtime_ns)
    if key not in _TRAINED:
        _TRAINED[key] = trained_rule_sets(load_checkpoint(file), file)
    return _TRAINED[key]


@functools.lru_cache(maxsize=None)
def _rule_set_names() -> tuple[str, ...]:
    """`rule_set_names`, read once: the server answers with no file descriptor to spare."""
    return tuple(rule_set_names())


@functools.lru_cache(maxsize=None)
def _named_rules(name: str) -> RuleSet:
    """`load_rules` of a set of `configs/rules/`, read once."""
    return load_rules(name)


def game_rules(name: Any) -> tuple[str, RuleSet]:
    """The rule set the lobby names (a set of `configs/rules/`) -> (its name, its RuleSet); PlayError naming the
    known sets otherwise."""
    known = _rule_set_names()
    if not isinstance(name, str) or name not in known:
        raise PlayError(f"rules {str(name)[:80]!r} is not a rule set of the page ({', '.join(known)})")
    return name, _named_rules(name)


def rule_set_choices(name: str, rules: RuleSet) -> list[dict[str, Any]]:
    """The lobby's rule sets: the server's own (`name`, `rules`) first, then every set of `configs/rules/`; each
    with its rules and ranks (what the rules panel shows)."""
    choices = [(name, rules)] + [(n, _named_rules(n)) for n in _rule_set_names() if n != name]
    return [{"name": n, "rules": r.to_dict(), "ranks": list(r.ranks())} for n, r in choices]


def check_level_rules(opponent: Any, rules: RuleSet, rules_name: str) -> None:
    """PlayError when `opponent` names a level whose network was not trained on `rules` (naming the rule sets
    it plays) or cannot play (`check_level_network`); nothing for any other opponent."""
    for level in LEVELS:
        if opponent == level.name:
            check_level_network(level)
            rule_sets = level.rule_sets()
            if rule_sets is not None and all(r != rules for _, r in rule_sets):
                names = ", ".join(name for name, _ in rule_sets)
                raise PlayError(
                    f"the {level.name} level plays the rule sets {names}, not {rules_name}: choose one of those "
                    "rule sets or another level"
                )


def _strongest_network(manifest: Optional[Path] = None) -> str:
    """The ``shipped:<name>`` of `shipped.strongest` (so that shipping a stronger network moves the page's
    network level with it); without a readable manifest a name that `Level.available` refuses."""
    try:
        return shipped.strongest(manifest=manifest).spec_path
    except shipped.ShippedError:
        return shipped.PREFIX + "strongest"


LEVELS: tuple[Level, ...] = (
    Level("beginner", "Beginner", "alphabeta:level=beginner", "alpha-beta, 1 ply, one move in five at random"),
    Level("normal", "Normal", "alphabeta:level=normal", "alpha-beta, 3 plies"),
    # The manifest's strongest network for the default rules (its first such entry), 1 s a move, searching as
    # it was measured against alpha-beta at equal time (docs/results.md, the goals of round 4).
    Level(
        "network",
        "Network",
        f"checkpoint:path={_strongest_network()},time=1,leaf_batch=16,algorithm=puct,policy_temperature=2",
        "the strongest shipped AlphaZero network, 1 s a move",
        seconds=5.0,
    ),
    Level("expert", "Expert", "alphabeta:level=expert", "alpha-beta, 6 plies"),
    # One network for six rule variants (checkpoints/shipped/manifest.json lists them): the level that plays
    # the lobby's variants; the others above play any rule set (alpha-beta) or the default rules only.
    Level(
        "variants",
        "Network, variants",
        "checkpoint:path=shipped:variants-st-440,time=1,leaf_batch=8",
        "one shipped AlphaZero network for six rule variants, 1 s a move",
        seconds=5.0,
    ),
)
"""The page's named opponents, weakest first."""


def available_levels() -> list[Level]:
    return [level for level in LEVELS if level.available()]


def check_level_network(level: Level) -> None:
    """PlayError, in one line, when `level` plays a shipped network whose manifest entry is malformed or
    missing, or whose file is not the one the manifest names (`shipped.checked_file`)."""
    kind, options = parse_spec(level.spec)
    path = options.get("path", "") if kind == "checkpoint" else ""
    if path.startswith(shipped.PREFIX):
        try:
            shipped.checked_file(path)
        except shipped.ShippedError as e:
            raise PlayError(f"the {level.name} level cannot play: {e}") from None


def level_seconds(spec: Optional[str], default: float = MOVE_SECONDS) -> float:
    """The time per move of the level whose spec this is (`default` for any other spec)."""
    return next((level.seconds for level in LEVELS if level.spec == spec), default)

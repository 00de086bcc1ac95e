"""The options of the player kind ``checkpoint``: each named once, with its default, its bounds and a line.

`CheckpointOptions` is what both ``CheckpointPlayer(path, **keywords)`` and the spec
``checkpoint:path=...,sims=200`` build (`CheckpointOptions.from_spec` reads the spec's strings): the same
checks run either way, and `CheckpointOptions.resolved` fills the defaults that depend on other options.
`options_table` writes the table of docs/evaluation.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from agents.alphazero.net.device import BF16_MIN_BATCH, MAX_THREADS, PRECISIONS, resolve_device
from agents.alphazero.player.guard import DEFAULT_MARGIN
from agents.alphazero.search.cache import MAX_CACHE_ENTRIES
from agents.alphazero.search.config import ALGORITHMS, MAX_LEAF_BATCH, MAX_SIMULATIONS
from envs.config import check_choice, check_range, shown
from envs.encoding import N_ACTIONS
from envs.players import PlayerSpecError

WHERE = "player 'checkpoint': "
"""How every refusal of an option starts."""

DEFAULT_CACHE = 1 << 15
"""Positions a checkpoint player remembers unless told otherwise (about 36 MB; a few dozen moves' searches
at 0.5 s a move)."""

DEFAULT_SIMS = 100
"""Simulations per move of a search by ``sims``."""

TIMED_SIMS = 32
"""Simulations per round of a search by ``time`` unless ``sims`` is given."""

TIMED_MAX_ACTIONS = 16
"""Gumbel's root actions of a search by time unless `max_actions` is given (the rounds of `sims`
simulations each halve their way through them)."""

TIMED_C_SCALE = 0.1
"""Gumbel's sigma scale of a search by time unless `c_scale` is given: smaller than training's 1.0,
which a long search turns greedy with (docs/search.md, "Search by time")."""

MAX_SECONDS = 3600
"""The longest ``time`` and ``guard`` per move."""

MAX_GUARD_MARGIN = 100_000
"""The largest ``guard_margin`` (alpha-beta's scores: a Dog is 300)."""

GROUPS = ("limits", "search", "runtime", "guard", "player")
"""The options' groups, in the order of the table."""


def _option(
    default: Any,
    group: str,
    about: str,
    *,
    bounds: Optional[tuple[float, Optional[float]]] = None,
    choices: tuple[str, ...] = (),
    shown_default: str = "",
) -> Any:
    """A field of `CheckpointOptions` with its table entry: group, line, bounds or choices, default as written."""
    meta = {"group": group, "about": about, "bounds": bounds, "choices": choices, "default": shown_default}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class CheckpointOptions:
    """The options of a checkpoint player (one default and one check each; the table in docs/evaluation.md)."""

    path: str = _option(
        "",
        "player",
        "a checkpoint file, a run directory (its latest.pt), a run name, or `shipped:<name>`",
        shown_default="(required)",
    )
    # limits
    sims: Optional[int] = _option(
        None,
        "limits",
        "simulations per move; with `time`, per round of the search",
        bounds=(1, MAX_SIMULATIONS),
        shown_default=f"{DEFAULT_SIMS} ({TIMED_SIMS} with `time`)",
    )
    time: float = _option(
        0.0,
        "limits",
        "seconds per move: rounds of `sims` on one tree while the next fits (0: by `sims`)",
        bounds=(0, MAX_SECONDS),
    )
    # search
    algorithm: Optional[str] = _option(
        None,
        "search",
        "the tree search",
        choices=ALGORITHMS,
        shown_default="the run's own",
    )
    leaf_batch: int = _option(
        1,
        "search",
        "leaves evaluated per network call, kept apart by virtual loss",
        bounds=(1, MAX_LEAF_BATCH),
    )
    max_actions: Optional[int] = _option(
        None,
        "search",
        "Gumbel's root actions considered",
        bounds=(1, N_ACTIONS),
        shown_default=f"the run's own ({TIMED_MAX_ACTIONS} with `time`)",
    )
    c_scale: Optional[float] = _option(
        None,
        "search",
        "Gumbel's sigma scale",
        bounds=(0, None),
        shown_default=f"the run's own ({TIMED_C_SCALE:g} with `time`)",
    )
    reuse: bool = _option(False, "search", "keep the search tree from one move to the next")
    draw_value: Optional[float] = _option(
        None,
        "search",
        "the worth of a drawn end to the player (below 0: contempt for draws)",
        bounds=(-1, 1),
        shown_default="the run's own",
    )
    tablebase: bool = _option(False, "search", "search with the endgame tables as proven results")
    # runtime
    device: str = _option("auto", "runtime", "`auto`, `cpu`, `cuda` or `cuda:<n>`")
    threads: int = _option(
        1,
        "runtime",
        "torch CPU threads of the process (0: torch's own)",
        bounds=(0, MAX_THREADS),
    )
    precision: Optional[str] = _option(
        None,
        "runtime",
        "the network's number format",
        choices=PRECISIONS,
        shown_default=f"`auto` when `leaf_batch` >= {BF16_MIN_BATCH}, else `fp32`",
    )
    cache: int = _option(
        DEFAULT_CACHE,
        "runtime",
        "positions whose network answers are remembered (0: none)",
        bounds=(0, MAX_CACHE_ENTRIES),
    )
    # guard
    guard: float = _option(
        0.0,
        "guard",
        "seconds of alpha-beta checking each move (0: none; under `time`, part of it)",
        bounds=(0, MAX_SECONDS),
    )
    guard_margin: int = _option(
        DEFAULT_MARGIN,
        "guard",
        "how far below alpha-beta's best a move may score (a Dog = 300)",
        bounds=(0, MAX_GUARD_MARGIN),
    )
    # the player
    name: str = _option("", "player", "the player's name in results", shown_default="its spec")
    any_rules: bool = _option(False, "player", "play rules the network was not trained on")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.type in ("bool",):
                if not isinstance(value, bool):
                    raise PlayerSpecError(f"{WHERE}{f.name}={shown(value)} must be true or false")
            elif f.type in ("int", "Optional[int]"):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise PlayerSpecError(f"{WHERE}{f.name}={shown(value)} must be an integer")
            elif f.type in ("float", "Optional[float]"):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise PlayerSpecError(f"{WHERE}{f.name}={shown(value)} must be a number")
            elif not isinstance(value, str):
                raise PlayerSpecError(f"{WHERE}{f.name}={shown(value)} must be a string")
            if f.metadata["bounds"] is not None:
                check_range({f.name: value}, WHERE, PlayerSpecError, **{f.name: f.metadata["bounds"]})
            if f.metadata["choices"]:
                check_choice({f.name: value}, WHERE, PlayerSpecError, **{f.name: f.metadata["choices"]})
        if not self.path:
            raise PlayerSpecError(
                "player 'checkpoint' needs path=<checkpoint file, run directory, run name or shipped:<name>>"
            )
        if self.time > 0 and self.guard >= self.time:
            raise PlayerSpecError(
                f"{WHERE}guard={self.guard} must be less than time={self.time}: the guard's alpha-beta search "
                "is part of the move's time"
            )
        try:
            resolve_device(self.device)
        except ValueError as e:
            raise PlayerSpecError(f"{WHERE}{e}") from None

    @classmethod
    def from_spec(cls, options: dict[str, str]) -> CheckpointOptions:
        """The options of a spec's ``key=value`` strings: numbers and ``true``/``false`` read as such (a value
        that does not read is passed on as it is, for the check to name); an unknown key is refused."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - set(fields))
        if unknown:
            raise PlayerSpecError(
                f"player 'checkpoint' has no option(s) {', '.join(unknown)}; known: {', '.join(sorted(fields))}"
            )
        return cls(**{key: _read(str(fields[key].type), text) for key, text in options.items()})

    def resolved(self) -> CheckpointOptions:
        """These options with the defaults that depend on others filled in: ``sims`` (`TIMED_SIMS` a round with
        ``time``, else `DEFAULT_SIMS`), ``precision`` (``auto`` from `BF16_MIN_BATCH` leaves a call, else
        ``fp32``: bf16 is slower for a handful of positions) and, with ``time``, ``max_actions`` and ``c_scale``
        (`TIMED_MAX_ACTIONS`, `TIMED_C_SCALE`). Options left None take the run's own setting."""
        timed = self.time > 0
        return dataclasses.replace(
            self,
            sims=self.sims if self.sims is not None else (TIMED_SIMS if timed else DEFAULT_SIMS),
            precision=self.precision or ("auto" if self.leaf_batch >= BF16_MIN_BATCH else "fp32"),
            max_actions=TIMED_MAX_ACTIONS if timed and self.max_actions is None else self.max_actions,
            c_scale=TIMED_C_SCALE if timed and self.c_scale is None else self.c_scale,
        )


def _read(kind: str, text: str) -> Any:
    """A spec's string as the field's type (`kind` as the dataclass writes it), or the string itself when it does
    not read as one."""
    try:
        if kind == "bool":
            return {"true": True, "false": False}.get(text.lower(), text)
        if kind in ("int", "Optional[int]"):
            return int(text)
        if kind in ("float", "Optional[float]"):
            return float(text)
    except ValueError:
        return text
    return text


def options_table() -> str:
    """The Markdown table of the options (name, group, default, bounds, what it is), as docs/evaluation.md has it."""
    rows = ["| option | group | default | bounds | what it is |", "| --- | --- | --- | --- | --- |"]
    fields = sorted(dataclasses.fields(CheckpointOptions), key=lambda f: GROUPS.index(f.metadata["group"]))
    for f in fields:
        meta = f.metadata
        default = meta["default"] or f"`{_written(f.default)}`"
        if meta["choices"]:
            bounds = ", ".join(f"`{c}`" for c in meta["choices"])
        elif meta["bounds"] is not None:
            low, high = meta["bounds"]
            bounds = f"[{_written(low)}, {_written(high)}]" if high is not None else f">= {_written(low)}"
        elif f.type == "bool":
            bounds = "`true`, `false`"
        else:
            bounds = ""
        rows.append(f"| `{f.name}` | {meta['group']} | {default} | {bounds} | {meta['about']} |")
    return "\n".join(rows) + "\n"


def _written(value: Any) -> str:
    """A default or a bound as the table writes it: ``true``/``false``, a whole number in full, else ``:g``."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def option_bounds(name: str) -> tuple[float, Optional[float]]:
    """The (least, most) of a numeric option (None: no most), as `CheckpointOptions` checks it."""
    bounds = next(f.metadata["bounds"] for f in dataclasses.fields(CheckpointOptions) if f.name == name)
    if bounds is None:
        raise KeyError(f"the checkpoint option {name!r} has no bounds")
    return bounds

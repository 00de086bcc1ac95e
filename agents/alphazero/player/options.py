"""The options of the player kind ``checkpoint``: each named once, with its default, its bounds and a line.

`CheckpointOptions` is what both ``CheckpointPlayer(path, **keywords)`` and the spec
``checkpoint:path=...,sims=200`` build (`envs.player_options`: `CheckpointOptions.from_spec` reads the spec's
strings, the same checks run either way), and `CheckpointOptions.resolved` fills the defaults that depend on other
options. ``CheckpointOptions.table()`` writes the table of docs/evaluation.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Optional

from agents.alphazero.net.device import BF16_MIN_BATCH, MAX_THREADS, PRECISIONS, resolve_device
from agents.alphazero.player.guard import DEFAULT_MARGIN
from agents.alphazero.search.cache import MAX_CACHE_ENTRIES
from agents.alphazero.search.config import ALGORITHMS, MAX_LEAF_BATCH, MAX_SIMULATIONS
from envs.encoding import N_ACTIONS
from envs.player_options import PlayerOptions, option
from envs.players import PlayerSpecError

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

MAX_STRETCH = 16.0
"""The largest ``stretch``: the longest move a time bank may pay for, in move times."""

MIN_POLICY_TEMPERATURE = 0.1
MAX_POLICY_TEMPERATURE = 10.0
"""The bounds of ``policy_temperature``."""

MAX_GUARD_MARGIN = 100_000
"""The largest ``guard_margin`` (alpha-beta's scores: a Dog is 300)."""


@dataclass(frozen=True)
class CheckpointOptions(PlayerOptions):
    """The options of a checkpoint player (one default and one check each; the table in docs/evaluation.md)."""

    KIND: ClassVar[str] = "checkpoint"
    GROUPS: ClassVar[tuple[str, ...]] = ("limits", "search", "runtime", "guard", "player")

    path: str = option(
        "",
        "a checkpoint file, a run directory (its latest.pt), a run name, or `shipped:<name>`",
        group="player",
        shown_default="(required)",
    )
    # limits
    sims: Optional[int] = option(
        None,
        "simulations per move; with `time`, per round of the search",
        group="limits",
        bounds=(1, MAX_SIMULATIONS),
        shown_default=f"{DEFAULT_SIMS} ({TIMED_SIMS} with `time`)",
    )
    time: float = option(
        0.0,
        "seconds per move: rounds of `sims` on one tree while the next fits (0: by `sims`)",
        group="limits",
        bounds=(0, MAX_SECONDS),
    )
    stretch: float = option(
        1.0,
        "with `time`: an unsettled move may search up to `stretch` x `time`, paid for by time settled moves "
        "saved, a game's moves averaging at most `time` (1: each move `time`)",
        group="limits",
        bounds=(1, MAX_STRETCH),
    )
    # search
    algorithm: Optional[str] = option(
        None, "the tree search", group="search", choices=ALGORITHMS, shown_default="the run's own"
    )
    leaf_batch: int = option(
        1, "leaves evaluated per network call, kept apart by virtual loss", group="search", bounds=(1, MAX_LEAF_BATCH)
    )
    max_actions: Optional[int] = option(
        None,
        "Gumbel's root actions considered",
        group="search",
        bounds=(1, N_ACTIONS),
        shown_default=f"the run's own ({TIMED_MAX_ACTIONS} with `time`)",
    )
    c_scale: Optional[float] = option(
        None,
        "Gumbel's sigma scale",
        group="search",
        bounds=(0, None),
        shown_default=f"the run's own ({TIMED_C_SCALE:g} with `time`)",
    )
    reuse: bool = option(False, "keep the search tree from one move to the next", group="search")
    policy_temperature: float = option(
        1.0,
        "softmax temperature of the network's move priors at every node (above 1: flatter, a move it "
        "underrates is searched sooner)",
        group="search",
        bounds=(MIN_POLICY_TEMPERATURE, MAX_POLICY_TEMPERATURE),
    )
    draw_value: Optional[float] = option(
        None,
        "the worth of a drawn end to the player (below 0: contempt for draws)",
        group="search",
        bounds=(-1, 1),
        shown_default="the run's own",
    )
    tablebase: bool = option(False, "search with the endgame tables as proven results", group="search")
    # runtime
    device: str = option("auto", "`auto`, `cpu`, `cuda` or `cuda:<n>`", group="runtime")
    threads: int = option(
        1, "torch CPU threads of the process (0: torch's own)", group="runtime", bounds=(0, MAX_THREADS)
    )
    precision: Optional[str] = option(
        None,
        "the network's number format",
        group="runtime",
        choices=PRECISIONS,
        shown_default=f"`auto` when `leaf_batch` >= {BF16_MIN_BATCH}, else `fp32`",
    )
    cache: int = option(
        DEFAULT_CACHE,
        "positions whose network answers are remembered (0: none)",
        group="runtime",
        bounds=(0, MAX_CACHE_ENTRIES),
    )
    # guard
    guard: float = option(
        0.0,
        "seconds of alpha-beta checking each move (0: none; under `time`, part of it)",
        group="guard",
        bounds=(0, MAX_SECONDS),
    )
    guard_margin: int = option(
        DEFAULT_MARGIN,
        "how far below alpha-beta's best a move may score (a Dog = 300)",
        group="guard",
        bounds=(0, MAX_GUARD_MARGIN),
    )
    # the player
    name: str = option("", "the player's name in results", group="player", shown_default="its spec")
    any_rules: bool = option(False, "play rules the network was not trained on", group="player")

    def __post_init__(self) -> None:
        super().__post_init__()
        where = self.where()
        if not self.path:
            raise PlayerSpecError(
                "player 'checkpoint' needs path=<checkpoint file, run directory, run name or shipped:<name>>"
            )
        if self.time > 0 and self.guard >= self.time:
            raise PlayerSpecError(
                f"{where}guard={self.guard} must be less than time={self.time}: the guard's alpha-beta search "
                "is part of the move's time"
            )
        if self.stretch > 1 and not self.time > 0:
            raise PlayerSpecError(f"{where}stretch={self.stretch} needs time=<seconds per move>")
        if self.stretch > 1 and self.guard > 0:
            raise PlayerSpecError(
                f"{where}stretch={self.stretch} and guard={self.guard}: the guard's checks are paid from a fixed "
                "move time; use one of them"
            )
        try:
            resolve_device(self.device)
        except ValueError as e:
            raise PlayerSpecError(f"{where}{e}") from None

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

"""The options of the player kind ``alphabeta``: each named once, with its default, its bounds and a line.

`AlphaBetaOptions` is what both ``AlphaBetaPlayer(depth=4, noise=20)`` and the spec ``alphabeta:depth=4,noise=20``
build (`envs.player_options`: the same checks either way, a refusal in one line naming the option);
`AlphaBetaOptions.resolved` fills in what the level gives. ``AlphaBetaOptions.table()`` writes the table of
docs/evaluation.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from agents.alphabeta.search import MAX_PLY
from envs.player_options import PlayerOptions, option

LEVELS: dict[str, dict[str, Any]] = {
    "beginner": {"depth": 1, "random": 0.2},
    "normal": {"depth": 3, "random": 0.0},
    "expert": {"depth": 6, "random": 0.0},
}
"""Named levels: search depth in plies and the chance of a random move."""

DEFAULT_LEVEL = "normal"
"""The level of a spec that names neither a level nor a limit (``depth``, ``nodes``, ``time``)."""

MAX_DEPTH = MAX_PLY - 16
"""The deepest ``depth``: the search's arrays hold `MAX_PLY` plies, quiescence and extensions included."""


@dataclass(frozen=True)
class AlphaBetaOptions(PlayerOptions):
    """The options of an alpha-beta player (one default and one check each; the table in docs/evaluation.md)."""

    KIND: ClassVar[str] = "alphabeta"
    GROUPS: ClassVar[tuple[str, ...]] = ("level", "limits", "search", "player")
    RENAMED: ClassVar[dict[str, str]] = {"tt_bits": "tt"}

    level: Optional[str] = option(
        None,
        "a named strength: its `depth` and `random`, unless given",
        group="level",
        choices=tuple(LEVELS),
        shown_default=f"`{DEFAULT_LEVEL}` without a limit",
    )
    # limits: those given all apply, the first reached stops the search
    depth: Optional[int] = option(
        None,
        "plies searched (iterative deepening)",
        group="limits",
        bounds=(1, MAX_DEPTH),
        shown_default="the level's (none with only `nodes` or `time`)",
    )
    nodes: Optional[int] = option(
        None, "positions searched per move (reproducible)", group="limits", bounds=(1, 10**12), shown_default="none"
    )
    time: Optional[float] = option(
        None,
        "seconds per move (machine-dependent)",
        group="limits",
        bounds=(1e-3, 1_000_000),
        shown_default="none",
    )
    # search
    noise: int = option(
        0, "evaluation noise in [-noise, noise] (a Dog = 300), so games differ", group="search", bounds=(0, 10000)
    )
    random: Optional[float] = option(
        None,
        "the chance of a random legal move",
        group="search",
        bounds=(0, 1),
        shown_default="the level's (0.2 at `beginner`, else 0)",
    )
    tt: int = option(20, "the transposition table's size: 2**tt entries", group="search", bounds=(4, 28))
    tablebase: bool = option(
        False,
        "exact scores from the endgame tables at their default location (`python -m envs tablebase build`)",
        group="search",
    )
    # the player
    name: str = option("", "the player's name in results", group="player", shown_default="its spec")

    def resolved(self) -> AlphaBetaOptions:
        """These options with the level's ``depth`` and ``random`` filled in where not given; the `DEFAULT_LEVEL`'s
        when no level and no limit is given (a limit alone searches by that limit only)."""
        limited = self.depth is not None or self.nodes is not None or self.time is not None
        level = LEVELS[self.level] if self.level is not None else {} if limited else LEVELS[DEFAULT_LEVEL]
        return dataclasses.replace(
            self,
            depth=self.depth if self.depth is not None else level.get("depth"),
            random=self.random if self.random is not None else level.get("random", 0.0),
        )

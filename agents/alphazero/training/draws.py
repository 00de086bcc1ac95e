"""A root floor that follows the self-play draw rate (``train.draw_control``).

A run's self-play can settle into repetition draws as its network grows surer of itself: the uniform floor under the
prior of the self-play roots (``mcts.gumbel.root_uniform``) keeps moves the network gives almost nothing in its searches
and games, but a floor fixed at the start is either too low for the late run or too high for the early one. With a
target draw share, the run raises its floor by one step after each iteration whose self-play drew more of its games than
the target, and lowers it by one step (never below ``mcts.gumbel.root_uniform``) after one that drew fewer. The floor
is run state: it is saved with the counters and a resumed run goes on from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.alphazero.selfplay.data import SelfPlayStats
from envs.config import ConfigError, check_range, shown


@dataclass
class DrawControlConfig:
    """The self-play root floor's control by the draw rate (the node ``train.draw_control``)."""

    target: float = 1.0
    """The share of an iteration's self-play games without a winner (drawn by the rules, cut at
    ``max_plies`` or drawn by the tables) that the run aims at: above it the floor rises by `step` for the next
    iteration, below it the floor falls by `step`. In (0, 1]; 1 is off (the floor stays at
    ``mcts.gumbel.root_uniform``)."""
    step: float = 0.05
    """The floor's change after an iteration; in (0, 1]."""
    max_floor: float = 0.75
    """The highest floor; from ``mcts.gumbel.root_uniform`` to 1."""

    def __post_init__(self) -> None:
        check_range(self, "train.draw_control", target=(0, 1), step=(0, 1), max_floor=(0, 1))
        for key in ("target", "step"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"train.draw_control.{key}={shown(getattr(self, key))} must be above 0")

    @property
    def on(self) -> bool:
        """Whether the floor follows the draw rate."""
        return self.target < 1.0

    def check_base(self, base: float) -> None:
        """ConfigError unless the floor may start at `base` (``mcts.gumbel.root_uniform``)."""
        if self.on and base > self.max_floor:
            raise ConfigError(
                f"train.draw_control.max_floor={shown(self.max_floor)} is below "
                f"mcts.gumbel.root_uniform={shown(base)}, where the floor starts"
            )


def draw_share(stats: SelfPlayStats) -> float:
    """The share of a self-play call's games without a winner (0 without games)."""
    return stats.draws / stats.games if stats.games else 0.0


def next_root_floor(floor: float, base: float, share: float, control: DrawControlConfig) -> float:
    """The root floor of the iteration after one played at `floor` that drew `share` of its games: a step up when
    `share` is above the target, a step down when below (between `base` and ``control.max_floor``), the same
    when level or when the control is off."""
    if not control.on or share == control.target:
        return floor
    moved = floor + control.step if share > control.target else floor - control.step
    return round(min(control.max_floor, max(base, moved)), 6)  # no drift of float sums over a long run

"""The player protocol and the spec registry: anything that picks a move for a Board, built from a spec string.

    >>> p = make_player("random", seed=1)
    >>> move = p.select_move(Board())

A spec is ``kind`` or ``kind:key=value,key=value``: ``random``,
``alphabeta:depth=4``, ``alphabeta:level=expert``, ``alphabeta:time=0.5``,
``checkpoint:path=checkpoints/run/best.pt,sims=200``.
Each kind registers a factory with `register_player`; factories take the
parsed keyword arguments plus ``rules`` and ``seed``. This module belongs to
the game layer and names no agent: kinds other than ``random`` come from the
``jungle_zero.players`` entry points (pyproject.toml lists ``alphabeta`` and
``checkpoint``), loaded the first time their kind is asked for, so the env can
build an opponent from a spec without importing `agents` itself.

A player may also take limits for one move, ``select_move(board, limit=Limit(time=0.5), stop=signal)``
(`accepts_limit` tells): the search stops at the first limit reached, or when another thread sets the
`StopSignal`, and plays the best move found so far. The kit's ``alphabeta`` and ``checkpoint`` players do;
the engine of the Jungle Engine Protocol (`agents.engine`) maps its ``go`` commands onto them.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable, Optional, Protocol, runtime_checkable

import numpy as np

from envs.board import Board
from envs.config import ConfigError
from envs.notation import Move
from envs.rules import RuleSet


class PlayerSpecError(ConfigError):
    """An unknown or malformed player spec."""


@runtime_checkable
class Player(Protocol):
    """Picks a move for the side to move. `reset()` starts a new game."""

    name: str

    def select_move(self, board: Board) -> Move: ...

    def reset(self) -> None: ...


@dataclass(frozen=True)
class Limit:
    """Limits of one move's search (None: not set); the first one reached stops it. None of them set: the
    search runs until its `StopSignal` is set (or as far as the player can go)."""

    time: Optional[float] = None
    """Seconds."""
    depth: Optional[int] = None
    """Plies for alpha-beta; rounds of the player's ``sims`` simulations for the tree search."""
    nodes: Optional[int] = None
    """Positions for alpha-beta; simulations for the tree search."""

    def __post_init__(self) -> None:
        for key in ("time", "depth", "nodes"):
            value = getattr(self, key)
            if value is not None and not value > 0:
                raise ValueError(f"search limit {key}={value} must be positive")

    @property
    def unlimited(self) -> bool:
        """No limit set: the search runs until stopped."""
        return self.time is None and self.depth is None and self.nodes is None


class StopSignal:
    """Asks a running search to end now, from another thread. `set()` marks it and runs the hooks that
    searches registered with `on_set` (a hook registered after `set()` runs at once), so a search that
    cannot poll (a numba kernel) is reached the moment it can be, and a stop sent before the search began
    is never lost."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._hooks: list[Callable[[], None]] = []

    def set(self) -> None:
        with self._lock:
            self._set = True
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def is_set(self) -> bool:
        return self._set

    def on_set(self, hook: Callable[[], None]) -> None:
        """Run `hook` when the signal is set (now, if it already is)."""
        with self._lock:
            if not self._set:
                self._hooks.append(hook)
                return
        hook()


def accepts_limit(player: Player) -> bool:
    """Whether `player.select_move` takes the keywords ``limit`` (a `Limit`) and ``stop`` (a `StopSignal`)."""
    try:
        params = inspect.signature(player.select_move).parameters
    except (TypeError, ValueError):
        return False
    return "limit" in params and "stop" in params


class RandomPlayer:
    """Uniformly random legal moves, from its own seeded generator."""

    def __init__(self, seed: Optional[int] = None, name: str = "random") -> None:
        self.name = name
        self._seed = seed
        self.rng = np.random.default_rng(seed)

    def select_move(self, board: Board) -> Move:
        moves = board.legal_move_ints()
        if len(moves) == 0:
            raise ValueError(f"no legal move in {board.jfen()!r}")
        return Move.from_int(int(moves[self.rng.integers(len(moves))]))

    def reset(self) -> None:
        pass


Factory = Callable[..., Player]
_FACTORIES: dict[str, Factory] = {}
ENTRY_POINT_GROUP = "jungle_zero.players"
"""Entry-point group whose names are player kinds and whose objects are factories."""


def register_player(kind: str, factory: Factory) -> None:
    _FACTORIES[kind] = factory


register_player("random", lambda rules=None, seed=None, **kw: _random_factory(seed=seed, **kw))


def _random_factory(seed: Optional[int] = None, **kwargs: Any) -> Player:
    if kwargs:
        raise PlayerSpecError(f"player 'random' takes no options, got {', '.join(kwargs)}")
    return RandomPlayer(seed=seed)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """`'alphabeta:depth=4,noise=0.1'` -> `('alphabeta', {'depth': '4', 'noise': '0.1'})`."""
    if not isinstance(spec, str) or not spec.strip():
        raise PlayerSpecError(f"empty player spec {spec!r}")
    kind, _, rest = spec.strip().partition(":")
    options: dict[str, str] = {}
    if rest:
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise PlayerSpecError(f"player spec {spec!r}: option {item!r} is not key=value")
            if key.strip() in options:
                raise PlayerSpecError(f"player spec {spec!r}: option {key.strip()!r} is given twice")
            options[key.strip()] = value.strip()
    return kind.strip(), options


def _plugins() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_kinds() -> list[str]:
    """Every kind a spec may name: registered ones and installed entry points."""
    return sorted(set(_FACTORIES) | set(_plugins()))


def make_player(spec: str, *, rules: Optional[RuleSet] = None, seed: Optional[int] = None) -> Player:
    """Build a player from its spec; PlayerSpecError names what is wrong."""
    kind, options = parse_spec(spec)
    if kind not in _FACTORIES:
        plugin = _plugins().get(kind)
        if plugin is not None:
            try:
                register_player(kind, plugin.load())
            except ModuleNotFoundError as e:
                raise PlayerSpecError(
                    f"player kind {kind!r} in spec {spec!r} is not available (no module {e.name})"
                ) from None
    if kind not in _FACTORIES:
        raise PlayerSpecError(f"unknown player kind {kind!r} in spec {spec!r}; known: {', '.join(known_kinds())}")
    try:
        player = _FACTORIES[kind](rules=rules, seed=seed, **options)
    except TypeError as e:
        raise PlayerSpecError(f"player spec {spec!r}: {e}") from None
    if not getattr(player, "name", None) or player.name == kind:
        player.name = spec
    return player

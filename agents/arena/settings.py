"""What decides a tournament's games and ratings: `TournamentSettings`, checked once, and tournament.json.

    settings = TournamentSettings(mode="gauntlet", games_per_pair=40, seed=3)
    result = run_tournament(["alphabeta:depth=2", "random"], settings, workers=2)

One object, whichever way a tournament is set up: `run_tournament` takes it, evaluate.py's config
converts to it (`agents.arena.config.tournament_settings`), and tournament.json is the players' specs
followed by its fields (`write_tournament_file`, `read_tournament_file`). Its fields are checked when it
is made (`check_settings`, shared with evaluate.py's config schema), so a bad value fails before any
game, in one line naming the key (and the file, for a tournament.json).

How the workers run (their number, start method, a progress bar) is not a setting: it never changes the
games, and a resumed tournament may change it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from agents.arena.errors import TournamentError
from agents.arena.openings import Opening, opening_from_text, opening_text, playable, read_openings
from agents.common.io import PathLike, atomic_write_json
from envs.config import check_choice, check_range, config_kwargs, shown
from envs.rules import COUNTER_LIMIT, RuleSet

MODES = ("round_robin", "gauntlet", "ladder")
"""Who meets whom: every pair, the first player against each other, each player against the next."""


def check_settings(node: Any, where: str = "", error: type[Exception] = TournamentError) -> None:
    """Raise `error` naming the first setting of `node` (a TournamentSettings, or evaluate.py's config,
    whose fields have the same names) that cannot be: a count, seed or prior out of range, an unknown
    mode, SPRT bounds that cannot be (`check_sprt`)."""
    check_range(
        node,
        where,
        error,
        games_per_pair=(1, 100_000),
        seed=(0, 2**63 - 1),
        opening_plies=(0, COUNTER_LIMIT),
        max_plies=(1, COUNTER_LIMIT),
        prior_games=(0, 1000),
    )
    check_choice(node, where, error, mode=MODES)
    check_sprt(node, where, error)


def check_sprt(node: Any, where: str = "", error: type[Exception] = TournamentError) -> None:
    """Raise `error` for SPRT settings of `node` (an object or a Mapping with elo0, elo1, alpha, beta,
    sprt_stop and mode) that cannot be: a bound or an error rate out of range, elo0 not below elo1,
    sprt_stop outside a gauntlet."""
    check_range(node, where, error, elo0=(-1000, 1000), elo1=(-1000, 1000), alpha=(1e-6, 0.5), beta=(1e-6, 0.5))
    get: Callable[[str], Any] = node.get if isinstance(node, Mapping) else lambda key: getattr(node, key)
    if not get("elo0") < get("elo1"):
        raise error(f"{where}elo0={get('elo0')!r} must be below {where}elo1={get('elo1')!r} (H0 below H1)")
    if get("sprt_stop") and get("mode") != "gauntlet":
        raise error(f"{where}sprt_stop=true stops a gauntlet's pairings; {where}mode={get('mode')} has none to stop")


@dataclass(frozen=True)
class TournamentSettings:
    """What decides a tournament's games and its ratings (everything tournament.json holds but the players).

    Made, it is checked (`check_settings`, then each field's type): TournamentError naming the key."""

    mode: str = "round_robin"
    """`round_robin` (every pair meets), `gauntlet` (the first player meets each of the others) or `ladder`
    (each player meets the next in the list)."""
    games_per_pair: int = 20
    """Games per pairing, played as colour-swapped pairs from the same opening (an odd count leaves the last
    pair half played); 1 to 100000."""
    seed: int = 0
    """Decides openings and player seeds: the same seed replays the same games. 0 to 2**63 - 1."""
    opening_plies: int = 4
    """Random plies from the start position that make each opening (unused with `openings`); 0 to 30000."""
    openings: Optional[tuple[Opening, ...]] = None
    """The openings, cycled when fewer than the pairs (None: `opening_plies` random plies)."""
    openings_file: Optional[str] = None
    """The openings file they came from: read when the settings are made, unless `openings` are given (a
    resumed tournament plays the openings its file had then)."""
    max_plies: int = 600
    """Moves per game after the opening before it is scored a draw (`ply_cap`); 1 to 30000."""
    rules: RuleSet = RuleSet()
    """The rule set every game is played under."""
    anchor: Optional[str] = None
    """The player rated 0 Elo (None: the first player)."""
    prior_games: float = 1.0
    """Virtual drawn games per played pairing that keep a clean sweep's rating finite (0: none); 0 to 1000."""
    elo0: float = 0.0
    """H0 of each pairing's SPRTs (on games and on pairs): the first player is elo0 logistic Elo stronger
    than the second; -1000 to 1000, below elo1."""
    elo1: float = 30.0
    """H1 of each pairing's SPRTs: the first player is elo1 stronger; -1000 to 1000."""
    alpha: float = 0.05
    """The SPRTs' chance of H1 when H0 holds; 1e-6 to 0.5."""
    beta: float = 0.05
    """The SPRTs' chance of H0 when H1 holds; 1e-6 to 0.5."""
    sprt_stop: bool = False
    """In a gauntlet (only), a pairing plays no more games once its SPRT on colour-swapped pairs gives a
    verdict (H1 or H0). Off: every game is played."""

    def __post_init__(self) -> None:
        for name, types in _TYPES.items():
            value = getattr(self, name)
            if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
                wanted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
                raise TournamentError(f"{name}={shown(value)} is not what a tournament's settings hold ({wanted})")
        check_settings(self)
        if self.openings is None and self.openings_file is not None:
            object.__setattr__(self, "openings", tuple(read_openings(self.openings_file, self.rules)))
        elif self.openings is not None:
            object.__setattr__(self, "openings", tuple(self.openings))
        if self.openings is not None and not self.openings:
            raise TournamentError("openings=() holds no opening (None: random openings of opening_plies)")
        if self.openings is not None and not all(isinstance(o, Opening) for o in self.openings):
            raise TournamentError("openings must be Opening objects")

    @property
    def sprt(self) -> dict[str, float]:
        """The SPRTs' elo0, elo1, alpha and beta."""
        return {"elo0": self.elo0, "elo1": self.elo1, "alpha": self.alpha, "beta": self.beta}

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain data, in tournament.json's shape (openings as text, rules as a mapping)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["openings"] = None if self.openings is None else [opening_text(o) for o in self.openings]
        out["rules"] = self.rules.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TournamentSettings:
        """The settings `to_dict` gave (a key it never writes, a value of the wrong type or out of range:
        TournamentError naming the key). Keys newer than some files (`ADDED_KEYS`) take their defaults."""
        kwargs = config_kwargs(cls, data, "tournament", TournamentError)
        rules = kwargs.get("rules", RuleSet())
        if not isinstance(rules, Mapping):
            raise TournamentError(f"rules={shown(rules)} is not what a tournament's settings hold (dict)")
        kwargs["rules"] = RuleSet.from_dict(rules)
        texts = kwargs.get("openings")
        if texts is not None:
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise TournamentError("openings must be a list of strings")
            kwargs["openings"] = tuple(opening_from_text(t) for t in texts)
            for k, opening in enumerate(kwargs["openings"]):
                try:
                    playable(opening, kwargs["rules"])
                except ValueError as e:
                    raise TournamentError(f"openings[{k}]={shown(texts[k])}: {e}") from None
        missing = sorted({f.name for f in fields(cls)} - set(kwargs) - set(ADDED_KEYS))
        if missing:
            raise TournamentError(f"{', '.join(missing)} missing: not a tournament's settings")
        return cls(**kwargs)


_TYPES: dict[str, tuple[type, ...]] = {
    "mode": (str,),
    "games_per_pair": (int,),
    "seed": (int,),
    "opening_plies": (int,),
    "openings": (tuple, list, type(None)),
    "openings_file": (str, type(None)),
    "max_plies": (int,),
    "rules": (RuleSet,),
    "anchor": (str, type(None)),
    "prior_games": (int, float),
    "elo0": (int, float),
    "elo1": (int, float),
    "alpha": (int, float),
    "beta": (int, float),
    "sprt_stop": (bool,),
}
"""What each field must be (tournament.json's types, read back)."""
ADDED_KEYS = ("elo0", "elo1", "alpha", "beta", "sprt_stop")
"""Settings newer than some tournament.json files: a file without them was played with their defaults."""
SPRT_DEFAULTS = TournamentSettings().sprt
"""The SPRTs' hypotheses (logistic Elo of the first player over the second) and error rates, unless given."""


def write_tournament_file(path: PathLike, players: list[str], settings: TournamentSettings) -> None:
    """Write tournament.json (atomically): the players' specs, then the settings (`to_dict`)."""
    atomic_write_json(Path(path), {"players": list(players), **settings.to_dict()})


def read_tournament_file(path: PathLike) -> tuple[list[str], TournamentSettings]:
    """The players' specs and the settings a tournament.json holds; TournamentError in one line naming the
    file and the bad key (or why it cannot be read)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, OSError) as e:
        raise TournamentError(f"{p} cannot be read: {e}") from None
    if not isinstance(data, dict):
        raise TournamentError(f"{p} is not a tournament's settings (a JSON object is expected)")
    players = data.pop("players", None)
    if not isinstance(players, list):
        raise TournamentError(f"{p}: players={shown(players)} is not what a tournament's settings hold (list)")
    if not all(isinstance(x, str) for x in players):
        raise TournamentError(f"{p}: players must be a list of strings")
    try:
        return players, TournamentSettings.from_dict(data)
    except ValueError as e:  # TournamentError, RuleSetError, OpeningsError: one line naming the key
        raise TournamentError(f"{p}: {e}") from None

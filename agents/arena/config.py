"""The settings of an evaluate.py tournament: its config schema (`EvaluateConfig`, composed and checked
here), and its settings file (tournament.json: what decides its games, written for a new tournament and
read back on resume)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from hydra.core.config_store import ConfigStore

from envs.config import (
    SCHEMA,
    ConfigError,
    check_choice,
    check_range,
    compose,
    config_dir,
    config_kwargs,
    dotted_keys,
    hydra_error_line,
    override_key,
    shown,
)
from envs.rules import COUNTER_LIMIT, RulesConfig

SETTINGS_FILE = "tournament.json"
GAMES_FILE = "games.jsonl"
CHANGEABLE_ON_RESUME = ("resume", "workers", "progress", "image", "start_method")
"""Keys a resumed tournament may change: they do not change its games."""


@dataclass
class EvaluateConfig:
    """Settings of one tournament (the primary config `evaluate` of Hydra's ConfigStore; the rules come from
    the config group `rules`, configs/rules/, as in train.py)."""

    defaults: list[Any] = field(
        default_factory=lambda: [
            "_self_",
            {"rules": "default"},
            {"override hydra/job_logging": "stdout"},
        ]
    )
    """Hydra's defaults list: the option of the `rules` group."""
    players: list[str] = field(default_factory=lambda: ["random", "alphabeta:level=beginner", "alphabeta:level=normal"])
    """Player specs: `random`, `alphabeta:depth=4`, `alphabeta:level=expert`, `alphabeta:time=0.5`,
    `checkpoint:path=...,sims=200` (see envs/players.py). Names must be distinct."""
    mode: str = "round_robin"
    """`round_robin` (every pair meets), `gauntlet` (the first player meets each of the others) or
    `ladder` (each player meets the next in the list)."""
    games_per_pair: int = 20
    """Games per pairing, played as colour-swapped pairs from the same opening; 1 to 100000."""
    seed: int = 0
    """Decides openings and player seeds: the same seed replays the same games. 0 to 2**63 - 1."""
    workers: int = 2
    """Worker processes playing games at once (0 or 1: in this process); at most 1024."""
    opening_plies: int = 4
    """Random plies from the start position that make each opening (ignored with `openings`); 0 to 30000."""
    openings: Optional[str] = None
    """Openings file: one JFEN, move list, or `JFEN | moves` per line (cycled if short)."""
    max_plies: int = 600
    """Moves per game after the opening before it is scored a draw (`ply_cap`); 1 to 30000."""
    rules: RulesConfig = field(default_factory=RulesConfig)  # type: ignore[valid-type]
    """Rule set (group `rules`: `rules=dog_over_wolf`, then single keys: `rules.no_capture_draw=200`; see
    envs/rules.py). A rule set of one's own: DIR/rules/NAME.yaml with `hydra.searchpath=[file://DIR]
    rules=NAME`."""
    anchor: Optional[str] = None
    """The player rated 0 Elo (default: the first player)."""
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
    verdict (H1 or H0); the table says which pairings stopped and why. Off: every game is played."""
    out_dir: str = "runs/evaluate/${now:%Y-%m-%d_%H-%M-%S}"
    """Where the result files go (created at the first game; it must not hold another tournament, and must
    be, or be creatable as, a writable directory)."""
    resume: Optional[str] = None
    """Continue the interrupted tournament in this directory: its settings (tournament.json) and its games so
    far (games.jsonl) are kept; only `workers`, `progress`, `image` and `start_method` may be given anew."""
    progress: bool = True
    """Show a progress bar (games done, W/D/L of the first player, ETA)."""
    image: bool = True
    """Also write crosstable.png (needs Pillow; skipped without it)."""
    start_method: str = "spawn"
    """multiprocessing start method for the workers: `spawn`, `forkserver` or `fork`."""
    hydra: Any = field(
        default_factory=lambda: {
            "run": {"dir": "."},
            "output_subdir": None,
            "job": {"chdir": False},
        }
    )
    """Hydra's own settings: it writes nothing of its own (`out_dir` is made at the first game) and keeps the
    working directory."""

    def __post_init__(self) -> None:
        from agents.arena.tournament import MODES, check_sprt

        check_range(
            self,
            "",
            games_per_pair=(1, 100_000),
            seed=(0, 2**63 - 1),
            workers=(0, 1024),
            opening_plies=(0, COUNTER_LIMIT),
            max_plies=(1, COUNTER_LIMIT),
            prior_games=(0, 1000),
        )
        check_choice(self, "", mode=MODES, start_method=START_METHODS)
        check_sprt(self, "", ConfigError)


START_METHODS = ("spawn", "forkserver", "fork")
ConfigStore.instance().store(name="evaluate", node=EvaluateConfig)
ConfigStore.instance().store(group="rules", name=SCHEMA, node=RulesConfig)  # configs/rules/*.yaml start from it


def compose_config(overrides: Sequence[str] = ()) -> Any:
    """The config that ``python evaluate.py <overrides>`` would run, composed in this process (tests).

    ConfigError, in one line, for an override Hydra refuses (an unknown key, a mistyped value...)."""
    return compose(config_dir(""), "evaluate", overrides, schema=EvaluateConfig, job_name="evaluate")


def checked_config(cfg: Any) -> EvaluateConfig:
    """The composed config as an EvaluateConfig with every value checked (ConfigError naming the key):
    an unknown key, even one added with `+` (with the closest known key), a mistyped or out-of-range value."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:  # reading a value resolves its interpolation, which can fail too
        config_kwargs(EvaluateConfig, {k: None for k in cfg if k != "hydra"}, "evaluate.py config", ConfigError)
        if isinstance(cfg.get("rules"), Mapping):  # `+rules.bogus=1` too
            config_kwargs(RulesConfig, cfg.rules, "rules", ConfigError)
        conf = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as e:
        raise ConfigError(hydra_error_line(e, dotted_keys(EvaluateConfig))) from None
    assert isinstance(conf, EvaluateConfig)
    return conf


def refuse_a_tournament_in(out_dir: Path) -> None:
    """TournamentError when `out_dir` already holds a tournament's settings or games (a new one never mixes
    its files with another's)."""
    from agents.arena.tournament import TournamentError

    for name in (SETTINGS_FILE, GAMES_FILE):
        if (out_dir / name).exists() or (out_dir / name).is_symlink():
            raise TournamentError(
                f"{str(out_dir)!r} already holds a tournament ({name}); continue it with "
                f"resume={out_dir}, or choose another out_dir"
            )


SETTINGS_TYPES: dict[str, tuple[type, ...]] = {
    "players": (list,),
    "mode": (str,),
    "games_per_pair": (int,),
    "seed": (int,),
    "opening_plies": (int,),
    "openings": (list, type(None)),
    "openings_file": (str, type(None)),
    "max_plies": (int,),
    "rules": (dict,),
    "anchor": (str, type(None)),
    "prior_games": (int, float),
    "elo0": (int, float),
    "elo1": (int, float),
    "alpha": (int, float),
    "beta": (int, float),
    "sprt_stop": (bool,),
}
"""What each entry of tournament.json must be (`new_settings` writes them)."""
SETTINGS_ADDED = {"elo0": 0.0, "elo1": 30.0, "alpha": 0.05, "beta": 0.05, "sprt_stop": False}
"""Settings newer than some tournament.json files, and what a file without them was played with."""


def new_settings(cfg: EvaluateConfig) -> dict[str, Any]:
    """What decides a tournament's games, as plain data for tournament.json (an openings file is read now)."""
    from agents.arena.tournament import read_openings

    rules = cfg.rules.rule_set()
    openings = None
    if cfg.openings:
        openings = [f"{o.start} | {' '.join(o.moves)}" for o in read_openings(cfg.openings, rules)]
    return {
        "players": [str(p) for p in cfg.players],
        "mode": cfg.mode,
        "games_per_pair": cfg.games_per_pair,
        "seed": cfg.seed,
        "opening_plies": cfg.opening_plies,
        "openings": openings,
        "openings_file": cfg.openings,
        "max_plies": cfg.max_plies,
        "rules": rules.to_dict(),
        "anchor": cfg.anchor,
        "prior_games": cfg.prior_games,
        "elo0": cfg.elo0,
        "elo1": cfg.elo1,
        "alpha": cfg.alpha,
        "beta": cfg.beta,
        "sprt_stop": cfg.sprt_stop,
    }


def stored_settings(out_dir: Path, overrides: Sequence[str]) -> dict[str, Any]:
    """The settings of the tournament in `out_dir`; refuses `overrides` (the command line's, as Hydra gives
    them) that would change its games: any key but `CHANGEABLE_ON_RESUME`, `rules` and `rules.*` too."""
    import json

    from agents.arena.tournament import TournamentError as error

    path = out_dir / SETTINGS_FILE
    if not path.is_file():
        raise error(f"resume={out_dir}: no tournament to continue there (no {SETTINGS_FILE})")
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as e:
        raise error(f"{path} cannot be read: {e}") from None
    if not isinstance(settings, dict):
        raise error(f"{path} is not a tournament's settings (a JSON object is expected)")
    settings = {**SETTINGS_ADDED, **settings}
    for key, types in SETTINGS_TYPES.items():
        value = settings.get(key)
        if key not in settings or (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise error(
                f"{path}: {key}={shown(value)} is not what a tournament's settings hold "
                f"({' or '.join(t.__name__ if t is not type(None) else 'null' for t in types)})"
            )
    for key in ("players", "openings"):
        if settings[key] is not None and not all(isinstance(x, str) for x in settings[key]):
            raise error(f"{path}: {key} must be a list of strings")
    changed = sorted({override_key(o) for o in overrides} - set(CHANGEABLE_ON_RESUME))
    if changed:
        raise error(
            f"resume={out_dir} continues that tournament as it was set up; {', '.join(changed)} cannot "
            f"change (only {', '.join(CHANGEABLE_ON_RESUME[1:])} can); start a new tournament instead"
        )
    return dict(settings)


def opening_from_text(text: str) -> tuple[str, tuple[str, ...]]:
    """``"JFEN | moves"`` (as tournament.json stores openings) -> (start JFEN, moves)."""
    jfen, _, moves = text.partition("|")
    return jfen.strip(), tuple(moves.split())

"""The config schema of evaluate.py (`EvaluateConfig`, composed and checked here) and its one conversion
to a tournament's settings (`tournament_settings`); the settings themselves, and tournament.json, are
agents/arena/settings.py's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from hydra.core.config_store import ConfigStore

from agents.arena.settings import TournamentSettings, check_settings
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
)
from envs.rules import RulesConfig

DEFAULTS = TournamentSettings()
"""Where the config's defaults of the settings come from: one default per setting."""
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
    mode: str = DEFAULTS.mode
    """`round_robin` (every pair meets), `gauntlet` (the first player meets each of the others) or
    `ladder` (each player meets the next in the list)."""
    games_per_pair: int = DEFAULTS.games_per_pair
    """Games per pairing, played as colour-swapped pairs from the same opening; 1 to 100000."""
    seed: int = DEFAULTS.seed
    """Decides openings and player seeds: the same seed replays the same games. 0 to 2**63 - 1."""
    workers: int = 2
    """Worker processes playing games at once (0 or 1: in this process); at most 1024."""
    opening_plies: int = DEFAULTS.opening_plies
    """Random plies from the start position that make each opening (ignored with `openings`); 0 to 30000."""
    openings: Optional[str] = None
    """Openings file: one JFEN, move list, or `JFEN | moves` per line (cycled if short)."""
    max_plies: int = DEFAULTS.max_plies
    """Moves per game after the opening before it is scored a draw (`ply_cap`); 1 to 30000."""
    rules: RulesConfig = field(default_factory=RulesConfig)  # type: ignore[valid-type]
    """Rule set (group `rules`: `rules=dog_over_wolf`, then single keys: `rules.no_capture_draw=200`; see
    envs/rules.py). A rule set of one's own: DIR/rules/NAME.yaml with `hydra.searchpath=[file://DIR]
    rules=NAME`."""
    anchor: Optional[str] = DEFAULTS.anchor
    """The player rated 0 Elo (default: the first player)."""
    prior_games: float = DEFAULTS.prior_games
    """Virtual drawn games per played pairing that keep a clean sweep's rating finite (0: none); 0 to 1000."""
    elo0: float = DEFAULTS.elo0
    """H0 of each pairing's SPRTs (on games and on pairs): the first player is elo0 logistic Elo stronger
    than the second; -1000 to 1000, below elo1."""
    elo1: float = DEFAULTS.elo1
    """H1 of each pairing's SPRTs: the first player is elo1 stronger; -1000 to 1000."""
    alpha: float = DEFAULTS.alpha
    """The SPRTs' chance of H1 when H0 holds; 1e-6 to 0.5."""
    beta: float = DEFAULTS.beta
    """The SPRTs' chance of H0 when H1 holds; 1e-6 to 0.5."""
    sprt_stop: bool = DEFAULTS.sprt_stop
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
        check_settings(self, "", ConfigError)  # the settings' one check, as ConfigError
        check_range(self, "", workers=(0, 1024))
        check_choice(self, "", start_method=START_METHODS)


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


def tournament_settings(cfg: EvaluateConfig) -> TournamentSettings:
    """The settings of the tournament `cfg` sets up (its openings file, if any, read now and checked)."""
    return TournamentSettings(
        mode=cfg.mode,
        games_per_pair=cfg.games_per_pair,
        seed=cfg.seed,
        opening_plies=cfg.opening_plies,
        openings_file=cfg.openings,
        max_plies=cfg.max_plies,
        rules=cfg.rules.rule_set(),
        anchor=cfg.anchor,
        prior_games=cfg.prior_games,
        elo0=cfg.elo0,
        elo1=cfg.elo1,
        alpha=cfg.alpha,
        beta=cfg.beta,
        sprt_stop=cfg.sprt_stop,
    )

"""Tournaments and ratings: play players against each other and rate them (Hydra entry point).

    python evaluate.py                                              # random vs beginner vs normal, 20 games a pair
    python evaluate.py 'players=[random,"alphabeta:depth=2","alphabeta:depth=4"]' games_per_pair=40 workers=2
    python evaluate.py mode=gauntlet 'players=["checkpoint:path=shipped:default-180,sims=200",random,"alphabeta:level=expert"]'
    python evaluate.py openings=my_openings.txt seed=3 out_dir=runs/eval/try1
    python evaluate.py resume=runs/eval/try1                        # continue an interrupted tournament

Writes to `out_dir`: tournament.json (the settings) and games.jsonl (one
GameRecord per game, appended as each game ends) from the first game on,
then results.json, ratings.csv, pairings.csv and crosstable.png (when Pillow
is installed), and prints the table. The same seed replays the same games.
Bad input (an unknown player spec, a missing checkpoint, a malformed
openings file, an unknown config key) stops with one clear message before
any game, and before `out_dir` exists.

Ctrl-C or SIGTERM stops at once and keeps every finished game; the line it
prints says how to continue (``resume=<out_dir>``: the missing games are
played and the tables are those of an uninterrupted run). One process at a
time writes to an `out_dir` (a second is refused, naming the first's pid).
"""

from __future__ import annotations

import os
import signal
import sys

if __name__ == "__main__":  # until the tournament starts, a Ctrl-C (imports, checks) stops with one line
    signal.signal(signal.SIGINT, lambda *_: (sys.stderr.write("\nCtrl-C: stopped while starting; nothing was "
                                                              "written\n"), sys.stderr.flush(), os._exit(130)))
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig

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
from envs.rules import COUNTER_LIMIT

SETTINGS_FILE = "tournament.json"
GAMES_FILE = "games.jsonl"
CHANGEABLE_ON_RESUME = ("resume", "workers", "progress", "image", "start_method")
"""Keys a resumed tournament may change: they do not change its games."""


@dataclass
class EvaluateConfig:
    """Settings of one tournament (configs/evaluate/evaluate.yaml holds the defaults)."""

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
    rules: str = "default"
    """Rule set: a name in configs/rules (`dog_over_wolf`, ...) or a yaml file path."""
    anchor: Optional[str] = None
    """The player rated 0 Elo (default: the first player)."""
    prior_games: float = 1.0
    """Virtual drawn games per played pairing that keep a clean sweep's rating finite (0: none); 0 to 1000."""
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

    def __post_init__(self) -> None:
        from agents.arena.tournament import MODES

        check_range(self, "", games_per_pair=(1, 100_000), seed=(0, 2**63 - 1), workers=(0, 1024),
                    opening_plies=(0, COUNTER_LIMIT), max_plies=(1, COUNTER_LIMIT), prior_games=(0, 1000))
        check_choice(self, "", mode=MODES, start_method=START_METHODS)


START_METHODS = ("spawn", "forkserver", "fork")
ConfigStore.instance().store(name=SCHEMA, node=EvaluateConfig)  # configs/evaluate/evaluate.yaml starts from it


def compose_config(overrides: Sequence[str] = ()) -> Any:
    """The config that ``python evaluate.py <overrides>`` would run, composed in this process (tests).

    ConfigError, in one line, for an override Hydra refuses (an unknown key, a mistyped value...)."""
    return compose(config_dir("evaluate"), "evaluate", overrides, schema=EvaluateConfig, job_name="evaluate")


def checked_config(cfg: Any) -> EvaluateConfig:
    """The composed config as an EvaluateConfig with every value checked (ConfigError naming the key):
    an unknown key, even one added with `+` (with the closest known key), a mistyped or out-of-range value."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    config_kwargs(EvaluateConfig, {k: None for k in cfg if k != "hydra"}, "evaluate.py config", ConfigError)
    try:
        conf = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as e:
        raise ConfigError(hydra_error_line(e, dotted_keys(EvaluateConfig))) from None
    assert isinstance(conf, EvaluateConfig)
    return conf


def main(cfg: Optional[Any] = None) -> None:
    """``python evaluate.py <overrides>``: `run` as Hydra's entry point, after the overrides have composed in
    this process, so that an override Hydra refuses stops with one line (exit 2). With `cfg`: `run` on it."""
    if cfg is not None:
        return run(cfg)
    args = sys.argv[1:]
    if not any(a.startswith("-") for a in args):  # Hydra's own flags (--help, --cfg, -m) go to Hydra as they are
        try:
            compose_config(args)
        except ConfigError as e:
            print(f"evaluate.py: error: {e}", file=sys.stderr)
            sys.exit(2)
    run()


@hydra.main(version_base=None, config_path=str(config_dir("evaluate")), config_name="evaluate")  # where installed
def run(cfg: Any) -> None:
    from agents.arena.records import append_jsonl, cut_torn_tail, read_jsonl
    from agents.arena.tournament import Opening, TournamentError, run_tournament, schedule
    from agents.io import atomic_write_json
    from agents.rundir import RunDirLock, check_writable_dir, claim_run_dir
    from agents.stopping import GracefulStop, signal_name
    from envs.rules import RuleSet

    lock: Optional[RunDirLock] = None
    played: list[Any] = []
    out_dir = Path(".")
    try:
        try:
            cfg = checked_config(cfg)
            if cfg.resume:
                out_dir = Path(cfg.resume)
                settings = stored_settings(out_dir)
                games = out_dir / GAMES_FILE
                if games.exists() and not games.is_file():
                    raise TournamentError(f"{str(games)!r} is not a file: the tournament's games cannot be read or "
                                          "added to")
                lock = claim_run_dir(out_dir, what="tournament directory")
                cut = cut_torn_tail(games)  # a game whose line a kill cut short is played again
                if cut:
                    print(f"evaluate.py: cut {cut} bytes of an unfinished last line from {games}; that game is played "
                          "again", file=sys.stderr)
                if games.is_file():
                    played = list(read_jsonl(games))
            else:
                out_dir = Path(str(cfg.out_dir))
                check_writable_dir(out_dir)
                refuse_a_tournament_in(out_dir)
                settings = new_settings(cfg)
            players = list(settings["players"])
            openings = [Opening(*opening_from_text(t)) for t in settings["openings"]] if settings["openings"] else None
            total = len(schedule(len(players), settings["games_per_pair"], [Opening()], settings["seed"], settings["mode"]))

            def start() -> None:  # every check has passed: the first game is about to be played
                nonlocal lock
                if lock is None:  # checked again under the lock: another evaluate.py may have begun meanwhile
                    lock = claim_run_dir(out_dir, what="tournament directory", check=lambda: refuse_a_tournament_in(out_dir))
                    atomic_write_json(out_dir / SETTINGS_FILE, settings)

            kept = [len(played)]

            def keep(rec: Any) -> None:
                append_jsonl(out_dir / GAMES_FILE, [rec])
                kept[0] += 1

            again = f"python evaluate.py resume={out_dir}"
            signal.signal(signal.SIGINT, signal.default_int_handler)  # the one line of the start no longer holds
            with GracefulStop(on_second=f"stopped at once; continue with: {again}") as stop:
                result = stop.abandonable(
                    run_tournament, players, games_per_pair=settings["games_per_pair"], seed=settings["seed"],
                    workers=cfg.workers, mode=settings["mode"], rules=RuleSet.from_dict(settings["rules"]),
                    opening_plies=settings["opening_plies"], openings=openings, max_plies=settings["max_plies"],
                    anchor=settings["anchor"], prior_games=settings["prior_games"], progress=cfg.progress,
                    start_method=cfg.start_method, on_game=keep, played=played, on_start=start)
        except ValueError as e:  # PlayerSpecError, OpeningsError, TournamentError, RuleSetError, RatingError...
            print(f"evaluate.py: error: {e}", file=sys.stderr)
            sys.exit(2)
        except OSError as e:  # an unreadable games file, a full disk: the games written so far are kept
            print(f"evaluate.py: error: {e.filename or out_dir}: {e.strerror or e}", file=sys.stderr)
            sys.exit(2)
        if result is None:
            if lock is None:  # stopped while the players were being checked: the tournament never started
                print(f"{signal_name(stop.requested or 2)}: stopped before the first game; nothing was written",
                      file=sys.stderr)
            else:
                print(f"{signal_name(stop.requested or 2)}: stopped with {kept[0]} of {total} games played "
                      f"(kept in {out_dir / GAMES_FILE}); continue with: {again}", file=sys.stderr)
            sys.exit(stop.exit_code)
        result.settings["openings"] = settings["openings_file"]
        print(result.table())
        paths = result.write(out_dir, image=cfg.image)
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    finally:  # the lock is given up however the tournament ends (the process may go on: tests, notebooks)
        if lock is not None:
            lock.release()


def refuse_a_tournament_in(out_dir: Path) -> None:
    """TournamentError when `out_dir` already holds a tournament's settings or games (a new one never mixes
    its files with another's)."""
    from agents.arena.tournament import TournamentError

    for name in (SETTINGS_FILE, GAMES_FILE):
        if (out_dir / name).exists() or (out_dir / name).is_symlink():
            raise TournamentError(f"{str(out_dir)!r} already holds a tournament ({name}); continue it with "
                                  f"resume={out_dir}, or choose another out_dir")


SETTINGS_TYPES: dict[str, tuple[type, ...]] = {
    "players": (list,), "mode": (str,), "games_per_pair": (int,), "seed": (int,), "opening_plies": (int,),
    "openings": (list, type(None)), "openings_file": (str, type(None)), "max_plies": (int,), "rules": (dict,),
    "anchor": (str, type(None)), "prior_games": (int, float)}
"""What each entry of tournament.json must be (`new_settings` writes them)."""


def new_settings(cfg: EvaluateConfig) -> dict[str, Any]:
    """What decides a tournament's games, as plain data for tournament.json (an openings file is read now)."""
    from agents.arena.tournament import read_openings
    from envs.rules import load_rules

    rules = load_rules(cfg.rules)
    openings = None
    if cfg.openings:
        openings = [f"{o.start} | {' '.join(o.moves)}" for o in read_openings(cfg.openings, rules)]
    return {"players": [str(p) for p in cfg.players], "mode": cfg.mode, "games_per_pair": cfg.games_per_pair,
            "seed": cfg.seed, "opening_plies": cfg.opening_plies, "openings": openings, "openings_file": cfg.openings,
            "max_plies": cfg.max_plies, "rules": rules.to_dict(), "anchor": cfg.anchor,
            "prior_games": cfg.prior_games}


def stored_settings(out_dir: Path) -> dict[str, Any]:
    """The settings of the tournament in `out_dir`; refuses overrides that would change its games."""
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
    for key, types in SETTINGS_TYPES.items():
        value = settings.get(key)
        if key not in settings or isinstance(value, bool) or not isinstance(value, types):
            raise error(f"{path}: {key}={shown(value)} is not what a tournament's settings hold "
                        f"({' or '.join(t.__name__ if t is not type(None) else 'null' for t in types)})")
    for key in ("players", "openings"):
        if settings[key] is not None and not all(isinstance(x, str) for x in settings[key]):
            raise error(f"{path}: {key} must be a list of strings")
    changed = sorted({override_key(o) for o in HydraConfig.get().overrides.task} - set(CHANGEABLE_ON_RESUME))
    if changed:
        raise error(f"resume={out_dir} continues that tournament as it was set up; {', '.join(changed)} cannot "
                    f"change (only {', '.join(CHANGEABLE_ON_RESUME[1:])} can); start a new tournament instead")
    return dict(settings)


def opening_from_text(text: str) -> tuple[str, tuple[str, ...]]:
    """``"JFEN | moves"`` (as tournament.json stores openings) -> (start JFEN, moves)."""
    jfen, _, moves = text.partition("|")
    return jfen.strip(), tuple(moves.split())


if __name__ == "__main__":
    main()

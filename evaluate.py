"""Tournaments and ratings: play players against each other and rate them (Hydra entry point).

    python evaluate.py                                              # random vs beginner vs normal, 20 games a pair
    python evaluate.py 'players=[random,"alphabeta:depth=2","alphabeta:depth=4"]' games_per_pair=40 workers=2
    python evaluate.py mode=gauntlet 'players=["checkpoint:path=shipped:default-180",random,"alphabeta:level=expert"]'
    python evaluate.py openings=my_openings.txt seed=3 out_dir=runs/eval/try1
    python evaluate.py rules=dog_over_wolf rules.no_capture_draw=200             # the rules group, as in train.py
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
    signal.signal(
        signal.SIGINT,
        lambda *_: (
            sys.stderr.write("\nCtrl-C: stopped while starting; nothing was written\n"),
            sys.stderr.flush(),
            os._exit(130),
        ),
    )
from pathlib import Path
from typing import Any, Optional

import hydra
from hydra.core.hydra_config import HydraConfig

from agents.arena.config import (
    GAMES_FILE,
    SETTINGS_FILE,
    EvaluateConfig,
    checked_config,
    compose_config,
    new_settings,
    opening_from_text,
    refuse_a_tournament_in,
    stored_settings,
)
from agents.common.cli import hydra_entry
from envs.config import config_dir


def main() -> None:
    """``python evaluate.py <overrides>``: `run` as Hydra's entry point, after the overrides have composed in
    this process (agents.common.cli.hydra_entry: an override Hydra refuses stops with one line, exit 2)."""
    hydra_entry("evaluate.py", compose_config, run, doc=__doc__ or "", schema=EvaluateConfig)


@hydra.main(version_base=None, config_path=str(config_dir("")), config_name="evaluate")  # where installed
def run(cfg: Any) -> None:
    from agents.arena.records import append_jsonl, cut_torn_tail, read_jsonl
    from agents.arena.tournament import Opening, TournamentError, run_tournament, schedule
    from agents.common.io import atomic_write_json
    from agents.common.rundir import RunDirLock, check_writable_dir, claim_run_dir
    from agents.common.stopping import GracefulStop, signal_name
    from envs.rules import RuleSet

    lock: Optional[RunDirLock] = None
    played: list[Any] = []
    out_dir = Path(".")
    try:
        try:
            cfg = checked_config(cfg)
            if cfg.resume:
                out_dir = Path(cfg.resume)
                settings = stored_settings(out_dir, HydraConfig.get().overrides.task)
                games = out_dir / GAMES_FILE
                if games.exists() and not games.is_file():
                    raise TournamentError(
                        f"{str(games)!r} is not a file: the tournament's games cannot be read or added to"
                    )
                lock = claim_run_dir(out_dir, what="tournament directory")
                cut = cut_torn_tail(games)  # a game whose line a kill cut short is played again
                if cut:
                    print(
                        f"evaluate.py: cut {cut} bytes of an unfinished last line from {games}; that game is played "
                        "again",
                        file=sys.stderr,
                    )
                if games.is_file():
                    played = list(read_jsonl(games))
            else:
                out_dir = Path(str(cfg.out_dir))
                check_writable_dir(out_dir)
                refuse_a_tournament_in(out_dir)
                settings = new_settings(cfg)
            players = list(settings["players"])
            openings = [Opening(*opening_from_text(t)) for t in settings["openings"]] if settings["openings"] else None
            total = len(
                schedule(len(players), settings["games_per_pair"], [Opening()], settings["seed"], settings["mode"])
            )

            def start() -> None:  # every check has passed: the first game is about to be played
                nonlocal lock
                if lock is None:  # checked again under the lock: another evaluate.py may have begun meanwhile
                    lock = claim_run_dir(
                        out_dir, what="tournament directory", check=lambda: refuse_a_tournament_in(out_dir)
                    )
                    atomic_write_json(out_dir / SETTINGS_FILE, settings)

            kept = [len(played)]

            def keep(rec: Any) -> None:
                append_jsonl(out_dir / GAMES_FILE, [rec])
                kept[0] += 1

            again = f"python evaluate.py resume={out_dir}"
            signal.signal(signal.SIGINT, signal.default_int_handler)  # the one line of the start no longer holds
            with GracefulStop(on_second=f"stopped at once; continue with: {again}") as stop:
                result = stop.abandonable(
                    run_tournament,
                    players,
                    games_per_pair=settings["games_per_pair"],
                    seed=settings["seed"],
                    workers=cfg.workers,
                    mode=settings["mode"],
                    rules=RuleSet.from_dict(settings["rules"]),
                    opening_plies=settings["opening_plies"],
                    openings=openings,
                    max_plies=settings["max_plies"],
                    anchor=settings["anchor"],
                    prior_games=settings["prior_games"],
                    progress=cfg.progress,
                    start_method=cfg.start_method,
                    sprt_stop=settings["sprt_stop"],
                    elo0=settings["elo0"],
                    elo1=settings["elo1"],
                    alpha=settings["alpha"],
                    beta=settings["beta"],
                    on_game=keep,
                    played=played,
                    on_start=start,
                    engine_logs=out_dir / "engines",
                )
        except ValueError as e:  # PlayerSpecError, OpeningsError, TournamentError, RuleSetError, RatingError...
            print(f"evaluate.py: error: {e}", file=sys.stderr)
            sys.exit(2)
        except OSError as e:  # an unreadable games file, a full disk: the games written so far are kept
            print(f"evaluate.py: error: {e.filename or out_dir}: {e.strerror or e}", file=sys.stderr)
            sys.exit(2)
        if result is None:
            if lock is None:  # stopped while the players were being checked: the tournament never started
                print(
                    f"{signal_name(stop.requested or 2)}: stopped before the first game; nothing was written",
                    file=sys.stderr,
                )
            else:
                print(
                    f"{signal_name(stop.requested or 2)}: stopped with {kept[0]} of {total} games played "
                    f"(kept in {out_dir / GAMES_FILE}); continue with: {again}",
                    file=sys.stderr,
                )
            sys.exit(stop.exit_code)
        result.settings["openings"] = settings["openings_file"]
        print(result.table())
        paths = result.write(out_dir, image=cfg.image)
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    finally:  # the lock is given up however the tournament ends (the process may go on: tests, notebooks)
        if lock is not None:
            lock.release()


if __name__ == "__main__":
    main()

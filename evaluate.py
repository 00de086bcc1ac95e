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
from typing import TYPE_CHECKING, Any, NoReturn, Optional

import hydra
from hydra.core.hydra_config import HydraConfig

from agents.arena.config import EvaluateConfig, checked_config, compose_config
from agents.common.cli import hydra_entry
from envs.config import config_dir

if TYPE_CHECKING:
    from agents.arena.reporting import TournamentResult
    from agents.arena.run import TournamentRun


def main() -> None:
    """``python evaluate.py <overrides>``: `run` as Hydra's entry point, after the overrides have composed in
    this process (agents.common.cli.hydra_entry: an override Hydra refuses stops with one line, exit 2)."""
    hydra_entry("evaluate.py", compose_config, run, doc=__doc__ or "", schema=EvaluateConfig)


@hydra.main(version_base=None, config_path=str(config_dir("")), config_name="evaluate")  # where installed
def run(cfg: Any) -> None:
    """Config -> settings -> the tournament's directory -> its games -> the report. Bad input stops with one
    line (exit 2); the directory is given up however the tournament ends (tests and notebooks go on)."""
    from agents.arena.run import TournamentRun

    tournament: Optional[TournamentRun] = None
    try:
        conf = checked_config(cfg)
        tournament = TournamentRun.open(conf, HydraConfig.get().overrides.task)
        with tournament:
            if tournament.cut:
                print(
                    f"evaluate.py: cut {tournament.cut} bytes of an unfinished last line from {tournament.games}; "
                    "that game is played again",
                    file=sys.stderr,
                )
            result = play(tournament, conf)
            report(result, tournament, conf)
    except ValueError as e:  # PlayerSpecError, OpeningsError, TournamentError, RuleSetError, RatingError...
        refuse(str(e))
    except OSError as e:  # an unreadable games file, a full disk: the games written so far are kept
        where = tournament.out_dir if tournament is not None else "."
        refuse(f"{e.filename or where}: {e.strerror or e}")


def play(tournament: TournamentRun, conf: EvaluateConfig) -> TournamentResult:
    """The tournament's games, those it lacks played (Ctrl-C or SIGTERM: the games so far kept, the line that
    says how to continue, and the exit)."""
    from agents.common.stopping import GracefulStop, signal_name

    signal.signal(signal.SIGINT, signal.default_int_handler)  # the one line of the start no longer holds
    with GracefulStop(on_second=f"stopped at once; continue with: {tournament.again}") as stop:
        result = stop.abandonable(
            tournament.play, workers=conf.workers, start_method=conf.start_method, progress=conf.progress
        )
    if result is None:
        if tournament.lock is None:  # stopped while the players were being checked: the tournament never started
            said = "stopped before the first game; nothing was written"
        else:
            said = (
                f"stopped with {tournament.kept} of {tournament.total} games played "
                f"(kept in {tournament.games}); continue with: {tournament.again}"
            )
        print(f"{signal_name(stop.requested or 2)}: {said}", file=sys.stderr)
        sys.exit(stop.exit_code)  # the directory is given up on the way out (`run`'s with)
    return result


def report(result: TournamentResult, tournament: TournamentRun, conf: EvaluateConfig) -> None:
    """Print the table and write the result files into the tournament's directory."""
    print(result.table())
    paths = result.write(tournament.out_dir, image=conf.image)
    print("wrote " + ", ".join(str(p) for p in paths.values()))


def refuse(line: str) -> NoReturn:
    """Stop with one line and exit status 2."""
    print(f"evaluate.py: error: {line}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()

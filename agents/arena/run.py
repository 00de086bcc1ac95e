"""A tournament's directory, as a training run's (`agents.alphazero.training.run.TrainingRun`): one writer
at a time, its settings file, its games log and how an interrupted tournament resumes.

    with TournamentRun.open(conf, overrides) as tournament:    # new (nothing written yet) or resumed
        result = tournament.play(workers=2)                     # tournament.json at the first game
        result.write(tournament.out_dir)

The directory holds tournament.json (the players and the settings, written once every check has passed,
just before the first game) and games.jsonl (each game appended as it ends). A second process is refused
while the first holds the lock (`agents.common.rundir.claim_run_dir`, naming its pid). A resume reads the
settings back (`read_tournament_file`), refuses overrides that would change the games, cuts an unfinished
last line of games.jsonl (that game is played again) and plays only the games it lacks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from agents.arena.config import CHANGEABLE_ON_RESUME, EvaluateConfig, tournament_settings
from agents.arena.errors import TournamentError
from agents.arena.openings import Opening
from agents.arena.records import GameRecord, append_jsonl, cut_torn_tail, read_jsonl
from agents.arena.reporting import TournamentResult
from agents.arena.settings import TournamentSettings, read_tournament_file, write_tournament_file
from agents.arena.tournament import run_tournament, schedule
from agents.common.rundir import RunDirLock, check_writable_dir, claim_run_dir
from envs.config import override_key

SETTINGS_FILE = "tournament.json"
GAMES_FILE = "games.jsonl"


class TournamentRun:
    """One tournament directory: its players and settings, the games it already holds, and its lock (held
    from the first game of a new tournament, from the start of a resumed one, until `release`)."""

    def __init__(
        self,
        out_dir: Path,
        players: list[str],
        settings: TournamentSettings,
        lock: Optional[RunDirLock] = None,
        played: Sequence[GameRecord] = (),
        cut: int = 0,
    ) -> None:
        self.out_dir, self.players, self.settings = out_dir, players, settings
        self.games = out_dir / GAMES_FILE
        """The games log: one record a line, appended as each game ends."""
        self.lock = lock
        self.played = list(played)
        """The games already in games.jsonl (a resumed tournament's)."""
        self.cut = cut
        """Bytes of an unfinished last line cut from games.jsonl (that game is played again)."""
        self.kept = len(self.played)
        """Games in games.jsonl now."""
        self.again = f"python evaluate.py resume={out_dir}"
        """The command that continues the tournament."""

    @classmethod
    def open(cls, conf: EvaluateConfig, overrides: Sequence[str]) -> TournamentRun:
        """The tournament `conf` sets up (`new`), or the one it resumes (`resume`, given the command line's
        `overrides`). ValueError naming what is wrong."""
        return cls.resume(Path(conf.resume), overrides) if conf.resume else cls.new(conf)

    @classmethod
    def new(cls, conf: EvaluateConfig) -> TournamentRun:
        """A new tournament into `conf.out_dir`, nothing written yet: refused when out_dir cannot be a writable
        directory or already holds a tournament."""
        out_dir = Path(str(conf.out_dir))
        check_writable_dir(out_dir)
        refuse_a_tournament_in(out_dir)
        return cls(out_dir, [str(p) for p in conf.players], tournament_settings(conf))

    @classmethod
    def resume(cls, out_dir: Path, overrides: Sequence[str]) -> TournamentRun:
        """The interrupted tournament in `out_dir`, its directory held: its settings, and its games with an
        unfinished last line cut. Refuses `overrides` (the command line's, as Hydra gives them) that would
        change its games: any key but `CHANGEABLE_ON_RESUME`, `rules` and `rules.*` too."""
        path = out_dir / SETTINGS_FILE
        if not path.is_file():
            raise TournamentError(f"resume={out_dir}: no tournament to continue there (no {SETTINGS_FILE})")
        players, settings = read_tournament_file(path)
        changed = sorted({override_key(o) for o in overrides} - set(CHANGEABLE_ON_RESUME))
        if changed:
            raise TournamentError(
                f"resume={out_dir} continues that tournament as it was set up; {', '.join(changed)} cannot "
                f"change (only {', '.join(CHANGEABLE_ON_RESUME[1:])} can); start a new tournament instead"
            )
        games = out_dir / GAMES_FILE
        if games.exists() and not games.is_file():
            raise TournamentError(f"{str(games)!r} is not a file: the tournament's games cannot be read or added to")
        lock = claim_run_dir(out_dir, what="tournament directory")
        try:
            cut = cut_torn_tail(games)  # a game whose line a kill cut short is played again
            played = list(read_jsonl(games)) if games.is_file() else []
        except BaseException:
            lock.release()
            raise
        return cls(out_dir, players, settings, lock, played, cut)

    @property
    def total(self) -> int:
        """The games the tournament schedules."""
        s = self.settings
        return len(schedule(len(self.players), s.games_per_pair, [Opening()], s.seed, s.mode))

    def start(self) -> None:
        """Hold the directory and write tournament.json, once every check has passed (the first game is next).
        Checked again under the lock: another evaluate.py may have begun there meanwhile."""
        if self.lock is None:
            self.lock = claim_run_dir(
                self.out_dir, what="tournament directory", check=lambda: refuse_a_tournament_in(self.out_dir)
            )
            write_tournament_file(self.out_dir / SETTINGS_FILE, self.players, self.settings)

    def keep(self, rec: GameRecord) -> None:
        """Append a finished game to games.jsonl."""
        append_jsonl(self.games, [rec])
        self.kept += 1

    def play(self, *, workers: int = 0, start_method: str = "spawn", progress: bool = True) -> TournamentResult:
        """Play the games the directory lacks (`run_tournament`), each kept as it ends; engines' standard
        error in ``<out_dir>/engines``."""
        return run_tournament(
            self.players,
            self.settings,
            workers=workers,
            start_method=start_method,
            progress=progress,
            played=self.played,
            on_start=self.start,
            on_game=self.keep,
            engine_logs=self.out_dir / "engines",
        )

    def release(self) -> None:
        """Give the directory up (idempotent)."""
        if self.lock is not None:
            self.lock.release()

    def __enter__(self) -> TournamentRun:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def refuse_a_tournament_in(out_dir: Path) -> None:
    """TournamentError when `out_dir` already holds a tournament's settings or games (a new one never mixes
    its files with another's)."""
    for name in (SETTINGS_FILE, GAMES_FILE):
        if (out_dir / name).exists() or (out_dir / name).is_symlink():
            raise TournamentError(
                f"{str(out_dir)!r} already holds a tournament ({name}); continue it with "
                f"resume={out_dir}, or choose another out_dir"
            )

"""Tournaments between players: the schedule of colour-swapped pairs and its games, played in parallel.

    from agents.arena.settings import TournamentSettings
    from agents.arena.tournament import run_tournament
    result = run_tournament(["random", "alphabeta:depth=1", "alphabeta:depth=2"],
                            TournamentSettings(games_per_pair=10, seed=0), workers=2)
    print(result.table())
    result.score("alphabeta:depth=2", "random")     # mean score of the first against the second
    result.ratings.elo("alphabeta:depth=2")         # Elo relative to the anchor (default: first player)
    result.write("runs/eval")                       # results.json, ratings.csv, pairings.csv, games.jsonl

What decides the games is one `TournamentSettings` (agents/arena/settings.py); where they start,
agents/arena/openings.py; the tables and files of the result, agents/arena/reporting.py.

How games are made. Every pairing plays `games_per_pair` games as
colour-swapped pairs: the two games of a pair start from the same opening,
each player taking Red once. Opening k is the same for every pairing.
Opening moves are part of the recorded game (``extra["opening_plies"]`` says
how many), so every record replays.

Reproducibility. Every game's players are built afresh from their specs with
seeds drawn from ``(seed, pairing, game)``, and searches limited by depth or
nodes are deterministic, so the same seed replays the same games whatever
the number of workers. Time-limited players (``alphabeta:time=...``) and
player objects passed in (rather than specs) are not reproducible this way.

Interrupted tournaments. `on_game` sees each game as it ends (evaluate.py
appends it to games.jsonl); `played` takes such games back, so a tournament
stopped part way continues with the games it lacks and ends with the tables
an uninterrupted run gives.

Players are spec strings (see `envs.players`) or objects with the Player
protocol. Objects cannot be sent to worker processes: use ``workers`` 0 or 1
with them. Every spec is built once before the first game, so a bad spec or a
missing checkpoint fails at once.

Engines. An ``engine:`` spec (`agents.engine.client`) is a program of its own:
each process playing games starts it once and keeps it from game to game.
Whatever it does wrong in a game (an illegal or unparsable move, no answer in
time, an exit) loses that game (termination ``engine_fault``, the reason in
``extra["fault"]``); it is started again for its next move and the tournament
goes on. Its standard error goes to ``engine_logs``.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import multiprocessing.util
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

from agents.arena.errors import TournamentError
from agents.arena.openings import Opening, random_openings
from agents.arena.ratings import pair_class, pentanomial_sprt
from agents.arena.records import GameRecord
from agents.arena.reporting import TournamentResult, game_result, summarize
from agents.arena.settings import MODES, SPRT_DEFAULTS, TournamentSettings
from agents.common.io import PathLike
from agents.common.processes import WorkerProcesses
from agents.engine.client import ENGINE_FAULT, EngineFault, EnginePlayer, engine_settings
from envs import RuleSet
from envs.config import check_choice, check_range
from envs.notation import Side
from envs.players import Player, PlayerSpecError, make_player, parse_spec
from envs.seeding import derive_seed

PlayerLike = Union[str, Player]


@dataclass(frozen=True)
class GameTask:
    """One game to play: who (indices into the player list), from where, with which seeds."""

    index: int
    pairing: int
    red: int
    blue: int
    opening: Opening
    opening_index: int
    seed: int
    red_seed: int
    blue_seed: int

    def record_extra(self) -> dict[str, int]:
        """What the game's record keeps of its task (``extra``): game and pairing indices, opening, seeds."""
        return {
            "game": self.index,
            "pairing": self.pairing,
            "opening_index": self.opening_index,
            "red_seed": self.red_seed,
            "blue_seed": self.blue_seed,
        }


def schedule(
    n_players: int, games_per_pair: int, openings: Sequence[Opening], seed: int, mode: str = "round_robin"
) -> list[GameTask]:
    """All games of the tournament in a fixed order (colour-swapped pairs, opening k for pair k)."""
    check_choice({"mode": mode}, "", TournamentError, mode=MODES)
    if mode == "round_robin":
        pairs = [(i, j) for i in range(n_players) for j in range(i + 1, n_players)]
    elif mode == "gauntlet":
        pairs = [(0, j) for j in range(1, n_players)]
    else:
        pairs = [(i, i + 1) for i in range(n_players - 1)]
    tasks: list[GameTask] = []
    for p, (i, j) in enumerate(pairs):
        for g in range(games_per_pair):
            red, blue = (i, j) if g % 2 == 0 else (j, i)
            k = (g // 2) % len(openings)
            tasks.append(
                GameTask(
                    index=len(tasks),
                    pairing=p,
                    red=red,
                    blue=blue,
                    opening=openings[k],
                    opening_index=k,
                    seed=derive_seed(seed, "game", p, g),
                    red_seed=derive_seed(seed, "red", p, g),
                    blue_seed=derive_seed(seed, "blue", p, g),
                )
            )
    return tasks


def play_game(
    red: Player,
    blue: Player,
    opening: Optional[Opening] = None,
    *,
    rules: Optional[RuleSet] = None,
    max_plies: int = 600,
    seed: Optional[int] = None,
    red_name: Optional[str] = None,
    blue_name: Optional[str] = None,
    **extra: Any,
) -> GameRecord:
    """Play one game from `opening` (None: the start position) and return its record.

    ``extra["seconds"]`` is the game's wall clock, ``extra["think"]`` each side's time in `select_move`
    (``{"red": {"seconds": ..., "moves": ...}, "blue": ...}``: its moves and the seconds they took, the opening's
    excluded).
    `max_plies` counts the players' moves (the opening excluded); a game
    that reaches it, or whose counters reach their limit (`Board.at_counter_limit`), is scored a draw with
    termination ``ply_cap``. A player
    that returns an illegal move raises TournamentError naming it; an engine's fault (`EngineFault`) loses
    it the game: termination ``engine_fault``, ``extra["fault"]`` the side at fault and what it did."""
    rules = rules if rules is not None else RuleSet()
    opening = opening if opening is not None else Opening()
    board = opening.board(rules)
    red.reset()
    blue.reset()
    names = {Side.RED: red_name or red.name, Side.BLUE: blue_name or blue.name}
    t0 = time.perf_counter()
    termination: Optional[str] = None
    result: Optional[str] = None
    plies = 0
    think = {Side.RED: 0.0, Side.BLUE: 0.0}
    moved = {Side.RED: 0, Side.BLUE: 0}
    while board.outcome() is None:
        if plies >= max_plies or board.at_counter_limit():
            termination, result = "ply_cap", "1/2-1/2"
            break
        side = board.side_to_move
        player = red if side == Side.RED else blue
        t_move = time.perf_counter()
        try:
            move = player.select_move(board.copy())
        except EngineFault as e:
            termination, result = ENGINE_FAULT, "0-1" if side == Side.RED else "1-0"
            extra["fault"] = {"side": side.name.lower(), "reason": str(e)}
            break
        if not board.is_legal(move):
            raise TournamentError(f"player {names[side]!r} chose illegal move {move} in {board.jfen()!r}")
        think[side] += time.perf_counter() - t_move
        moved[side] += 1
        board.push(move)
        plies += 1
    return GameRecord.from_board(
        board,
        opening.start,
        red=names[Side.RED],
        blue=names[Side.BLUE],
        seed=seed,
        termination=termination,
        result=result,
        opening_plies=len(opening.moves),
        seconds=round(time.perf_counter() - t0, 4),
        think={
            side.name.lower(): {"seconds": round(think[side], 4), "moves": moved[side]}
            for side in (Side.RED, Side.BLUE)
        },
        **extra,
    )


class Seats:
    """The players of one process's games, by their index in the tournament: player objects as given; specs
    built afresh for each game with the game's seed, except ``engine:`` specs, whose program runs from game to
    game (started again after a fault) until `close`.

    An engine's standard error goes to ``engine_logs/P<k>-<name>-<worker>.stderr.log`` (P<k> its label in
    the tables, `worker` this process's number), or nowhere when `engine_logs` is None."""

    def __init__(
        self,
        specs: Sequence[str],
        objects: Sequence[Optional[Player]],
        rules: RuleSet,
        max_plies: int,
        engine_logs: Optional[PathLike] = None,
        worker: int = 0,
    ) -> None:
        self.specs, self.objects, self.rules, self.max_plies = list(specs), list(objects), rules, max_plies
        self.engine_logs = None if engine_logs is None else Path(engine_logs)
        self.worker = worker
        self.engines: dict[int, EnginePlayer] = {}

    def keep(self, index: int, engine: EnginePlayer) -> None:
        """Play player `index`'s games with `engine`, already started (the one a spec check built)."""
        self.engines[index] = engine
        self._log(index, engine)

    def _log(self, index: int, engine: EnginePlayer) -> None:
        if self.engine_logs is not None:
            name = "".join(c if c.isalnum() or c in "._-" else "_" for c in engine.settings.shown_name)
            engine.keep_stderr(self.engine_logs / f"P{index + 1}-{name}-{self.worker}.stderr.log")

    def player(self, index: int, seed: int) -> Player:
        """Player `index` for a game whose seed for it is `seed`."""
        obj = self.objects[index]
        if obj is not None:
            return obj
        if index in self.engines:
            return self.engines[index]
        kind, options = parse_spec(self.specs[index])
        if kind == "engine":  # checked before the first game; a failing start is now a fault of a game
            engine = EnginePlayer(engine_settings(options), rules=self.rules)
            self.keep(index, engine)
            return engine
        return make_player(self.specs[index], rules=self.rules, seed=seed)

    def play(self, task: GameTask) -> GameRecord:
        """The game of `task` (the one place a tournament's game is played), its players named by their specs."""
        red = self.player(task.red, task.red_seed)
        blue = self.player(task.blue, task.blue_seed)
        return play_game(
            red,
            blue,
            task.opening,
            rules=self.rules,
            max_plies=self.max_plies,
            seed=task.seed,
            red_name=self.specs[task.red],
            blue_name=self.specs[task.blue],
            **task.record_extra(),
        )

    def close(self) -> None:
        """End the engines' programs."""
        engines, self.engines = self.engines, {}
        for engine in engines.values():
            engine.close()


# --- worker side --------------------------------------------------------------------------------
class GameWorker:
    """What a tournament's worker process holds: the player specs, the rules, the ply cap, and its engines
    (`Seats`; their programs end with the process)."""

    def __init__(
        self, specs: list[str], rules: dict[str, Any], max_plies: int, engine_logs: Optional[str] = None
    ) -> None:
        self.specs = specs
        self.rules = RuleSet.from_dict(rules)
        self.max_plies = max_plies
        name = multiprocessing.current_process().name  # `worker-<k>` in a WorkerProcesses
        worker = int(name.rpartition("-")[2]) if name.rpartition("-")[2].isdigit() else 0
        self.seats = Seats(specs, [None] * len(specs), self.rules, max_plies, engine_logs, worker)
        multiprocessing.util.Finalize(self, self.seats.close, exitpriority=10)

    def play(self, task: GameTask) -> str:
        """The game of `task`, its players built from their specs, as a JSON record."""
        return self.seats.play(task).to_json()


class SprtStop:
    """A gauntlet's early stop (`sprt_stop`): a pairing whose complete colour-swapped pairs, taken in
    schedule order, reach a verdict of `pentanomial_sprt` plays no more games.

    Its games after that pair count for nothing, whether never played or already played (in flight when
    the verdict came, or kept by an interrupted run): the verdict falls at the same pair whatever order the
    games end in, so the result is the same with any number of workers and after any resume, and a
    resumed stopped gauntlet plays nothing more."""

    def __init__(self, tasks: Sequence[GameTask], names: Sequence[str], **sprt: float) -> None:
        self.tasks, self.names, self.bounds = tasks, list(names), {**SPRT_DEFAULTS, **sprt}
        self.order: dict[int, list[int]] = {}
        """Pairing -> its game indices in schedule order (pair k: positions 2k and 2k + 1)."""
        for task in tasks:
            self.order.setdefault(task.pairing, []).append(task.index)
        self.position = {i: k for order in self.order.values() for k, i in enumerate(order)}
        self.counts = {p: [0] * 5 for p in self.order}
        self.end: dict[int, int] = {}
        """Stopped pairing -> how many of its games (in schedule order) count."""
        self.stopped: dict[int, dict[str, Any]] = {}
        """Stopped pairing -> what stopped it (`TournamentResult.sprt_stops`)."""
        self.new_stop = False
        """Set when a pairing stops (the caller clears it)."""

    def see(self, index: int, records: Sequence[Optional[GameRecord]]) -> None:
        """Take in game `index`, now in `records`: score the pairs of its pairing that are complete from
        the start, and stop the pairing at the first pair that gives a verdict."""
        p = self.tasks[index].pairing
        order, counts = self.order[p], self.counts[p]
        while p not in self.end:
            k = sum(counts)
            if 2 * k + 1 >= len(order) or records[order[2 * k]] is None or records[order[2 * k + 1]] is None:
                return
            first, second = records[order[2 * k]], records[order[2 * k + 1]]
            assert first is not None and second is not None
            counts[pair_class(game_result(first).score, 1.0 - game_result(second).score)] += 1
            b = self.bounds
            llr, verdict = pentanomial_sprt(counts, b["elo0"], b["elo1"], b["alpha"], b["beta"])
            if verdict == "continue":
                continue
            self.end[p] = 2 * (k + 1)
            task = self.tasks[order[0]]
            alpha, beta = self.bounds["alpha"], self.bounds["beta"]
            self.stopped[p] = {
                "a": self.names[task.red],
                "b": self.names[task.blue],
                "pairs": k + 1,
                "verdict": verdict,
                "llr": llr,
                "bound": math.log((1 - beta) / alpha) if verdict == "H1" else math.log(beta / (1 - alpha)),
                "games_skipped": len(order) - 2 * (k + 1),
            }
            self.new_stop = True

    @property
    def stops(self) -> list[dict[str, Any]]:
        """What stopped each stopped pairing, in pairing order."""
        return [self.stopped[p] for p in sorted(self.stopped)]

    def skips(self, index: int) -> bool:
        """Whether game `index` counts for nothing (its pairing stopped before it)."""
        p = self.tasks[index].pairing
        return p in self.end and self.position[index] >= self.end[p]


# --- running --------------------------------------------------------------------------------------
def check_spec(spec: str, rules: RuleSet) -> Player:
    """Build a spec once to prove it works (a checkpoint's path= may be a file, a run directory or a run
    name; the checkpoint player's error names what it looked for)."""
    kind, options = parse_spec(spec)
    if kind == "checkpoint" and not options.get("path"):
        raise PlayerSpecError(f"player spec {spec!r}: a checkpoint player needs path=...")
    try:
        return make_player(spec, rules=rules, seed=0)
    except PlayerSpecError:
        raise
    except ValueError as e:  # a missing or unfit checkpoint, bad options of a kind
        raise PlayerSpecError(f"player spec {spec!r}: {e}") from None


def _on_cuda(player: Player) -> bool:
    """Whether `player` holds a network on a CUDA device (its ``device``, as the checkpoint player's)."""
    device = getattr(player, "device", None)
    return getattr(device, "type", device) == "cuda"


def run_tournament(
    players: Sequence[PlayerLike],
    settings: Optional[TournamentSettings] = None,
    *,
    workers: int = 0,
    start_method: str = "spawn",
    progress: bool = True,
    played: Sequence[GameRecord] = (),
    on_start: Optional[Callable[[], None]] = None,
    on_game: Optional[Callable[[GameRecord], None]] = None,
    engine_logs: Optional[PathLike] = None,
) -> TournamentResult:
    """Play a round robin (every pair), a gauntlet (players[0] against each other) or a ladder
    (each player against the next), as `settings` say (None: `TournamentSettings`' defaults), and rate all
    games together.

    players: spec strings (``"random"``, ``"alphabeta:depth=3"``, ``"checkpoint:path=...,sims=200"``) or
        Player objects (named by their `.name`; only with workers <= 1). Names must be distinct.
    workers: processes playing games at once; 0 or 1 plays in this process. start_method: theirs
        (``spawn``, ``forkserver`` or ``fork``). progress: show a progress bar.
    played: games of this very tournament already played (an interrupted run's games.jsonl): kept, not
        played again. Each must be the game its ``extra["game"]`` index schedules (same players, same seed).
    on_start: called once every check has passed, before the first game (e.g. to claim an output directory).
    on_game: called in this process with each finished game's record (in completion order).
    engine_logs: the folder that keeps the standard error of ``engine:`` players' programs (`Seats`; made at
        the first game), or None to drop it.

    Returns a TournamentResult: `.score(a, b)`, `.pair(a, b)` (W/D/L, Elo difference, tests),
    `.ratings` (Elo with 95% CIs), `.games` (records in schedule order), `.table()`, `.write(dir)`.
    Raises PlayerSpecError / TournamentError before any game for bad input."""
    settings = settings if settings is not None else TournamentSettings()
    check_range({"workers": workers}, "", TournamentError, workers=(0, None))
    names, objects, checked = check_players(players, settings, workers, start_method)
    try:  # the engines the checks started end here if anything else fails before the first game
        openings = settings.openings or random_openings(
            (settings.games_per_pair + 1) // 2, settings.opening_plies, settings.seed, settings.rules
        )
        tasks = schedule(len(names), settings.games_per_pair, openings, settings.seed, settings.mode)
        records = _place_played(played, tasks, names)
        if on_start is not None:
            on_start()
    except BaseException:
        for engine in checked.values():
            engine.close()
        raise

    t0 = time.perf_counter()
    bar = _Progress(len(tasks), names[0], progress)
    stopper = SprtStop(tasks, names, **settings.sprt) if settings.sprt_stop else None

    def finish(index: int, rec: GameRecord, new: bool = True) -> None:
        records[index] = rec
        if stopper is not None:
            stopper.see(index, records)
        bar.update(rec)
        if on_game is not None and new:
            on_game(rec)

    todo = [task for task in tasks if records[task.index] is None]
    for index, rec in enumerate(records):
        if rec is not None:
            finish(index, rec, new=False)
    try:
        if workers <= 1:
            seats = Seats(names, objects, settings.rules, settings.max_plies, engine_logs)
            for k, engine in checked.items():
                seats.keep(k, engine)
            for task in todo:
                if stopper is None or not stopper.skips(task.index):
                    finish(task.index, seats.play(task))
        else:
            for engine in checked.values():  # each worker process starts its own
                engine.close()
            logs = None if engine_logs is None else str(engine_logs)
            setup = (names, settings.rules.to_dict(), settings.max_plies, logs)
            with WorkerProcesses(workers, GameWorker, *setup, start_method=start_method) as pool:
                _play_in_workers(pool, todo, records, stopper, finish)
    finally:
        bar.close()
        for engine in checked.values():
            engine.close()
    games = [r for i, r in enumerate(records) if r is not None and (stopper is None or not stopper.skips(i))]
    stops = stopper.stops if stopper is not None else ()
    return summarize(games, names, settings, workers=workers, seconds=time.perf_counter() - t0, sprt_stops=stops)


def check_players(
    players: Sequence[PlayerLike], settings: TournamentSettings, workers: int, start_method: str
) -> tuple[list[str], list[Optional[Player]], dict[int, EnginePlayer]]:
    """Check the players before any game: each spec built once (`check_spec`), names distinct, objects only
    in this process, no forked workers beside CUDA, the anchor among them. Returns their names, the
    objects given (None for a spec) and the ``engine:`` players the checks started, by index (they play
    this process's games). TournamentError / PlayerSpecError naming the player."""
    if len(players) < 2:
        raise TournamentError(f"a tournament needs at least two players, got {len(players)}")
    objects: list[Optional[Player]] = []
    names: list[str] = []
    on_cuda: list[str] = []
    checked: dict[int, EnginePlayer] = {}
    try:
        for p in players:
            if isinstance(p, str):
                built = check_spec(p, settings.rules)
                if isinstance(built, EnginePlayer):
                    checked[len(names)] = built
                if _on_cuda(built):
                    on_cuda.append(p.strip())
                objects.append(None)
                names.append(p.strip())
            elif isinstance(p, Player):
                objects.append(p)
                names.append(p.name)
            else:
                raise TournamentError(f"player {p!r} is neither a spec string nor a Player")
        if len(set(names)) != len(names):
            raise TournamentError(f"player names must be distinct, got {names}")
        if workers > 1 and any(o is not None for o in objects):
            raise TournamentError("player objects cannot go to worker processes: use workers=0 or 1, or spec strings")
        torch = sys.modules.get("torch")  # CUDA is in use only where torch has been imported
        if workers > 1 and start_method == "fork" and (on_cuda or (torch is not None and torch.cuda.is_initialized())):
            who = f"player {on_cuda[0]!r} runs on CUDA" if on_cuda else "this process has started CUDA"
            raise TournamentError(
                f"start_method=fork with {who}: CUDA fails in forked worker processes; use start_method=spawn "
                "(the default) or forkserver, or the player's device=cpu"
            )
        if settings.anchor is not None and settings.anchor not in names:
            raise TournamentError(f"anchor {settings.anchor!r} is not among the players {', '.join(names)}")
    except BaseException:  # the checks failed: the engines they started end here
        for engine in checked.values():
            engine.close()
        raise
    return names, objects, checked


def _play_in_workers(
    pool: WorkerProcesses,
    todo: list[GameTask],
    records: list[Optional[GameRecord]],
    stopper: Optional[SprtStop],
    finish: Callable[[int, GameRecord], None],
) -> None:
    """Play the `todo` games in the worker processes; when a pairing stops (`SprtStop`), its games in flight
    are dropped and the others sent again."""
    while todo:
        batch = [task for task in todo if stopper is None or not stopper.skips(task.index)]
        todo = []
        for k, text in pool.run("play", [(task,) for task in batch]):
            finish(batch[k].index, GameRecord.from_dict(json.loads(text)))
            if stopper is not None and stopper.new_stop:
                stopper.new_stop = False
                todo = [task for task in batch if records[task.index] is None]
                break


def _place_played(
    played: Sequence[GameRecord], tasks: Sequence[GameTask], names: Sequence[str]
) -> list[Optional[GameRecord]]:
    """Records by schedule index: the `played` games where they belong, None where a game is still to play.

    Raises TournamentError for a record that is not the game its index schedules (other players or seed,
    another tournament's file) or a game given twice."""
    records: list[Optional[GameRecord]] = [None] * len(tasks)
    for rec in played:
        index = rec.extra.get("game")
        if not isinstance(index, int) or not 0 <= index < len(tasks):
            raise TournamentError(
                f"a game already played has no game index of this tournament "
                f"(extra.game={index!r}; {len(tasks)} games scheduled)"
            )
        task = tasks[index]
        want = (names[task.red], names[task.blue], task.seed)
        if (rec.red, rec.blue, rec.seed) != want:
            raise TournamentError(
                f"game {index} already played ({rec.red} vs {rec.blue}, seed {rec.seed}) is not "
                f"game {index} of this tournament ({want[0]} vs {want[1]}, seed {want[2]})"
            )
        if records[index] is not None:
            raise TournamentError(f"game {index} is given twice among the games already played")
        records[index] = rec
    return records


class _Progress:
    """The progress bar of a tournament (none when not `enabled`): games done and the first player's W/D/L."""

    def __init__(self, total: int, first: str, enabled: bool) -> None:
        self.first, self.tally = first, [0, 0, 0]
        self.bar: Any = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc="games", unit="game", dynamic_ncols=True)

    def update(self, rec: GameRecord) -> None:
        """Count game `rec`, just finished (or kept from an interrupted run)."""
        first, s = self.first, game_result(rec).score
        if first in (rec.red, rec.blue):
            mine = s if rec.red == first else 1.0 - s
            self.tally[0 if mine == 1.0 else (1 if mine == 0.5 else 2)] += 1
        if self.bar is not None:
            w, d, l_ = self.tally
            self.bar.set_postfix_str(f"{first}: W/D/L {w}/{d}/{l_}", refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

"""Tournaments between players: colour-swapped pairs from seeded openings, in parallel, rated.

    from agents.arena.tournament import run_tournament
    result = run_tournament(["random", "alphabeta:depth=1", "alphabeta:depth=2"],
                            games_per_pair=10, seed=0, workers=2)
    print(result.table())
    result.score("alphabeta:depth=2", "random")     # mean score of the first against the second
    result.ratings.elo("alphabeta:depth=2")         # Elo relative to the anchor (default: first player)
    result.write("runs/eval")                       # results.json, ratings.csv, pairings.csv, games.jsonl

How games are made. Every pairing plays `games_per_pair` games as
colour-swapped pairs: the two games of a pair start from the same opening,
each player taking Red once. Opening k is the same for every pairing (fair
comparisons, less noise): either `opening_plies` uniformly random moves from
the start position drawn from ``(seed, k)``, or line k of an openings file
(cycled when the file is shorter). Opening moves are part of the recorded
game (``extra["opening_plies"]`` says how many), so every record replays.

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
with them. Every spec is built once before the first game, so a bad spec, a
missing checkpoint or a malformed openings file fails at once.

Engines. An ``engine:`` spec (`agents.engine.client`) is a program of its own:
each process playing games starts it once and keeps it from game to game.
Whatever it does wrong in a game (an illegal or unparsable move, no answer in
time, an exit) loses that game (termination ``engine_fault``, the reason in
``extra["fault"]``); it is started again for its next move and the tournament
goes on. Its standard error goes to ``engine_logs``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import multiprocessing
import multiprocessing.util
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from agents.arena.ratings import (
    GameResult,
    PairStats,
    PentanomialStats,
    RatingTable,
    fit_ratings,
    head_to_head,
    pair_class,
    pentanomial_sprt,
    pentanomial_stats,
)
from agents.arena.records import GameRecord, write_jsonl
from agents.common.io import PathLike, atomic_write_bytes, atomic_write_json, atomic_write_text
from agents.common.processes import WorkerProcesses
from agents.engine.client import ENGINE_FAULT, EngineFault, EnginePlayer, engine_settings
from envs import Board, Move, RuleSet
from envs.config import check_choice, check_range
from envs.notation import START_JFEN, Side
from envs.players import Player, PlayerSpecError, make_player, parse_spec
from envs.seeding import derive_seed

MODES = ("round_robin", "gauntlet", "ladder")
TABLE_WIDTH = 100
"""Columns of the printed report (`TournamentResult.table`): players appear there by label, P1, P2..."""
PlayerLike = Union[str, Player]


class TournamentError(ValueError):
    """A tournament that cannot be run as asked (names the bad setting)."""


class OpeningsError(TournamentError):
    """A malformed openings file (names the file and line)."""


@dataclass(frozen=True)
class Opening:
    """Where games start: a JFEN plus moves played from it before the players take over."""

    start: str = START_JFEN
    moves: tuple[str, ...] = ()

    def board(self, rules: RuleSet) -> Board:
        board = Board.from_jfen(self.start, rules=rules)
        for m in self.moves:
            board.push(m)
        return board


def random_openings(count: int, plies: int, seed: int, rules: Optional[RuleSet] = None) -> list[Opening]:
    """`count` openings of `plies` random legal moves from the start, opening k drawn from
    ``derive_seed(seed, "opening", k)``; distinct when possible."""
    rules = rules if rules is not None else RuleSet()
    out: list[Opening] = []
    seen: set[tuple[str, ...]] = set()
    for k in range(count):
        rng = np.random.default_rng(derive_seed(seed, "opening", k))
        opening = Opening()
        for _attempt in range(20):
            board = Board(rules=rules)
            moves: list[str] = []
            for _ in range(plies):
                legal = board.legal_move_ints()
                if len(legal) == 0 or board.outcome() is not None:
                    break
                m = Move.from_int(int(legal[rng.integers(len(legal))]))
                board.push(m)
                moves.append(str(m))
            if board.outcome() is not None:
                continue
            opening = Opening(START_JFEN, tuple(moves))
            if opening.moves not in seen:
                break
        seen.add(opening.moves)
        out.append(opening)
    return out


def read_openings(path: PathLike, rules: Optional[RuleSet] = None) -> list[Opening]:
    """Openings from a text file, one per line; blank lines and `#` comments skipped.

    A line is a JFEN (``l5t/1d3c1/... r 0 1``), a list of moves from the
    start position (``a3a4 g7g6``), or a JFEN then ``|`` then moves. Every line
    is checked (JFEN parsed, moves played, game not over); OpeningsError names
    the file and line of the first bad one."""
    rules = rules if rules is not None else RuleSet()
    p = Path(path)
    if not p.is_file():
        raise OpeningsError(f"openings file {str(p)!r} does not exist")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise OpeningsError(f"openings file {str(p)!r} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    out = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if "|" in line:
            jfen, _, rest = line.partition("|")
            opening = Opening(jfen.strip(), tuple(rest.split()))
        elif "/" in line:
            opening = Opening(line, ())
        else:
            opening = Opening(START_JFEN, tuple(line.split()))
        try:
            board = opening.board(rules)
        except ValueError as e:
            raise OpeningsError(f"{p}:{i}: {e}") from None
        if board.outcome() is not None:
            raise OpeningsError(f"{p}:{i}: the game is already over in this opening")
        out.append(opening)
    if not out:
        raise OpeningsError(f"openings file {str(p)!r} holds no opening")
    return out


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
    opening: Opening = Opening(),
    *,
    rules: Optional[RuleSet] = None,
    max_plies: int = 600,
    seed: Optional[int] = None,
    red_name: Optional[str] = None,
    blue_name: Optional[str] = None,
    **extra: Any,
) -> GameRecord:
    """Play one game from `opening` and return its record.

    `max_plies` counts the players' moves (the opening excluded); a game
    that reaches it, or whose counters reach their limit (`Board.at_counter_limit`), is scored a draw with
    termination ``ply_cap``. A player
    that returns an illegal move raises TournamentError naming it; an engine's fault (`EngineFault`) loses
    it the game: termination ``engine_fault``, ``extra["fault"]`` the side at fault and what it did."""
    rules = rules if rules is not None else RuleSet()
    board = opening.board(rules)
    red.reset()
    blue.reset()
    names = {Side.RED: red_name or red.name, Side.BLUE: blue_name or blue.name}
    t0 = time.perf_counter()
    termination: Optional[str] = None
    result: Optional[str] = None
    plies = 0
    while board.outcome() is None:
        if plies >= max_plies or board.at_counter_limit():
            termination, result = "ply_cap", "1/2-1/2"
            break
        side = board.side_to_move
        player = red if side == Side.RED else blue
        try:
            move = player.select_move(board.copy())
        except EngineFault as e:
            termination, result = ENGINE_FAULT, "0-1" if side == Side.RED else "1-0"
            extra["fault"] = {"side": side.name.lower(), "reason": str(e)}
            break
        if not board.is_legal(move):
            raise TournamentError(f"player {names[side]!r} chose illegal move {move} in {board.jfen()!r}")
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
        engine_logs: Optional[PathLike] = None,
        worker: int = 0,
    ) -> None:
        self.specs, self.objects, self.rules = list(specs), list(objects), rules
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
        self.seats = Seats(specs, [None] * len(specs), self.rules, engine_logs, worker)
        multiprocessing.util.Finalize(self, self.seats.close, exitpriority=10)

    def play(self, task: GameTask) -> str:
        """The game of `task`, its players built from their specs, as a JSON record."""
        specs, rules = self.specs, self.rules
        red = self.seats.player(task.red, task.red_seed)
        blue = self.seats.player(task.blue, task.blue_seed)
        rec = play_game(
            red,
            blue,
            task.opening,
            rules=rules,
            max_plies=self.max_plies,
            seed=task.seed,
            red_name=specs[task.red],
            blue_name=specs[task.blue],
            game=task.index,
            pairing=task.pairing,
            opening_index=task.opening_index,
            red_seed=task.red_seed,
            blue_seed=task.blue_seed,
        )
        return rec.to_json()


# --- results ------------------------------------------------------------------------------------
def game_result(rec: GameRecord) -> GameResult:
    """The record as a rating input: Red's score against Blue (ply caps and unfinished games count as draws)."""
    score = {"1-0": 1.0, "0-1": 0.0}.get(rec.result, 0.5)
    return GameResult(rec.red, rec.blue, score)


def colour_swapped_pairs(
    games: Sequence[GameRecord], players: Sequence[str]
) -> dict[tuple[str, str], tuple[list[tuple[float, float]], int]]:
    """Each pairing's games as colour-swapped pairs: {(a, b): (a's scores in each complete pair, games
    outside a pair)}, `a` the earlier of the two in `players`, pairs in schedule order.

    Games x and x + 1 (``extra["game"]``) are a pair when they are of one pairing (``extra["pairing"]``)
    and one opening (``extra["opening_index"]``), `a` playing Red in x and Blue in x + 1: the pairs
    `schedule` makes. Any other game is unpaired: the lone last game of an odd `games_per_pair`, a game
    whose partner is missing, a record without those indices."""
    index = {p: k for k, p in enumerate(players)}
    pairs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    played: dict[tuple[str, str], int] = {}
    for rec in games:
        key = (rec.red, rec.blue) if index.get(rec.red, -1) < index.get(rec.blue, -1) else (rec.blue, rec.red)
        pairs.setdefault(key, [])
        played[key] = played.get(key, 0) + 1
    by_game: dict[int, GameRecord] = {}
    for rec in games:
        x = rec.extra.get("game")
        if isinstance(x, int):
            by_game.setdefault(x, rec)
    for x in sorted(by_game):
        first, second = by_game[x], by_game.get(x + 1)
        a, b = first.red, first.blue
        if second is None or index.get(a, -1) >= index.get(b, -1) or (second.red, second.blue) != (b, a):
            continue
        if any(first.extra.get(k) is None or first.extra.get(k) != second.extra.get(k) for k in SAME_IN_A_PAIR):
            continue
        pairs[(a, b)].append((game_result(first).score, 1.0 - game_result(second).score))
    return {key: (found, played[key] - 2 * len(found)) for key, found in pairs.items()}


SAME_IN_A_PAIR = ("pairing", "opening_index")
"""Record extras the two games of a colour-swapped pair share."""
SPRT_DEFAULTS = {"elo0": 0.0, "elo1": 30.0, "alpha": 0.05, "beta": 0.05}
"""The SPRTs' hypotheses (logistic Elo of the first player over the second) and error rates, unless given."""


def pair_statistics(
    games: Sequence[GameRecord], players: Sequence[str], **sprt: float
) -> dict[tuple[str, str], PentanomialStats]:
    """`PentanomialStats` of each pairing from its colour-swapped pairs (`colour_swapped_pairs`); `sprt`:
    elo0, elo1, alpha, beta (`SPRT_DEFAULTS`)."""
    out = {}
    for (a, b), (pairs, unpaired) in colour_swapped_pairs(games, players).items():
        counts = [0] * 5
        for s1, s2 in pairs:
            counts[pair_class(s1, s2)] += 1
        draws = sum((s1 == 0.5) + (s2 == 0.5) for s1, s2 in pairs)
        out[(a, b)] = pentanomial_stats(a, b, counts, draws=draws, unpaired=unpaired, **{**SPRT_DEFAULTS, **sprt})
    return out


def check_sprt(node: Any, where: str = "", error: type[Exception] = TournamentError) -> None:
    """Raise `error` for SPRT settings of `node` (an object or a Mapping with elo0, elo1, alpha, beta,
    sprt_stop and mode) that cannot be: a bound or an error rate out of range, elo0 not below elo1,
    sprt_stop outside a gauntlet."""
    check_range(node, where, error, elo0=(-1000, 1000), elo1=(-1000, 1000), alpha=(1e-6, 0.5), beta=(1e-6, 0.5))
    get: Callable[[str], Any] = node.get if isinstance(node, dict) else lambda key: getattr(node, key)
    if not get("elo0") < get("elo1"):
        raise error(f"{where}elo0={get('elo0')!r} must be below {where}elo1={get('elo1')!r} (H0 below H1)")
    if get("sprt_stop") and get("mode") != "gauntlet":
        raise error(f"{where}sprt_stop=true stops a gauntlet's pairings; {where}mode={get('mode')} has none to stop")


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


@dataclass
class TournamentResult:
    """Everything a tournament produced. Scores are from the row player's side."""

    players: list[str]
    games: list[GameRecord]
    pairings: list[PairStats]
    """Head-to-head statistics, `a` being the earlier player in `players`."""
    ratings: RatingTable
    points: np.ndarray
    """[P, P]: points of player i against player j."""
    counts: np.ndarray
    """[P, P]: games between i and j."""
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    pentanomial: list[PentanomialStats] = field(default_factory=list)
    """Each pairing's colour-swapped pairs (the pentanomial model), in the order of `pairings`."""
    sprt: dict[str, float] = field(default_factory=lambda: dict(SPRT_DEFAULTS))
    """The SPRTs' elo0, elo1, alpha and beta (the trinomial and the pentanomial one)."""
    sprt_stops: list[dict[str, Any]] = field(default_factory=list)
    """Pairings a gauntlet stopped on their pair SPRT's verdict (`SprtStop`): a, b, pairs, verdict, llr, the
    bound it passed, games_skipped (its games after the stop, never played or left out)."""

    def score(self, a: str, b: str) -> float:
        """Mean score of `a` against `b` (NaN if they did not meet)."""
        i, j = self._index(a), self._index(b)
        return float(self.points[i, j] / self.counts[i, j]) if self.counts[i, j] else float("nan")

    def pair(self, a: str, b: str) -> PairStats:
        """Head-to-head statistics from `a`'s side."""
        for p in self.pairings:
            if (p.a, p.b) == (a, b):
                return p
            if (p.a, p.b) == (b, a):
                return _flip(p)
        raise TournamentError(f"{a!r} and {b!r} did not meet")

    def pairs(self, a: str, b: str) -> PentanomialStats:
        """Colour-swapped pair statistics (the pentanomial model) from `a`'s side."""
        for q in self.pentanomial:
            if (q.a, q.b) == (a, b):
                return q
            if (q.a, q.b) == (b, a):
                return pentanomial_stats(
                    a, b, q.counts[::-1], draws=q.draws, unpaired=q.unpaired, **{**SPRT_DEFAULTS, **self.sprt}
                )
        raise TournamentError(f"{a!r} and {b!r} did not meet")

    def _pentanomial(self, p: PairStats) -> Optional[PentanomialStats]:
        return next((q for q in self.pentanomial if (q.a, q.b) == (p.a, p.b)), None)

    def _index(self, name: str) -> int:
        try:
            return self.players.index(name)
        except ValueError:
            raise TournamentError(
                f"no player {name!r} in this tournament; players: {', '.join(self.players)}"
            ) from None

    def wdl(self, name: str) -> tuple[int, int, int]:
        """Wins, draws, losses of one player over all its games."""
        w = d = l_ = 0
        for rec in self.games:
            if name not in (rec.red, rec.blue):
                continue
            s = game_result(rec).score if rec.red == name else 1.0 - game_result(rec).score
            w, d, l_ = w + (s == 1.0), d + (s == 0.5), l_ + (s == 0.0)
        return w, d, l_

    def to_dict(self) -> dict[str, Any]:
        return {
            "players": self.players,
            "settings": self.settings,
            "seconds": round(self.seconds, 3),
            "ratings": self.ratings.to_dict(),
            "pairings": [_pair_dict(p, self._pentanomial(p)) for p in self.pairings],
            "sprt": dict(self.sprt),
            "sprt_stops": list(self.sprt_stops),
            "crosstable": {
                "points": self.points.tolist(),
                "games": self.counts.tolist(),
            },
            "terminations": _terminations(self.games),
        }

    def labels(self) -> list[str]:
        """The players' short names in the printed report, `P1`, `P2`... in player order."""
        return [f"P{k + 1}" for k in range(len(self.players))]

    def table(self) -> str:
        """A readable report within `TABLE_WIDTH` columns: the players' legend, ratings, pairings, crosstable.

        Players appear by label (`labels`) and the legend gives each one's full spec, wrapped at its commas;
        the ratings repeat the specs when they all fit. The files (`write`) keep the full specs everywhere."""
        out = io.StringIO()
        label = dict(zip(self.players, self.labels()))
        lw = max(len(v) for v in label.values())
        out.write("Players\n")
        for name in self.players:
            out.write(_legend(f"  {label[name]:<{lw}} = ", name) + "\n")
        rt = self.ratings

        def rating_rows(names: bool) -> list[str]:
            cell = {r.name: f"{label[r.name]:<{lw}}" + (f"  {r.name}" if names else "") for r in rt.ratings}
            pw = max(len("player"), *(len(c) for c in cell.values()))
            rows = [f"  {'#':>2}  {'player':<{pw}}  {'Elo':>6}  {'95% CI':>15}  {'games':>5}  {'W-D-L':>11}  score"]
            for k, r in enumerate(rt.ratings, 1):
                w, d, l_ = self.wdl(r.name)
                ci = f"[{r.ci_low:+.0f}, {r.ci_high:+.0f}]"
                rows.append(
                    f"  {k:>2}  {cell[r.name]:<{pw}}  {r.elo:>+6.0f}  {ci:>15}  {r.games:>5}  "
                    f"{f'{w}-{d}-{l_}':>11}  {r.score:.3f}"
                )
            return rows

        rows = rating_rows(names=True)
        if max(len(row) for row in rows) > TABLE_WIDTH:
            rows = rating_rows(names=False)
        out.write(
            f"\nRatings (Bradley-Terry, Elo scale, anchor {label[rt.anchor]} = {rt.elo(rt.anchor):+.0f}, 95% CI)\n"
        )
        out.write("\n".join(rows) + "\n")
        bounds = f"SPRT({self.sprt['elo0']:g},{self.sprt['elo1']:g})"
        out.write(
            f"\nPairings (first player's view; p = sign-test p-value of 'first is stronger'; {bounds} verdict;\n"
            "  below: its colour-swapped pairs LL-LD-DD/WL-WD-WW, their score, Elo, nElo, draws, SPRT on pairs)\n"
        )
        for p in self.pairings:
            pair = f"{label[p.a]:<{lw}} vs {label[p.b]:<{lw}}"
            out.write(
                f"  {pair}  {p.wins:>3}-{p.draws}-{p.losses:<3} score {p.score:.3f}  "
                f"Elo {p.elo_diff:+.0f} [{p.elo_low:+.0f}, {p.elo_high:+.0f}]  LOS {p.los:.3f}  "
                f"p {p.p_value:.2g}  {p.sprt}\n"
            )
            q = self._pentanomial(p)
            if q is not None:
                out.write(textwrap.fill(_pairs_line(q), TABLE_WIDTH, initial_indent="    ", subsequent_indent="      "))
                out.write("\n")
        for stop in self.sprt_stops:
            out.write(
                "\n"
                + textwrap.fill(
                    f"SPRT stop: {label[stop['a']]} vs {label[stop['b']]} stopped after {stop['pairs']} pairs on "
                    f"{stop['verdict']} (pair LLR {stop['llr']:+.2f} past {stop['bound']:+.2f}); "
                    f"{stop['games_skipped']} of its games not played",
                    TABLE_WIDTH,
                    subsequent_indent="  ",
                )
                + "\n"
            )
        out.write("\nCrosstable (row's points / games against column)\n")
        n = len(self.players)
        cells = [
            [
                "-" if i == j or not self.counts[i, j] else f"{_pts(self.points[i, j])}/{int(self.counts[i, j])}"
                for j in range(n)
            ]
            for i in range(n)
        ]
        cw = 2 + max(len(c) for c in [*label.values(), *(c for row in cells for c in row)])
        per = max(1, (TABLE_WIDTH - lw - 2) // cw)  # columns side by side; more players take several blocks
        for first in range(0, n, per):
            cols = range(first, min(n, first + per))
            out.write(
                ("\n" if first else "") + " " * (lw + 2) + "".join(f"{self.labels()[j]:>{cw}}" for j in cols) + "\n"
            )
            for i, name in enumerate(self.players):
                out.write(f"  {label[name]:<{lw}}" + "".join(f"{cells[i][j]:>{cw}}" for j in cols) + "\n")
        terms = ", ".join(f"{k} {v}" for k, v in _terminations(self.games).items())
        out.write(
            "\n"
            + textwrap.fill(
                f"{len(self.games)} games in {self.seconds:.1f}s; endings: {terms}", TABLE_WIDTH, subsequent_indent="  "
            )
            + "\n"
        )
        return out.getvalue()

    def write(self, out_dir: PathLike, *, image: bool = True) -> dict[str, Path]:
        """Write results.json, ratings.csv, pairings.csv, games.jsonl (and crosstable.png) atomically."""
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        paths = {
            "json": d / "results.json",
            "ratings_csv": d / "ratings.csv",
            "pairings_csv": d / "pairings.csv",
            "games": d / "games.jsonl",
        }
        atomic_write_json(paths["json"], self.to_dict())
        atomic_write_text(paths["ratings_csv"], self._ratings_csv())
        atomic_write_text(paths["pairings_csv"], self._pairings_csv())
        write_jsonl(paths["games"], self.games)
        if image:
            png = crosstable_png(self)
            if png is not None:
                paths["image"] = d / "crosstable.png"
                atomic_write_bytes(paths["image"], png)
        return paths

    def _ratings_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "player", "elo", "ci_low", "ci_high", "games", "wins", "draws", "losses", "score"])
        for k, r in enumerate(self.ratings.ratings, 1):
            w.writerow(
                [
                    k,
                    r.name,
                    f"{r.elo:.1f}",
                    f"{r.ci_low:.1f}",
                    f"{r.ci_high:.1f}",
                    r.games,
                    *self.wdl(r.name),
                    f"{r.score:.4f}",
                ]
            )
        return buf.getvalue()

    def _pairings_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        keys = list(_pair_dict(self.pairings[0], None).keys()) if self.pairings else ["a", "b"]
        w.writerow(keys)
        for p in self.pairings:
            d = _pair_dict(p, self._pentanomial(p))
            w.writerow([f"{d[k]:.4g}" if isinstance(d[k], float) else ("" if d[k] is None else d[k]) for k in keys])
        return buf.getvalue()


def _pts(x: float) -> str:
    return f"{x:g}"


def _legend(head: str, spec: str) -> str:
    """`head` + `spec`, wrapped after its commas (a longer piece anywhere) to `TABLE_WIDTH` columns."""
    room = TABLE_WIDTH - len(head)
    parts = spec.split(",")
    lines, line = [], ""
    for piece in [p + "," for p in parts[:-1]] + parts[-1:]:
        if line and len(line) + len(piece) > room:
            lines.append(line)
            line = ""
        while len(piece) > room:
            lines.append(piece[:room])
            piece = piece[room:]
        line += piece
    lines.append(line)
    return head + ("\n" + " " * len(head)).join(lines)


def _flip(p: PairStats) -> PairStats:
    from agents.arena.ratings import pair_stats

    return pair_stats(p.b, p.a, p.losses, p.draws, p.wins)


def _pairs_line(q: PentanomialStats) -> str:
    """One pairing's colour-swapped pairs as the printed table shows them."""
    nelo = "-" if q.nelo is None else f"{q.nelo:+.0f}"
    line = (
        f"pairs {'-'.join(map(str, q.counts))}  score {q.score:.3f}  "
        f"Elo {q.elo_diff:+.0f} [{q.elo_low:+.0f}, {q.elo_high:+.0f}]  nElo {nelo}  "
        f"draws {q.draw_ratio:.0%}  {q.sprt}"
    )
    return line + (f"  ({q.unpaired} unpaired)" if q.unpaired else "")


PAIR_KEYS = (
    "pairs",
    "pairs_ll",
    "pairs_ld",
    "pairs_dd_wl",
    "pairs_wd",
    "pairs_ww",
    "unpaired",
    "pairs_score",
    "pairs_elo_diff",
    "pairs_elo_low",
    "pairs_elo_high",
    "nelo",
    "draw_ratio",
    "pairs_sprt_llr",
    "pairs_sprt",
)
"""The pentanomial columns of results.json's pairings and pairings.csv, after the trinomial ones."""


def _pair_dict(p: PairStats, q: Optional[PentanomialStats] = None) -> dict[str, Any]:
    pairs: dict[str, Any] = dict.fromkeys(PAIR_KEYS)
    if q is not None:
        values: list[Any] = [q.pairs, *q.counts, q.unpaired, q.score, q.elo_diff, q.elo_low, q.elo_high, q.nelo]
        values += [q.draw_ratio, q.sprt_llr, q.sprt]
        pairs = dict(zip(PAIR_KEYS, values))
    return {
        "a": p.a,
        "b": p.b,
        "games": p.games,
        "wins": p.wins,
        "draws": p.draws,
        "losses": p.losses,
        "score": p.score,
        "elo_diff": p.elo_diff,
        "elo_low": p.elo_low,
        "elo_high": p.elo_high,
        "los": p.los,
        "p_value": p.p_value,
        "sprt_llr": p.sprt_llr,
        "sprt": p.sprt,
        **pairs,
    }


def _terminations(games: Sequence[GameRecord]) -> dict[str, int]:
    out: dict[str, int] = {}
    for g in games:
        key = g.termination or "unfinished"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def crosstable_png(result: TournamentResult, cell: int = 64) -> Optional[bytes]:
    """The crosstable as a PNG (cells coloured by the row's score), or None when Pillow is not installed."""
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        return None
    n = len(result.players)
    label_w = 12 + 7 * max(len(p) for p in result.players)
    w, h = label_w + n * cell + 8, 28 + n * cell + 8
    img = Image.new("RGB", (w, h), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for j in range(n):
        draw.text((label_w + j * cell + cell // 2 - 6, 8), f"P{j + 1}", fill=(0, 0, 0))
    for i, name in enumerate(result.players):
        y = 28 + i * cell
        draw.text((6, y + cell // 2 - 6), f"P{i + 1} {name}", fill=(0, 0, 0))
        for j in range(n):
            x = label_w + j * cell
            if i == j or not result.counts[i, j]:
                colour = (220, 220, 220)
                text = ""
            else:
                s = result.points[i, j] / result.counts[i, j]
                colour = (int(230 - 150 * s), int(80 + 150 * s), 90)
                text = f"{s:.2f}"
            draw.rectangle([x, y, x + cell - 2, y + cell - 2], fill=colour)
            draw.text((x + cell // 2 - 12, y + cell // 2 - 6), text, fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


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
    *,
    games_per_pair: int = 20,
    seed: int = 0,
    workers: int = 0,
    mode: str = "round_robin",
    rules: Optional[RuleSet] = None,
    opening_plies: int = 4,
    openings: Optional[Union[PathLike, Sequence[Opening]]] = None,
    max_plies: int = 600,
    anchor: Optional[str] = None,
    prior_games: float = 1.0,
    progress: bool = True,
    start_method: str = "spawn",
    sprt_stop: bool = False,
    elo0: float = 0.0,
    elo1: float = 30.0,
    alpha: float = 0.05,
    beta: float = 0.05,
    on_game: Optional[Callable[[GameRecord], None]] = None,
    played: Sequence[GameRecord] = (),
    on_start: Optional[Callable[[], None]] = None,
    engine_logs: Optional[PathLike] = None,
) -> TournamentResult:
    """Play a round robin (every pair), a gauntlet (players[0] against each other) or a ladder
    (each player against the next) and rate all games together.

    players: spec strings (``"random"``, ``"alphabeta:depth=3"``, ``"checkpoint:path=...,sims=200"``) or
        Player objects (named by their `.name`; only with workers <= 1). Names must be distinct.
    games_per_pair: games per pairing, played as colour-swapped pairs (an odd count leaves the last
        pair half played).
    seed: decides openings and player seeds; the same seed replays the same games.
    workers: processes playing games at once; 0 or 1 plays in this process.
    rules: the RuleSet (default rules when None).
    opening_plies / openings: random plies from the start, or a file (see `read_openings`) or a list
        of `Opening`s.
    max_plies: moves per game (after the opening) before it is scored a draw (``ply_cap``).
    anchor: the player rated `0` (default players[0]); prior_games: see `agents.arena.ratings`.
    on_game: called in this process with each finished game's record (in completion order).
    played: games of this very tournament already played (an interrupted run's games.jsonl): kept, not
        played again. Each must be the game its ``extra["game"]`` index schedules (same players, same seed).
    on_start: called once every check has passed, before the first game (e.g. to claim an output directory).
    elo0, elo1, alpha, beta: the pairings' SPRTs, trinomial and on pairs (H0: the first player is elo0
        stronger, H1: elo1; logistic Elo). sprt_stop: a gauntlet's pairing stops at its pair SPRT's verdict
        (`SprtStop`; the table says which stopped, and why).
    engine_logs: the folder that keeps the standard error of ``engine:`` players' programs (`Seats`; made at
        the first game), or None to drop it.

    Returns a TournamentResult: `.score(a, b)`, `.pair(a, b)` (W/D/L, Elo difference, tests),
    `.ratings` (Elo with 95% CIs), `.games` (records in schedule order), `.table()`, `.write(dir)`.
    Raises PlayerSpecError / OpeningsError / TournamentError before any game for bad input."""
    rules = rules if rules is not None else RuleSet()
    if len(players) < 2:
        raise TournamentError(f"a tournament needs at least two players, got {len(players)}")
    arguments = {
        "games_per_pair": games_per_pair,
        "max_plies": max_plies,
        "opening_plies": opening_plies,
        "mode": mode,
        "workers": workers,
    }
    check_range(
        arguments,
        "",
        TournamentError,
        games_per_pair=(1, None),
        max_plies=(1, None),
        opening_plies=(0, None),
        workers=(0, None),
    )
    check_choice(arguments, "", TournamentError, mode=MODES)
    check_sprt({"elo0": elo0, "elo1": elo1, "alpha": alpha, "beta": beta, "sprt_stop": sprt_stop, "mode": mode})
    objects: list[Optional[Player]] = []
    names: list[str] = []
    on_cuda: list[str] = []
    checked: dict[int, EnginePlayer] = {}  # engines started by the checks: they play this process's games
    try:
        for p in players:
            if isinstance(p, str):
                built = check_spec(p, rules)
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
        if anchor is not None and anchor not in names:
            raise TournamentError(f"anchor {anchor!r} is not among the players {', '.join(names)}")
        n_openings = (games_per_pair + 1) // 2
        if openings is None:
            opening_list = random_openings(n_openings, opening_plies, seed, rules)
        elif isinstance(openings, (str, Path)):
            opening_list = read_openings(openings, rules)
        else:
            opening_list = list(openings)  # type: ignore[arg-type]
            if not opening_list:
                raise OpeningsError("an empty list of openings")
        tasks = schedule(len(names), games_per_pair, opening_list, seed, mode)
        records = _place_played(played, tasks, names)
        if on_start is not None:
            on_start()
    except BaseException:  # the checks failed: the engines they started end here
        for engine in checked.values():
            engine.close()
        raise

    t0 = time.perf_counter()
    bar = _progress(len(tasks), progress)
    tally = [0, 0, 0]
    bounds = {"elo0": elo0, "elo1": elo1, "alpha": alpha, "beta": beta}
    stopper = SprtStop(tasks, names, **bounds) if sprt_stop else None

    def finish(index: int, rec: GameRecord, new: bool = True) -> None:
        records[index] = rec
        if stopper is not None:
            stopper.see(index, records)
        s = game_result(rec).score
        first = names[0]
        if first in (rec.red, rec.blue):
            mine = s if rec.red == first else 1.0 - s
            tally[0 if mine == 1.0 else (1 if mine == 0.5 else 2)] += 1
        if bar is not None:
            bar.set_postfix_str(f"{first}: W/D/L {tally[0]}/{tally[1]}/{tally[2]}", refresh=False)
            bar.update(1)
        if on_game is not None and new:
            on_game(rec)

    todo = [task for task in tasks if records[task.index] is None]
    for index, rec in enumerate(records):
        if rec is not None:
            finish(index, rec, new=False)
    try:
        if workers <= 1:
            seats = Seats(names, objects, rules, engine_logs)
            for k, engine in checked.items():
                seats.keep(k, engine)
            for task in todo:
                if stopper is not None and stopper.skips(task.index):
                    continue
                red = seats.player(task.red, task.red_seed)
                blue = seats.player(task.blue, task.blue_seed)
                rec = play_game(
                    red,
                    blue,
                    task.opening,
                    rules=rules,
                    max_plies=max_plies,
                    seed=task.seed,
                    red_name=names[task.red],
                    blue_name=names[task.blue],
                    game=task.index,
                    pairing=task.pairing,
                    opening_index=task.opening_index,
                    red_seed=task.red_seed,
                    blue_seed=task.blue_seed,
                )
                finish(task.index, rec)
        else:
            for engine in checked.values():  # each worker process starts its own
                engine.close()
            logs = None if engine_logs is None else str(engine_logs)
            with WorkerProcesses(
                workers, GameWorker, names, rules.to_dict(), max_plies, logs, start_method=start_method
            ) as pool:
                while todo:
                    batch = [task for task in todo if stopper is None or not stopper.skips(task.index)]
                    todo = []
                    for k, text in pool.run("play", [(task,) for task in batch]):
                        finish(batch[k].index, GameRecord.from_dict(json.loads(text)))
                        if stopper is not None and stopper.new_stop:  # its games in flight are dropped
                            stopper.new_stop = False
                            todo = [task for task in batch if records[task.index] is None]
                            break
    finally:
        if bar is not None:
            bar.close()
        for engine in checked.values():
            engine.close()
    games = [r for i, r in enumerate(records) if r is not None and (stopper is None or not stopper.skips(i))]
    return summarize(
        games,
        names,
        anchor=anchor,
        prior_games=prior_games,
        seconds=time.perf_counter() - t0,
        sprt=bounds,
        sprt_stops=stopper.stops if stopper is not None else (),
        settings={
            "mode": mode,
            "games_per_pair": games_per_pair,
            "seed": seed,
            "workers": workers,
            "opening_plies": opening_plies,
            "openings": str(openings) if isinstance(openings, (str, Path)) else None,
            "max_plies": max_plies,
            "rules": rules.to_dict(),
            "sprt_stop": sprt_stop,
        },
    )


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


def summarize(
    games: Sequence[GameRecord],
    players: Sequence[str],
    *,
    anchor: Optional[str] = None,
    prior_games: float = 1.0,
    seconds: float = 0.0,
    settings: Optional[dict[str, Any]] = None,
    sprt: Optional[dict[str, float]] = None,
    sprt_stops: Sequence[dict[str, Any]] = (),
) -> TournamentResult:
    """Rate a list of game records (from `run_tournament` or read back from a games.jsonl).

    sprt: elo0, elo1, alpha, beta of the pairings' SPRTs (`SPRT_DEFAULTS` for those not given); sprt_stops:
    the pairings a gauntlet stopped (`TournamentResult.sprt_stops`)."""
    bounds = {**SPRT_DEFAULTS, **(sprt or {})}
    players = list(players)
    index = {p: k for k, p in enumerate(players)}
    n = len(players)
    points = np.zeros((n, n))
    counts = np.zeros((n, n))
    results = []
    for rec in games:
        r = game_result(rec)
        if r.a not in index or r.b not in index:
            raise TournamentError(f"game between {r.a!r} and {r.b!r}: not among the players {', '.join(players)}")
        i, j = index[r.a], index[r.b]
        points[i, j] += r.score
        points[j, i] += 1.0 - r.score
        counts[i, j] += 1
        counts[j, i] += 1
        # Orient every result as (earlier player, later player) so pairings read in player order.
        results.append(r if i < j else GameResult(r.b, r.a, 1.0 - r.score))
    ratings = fit_ratings(results, players, anchor=anchor, prior_games=prior_games)
    pairings = sorted(head_to_head(results, **bounds), key=lambda p: (index[p.a], index[p.b]))
    by_pairs = pair_statistics(games, players, **bounds)
    return TournamentResult(
        players=players,
        games=list(games),
        pairings=pairings,
        ratings=ratings,
        points=points,
        counts=counts,
        settings=dict(settings or {}),
        seconds=seconds,
        pentanomial=[by_pairs[(p.a, p.b)] for p in pairings if (p.a, p.b) in by_pairs],
        sprt=bounds,
        sprt_stops=list(sprt_stops),
    )


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="games", unit="game", dynamic_ncols=True)

"""One game between a person and the computer (or two people), shared by the play page's server and the terminal.

A `PlayGame` owns a `Board` and everything a person can do to it: move, undo,
ask for a hint, resign. Every request goes through the rules engine; a bad
one raises `PlayError` (a ValueError) with a short reason and leaves the game
exactly as it was. The game never searches itself: it describes the search
it needs as a `ThinkJob` (`job("computer")`, `job("hint")`) and takes the
answer back with `apply_computer_move(move, version)` / `apply_hint(move,
version)`, which refuse an answer computed for an older version (the person
undid meanwhile). The server runs the jobs in worker processes
(`agents.play.computer`), the terminal in its own process.

    from agents.play.computer import PlayerCache, choose_move
    game = PlayGame.new(mode="computer", human="red", opponent="random", seed=1)
    game.human_move("a3a4")
    game.apply_computer_move(choose_move(game.job("computer"), PlayerCache()), game.version)  # True

The page's opponents are data: `LEVELS` lists the named ones (a shipped
network becomes a level with one more entry), and `bounded_spec` caps any
spec the page accepts to a time per move. A game is played under the rule
set the person chose in the lobby (`game_rules`); a level of a network plays
the rule sets that network was trained on (`Level.rule_sets`) and refuses
others (`check_level_rules`).
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np

from agents.alphazero.net import shipped
from agents.arena.records import GameRecord, RecordError
from agents.play.computer import ThinkJob
from envs import kernels as K
from envs.board import Board, IllegalMoveError
from envs.notation import FILE_NAMES, SQUARE_NAMES, START_JFEN, InvalidMoveError, Move, Side
from envs.players import PlayerSpecError, known_kinds, parse_spec
from envs.rules import RuleSet, RuleSetError, load_rules, rule_set_names
from envs.seeding import derive_seed

MODES = ("computer", "two_players")
PACES: dict[str, tuple[float, float]] = {"instant": (0.0, 0.0), "quick": (1.0, 2.0), "natural": (2.0, 5.0)}
"""Pace name -> (least, most) seconds the computer takes for a move, thinking included."""
HINTS_PER_GAME = 3
HINT_SPEC = "alphabeta:level=normal"
"""Where hints come from."""
MOVE_SECONDS = 10.0
"""The most a computer move may take on the page unless its level says otherwise."""
GRACE_SECONDS = 3.0
"""Added to a move's time before its worker is killed (a search stopping at its own limit needs a moment)."""
MAX_SEED = 2**63 - 1
MAX_REPLAY_PLIES = 4000
"""The longest game the replay viewer accepts (a default-rules game ends within about 2000 plies)."""

CHECKPOINT_DIRS: tuple[Path, ...] = (Path("checkpoints"),)
"""Where the page may load checkpoints from (play.py adds the directory of its --opponent and --checkpoint-dir)."""

PAGE_MAX_SIMS = 4000
"""The most simulations a move of a checkpoint spec typed on the page (the option allows `MAX_SIMULATIONS`)."""

PAGE_MIN_THREADS = 1
"""The fewest torch threads of a checkpoint spec typed on the page (the option's 0, torch's own, takes every
core of a machine the page shares)."""

PAGE_MAX_DEPTH = 30
"""The deepest alpha-beta search of a spec typed on the page (the option allows `MAX_DEPTH`)."""

PAGE_MAX_NODES = 10**9
"""The most positions an alpha-beta move of a spec typed on the page may search."""

PAGE_MAX_TT = 24
"""The largest transposition table of an alpha-beta spec typed on the page: 2**24 entries."""


@functools.cache
def _spec_limits(kind: str) -> dict[str, tuple[float, float]]:
    """The page's limits of a spec of `kind`: its options' bounds (`AlphaBetaOptions`, `CheckpointOptions`),
    narrowed to the page's constants (`PAGE_MAX_DEPTH`, `PAGE_MAX_SIMS`, ...) and, for torch's threads, this
    machine's cores; a spec's time per move is the level's (`bounded_spec`). A kind's options are read only when
    a spec of it is checked (the checkpoint's import torch, which the page's own process otherwise does without)."""
    if kind == "alphabeta":
        from agents.alphabeta.options import AlphaBetaOptions

        bounds = AlphaBetaOptions.option_bounds
        return {
            "depth": _narrowed(bounds("depth"), PAGE_MAX_DEPTH),
            "nodes": _narrowed(bounds("nodes"), PAGE_MAX_NODES),
            "tt": _narrowed(bounds("tt"), PAGE_MAX_TT),
            "noise": _narrowed(bounds("noise")),
            "random": _narrowed(bounds("random")),
        }
    if kind != "checkpoint":
        return {}
    from agents.alphazero.player.options import CheckpointOptions

    sims, threads = CheckpointOptions.option_bounds("sims"), CheckpointOptions.option_bounds("threads")
    cores = min(os.cpu_count() or 1, threads[1] if threads[1] is not None else os.cpu_count() or 1)
    return {"sims": (sims[0], PAGE_MAX_SIMS), "threads": (max(threads[0], PAGE_MIN_THREADS), cores)}


def _narrowed(bounds: tuple[float, Optional[float]], most: Optional[float] = None) -> tuple[float, float]:
    """An option's (least, most), its most lowered to `most` where that is lower."""
    low, high = bounds
    highs = [h for h in (high, most) if h is not None]
    return low, min(highs) if highs else math.inf


@dataclass(frozen=True)
class Level:
    """A named opponent of the page: its spec, a line about it, and its time per move."""

    name: str
    label: str
    spec: str
    about: str
    seconds: float = MOVE_SECONDS
    """The most one move may take (alpha-beta stops its deepening there; any other player is stopped)."""

    def available(self) -> bool:
        """A level that names a checkpoint (a file, or a shipped network's entry) is offered only once that file is
        there."""
        kind, options = parse_spec(self.spec)
        try:
            return kind != "checkpoint" or shipped.resolve(options.get("path", "")).exists()
        except shipped.ShippedError:  # no manifest (an install without the shipped files) or no such entry
            return False

    def rule_sets(self) -> Optional[list[tuple[str, RuleSet]]]:
        """The (name, RuleSet) pairs a network level plays: its manifest entry's ``rules`` for a shipped network
        (a name or a list of names of `configs/rules/`), else those its checkpoint was trained on
        (`checkpoint.trained_rule_sets`, read once per file version); None for a level that plays any rules."""
        kind, options = parse_spec(self.spec)
        if kind != "checkpoint":
            return None
        path = options.get("path", "")
        if path.startswith(shipped.PREFIX):
            return [(name, _named_rules(name)) for name in shipped.network(path).rule_set_names]
        return _trained_rule_sets(Path(path))

    def to_dict(self) -> dict[str, Any]:
        rule_sets = self.rule_sets()
        return {
            "name": self.name,
            "label": self.label,
            "spec": self.spec,
            "about": self.about,
            "seconds": self.seconds,
            "rules": None if rule_sets is None else [name for name, _ in rule_sets],
        }


_TRAINED: dict[tuple[str, int, int], list[tuple[str, RuleSet]]] = {}
"""`Level.rule_sets` of checkpoint files read so far, by (path, size, mtime)."""


def _trained_rule_sets(path: Path) -> list[tuple[str, RuleSet]]:
    from agents.alphazero.net.checkpoint import load_checkpoint, resolve_checkpoint_path, trained_rule_sets

    file = resolve_checkpoint_path(path)
    stat = file.stat()
    key = (str(file), stat.st_size, stat.st_mtime_ns)
    if key not in _TRAINED:
        _TRAINED[key] = trained_rule_sets(load_checkpoint(file), file)
    return _TRAINED[key]


@functools.lru_cache(maxsize=None)
def _rule_set_names() -> tuple[str, ...]:
    """`rule_set_names`, read once: the server answers with no file descriptor to spare."""
    return tuple(rule_set_names())


@functools.lru_cache(maxsize=None)
def _named_rules(name: str) -> RuleSet:
    """`load_rules` of a set of `configs/rules/`, read once."""
    return load_rules(name)


def game_rules(name: Any) -> tuple[str, RuleSet]:
    """The rule set the lobby names (a set of `configs/rules/`) -> (its name, its RuleSet); PlayError naming the
    known sets otherwise."""
    known = _rule_set_names()
    if not isinstance(name, str) or name not in known:
        raise PlayError(f"rules {str(name)[:80]!r} is not a rule set of the page ({', '.join(known)})")
    return name, _named_rules(name)


def rule_set_choices(name: str, rules: RuleSet) -> list[dict[str, Any]]:
    """The lobby's rule sets: the server's own (`name`, `rules`) first, then every set of `configs/rules/`; each
    with its rules and ranks (what the rules panel shows)."""
    choices = [(name, rules)] + [(n, _named_rules(n)) for n in _rule_set_names() if n != name]
    return [{"name": n, "rules": r.to_dict(), "ranks": list(r.ranks())} for n, r in choices]


def check_level_rules(opponent: Any, rules: RuleSet, rules_name: str) -> None:
    """PlayError when `opponent` names a level whose network was not trained on `rules` (naming the rule sets
    it plays) or cannot play (`_check_level_network`); nothing for any other opponent."""
    for level in LEVELS:
        if opponent == level.name:
            _check_level_network(level)
            rule_sets = level.rule_sets()
            if rule_sets is not None and all(r != rules for _, r in rule_sets):
                names = ", ".join(name for name, _ in rule_sets)
                raise PlayError(
                    f"the {level.name} level plays the rule sets {names}, not {rules_name}: choose one of those "
                    "rule sets or another level"
                )


def _strongest_network(manifest: Optional[Path] = None) -> str:
    """The ``shipped:<name>`` of `shipped.strongest` (so that shipping a stronger network moves the page's
    network level with it); without a readable manifest a name that `Level.available` refuses."""
    try:
        return shipped.strongest(manifest=manifest).spec_path
    except shipped.ShippedError:
        return shipped.PREFIX + "strongest"


LEVELS: tuple[Level, ...] = (
    Level("beginner", "Beginner", "alphabeta:level=beginner", "alpha-beta, 1 ply, one move in five at random"),
    Level("normal", "Normal", "alphabeta:level=normal", "alpha-beta, 3 plies"),
    # The manifest's strongest network for the default rules (its first such entry), 1 s a move.
    Level(
        "network",
        "Network",
        f"checkpoint:path={_strongest_network()},time=1,leaf_batch=8",
        "the strongest shipped AlphaZero network, 1 s a move",
        seconds=5.0,
    ),
    Level("expert", "Expert", "alphabeta:level=expert", "alpha-beta, 6 plies"),
    # One network for six rule variants (checkpoints/shipped/manifest.json lists them): the level that plays
    # the lobby's variants; the others above play any rule set (alpha-beta) or the default rules only.
    Level(
        "variants",
        "Network, variants",
        "checkpoint:path=shipped:variants-40,time=1,leaf_batch=8",
        "one shipped AlphaZero network for six rule variants, 1 s a move",
        seconds=5.0,
    ),
)
"""The page's named opponents, weakest first."""


def available_levels() -> list[Level]:
    return [level for level in LEVELS if level.available()]


_SIDE_NAMES = {Side.RED: "red", Side.BLUE: "blue"}
_TERMINATION_TEXT = {
    "den": "{winner} entered {loser}'s den",
    "all_captured": "{winner} captured {loser}'s last piece",
    "no_moves": "{loser} has no legal move",
    "repetition": "the same position occurred for the third time",
    "no_capture_limit": "{limit} plies passed without a capture",
    "ply_cap": "the game was stopped at its ply cap",
    "resign": "{loser} resigned",
}


class PlayError(ValueError):
    """A request the game refuses (bad input, illegal move, not your turn...); the game is unchanged."""

    status = 400


class UnknownGameError(PlayError):
    """No game with that id."""

    status = 404


def parse_side(text: Any) -> Side:
    """`'red'`/`'r'` -> Side.RED, `'blue'`/`'b'` -> Side.BLUE; PlayError otherwise."""
    if isinstance(text, str):
        t = text.strip().lower()
        if t in ("red", "r"):
            return Side.RED
        if t in ("blue", "b"):
            return Side.BLUE
    raise PlayError(f"side {text!r} is not 'red' or 'blue'")


def side_name(side: Side) -> str:
    return _SIDE_NAMES[side]


def _choice(name: str, value: Any, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise PlayError(f"{name} {value!r} is not one of {', '.join(allowed)}")
    return value


# --- opponents ----------------------------------------------------------------------------------
def opponent_spec(text: Any, checkpoint_dirs: Optional[Iterable[Path]] = None) -> str:
    """What a person types for an opponent -> a player spec.

    A level name (`beginner`, `normal`, ... of `LEVELS`) is its spec; a path
    ending in `.pt`, an existing file or run directory, or a run name under
    `checkpoints/` is a checkpoint; anything else must already be a spec
    (`alphabeta:depth=3`, `checkpoint:path=...,sims=200`, `random`). With
    `checkpoint_dirs` (the page), a checkpoint must lie inside one of them, so
    that the page cannot probe other files.
    """
    if not isinstance(text, str) or not text.strip():
        raise PlayError(f"opponent {text!r} is empty; choose a level, a checkpoint path or a player spec")
    t = text.strip()
    if len(t) > 500:
        raise PlayError(f"opponent spec of {len(t)} characters is too long (at most 500)")
    for level in LEVELS:
        if t == level.name:
            _check_level_network(level)
            return level.spec
    if ":" not in t and (
        t.endswith(".pt") or "/" in t or _exists(Path(t)) or _exists(Path("checkpoints") / t, dir=True)
    ):
        t = f"checkpoint:path={t}"
    elif ":" not in t and t not in known_kinds():
        levels = [level.name for level in LEVELS]
        close = difflib.get_close_matches(t, levels + known_kinds(), n=1)
        raise PlayError(
            f"opponent {t[:80]!r} is not a level ({', '.join(levels)}), a player kind "
            f"({', '.join(known_kinds())}), a checkpoint file or a run under checkpoints/"
            + (f"; did you mean {close[0]!r}?" if close else "")
        )
    try:
        kind, options = parse_spec(t)
    except PlayerSpecError as e:
        raise PlayError(str(e)) from None
    if kind == "checkpoint" and checkpoint_dirs is not None:
        _check_checkpoint_place(options.get("path", ""), checkpoint_dirs)
    return t


def _check_level_network(level: Level) -> None:
    """PlayError, in one line, when `level` plays a shipped network whose manifest entry is malformed or
    missing, or whose file is not the one the manifest names (`shipped.checked_file`)."""
    kind, options = parse_spec(level.spec)
    path = options.get("path", "") if kind == "checkpoint" else ""
    if path.startswith(shipped.PREFIX):
        try:
            shipped.checked_file(path)
        except shipped.ShippedError as e:
            raise PlayError(f"the {level.name} level cannot play: {e}") from None


def _exists(path: Path, dir: bool = False) -> bool:
    """Whether `path` exists (is a directory); a name the file system refuses (too long, say) names nothing."""
    try:
        return path.is_dir() if dir else path.exists()
    except OSError:
        return False


def _check_checkpoint_place(path: str, dirs: Iterable[Path]) -> None:
    """PlayError unless `path` (a file, run directory or run name) lies inside one of `dirs`, or is a shipped
    network."""
    if path.startswith(shipped.PREFIX):  # the manifest's own files only: nothing else can be probed this way
        try:
            shipped.network(path)
        except shipped.ShippedError as e:
            raise PlayError(str(e)) from None
        return
    dirs = [Path(d).resolve() for d in dirs]
    p = Path(path).expanduser()
    candidates = [p] if p.is_absolute() else [p, Path("checkpoints") / p]
    for c in candidates:
        resolved = c.resolve()
        if any(resolved == d or d in resolved.parents for d in dirs):
            return
    where = ", ".join(str(d) for d in dirs)
    raise PlayError(
        f"the page plays checkpoints from {where} only; {path!r} is not there "
        "(start play.py with --checkpoint-dir to add a directory)"
    )


def bounded_spec(spec: str, seconds: float) -> str:
    """The spec the computer really plays: options within the page's limits, alpha-beta stopping at `seconds`.

    A limit above the page's is refused (PlayError) rather than silently
    lowered; an alpha-beta spec gets `time=<seconds>` unless it asks for less.
    Other kinds keep their spec; the worker is stopped at `seconds` anyway.
    """
    try:
        kind, options = parse_spec(spec)
    except PlayerSpecError as e:
        raise PlayError(str(e)) from None
    for key, (low, high) in _spec_limits(kind).items():
        if key not in options:
            continue
        try:
            value = float(options[key])
        except ValueError:
            raise PlayError(f"{kind} option {key}={options[key]!r} is not a number") from None
        if not low <= value <= high:
            raise PlayError(f"{kind} option {key}={options[key]} is outside the page's limits [{low:g}, {high:g}]")
    if kind == "alphabeta":
        if "time" in options:
            try:
                t = float(options["time"])
            except ValueError:
                raise PlayError(f"alphabeta option time={options['time']!r} is not a number") from None
            if not 0 < t <= seconds:
                raise PlayError(
                    f"alphabeta option time={options['time']} is outside the page's limit of {seconds:g} s a move"
                )
        else:
            options["time"] = f"{seconds:g}"
    return kind + (":" + ",".join(f"{k}={v}" for k, v in options.items()) if options else "")


def level_seconds(spec: Optional[str], default: float = MOVE_SECONDS) -> float:
    """The time per move of the level whose spec this is (`default` for any other spec)."""
    return next((level.seconds for level in LEVELS if level.spec == spec), default)


def warm_up_jobs(rules: RuleSet, opponents: Iterable[str] = (), seconds: float = MOVE_SECONDS) -> tuple[ThinkJob, ...]:
    """A move from the start for each offered level, the hints and `opponents`, as each would play on the page.

    The computer's workers play them before their first job (see
    `agents.play.computer.warm_up`), so that no move's clock pays for
    compiling a search. An opponent the page would refuse is left out (the
    game that names it is refused anyway)."""
    specs = [bounded_spec(level.spec, level.seconds) for level in available_levels()]
    specs.append(bounded_spec(HINT_SPEC, MOVE_SECONDS))
    for text in opponents:
        try:
            spec = opponent_spec(text)
            specs.append(bounded_spec(spec, level_seconds(spec, seconds)))
        except PlayError:
            continue
    return tuple(
        ThinkJob(key=f"warm-up:{i}", spec=spec, rules=_rules_key(rules), seed=0, start=START_JFEN)
        for i, spec in enumerate(dict.fromkeys(specs))
    )


# --- what a ply did -----------------------------------------------------------------------------
@dataclass
class PlyInfo:
    """What one ply did, for the page's highlight, move list and sounds."""

    move: str
    piece: str
    captured: Optional[str]
    jump: bool

    @property
    def notation(self) -> str:
        """`'L d4xd5'`: the animal's letter, the squares, `x` for a capture."""
        return f"{self.piece.upper()} {self.move[:2]}{'x' if self.captured else ''}{self.move[2:]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "move": self.move,
            "from": self.move[:2],
            "to": self.move[2:],
            "piece": self.piece,
            "captured": self.captured,
            "jump": self.jump,
            "notation": self.notation,
        }


def ply_info(board: Board, move: Move) -> PlyInfo:
    """Describe `move` in `board` (before it is pushed)."""
    piece = board.piece_at(move.from_square)
    target = board.piece_at(move.to_square)
    r0, f0 = divmod(move.from_square, K.N_FILES)
    r1, f1 = divmod(move.to_square, K.N_FILES)
    return PlyInfo(
        str(move), piece.letter if piece else "", target.letter if target else None, abs(f0 - f1) + abs(r0 - r1) > 1
    )


def trapped_squares(board: Board) -> list[int]:
    """Squares whose piece stands in an enemy trap (rank 0 there: any enemy may take it)."""
    codes = board.state[: K.N_SQUARES]
    trapped = ((codes > 0) & (K.TRAP_OWNER == K.BLUE)) | ((codes < 0) & (K.TRAP_OWNER == K.RED))
    return [int(sq) for sq in np.flatnonzero(trapped)]


def board_letters(board: Board) -> list[str]:
    return [p.letter if (p := board.piece_at(sq)) else "" for sq in range(K.N_SQUARES)]


def terrain() -> dict[str, Any]:
    """The board the page draws: size, square names, water, traps and dens with their owners."""
    return {
        "files": FILE_NAMES,
        "n_files": K.N_FILES,
        "n_ranks": K.N_RANKS,
        "squares": list(SQUARE_NAMES),
        "water": [SQUARE_NAMES[s] for s in range(K.N_SQUARES) if K.WATER[s]],
        "traps": {
            SQUARE_NAMES[s]: side_name(Side(int(K.TRAP_OWNER[s]))) for s in range(K.N_SQUARES) if K.TRAP_OWNER[s] >= 0
        },
        "dens": {SQUARE_NAMES[int(K.DEN[side])]: side_name(side) for side in Side},
    }


def termination_text(termination: str, winner: Optional[Side], loser: Optional[Side], rules: RuleSet) -> str:
    """`'den'` -> 'Red entered Blue's den' and so on; draws name their rule."""
    text = _TERMINATION_TEXT.get(termination, termination.replace("_", " "))
    return text.format(
        winner=side_name(winner).title() if winner is not None else "",
        loser=side_name(loser).title() if loser is not None else "",
        limit=rules.no_capture_draw,
    )


def _end_reason(board: Board, termination: Optional[str], winner: Optional[Side]) -> Optional[str]:
    if termination is None:
        return None
    loser = winner.other if winner is not None else None
    if termination == "no_moves":
        loser = board.side_to_move
    return termination_text(termination, winner, loser, board.rules)


def _captured(plies: Iterable[PlyInfo]) -> dict[str, list[str]]:
    """The letters of each side's pieces taken so far: {'red': [...], 'blue': [...]}."""
    out: dict[str, list[str]] = {"red": [], "blue": []}
    for p in plies:
        if p.captured:
            out["red" if p.captured.isupper() else "blue"].append(p.captured)
    return out


def _rules_key(rules: RuleSet) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(rules.to_dict().items()))


# --- the game -----------------------------------------------------------------------------------
class PlayGame:
    """A game in progress: mode, seats, board, hints left, and how it ended.

    `version` grows with every change, so a computer move computed for an older
    version (the person undid meanwhile) is thrown away.
    """

    def __init__(
        self,
        *,
        game_id: str,
        mode: str,
        human: Optional[Side],
        opponent: Optional[str],
        pace: str,
        rules: RuleSet,
        rules_name: str,
        start: str,
        seed: int,
        seconds: float = MOVE_SECONDS,
    ) -> None:
        self.id = game_id
        self.mode = mode
        self.human = human
        self.opponent = opponent
        """The opponent's spec as chosen (shown and recorded)."""
        self.seconds = seconds
        """The most one computer move may take."""
        self.engine = bounded_spec(opponent, seconds) if opponent is not None else None
        """The spec the computer plays: `opponent` within the page's limits."""
        self.pace = pace
        self.rules = rules
        self.rules_name = rules_name
        self.start = start
        self.seed = seed
        self.board = Board.from_jfen(start, rules=rules)
        self._first = self.board.side_to_move
        self.plies: list[PlyInfo] = []
        self.hints_left = HINTS_PER_GAME
        self.hint: Optional[str] = None
        """The hint shown for the current position (asking again costs nothing)."""
        self.resigned: Optional[Side] = None
        self.version = 0
        self.error: Optional[str] = None
        """Why the computer could not move (a broken player, a search past its time), shown by the page."""

    # -- construction ------------------------------------------------------------------
    @classmethod
    def new(
        cls,
        *,
        mode: Any = "computer",
        human: Any = "red",
        opponent: Any = "beginner",
        pace: Any = "instant",
        rules: Optional[RuleSet] = None,
        rules_name: str = "default",
        start: Any = None,
        seed: Any = None,
        game_id: Optional[str] = None,
        checkpoint_dirs: Optional[Iterable[Path]] = None,
        seconds: float = MOVE_SECONDS,
    ) -> "PlayGame":
        """Validate a new-game request; PlayError names the offending field.

        The opponent is only described here (its spec checked and bounded);
        building it is the computer's job (`agents.play.computer`). A level
        has its own time per move, any other opponent `seconds`.
        """
        mode = _choice("mode", mode, MODES)
        pace = _choice("pace", pace, PACES)
        rules = rules if rules is not None else RuleSet()
        start_jfen = START_JFEN if start in (None, "") else start
        if not isinstance(start_jfen, str) or len(start_jfen) > 200:
            raise PlayError(f"start position must be a JFEN string, got {str(start_jfen)[:80]!r}")
        try:
            Board.from_jfen(start_jfen, rules=rules)
        except ValueError as e:
            raise PlayError(str(e)) from None
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
            raise PlayError(f"seed {str(seed)[:40]!r} is not an integer in 0..{MAX_SEED}")
        seat: Optional[Side] = None
        spec: Optional[str] = None
        if mode == "computer":
            seat = parse_side(human)
            spec = opponent_spec(opponent, checkpoint_dirs)
        return cls(
            game_id=game_id or secrets.token_hex(6),
            mode=mode,
            human=seat,
            opponent=spec,
            pace=pace,
            rules=rules,
            rules_name=rules_name,
            start=start_jfen,
            seed=secrets.randbits(31) if seed is None else seed,
            seconds=level_seconds(spec, seconds),
        )

    # -- reading ----------------------------------------------------------------------------
    @property
    def over(self) -> bool:
        return self.resigned is not None or self.board.outcome() is not None

    def result(self) -> tuple[str, Optional[str], Optional[Side]]:
        """(result, termination, winner): `'1-0'`/`'0-1'`/`'1/2-1/2'`/`'*'`, RULES.md's reason or `resign`."""
        if self.resigned is not None:
            winner = self.resigned.other
            return ("1-0" if winner == Side.RED else "0-1"), "resign", winner
        out = self.board.outcome()
        if out is None:
            return "*", None, None
        return out.result(), out.termination.name.lower(), out.winner

    def computer_to_move(self) -> bool:
        return self.mode == "computer" and not self.over and self.board.side_to_move != self.human

    def _changed(self) -> None:
        self.version += 1
        self.hint = None
        self.error = None

    # -- a person's requests ------------------------------------------------------------
    def human_move(self, move: Any) -> None:
        """Play a person's move (`'a3a4'`); PlayError with a short reason if it is refused."""
        if not isinstance(move, str):
            raise PlayError(f"a move must be a string like 'a3a4', got {str(move)[:40]!r}")
        if self.over:
            raise PlayError("the game is over; start a new game" + ("" if self.resigned is not None else " or undo"))
        if self.computer_to_move():
            raise PlayError("it is the computer's turn; wait for its move")
        try:
            m = Move.from_str(move)
        except (InvalidMoveError, ValueError) as e:
            raise PlayError(str(e)) from None
        try:
            self.board.parse_move(m)
        except IllegalMoveError:
            raise PlayError(f"illegal move {str(m)}: {self.board.why_illegal(m)}") from None
        self._push(m)

    def _push(self, m: Move) -> None:
        info = ply_info(self.board, m)
        self.board.push(m)
        self.plies.append(info)
        self._changed()

    def _pop(self) -> None:
        self.board.pop()
        self.plies.pop()

    def undo(self) -> int:
        """Take moves back; returns how many plies were undone.

        Two people: one ply. Against the computer: the computer's reply and the person's
        move before it; while the computer is still choosing its reply, only the person's
        last move. A resignation is final.
        """
        if self.resigned is not None:
            raise PlayError("the game ended by resignation; start a new game")
        if not self.board.move_stack:
            raise PlayError("there is no move to undo")
        if self.mode == "two_players":
            self._pop()
            self._changed()
            return 1
        if self._human_moves_played() == 0:
            raise PlayError("there is no move of yours to undo")
        undone = 0
        # The computer's reply, if it has moved (not while thinking, nor when the person's move ended the game).
        if self.board.side_to_move.other != self.human:
            self._pop()
            undone += 1
        self._pop()
        undone += 1
        self._changed()
        return undone

    def _human_moves_played(self) -> int:
        n = len(self.board.move_stack)
        if self.human == self._first:
            return (n + 1) // 2
        return n // 2

    def can_undo(self) -> bool:
        if self.resigned is not None or not self.board.move_stack:
            return False
        return self.mode == "two_players" or self._human_moves_played() > 0

    def check_hint(self) -> Optional[str]:
        """May the person have a hint now? PlayError if not; the hint already shown for this position if any."""
        if self.over:
            raise PlayError("the game is over; no hints")
        if self.computer_to_move():
            raise PlayError("it is the computer's turn; ask for a hint on yours")
        if self.hint is not None:
            return self.hint
        if self.hints_left <= 0:
            raise PlayError(f"no hints left ({HINTS_PER_GAME} per game)")
        return None

    def apply_hint(self, move: str, version: int) -> str:
        """Show `move` as the hint of position `version`; costs one hint unless this position has one already."""
        if version != self.version:
            raise PlayError("the position changed while the hint was being found; ask again")
        known = self.check_hint()
        if known is not None:
            return known
        self.board.parse_move(move)
        self.hints_left -= 1
        self.hint = move
        return move

    def resign(self) -> None:
        """The person resigns (two people: the side to move resigns); also while the computer thinks."""
        if self.over:
            raise PlayError("the game is already over")
        self.resigned = self.human if self.mode == "computer" and self.human is not None else self.board.side_to_move
        self._changed()

    def set_pace(self, pace: Any) -> None:
        self.pace = _choice("pace", pace, PACES)

    # -- the computer ------------------------------------------------------------------
    def job(self, role: str) -> ThinkJob:
        """The search the game needs now: `'computer'` (the opponent's move) or `'hint'`."""
        if role == "computer":
            if self.engine is None:
                raise PlayError("this game has no computer player")
            spec, seed = self.engine, self.seed
        elif role == "hint":
            spec, seed = bounded_spec(HINT_SPEC, MOVE_SECONDS), derive_seed(self.seed, "hint")
        else:
            raise ValueError(f"unknown job role {role!r}")
        return ThinkJob(
            key=f"{self.id}:{role}",
            spec=spec,
            rules=_rules_key(self.rules),
            seed=seed,
            start=self.start,
            moves=tuple(str(m) for m in self.board.move_stack),
        )

    def apply_computer_move(self, move: str, version: int) -> bool:
        """Play `move` if the game is still at `version` (else it is stale: False)."""
        if version != self.version or not self.computer_to_move():
            return False
        self._push(self.board.parse_move(move))  # a player bug must not corrupt the game
        return True

    # -- records and saving -------------------------------------------------------------
    def players(self) -> tuple[str, str]:
        """(red, blue) names for the record."""
        if self.mode == "two_players":
            return "human", "human"
        assert self.opponent is not None
        return ("human", self.opponent) if self.human == Side.RED else (self.opponent, "human")

    def record(self) -> GameRecord:
        result, termination, _ = self.result()
        red, blue = self.players()
        return GameRecord(
            start=self.start,
            moves=[str(m) for m in self.board.move_stack],
            result=result,
            termination=termination,
            red=red,
            blue=blue,
            rules=self.rules.to_dict(),
            seed=self.seed,
            extra={"source": "play", "rules_name": self.rules_name, "mode": self.mode},
        )

    def to_saved(self) -> dict[str, Any]:
        """Everything needed to resume the game (the saved-game file's content)."""
        return {
            "format": "jungle-zero-play-game",
            "version": 1,
            "id": self.id,
            "mode": self.mode,
            "human": side_name(self.human) if self.human is not None else None,
            "opponent": self.opponent,
            "pace": self.pace,
            "rules": self.rules.to_dict(),
            "rules_name": self.rules_name,
            "start": self.start,
            "seed": self.seed,
            "moves": [str(m) for m in self.board.move_stack],
            "hints_left": self.hints_left,
            "resigned": side_name(self.resigned) if self.resigned is not None else None,
        }

    @classmethod
    def from_saved(cls, d: Any, seconds: float = MOVE_SECONDS) -> "PlayGame":
        """Rebuild a saved game, every move checked again by the rules engine (PlayError if it fails)."""
        if not isinstance(d, dict) or d.get("format") != "jungle-zero-play-game":
            raise PlayError("not a saved Jungle Zero game")
        if not isinstance(d.get("rules"), dict) or not isinstance(d.get("moves"), list):
            raise PlayError("saved game is malformed: 'rules' must be an object and 'moves' a list of moves")
        try:
            rules = RuleSet.from_dict(d["rules"])
            game = cls.new(
                mode=d["mode"],
                human=d["human"] or "red",
                opponent=d["opponent"] or "random",
                pace=d["pace"],
                rules=rules,
                rules_name=str(d.get("rules_name", "default")),
                start=d["start"],
                seed=int(d["seed"]),
                game_id=str(d["id"]),
                seconds=seconds,
            )
            for mv in d["moves"]:
                game._push(game.board.parse_move(mv))
            game.hints_left = max(0, min(HINTS_PER_GAME, int(d["hints_left"])))
            if d.get("resigned") is not None:
                game.resigned = parse_side(d["resigned"])
        except (KeyError, TypeError, RuleSetError, OverflowError) as e:
            raise PlayError(f"saved game is malformed: {e!r}") from None
        except ValueError as e:
            raise PlayError(f"saved game does not replay: {e}") from None
        game.version = 0
        return game

    # -- the page's view --------------------------------------------------------------
    def view(self, thinking: bool = False) -> dict[str, Any]:
        """The JSON the page draws from. Squares are indexed rank*7+file (a1=0, g9=62)."""
        result, termination, winner = self.result()
        b = self.board
        turn = "over" if result != "*" else ("computer" if self.computer_to_move() else "human")
        legal = [str(Move.from_int(int(m))) for m in b.legal_move_ints()] if turn == "human" else []
        return {
            "id": self.id,
            "version": self.version,
            "mode": self.mode,
            "human": side_name(self.human) if self.human is not None else None,
            "opponent": self.opponent,
            "seconds": self.seconds,
            "pace": self.pace,
            "rules_name": self.rules_name,
            "rules": self.rules.to_dict(),
            "ranks": list(self.rules.ranks()),
            "start": self.start,
            "jfen": b.jfen(),
            "board": board_letters(b),
            "trapped": trapped_squares(b),
            "moves": [str(m) for m in b.move_stack],
            "plies": [p.to_dict() for p in self.plies],
            "captured": _captured(self.plies),
            "side_to_move": side_name(b.side_to_move),
            "turn": turn,
            "thinking": bool(thinking and turn == "computer"),
            "legal": legal,
            "last": self.plies[-1].to_dict() if self.plies else None,
            "hint": self.hint,
            "hints_left": self.hints_left,
            "can_undo": self.can_undo(),
            "halfmove_clock": b.halfmove_clock,
            "result": result,
            "termination": termination,
            "winner": side_name(winner) if winner is not None else None,
            "reason": _end_reason(b, termination, winner),
            "computer_error": self.error,
        }


# --- replays --------------------------------------------------------------------------------------
def replay_frames(record: GameRecord) -> dict[str, Any]:
    """Every position of a recorded game for the replay viewer, and how it ended.

    Returns {"frames": [{jfen, side_to_move, trapped}], "plies": [...] (frame
    i follows ply i-1), "end": {result, termination, winner, reason} or None}. Every move is
    checked by the rules engine and the game must stop at its end: RecordError
    names the first bad move, a move after the end, or a game longer than
    MAX_REPLAY_PLIES, so the work per record is bounded.
    """
    if len(record.moves) > MAX_REPLAY_PLIES:
        raise RecordError(f"the game has {len(record.moves)} plies; the viewer shows at most {MAX_REPLAY_PLIES}")
    if not isinstance(record.rules, dict) or not isinstance(record.start, str):
        raise RecordError("record cannot be set up: 'rules' must be an object of rules and 'start' a JFEN string")
    try:
        rules = RuleSet.from_dict(record.rules)
        board = Board.from_jfen(record.start, rules=rules)
    except (ValueError, TypeError, OverflowError) as e:  # OverflowError: a rule number that is infinite
        raise RecordError(f"record cannot be set up: {e}") from None

    def frame() -> dict[str, Any]:
        return {"jfen": board.jfen(), "side_to_move": side_name(board.side_to_move), "trapped": trapped_squares(board)}

    frames = [frame()]
    plies = []
    for i, mv in enumerate(record.moves):
        over = board.outcome()
        if over is not None:
            raise RecordError(
                f"move {i + 1} ({str(mv)[:12]!r}) comes after the end of the game "
                f"({over.termination.name.lower()} at ply {i})"
            )
        try:
            m = board.parse_move(mv)
        except ValueError as e:
            raise RecordError(f"move {i + 1} ({str(mv)[:12]!r}) does not replay: {e}") from None
        info = ply_info(board, m)
        board.push(m)
        plies.append(info.to_dict())
        frames.append(frame())
    out = board.outcome()
    end = None
    if out is not None:
        end = {
            "result": out.result(),
            "termination": out.termination.name.lower(),
            "winner": side_name(out.winner) if out.winner is not None else None,
        }
    elif record.result != "*":
        winner = {"1-0": Side.RED, "0-1": Side.BLUE}.get(record.result)
        end = {
            "result": record.result,
            "termination": record.termination,
            "winner": side_name(winner) if winner is not None else None,
        }
    if end is not None:
        winner = Side.RED if end["winner"] == "red" else Side.BLUE if end["winner"] == "blue" else None
        end["reason"] = _end_reason(board, end["termination"], winner) or "the record gives no reason"
    return {"frames": frames, "plies": plies, "end": end}

"""Start positions for self-play: a file of JFENs (`SelfPlayConfig.starts`), and the positions where a game's
move and a shallow alpha-beta search disagree (`mine_starts`), which such a file is made of.

    found = mine_starts(read_jsonl("runs/x/games.jsonl"), depth=4, margin=300, plies=(0, 60))
    write_starts("holes.txt", found, header="from runs/x/games.jsonl")
    load_starts("holes.txt")        # ('<jfen>', '<jfen> rules=enemy_rat', ...); StartsError names a bad line
    split_start("<jfen> rules=enemy_rat")   # ('<jfen>', 'enemy_rat')

A line may name the rule set its position is played under after the JFEN, ``rules=<name>`` (a rule set of
`configs/rules/`, or the name of an entry of the run's `train.rules_mix`): a game started there plays those
rules, where an untagged line plays the run's rules (with a mix, the rule set the game draws). The miner tags
every position when any game it mined plays rules other than the default ones.

A position is kept when the move played there scores more than `margin` evaluation units (a Dog = 300)
below alpha-beta's best at `depth` plies: the score after the move is searched one ply shallower from the
opponent's side, as the player's guard checks a move (`agents.alphazero.player.guard`). Self-play started
from such positions plays the network's tactical holes again and again, where from the opening it meets
each one rarely (docs/training.md, "Start positions").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

from tqdm import tqdm

from agents.alphabeta.search import MATE, AlphaBeta
from agents.alphazero.net.checkpoint import CUSTOM_RULES, rule_set_name
from agents.arena.records import GameRecord
from agents.common.io import atomic_write_text
from envs import Board, Move, RuleSet
from envs.config import ConfigError
from envs.notation import JFENError, parse_jfen
from envs.rules import RuleSetError, load_rules

MAX_STARTS = 1_000_000
"""The most positions a start file may hold (they travel with the self-play settings to every worker)."""


RULES_TAG = "rules="
"""What starts the optional last field of a start line: the name of the rule set its position is played under."""

_TAG_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class StartsError(ConfigError):
    """A start-position file that is missing, empty or holds a line that is no JFEN (with an optional rules tag),
    or a tag naming rules the run does not play."""


def split_start(line: str) -> tuple[str, Optional[str]]:
    """(the JFEN, the rule-set name of its ``rules=`` tag or None) of a start line as `parse_starts` keeps it."""
    jfen, sep, name = line.partition(f" {RULES_TAG}")
    return (jfen, name) if sep else (line, None)


def _start_line(text: str) -> str:
    """`text` (a start line) with its JFEN checked and its fields joined by single spaces; JFENError or
    ValueError for a bad JFEN or tag."""
    fields = text.split()
    name = None
    if fields and fields[-1].startswith(RULES_TAG):
        name = fields.pop()[len(RULES_TAG) :]
        if not _TAG_NAME.fullmatch(name):
            raise ValueError(f"{RULES_TAG}{name} names no rule set (a name such as {RULES_TAG}enemy_rat)")
    jfen = " ".join(fields)
    parse_jfen(jfen)
    return jfen if name is None else f"{jfen} {RULES_TAG}{name}"


def parse_starts(lines: Iterable[str], where: str) -> tuple[str, ...]:
    """The start lines of `lines` (blank lines and lines starting with ``#`` skipped): each a JFEN checked by the
    JFEN parser, optionally followed by ``rules=<name>`` (`split_start`); StartsError naming `where` and the
    line of the first bad one, or an empty list."""
    found: list[str] = []
    for i, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            found.append(_start_line(text))
        except (JFENError, ValueError) as e:
            raise StartsError(f"{where}:{i}: not a JFEN position with an optional {RULES_TAG}<name> ({e})") from None
        if len(found) > MAX_STARTS:
            raise StartsError(f"{where}: more than {MAX_STARTS} start positions")
    if not found:
        raise StartsError(f"{where}: no start positions (one JFEN a line; '#' starts a comment line)")
    return tuple(found)


def load_starts(path: str | Path) -> tuple[str, ...]:
    """The start positions of the file at `path` (`parse_starts`); StartsError when it cannot be read."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise StartsError(f"cannot read the start positions at {str(p)!r}: {e}") from None
    return parse_starts(text.splitlines(), str(p))


def start_rules(
    positions: Sequence[str],
    rules: Optional[RuleSet],
    mix: Optional[dict[str, RuleSet]] = None,
    where: str = "starts",
) -> dict[str, RuleSet]:
    """The rules each tag of `positions` names (`split_start`), for a run playing `rules` or, with `mix` (each
    entry's name and rules), the mix: a tag names an entry of the mix, or without one a rule set of
    `configs/rules/` equal to `rules` (any such rule set when `rules` is None). StartsError naming the first
    tag that is neither, and `where`."""
    found: dict[str, RuleSet] = {}
    for i, line in enumerate(positions, 1):
        name = split_start(line)[1]
        if name is None or name in found:
            continue
        if mix:
            if name not in mix:
                raise StartsError(
                    f"{where}, position {i}: {RULES_TAG}{name} is no rule set of train.rules_mix ({', '.join(mix)})"
                )
            found[name] = mix[name]
            continue
        try:
            tagged = load_rules(name)
        except RuleSetError as e:
            raise StartsError(f"{where}, position {i}: {RULES_TAG}{name}: {e}") from None
        if rules is not None and tagged != rules:
            raise StartsError(
                f"{where}, position {i}: {RULES_TAG}{name} differs from the rules the run plays; a run of "
                "several rule sets names them in train.rules_mix"
            )
        found[name] = tagged
    return found


def rules_name(rules: RuleSet, cache: Optional[dict[RuleSet, Optional[str]]] = None) -> Optional[str]:
    """The name of the rule set of `configs/rules/` that equals `rules` (`rule_set_name`), or None."""
    if cache is not None and rules in cache:
        return cache[rules]
    name = rule_set_name(rules)
    found = None if name == CUSTOM_RULES else name
    if cache is not None:
        cache[rules] = found
    return found


def starts_digest(positions: Sequence[str]) -> str:
    """A short SHA-256 of the positions in order (the run's log names the file and this)."""
    return hashlib.sha256("\n".join(positions).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Disagreement:
    """A position of a game where the move played scored more than the margin below alpha-beta's best."""

    jfen: str
    """The position, before the move (its history is not kept: a repetition before it is forgotten)."""
    played: str
    """The move played there."""
    best: str
    """Alpha-beta's move."""
    deficit: int
    """Alpha-beta's best score minus the played move's (evaluation units, a Dog = 300; a mate is `MATE`)."""
    game: int
    """The game's index in the records given (from 0)."""
    ply: int
    """The position's ply in that game (0: its start)."""
    rules: Optional[str] = "default"
    """The name of the game's rule set (`rules_name`; None: rules no file of `configs/rules/` holds)."""


def _side_plays(record: GameRecord, side: int, players: Optional[Sequence[str]]) -> bool:
    """Whether the player of `side` (0: Red) in `record` matches one of the shell patterns `players` (None: all)."""
    if not players:
        return True
    name = record.red if side == 0 else record.blue
    return any(fnmatchcase(name, pattern) for pattern in players)


def mine_starts(
    records: Iterable[GameRecord],
    *,
    depth: int = 4,
    margin: int = 300,
    plies: tuple[int, int] = (0, 60),
    players: Optional[Sequence[str]] = None,
    progress: bool = False,
) -> Iterator[Disagreement]:
    """The positions of `records` where the move played scores more than `margin` below alpha-beta's best
    searched to `depth` plies, among the plies ``plies[0] <= ply < plies[1]`` of each game and the moves of
    the players whose names match one of the shell patterns `players` (``checkpoint:*``; all moves when None),
    each position once a rule set (the first game it occurs in).

    A move that ends the game scores exactly (a win `MATE`, a draw 0); any other is searched from the
    opponent's side to ``depth - 1`` plies (at least 1). ValueError for a depth below 1, a negative margin or an
    empty ply range; RecordError for a record that does not replay."""
    if depth < 1:
        raise ValueError(f"depth={depth} must be >= 1")
    if margin < 0:
        raise ValueError(f"margin={margin} must be >= 0")
    lo, hi = plies
    if not 0 <= lo < hi:
        raise ValueError(f"plies={lo}:{hi} must be a range 0 <= first < end")
    engines: dict[RuleSet, AlphaBeta] = {}
    names: dict[RuleSet, Optional[str]] = {}
    seen: set[tuple[str, RuleSet]] = set()
    bar = tqdm(desc="mining", unit="game", disable=not progress)
    for index, record in enumerate(records):
        bar.update(1)
        rules = RuleSet.from_dict(record.rules)
        engine = engines.get(rules)
        if engine is None:
            engine = engines[rules] = AlphaBeta(rules, tt_bits=18)
        engine.clear()
        board = Board.from_jfen(record.start, rules=rules)
        for ply, text in enumerate(record.moves[:hi]):
            move = board.parse_move(text)
            if ply >= lo and _side_plays(record, board.side_to_move, players):
                jfen = board.jfen()
                if (jfen, rules) not in seen:
                    found = _disagreement(engine, board, move, depth, margin)
                    if found is not None:
                        seen.add((jfen, rules))
                        yield Disagreement(jfen, text, found[0], found[1], index, ply, rules_name(rules, names))
            board.push(move)
    bar.close()


def move_deficit(engine: AlphaBeta, board: Board, move: Move, depth: int) -> tuple[Optional[Move], int]:
    """Alpha-beta's best move on `board` at `depth` plies and how far `move` scores below it (evaluation units, a
    Dog = 300; 0 for the best move itself): a move that ends the game scores exactly (a win `MATE`, a draw 0),
    any other is searched from the opponent's side to ``depth - 1`` plies (at least 1)."""
    best = engine.search(board, depth=depth)
    if best.move is None or best.move == move:
        return best.move, 0
    after = board.copy()
    after.push(move)
    outcome = after.outcome()
    if outcome is not None:
        score = 0 if outcome.winner is None else (MATE if outcome.winner == board.side_to_move else -MATE)
    else:
        score = -engine.search(after, depth=max(1, depth - 1)).score
    return best.move, int(best.score - score)


def _disagreement(engine: AlphaBeta, board: Board, move: Move, depth: int, margin: int) -> Optional[tuple[str, int]]:
    """(alpha-beta's move, the played move's deficit) when `move` scores more than `margin` below the best."""
    best, deficit = move_deficit(engine, board, move, depth)
    return (str(best), deficit) if deficit > margin else None


def write_starts(path: str | Path, found: Iterable[Disagreement], header: str = "") -> int:
    """Write the positions of `found` to `path` atomically, one JFEN a line after ``#`` comment lines (the
    `header`); each position's move, alpha-beta's move and the deficit come on the comment line before it.
    When any position was mined from a game of other rules than the default ones, every line ends with its
    rule set's tag (``rules=<name>``). Returns the number of positions; ValueError, and nothing written, when
    a tag is needed for a game whose rules no file of `configs/rules/` holds."""
    found = list(found)
    tagged = any(d.rules != "default" for d in found)
    lines = [f"# {line}" for line in header.splitlines()]
    for d in found:
        if tagged and d.rules is None:
            raise ValueError(
                f"game {d.game} plays rules that no rule set of configs/rules/ holds: its positions cannot be "
                f"tagged {RULES_TAG}<name>"
            )
        lines.append(f"# game {d.game} ply {d.ply}: played {d.played}, alpha-beta {d.best}, {d.deficit} below")
        lines.append(f"{d.jfen} {RULES_TAG}{d.rules}" if tagged else d.jfen)
    atomic_write_text(path, "\n".join(lines) + "\n")
    return len(found)


__all__ = [
    "Disagreement",
    "MAX_STARTS",
    "RULES_TAG",
    "StartsError",
    "load_starts",
    "mine_starts",
    "move_deficit",
    "parse_starts",
    "rules_name",
    "split_start",
    "start_rules",
    "starts_digest",
    "write_starts",
]

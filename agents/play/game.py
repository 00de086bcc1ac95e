"""One game between a person and the computer (or two people), shared by the
play page's server and the terminal mode.

A `PlayGame` owns a `Board` and everything a person can do to it: move, undo,
ask for a hint, resign. Every request goes through the rules engine; a bad
one raises `PlayError` (a ValueError) with a short reason and leaves the game
exactly as it was. The computer's move is split in two so that a server can
think outside its lock: `computer_think()` works on a copy of the board and
`apply_computer_move(move, version)` plays it only if nothing changed since.

    >>> game = PlayGame.new(mode="computer", human="red", opponent="random", seed=1)
    >>> game.human_move("a3a4")
    >>> game.apply_computer_move(game.computer_think(), game.version)
    >>> len(game.board.move_stack)
    2
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from envs import kernels as K
from envs.board import SQUARE_NAMES, START_JFEN, Board, IllegalMoveError, InvalidMoveError, Move, Side
from envs.rules import RuleSet, RuleSetError

from envs.players import Player, PlayerSpecError, make_player, parse_spec
from agents.arena.records import GameRecord, RecordError

MODES = ("computer", "two_players")
LEVELS = ("beginner", "normal", "expert")
PACES: dict[str, tuple[float, float]] = {"instant": (0.0, 0.0), "quick": (1.0, 2.0), "natural": (2.0, 5.0)}
"""Pace name -> (least, most) seconds the computer takes for a move, thinking included."""
HINTS_PER_GAME = 3
HINT_SPEC = "alphabeta:level=normal"
"""Where hints come from; when alpha-beta is unavailable the opponent (or a random player) hints."""

_SIDE_NAMES = {Side.RED: "red", Side.BLUE: "blue"}
_TERMINATION_TEXT = {
    "den": "{winner} entered {loser}'s den",
    "all_captured": "{winner} captured {loser}'s last piece",
    "no_moves": "{loser} has no legal move",
    "repetition": "the same position occurred for the third time",
    "no_capture_limit": "{limit} plies passed without a capture",
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


def opponent_spec(text: Any) -> str:
    """What a person types for an opponent -> a player spec.

    `beginner`/`normal`/`expert` are alpha-beta levels, a path ending in `.pt`, an existing
    file or run directory, or a run name under `checkpoints/` is a checkpoint; anything else must already be a spec
    (`alphabeta:depth=3`, `checkpoint:path=...,sims=200`, `random`).
    """
    if not isinstance(text, str) or not text.strip():
        raise PlayError(f"opponent {text!r} is empty; choose beginner, normal, expert, a checkpoint path or a player spec")
    t = text.strip()
    if t in LEVELS:
        return f"alphabeta:level={t}"
    if ":" not in t and (t.endswith(".pt") or "/" in t or Path(t).exists() or (Path("checkpoints") / t).is_dir()):
        return f"checkpoint:path={t}"
    try:
        parse_spec(t)
    except PlayerSpecError as e:
        raise PlayError(str(e)) from None
    return t


def build_player(spec: str, rules: RuleSet, seed: Optional[int]) -> Player:
    """make_player, with every failure (unknown kind, missing module, bad file) as a PlayError."""
    try:
        return make_player(spec, rules=rules, seed=seed)
    except ImportError as e:
        raise PlayError(f"player {spec!r} is not available in this installation ({e})") from None
    except (ValueError, OSError, KeyError, RuntimeError) as e:
        raise PlayError(f"cannot build player {spec!r}: {e}") from None


@dataclass
class PlyInfo:
    """What one ply did, for the page's highlight and sounds."""

    move: str
    piece: str
    captured: Optional[str]
    jump: bool

    def to_dict(self) -> dict[str, Any]:
        return {"move": self.move, "from": self.move[:2], "to": self.move[2:], "piece": self.piece,
                "captured": self.captured, "jump": self.jump}


def ply_info(board: Board, move: Move) -> PlyInfo:
    """Describe `move` in `board` (before it is pushed)."""
    piece = board.piece_at(move.from_square)
    target = board.piece_at(move.to_square)
    r0, f0 = divmod(move.from_square, K.N_FILES)
    r1, f1 = divmod(move.to_square, K.N_FILES)
    return PlyInfo(str(move), piece.letter if piece else "", target.letter if target else None,
                   abs(f0 - f1) + abs(r0 - r1) > 1)


def explain_illegal(board: Board, move: Move) -> str:
    """A short reason why a move the engine refused is illegal (for people, not for the rules).

    The engine decides legality; this only puts its refusal into words, so it may fall
    back to a general reason where the position is unusual.
    """
    over = board.outcome()
    if over is not None:
        return "the game is over"
    names = K.ANIMAL_NAMES
    src, dst = move.from_square, move.to_square
    fs, ts = SQUARE_NAMES[src], SQUARE_NAMES[dst]
    piece = board.piece_at(src)
    me = board.side_to_move
    if piece is None:
        return f"there is no piece on {fs}"
    if piece.side != me:
        return f"the piece on {fs} is {side_name(piece.side).title()}'s; {side_name(me).title()} is to move"
    animal = names[piece.animal]
    if src == dst:
        return "a move must go to another square"
    target = board.piece_at(dst)
    if target is not None and target.side == me:
        return f"your own {names[target.animal]} stands on {ts}"
    if dst == int(K.DEN[me]):
        return "a piece may not enter its own den"
    f0, r0 = src % K.N_FILES, src // K.N_FILES
    f1, r1 = dst % K.N_FILES, dst // K.N_FILES
    water = K.WATER
    if abs(f0 - f1) + abs(r0 - r1) > 1:
        jump_dirs = [d for d in range(4) if int(K.JUMP[src, d]) == dst]
        if not jump_dirs:
            if f0 != f1 and r0 != r1:
                return "pieces move one square up, down, left or right, never diagonally"
            return "pieces move one square at a time (only the Lion and Tiger jump, across a river)"
        if piece.animal not in (K.LION, K.TIGER):
            return f"only the Lion and Tiger jump the river, not the {animal}"
        flown = [int(s) for s in K.JUMP_OVER[src, jump_dirs[0]] if s >= 0]
        if any(board.piece_at(s) is not None for s in flown):
            return "a rat in the river blocks the jump"
    elif water[dst] and piece.animal != K.RAT:
        return f"only the Rat may enter the water, not the {animal}"
    if target is not None:
        victim = names[target.animal]
        ranks = board.rules.ranks()
        if bool(water[src]) != bool(water[dst]):
            return "a piece in the water and a piece on land cannot capture each other"
        if int(K.TRAP_OWNER[src]) == 1 - me and board.rules.trapped_attacker == "powerless":
            return f"the {animal} stands in an enemy trap and can capture nothing"
        if piece.animal == K.ELEPHANT and target.animal == K.RAT:
            return "the Elephant cannot capture the Rat"
        if ranks[piece.animal] < ranks[target.animal]:
            return (f"the {animal} (rank {ranks[piece.animal]}) cannot capture "
                    f"the {victim} (rank {ranks[target.animal]})")
    if board.rules.anti_chase != "off":
        return "the anti-chase rule forbids this move"
    return f"the {animal} on {fs} cannot go to {ts}"


def termination_text(termination: str, winner: Optional[Side], loser: Optional[Side], rules: RuleSet) -> str:
    """`'den'` -> 'Red entered Blue's den' and so on; draws name their rule."""
    text = _TERMINATION_TEXT.get(termination, termination)
    return text.format(winner=side_name(winner).title() if winner is not None else "",
                       loser=side_name(loser).title() if loser is not None else "",
                       limit=rules.no_capture_draw)


class PlayGame:
    """A game in progress: mode, seats, board, hints left, and how it ended.

    `version` grows with every change, so a computer move computed for an older
    version (the person undid meanwhile) is thrown away.
    """

    def __init__(self, *, game_id: str, mode: str, human: Optional[Side], opponent: Optional[str], pace: str,
                 rules: RuleSet, rules_name: str, start: str, seed: int) -> None:
        self.id = game_id
        self.mode = mode
        self.human = human
        self.opponent = opponent
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
        self.resigned: Optional[Side] = None
        self.version = 0
        self._player: Optional[Player] = None
        self._hinter: Optional[Player] = None
        self.error: Optional[str] = None
        """Why the computer could not move (a broken player), shown by the page."""
        # Player objects may keep search state: one computation at a time for each.
        self._think_lock = threading.Lock()
        self._hint_lock = threading.Lock()

    # -- construction ------------------------------------------------------------------
    @classmethod
    def new(cls, *, mode: Any = "computer", human: Any = "red", opponent: Any = "beginner", pace: Any = "instant",
            rules: Optional[RuleSet] = None, rules_name: str = "default", start: Any = None,
            seed: Optional[int] = None, game_id: Optional[str] = None, build: bool = True) -> "PlayGame":
        """Validate a new-game request; PlayError names the offending field.

        `build=False` skips building the opponent (a saved game loads its player lazily).
        """
        if mode not in MODES:
            raise PlayError(f"mode {mode!r} is not one of {', '.join(MODES)}")
        if pace not in PACES:
            raise PlayError(f"pace {pace!r} is not one of {', '.join(PACES)}")
        rules = rules if rules is not None else RuleSet()
        start_jfen = START_JFEN if start in (None, "") else start
        if not isinstance(start_jfen, str):
            raise PlayError(f"start position must be a JFEN string, got {start_jfen!r}")
        try:
            Board.from_jfen(start_jfen, rules=rules)
        except ValueError as e:
            raise PlayError(str(e)) from None
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise PlayError(f"seed {seed!r} is not an integer")
        seat: Optional[Side] = None
        spec: Optional[str] = None
        if mode == "computer":
            seat = parse_side(human)
            spec = opponent_spec(opponent)
        game = cls(game_id=game_id or secrets.token_hex(6), mode=mode, human=seat, opponent=spec, pace=pace,
                   rules=rules, rules_name=rules_name, start=start_jfen,
                   seed=secrets.randbits(31) if seed is None else seed)
        if build and spec is not None:
            game._player = build_player(spec, rules, game.seed)
        return game

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
            raise PlayError(f"a move must be a string like 'a3a4', got {move!r}")
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
            raise PlayError(f"illegal move {str(m)}: {explain_illegal(self.board, m)}") from None
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
        stack = self.board.move_stack
        if not stack:
            raise PlayError("there is no move to undo")
        if self.mode == "two_players":
            self._pop()
            self._changed()
            return 1
        n_human_moves = self._human_moves_played()
        if n_human_moves == 0:
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

    def request_hint(self) -> str:
        """A suggested move for the person to move (three per game); PlayError when none is left."""
        if self.over:
            raise PlayError("the game is over; no hints")
        if self.computer_to_move():
            raise PlayError("it is the computer's turn; ask for a hint on yours")
        if self.hints_left <= 0:
            raise PlayError(f"no hints left ({HINTS_PER_GAME} per game)")
        with self._hint_lock:
            move = self._hint_player().select_move(self.board.copy())
        self.hints_left -= 1
        self.hint = str(move)
        return self.hint

    def _hint_player(self) -> Player:
        if self._hinter is None:
            try:
                self._hinter = build_player(HINT_SPEC, self.rules, self.seed + 1)
            except PlayError:
                fallback = self.opponent if self.opponent is not None else "random"
                self._hinter = build_player(fallback, self.rules, self.seed + 1)
        return self._hinter

    def resign(self) -> None:
        """The person resigns (two people: the side to move resigns)."""
        if self.over:
            raise PlayError("the game is already over")
        assert self.human is not None or self.mode == "two_players"
        self.resigned = self.human if self.mode == "computer" and self.human is not None else self.board.side_to_move
        self._changed()

    def set_pace(self, pace: Any) -> None:
        if pace not in PACES:
            raise PlayError(f"pace {pace!r} is not one of {', '.join(PACES)}")
        self.pace = pace

    # -- the computer ------------------------------------------------------------------
    def player(self) -> Player:
        if self._player is None:
            assert self.opponent is not None
            self._player = build_player(self.opponent, self.rules, self.seed)
        return self._player

    def computer_think(self, board: Optional[Board] = None) -> Move:
        """The computer's choice in the current position, or in `board` (a copy taken earlier).

        Works on a copy: the game is not changed (see `apply_computer_move`).
        """
        if board is None:
            if not self.computer_to_move():
                raise PlayError("it is not the computer's turn")
            board = self.board.copy()
        with self._think_lock:
            move = self.player().select_move(board)
        return move

    def apply_computer_move(self, move: Move, version: int) -> bool:
        """Play `move` if the game is still at `version` (else it is stale: False)."""
        if version != self.version or not self.computer_to_move():
            return False
        self.board.parse_move(move)  # a player bug must not corrupt the game
        self._push(move)
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
        return GameRecord(start=self.start, moves=[str(m) for m in self.board.move_stack], result=result,
                          termination=termination, red=red, blue=blue, rules=self.rules.to_dict(), seed=self.seed,
                          extra={"source": "play", "rules_name": self.rules_name, "mode": self.mode})

    def to_saved(self) -> dict[str, Any]:
        """Everything needed to resume the game (the saved-game file's content)."""
        return {"format": "jungle-zero-play-game", "version": 1, "id": self.id, "mode": self.mode,
                "human": side_name(self.human) if self.human is not None else None, "opponent": self.opponent,
                "pace": self.pace, "rules": self.rules.to_dict(), "rules_name": self.rules_name, "start": self.start,
                "seed": self.seed, "moves": [str(m) for m in self.board.move_stack], "hints_left": self.hints_left,
                "resigned": side_name(self.resigned) if self.resigned is not None else None}

    @classmethod
    def from_saved(cls, d: Any) -> "PlayGame":
        """Rebuild a saved game, every move checked again by the rules engine (PlayError if it fails)."""
        if not isinstance(d, dict) or d.get("format") != "jungle-zero-play-game":
            raise PlayError("not a saved Jungle Zero game")
        try:
            rules = RuleSet.from_dict(d["rules"])
            game = cls.new(mode=d["mode"], human=d["human"] or "red", opponent=d["opponent"] or "random",
                           pace=d["pace"], rules=rules, rules_name=str(d.get("rules_name", "default")),
                           start=d["start"], seed=int(d["seed"]), game_id=str(d["id"]), build=False)
            for mv in d["moves"]:
                m = game.board.parse_move(mv)
                game._push(m)
            hints = int(d["hints_left"])
            game.hints_left = max(0, min(HINTS_PER_GAME, hints))
            if d.get("resigned") is not None:
                game.resigned = parse_side(d["resigned"])
        except (KeyError, TypeError, RuleSetError) as e:
            raise PlayError(f"saved game is malformed: {e!r}") from None
        except ValueError as e:
            raise PlayError(f"saved game does not replay: {e}") from None
        game.version = 0
        return game

    # -- the page's view --------------------------------------------------------------
    def view(self, thinking: bool = False) -> dict[str, Any]:
        """The JSON the page draws from. Squares are indexed rank*7+file (a1=0, g9=62)."""
        result, termination, winner = self.result()
        over = result != "*"
        b = self.board
        turn = "over" if over else ("computer" if self.computer_to_move() else "human")
        legal = [str(Move.from_int(int(m))) for m in b.legal_move_ints()] if turn == "human" else []
        reason = None
        if over:
            assert termination is not None
            loser = winner.other if winner is not None else None
            if termination == "no_moves":
                loser = b.side_to_move
            reason = termination_text(termination, winner, loser, self.rules)
        return {
            "id": self.id,
            "version": self.version,
            "mode": self.mode,
            "human": side_name(self.human) if self.human is not None else None,
            "opponent": self.opponent,
            "pace": self.pace,
            "rules_name": self.rules_name,
            "rules": self.rules.to_dict(),
            "ranks": list(self.rules.ranks()),
            "start": self.start,
            "jfen": b.jfen(),
            "board": [p.letter if (p := b.piece_at(sq)) else "" for sq in range(K.N_SQUARES)],
            "moves": [str(m) for m in b.move_stack],
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
            "reason": reason,
            "computer_error": self.error,
        }


def replay_frames(record: GameRecord) -> list[dict[str, Any]]:
    """Each position of a recorded game for the replay viewer: board letters, last ply, JFEN.

    Every move is checked by the rules engine; RecordError names the first bad one.
    """
    try:
        rules = RuleSet.from_dict(record.rules)
        board = Board.from_jfen(record.start, rules=rules)
    except ValueError as e:
        raise RecordError(f"record cannot be set up: {e}") from None

    def frame(last: Optional[PlyInfo]) -> dict[str, Any]:
        return {"jfen": board.jfen(),
                "board": [p.letter if (p := board.piece_at(sq)) else "" for sq in range(K.N_SQUARES)],
                "last": last.to_dict() if last else None, "side_to_move": side_name(board.side_to_move)}

    frames = [frame(None)]
    for i, mv in enumerate(record.moves):
        try:
            m = board.parse_move(mv)
        except ValueError as e:
            raise RecordError(f"move {i + 1} ({mv!r}) does not replay: {e}") from None
        info = ply_info(board, m)
        board.push(m)
        frames.append(frame(info))
    return frames

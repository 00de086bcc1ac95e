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

Its opponent is a level of `agents.play.levels` or a spec that `agents.play.specs` bounds; what the page
draws of it comes from `agents.play.view`.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Iterable, Optional

from agents.arena.records import GameRecord
from agents.play.computer import ThinkJob, job_rules
from agents.play.errors import PlayError
from agents.play.levels import MOVE_SECONDS, level_seconds
from agents.play.specs import HINT_SPEC, bounded_spec, opponent_spec
from agents.play.view import PlyInfo, board_letters, end_reason, parse_side, ply_info, side_name, trapped_squares
from envs.board import Board, IllegalMoveError
from envs.notation import START_JFEN, InvalidMoveError, Move, Side
from envs.rules import RuleSet, RuleSetError
from envs.seeding import derive_seed

MODES = ("computer", "two_players")
PACES: dict[str, tuple[float, float]] = {"instant": (0.0, 0.0), "quick": (1.0, 2.0), "natural": (2.0, 5.0)}
"""Pace name -> (least, most) seconds the computer takes for a move, thinking included."""
HINTS_PER_GAME = 3
MAX_SEED = 2**63 - 1


def _choice(name: str, value: Any, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise PlayError(f"{name} {value!r} is not one of {', '.join(allowed)}")
    return value


def _captured(plies: Iterable[PlyInfo]) -> dict[str, list[str]]:
    """The letters of each side's pieces taken so far: {'red': [...], 'blue': [...]}."""
    out: dict[str, list[str]] = {"red": [], "blue": []}
    for p in plies:
        if p.captured:
            out["red" if p.captured.isupper() else "blue"].append(p.captured)
    return out


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
            rules=job_rules(self.rules),
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
            "reason": end_reason(b, termination, winner),
            "computer_error": self.error,
        }

"""Play Jungle in a terminal: a text board, moves typed as `a3a4`.

Reads commands line by line from any text stream, so it works with a pipe as
well as a keyboard:

    printf 'a3a4\\nhint\\nquit\\n' | python play.py --terminal --opponent random
"""

from __future__ import annotations

import random
import sys
import time
from typing import Optional, TextIO

from agents.play.computer import ComputerError, PlayerCache, choose_move
from agents.play.errors import PlayError
from agents.play.game import HINTS_PER_GAME, PACES, PlayGame
from agents.play.view import side_name
from envs.config import did_you_mean
from envs.notation import FILE_NAMES, Side
from envs.render import render_ansi

HELP = f"""Commands:
  a3a4     move the piece on a3 to a4 (a jump is written the same way: a4d4)
  undo     take back your last move (and the computer's reply)
  hint     suggest a move ({HINTS_PER_GAME} per game)
  resign   give up this game
  board    show the board again
  new      start a new game with the same settings
  help     this text
  quit     leave (end of input does the same)
Board: upper case Red, lower case Blue; R rat 1, C cat 2, D dog 3, W wolf 4,
P leopard 5, T tiger 6, L lion 7, E elephant 8 (rank after the name).
~ water, # trap, * den; [x] the last move's destination, (x) its origin."""


def render(game: PlayGame, colour: bool = False) -> str:
    """The board (the project's one text board), Blue at the bottom when the person plays Blue."""
    last = game.board.move_stack[-1] if game.board.move_stack else None
    return render_ansi(game.board.state, last, flip=game.human == Side.BLUE, colour=colour)


class TerminalGame:
    """The read-command, answer loop around one PlayGame."""

    def __init__(self, game: PlayGame, out: TextIO, pace_sleep: bool = True, colour: bool = False) -> None:
        self.game = game
        self.out = out
        self.pace_sleep = pace_sleep
        self.colour = colour
        self.players = PlayerCache()  # the terminal searches in its own process: one person, one game

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def status(self) -> None:
        g = self.game
        self.say(render(g, self.colour))
        if g.plies:
            self.say(f"Last move: {g.plies[-1].notation}")
        result, termination, winner = g.result()
        if result != "*":
            self.say(f"Game over: {result}, {g.view()['reason']}. Type 'undo', 'new' or 'quit'.")
        elif g.mode == "two_players":
            self.say(f"{side_name(g.board.side_to_move).title()} to move.")
        else:
            self.say(f"Your move ({side_name(g.board.side_to_move).title()}). Type 'help' for commands.")

    def computer_moves(self) -> None:
        """Let the computer play while it is its turn, at the game's pace."""
        g = self.game
        while g.computer_to_move():
            began = time.monotonic()
            self.say(f"The computer ({g.opponent}) is thinking...")
            try:
                move = choose_move(g.job("computer"), self.players)
            except ComputerError as e:
                self.say(f"The computer cannot move: {e}. Type 'undo', 'resign', 'new' or 'quit'.")
                return
            least, most = PACES[g.pace]
            rest = random.uniform(least, most) - (time.monotonic() - began)
            if self.pace_sleep and rest > 0:
                time.sleep(rest)
            g.apply_computer_move(move, g.version)
            self.say(f"The computer plays {g.plies[-1].notation}.")
        self.status()

    def handle(self, line: str) -> bool:
        """One command; False when the person wants to quit."""
        cmd = line.strip()
        low = cmd.lower()
        g = self.game
        if not cmd:
            return True
        if low in ("quit", "exit", "q"):
            self.say("Bye.")
            return False
        try:
            if low in ("help", "?"):
                self.say(HELP)
            elif low in ("board", "show"):
                self.status()
            elif low in ("undo", "u", "z"):
                n = g.undo()
                self.say(f"Took back {n} {'ply' if n == 1 else 'plies'}.")
                self.status()
            elif low in ("hint", "h"):
                move = g.check_hint()
                if move is None:
                    try:
                        move = choose_move(g.job("hint"), self.players)
                    except ComputerError as e:
                        raise PlayError(f"no hint could be found: {e}") from None
                    move = g.apply_hint(move, g.version)
                self.say(f"Hint: {move} ({g.hints_left} left).")
            elif low == "resign":
                g.resign()
                self.status()
            elif low == "new":
                self.game = PlayGame.new(
                    mode=g.mode,
                    human=side_name(g.human) if g.human is not None else "red",
                    opponent=g.opponent or "random",
                    pace=g.pace,
                    rules=g.rules,
                    rules_name=g.rules_name,
                    start=g.start,
                )
                self.say("New game.")
                self.computer_moves()
            else:
                g.human_move(low)
                self.computer_moves()
        except PlayError as e:
            if low in _COMMANDS or _looks_like_move(low):
                self.say(f"Refused: {e}")
            else:
                hint = did_you_mean(low, _WORDS)
                self.say(f"Unknown command {cmd!r}{hint}: type a move like a3a4, or 'help' for the commands.")
        return True


_COMMANDS = ("undo", "u", "z", "hint", "h", "resign", "new")
_WORDS = ("undo", "hint", "resign", "board", "show", "new", "help", "quit", "exit")
"""The commands' full names, for the closest match to a mistyped one."""


def _looks_like_move(text: str) -> bool:
    return len(text) == 4 and text[0] in FILE_NAMES and text[2] in FILE_NAMES


def run_terminal(
    game: PlayGame, inp: Optional[TextIO] = None, out: Optional[TextIO] = None, pace_sleep: bool = True
) -> int:
    """Play `game` reading commands from `inp` (stdin) and writing to `out` (stdout).

    Returns the exit code: 0, or 2 when the opponent cannot be built (the reason on stderr)."""
    inp = inp if inp is not None else sys.stdin
    out = out if out is not None else sys.stdout
    term = TerminalGame(game, out, pace_sleep=pace_sleep, colour=out.isatty())
    if game.mode == "computer":
        try:
            term.players.get(game.job("computer"))  # a bad opponent fails here, before the first move
        except ComputerError as e:
            print(f"play.py: {e}", file=sys.stderr)
            return 2
    who = (
        "two players"
        if game.mode == "two_players"
        else f"you play {side_name(game.human).title() if game.human is not None else ''} against {game.opponent}"
    )
    term.say(f"Jungle ({who}; rules: {game.rules_name}). Type 'help' for commands.")
    term.computer_moves()
    prompt = inp.isatty() and out.isatty()
    while True:
        if prompt:
            out.write("> ")
            out.flush()
        line = inp.readline()
        if not line:
            term.say("End of input; bye.")
            break
        if not term.handle(line):
            break
    return 0

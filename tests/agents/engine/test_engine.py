"""The engine in-process: each command of docs/protocol.md answered, limits passed to the player, stop and
isready answered during a search, bad input answered by one line with the engine's state unchanged, and a game
on a short clock that the engine never loses on time."""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Optional

import pytest

from agents.alphabeta.player import AlphaBetaPlayer
from agents.engine.engine import Engine
from agents.engine.protocol import Info, parse_bestmove, parse_info
from envs import Board, Move
from envs.players import Limit, StopSignal, accepts_limit, make_player
from envs.rules import load_rules, rule_set_names
from tests.support.checkpoints import mixed_checkpoint

WAIT = 120.0
"""Seconds a test waits for a line before it fails (a hang, never a verdict on speed)."""


class Session:
    """An Engine fed line by line, its replies collected from whichever thread writes them."""

    def __init__(self, spec: str = "alphabeta:depth=2", **kwargs: object) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.engine = Engine(spec, self.lines.put, **kwargs)  # type: ignore[arg-type]

    def send(self, line: str) -> bool:
        return self.engine.handle(line)

    def read(self) -> str:
        return self.lines.get(timeout=WAIT)

    def pending(self) -> list[str]:
        out = []
        while not self.lines.empty():
            out.append(self.lines.get_nowait())
        return out

    def go(self, line: str = "go depth 2") -> tuple[Info, Optional[str]]:
        """Send `line`, return its info and bestmove."""
        self.send(line)
        info = parse_info(self.read())
        return info, parse_bestmove(self.read())


@pytest.fixture(scope="module")
def session() -> Session:
    return Session()


def test_jep_identifies_the_engine_and_its_options(session: Session) -> None:
    session.send("jep")
    assert [session.read() for _ in range(5)] == [
        "id name alphabeta:depth=2",
        "id author Jungle Zero",
        "option name Rules type string default default",
        "option name MoveOverhead type spin default 50 min 0 max 5000",
        "jepok",
    ]
    session.send("isready")
    assert session.read() == "readyok"


def test_go_depth_searches_the_position_set_up(session: Session) -> None:
    session.send("newgame")
    session.send("position startpos moves a3a4")
    info, move = session.go("go depth 2")
    board = Board()
    board.push("a3a4")
    assert move is not None and board.is_legal(move)
    assert info.depth == 2 and info.pv[0] == move and info.nodes and info.wp is not None and info.cp is not None
    assert info.time is not None and session.pending() == []


def test_a_won_position_is_scored_win_and_an_ended_game_answers_none(session: Session) -> None:
    """Red's Rat beside Blue's den (d9) enters it: a win in 1; after it, no move."""
    jfen = "t6/3R3/7/7/7/7/7/7/6T r 0 1"
    session.send(f"position jfen {jfen}")
    info, move = session.go("go depth 3")
    assert move == "d8d9" and info.win == 1 and info.wp is None
    session.send(f"position jfen {jfen} moves d8d9")
    info, move = session.go("go depth 3")
    assert move is None and info == Info(time=0, nodes=0)


BAD_INPUT = [
    ("hello", "info string error unknown command 'hello'"),
    ("position startpos moves a3a4 z9z9", "info string error position: move 2 'z9z9' cannot be played: "),
    ("position startpos moves a3a4 a4a5 a1a2 a5a6", "info string error position: move 2 'a4a5' cannot be played:"),
    ("position jfen 9/7/7/7/7/7/7/7/7 r 0 1", "info string error position: bad JFEN '9/7/7/7/7/7/7/7/7 r 0 1': "),
    ("go depth x", "info string error go: depth 'x' is not a whole number"),
    ("go movetime -5", "info string error go: movetime '-5' is not a whole number"),
    ("setoption name Colour value red", "info string error setoption: unknown option 'Colour' (the options are "),
    ("setoption name Rules value no_such_rules", "info string error setoption: Rules 'no_such_rules': "),
    ("setoption name MoveOverhead value 6000", "info string error setoption: MoveOverhead '6000' is not a whole"),
    ("setoption name moveoverhead value fast", "info string error setoption: MoveOverhead 'fast' is not a whole"),
]


def test_bad_input_is_one_line_and_leaves_the_engine_as_it_was(session: Session) -> None:
    session.send("position startpos moves a3a4")
    for line, reply in BAD_INPUT:
        assert session.send(line) is True
        got = session.read()
        assert got.startswith(reply), (line, got)
        assert session.pending() == [], line
    assert [str(m) for m in session.engine.board.move_stack] == ["a3a4"] and session.engine.overhead_ms == 50
    session.send("setoption name Rules value no_such_rules")
    refusal = session.read()
    assert all(name in refusal for name in rule_set_names()), refusal
    _, move = session.go("go depth 1")  # the position set before the bad lines
    assert move is not None and move[0] in "abcdefg" and move[1] in "6789"


def test_options_set_the_rules_and_the_overhead() -> None:
    s = Session("alphabeta:depth=1")
    s.send("setoption name MoveOverhead value 300")
    s.send("setoption name rules value dog_over_wolf")
    s.send("isready")
    assert s.read() == "readyok"
    assert s.engine.overhead_ms == 300
    assert s.engine.rules == load_rules("dog_over_wolf") and s.engine.board.rules == s.engine.rules
    assert s.engine.player.engine.rules == load_rules("dog_over_wolf")  # type: ignore[attr-defined]


def test_stop_and_isready_are_answered_during_an_infinite_search() -> None:
    """go infinite holds its bestmove until stop; isready and stop are answered meanwhile, and other
    commands are refused."""
    s = Session("alphabeta")
    s.send("position startpos")
    s.send("go infinite")
    s.send("isready")
    assert s.read() == "readyok"
    s.send("position startpos moves a3a4")
    assert s.read() == "info string error position: a search is running (send stop first)"
    s.send("stop")
    info = parse_info(s.read())
    move = parse_bestmove(s.read())
    assert move is not None and Board().is_legal(move) and info.depth is not None and info.depth >= 1
    s.send("position startpos moves a3a4")  # free again
    _, move = s.go("go depth 1")
    assert move is not None


def test_quit_ends_a_running_search() -> None:
    s = Session("alphabeta")
    s.send("go")
    assert s.send("quit") is False
    assert s.read().startswith("info ") and s.read().startswith("bestmove ")


def test_a_player_without_limits_reports_its_time_and_nodes() -> None:
    s = Session("random", seed=3)
    info, move = s.go("go movetime 100")
    assert move is not None and Board().is_legal(move)
    assert info.nodes == 0 and info.time is not None and info.depth is None


def test_alpha_beta_takes_a_limit_per_move_and_a_stop_sent_before_it_starts() -> None:
    player = make_player("alphabeta:depth=6")
    assert isinstance(player, AlphaBetaPlayer) and accepts_limit(player)
    assert not accepts_limit(make_player("random"))
    board = Board()
    player.select_move(board, limit=Limit(depth=2))
    assert player.last_result is not None and player.last_result.depth == 2
    player.select_move(board, limit=Limit(nodes=500))
    assert player.last_result is not None and player.last_result.nodes <= 500 + 64
    stop = StopSignal()
    stop.set()
    move = player.select_move(board, limit=Limit(), stop=stop)
    assert board.is_legal(move) and player.last_result is not None and player.last_result.depth == 1
    with pytest.raises(ValueError, match="search limit depth=0 must be positive"):
        Limit(depth=0)


def test_a_stop_signal_runs_its_hooks_once_and_at_once_when_already_set() -> None:
    stop, calls = StopSignal(), []
    stop.on_set(lambda: calls.append("before"))
    assert calls == [] and not stop.is_set()
    stop.set()
    stop.on_set(lambda: calls.append("after"))
    stop.set()
    assert calls == ["before", "after"] and stop.is_set()


@pytest.mark.slow
def test_a_game_on_a_short_clock_never_runs_the_engines_clock_out() -> None:
    """30 plies, both sides played by the engine on 3 s + 0.1 s a move; the test charges each move the wall
    time from go to bestmove."""
    s = Session("alphabeta")
    clocks = {"w": 3000.0, "b": 3000.0}
    moves: list[str] = []
    s.send("newgame")
    for ply in range(30):
        side = "w" if ply % 2 == 0 else "b"
        s.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
        start = time.perf_counter()
        s.send(f"go wtime {int(clocks['w'])} btime {int(clocks['b'])} winc 100 binc 100")
        s.read()
        move = parse_bestmove(s.read())
        clocks[side] -= (time.perf_counter() - start) * 1000
        assert clocks[side] > 0, (ply, clocks)
        clocks[side] += 100
        if move is None:
            break
        moves.append(move)
    assert len(moves) >= 20


@pytest.mark.slow
def test_the_tree_search_takes_go_limits_stop_and_reports_its_search() -> None:
    """A shipped network with rounds of 8 simulations: nodes 100 is 12 rounds and 4 simulations on one tree
    (past the size of one round's tree), depth 3 three rounds, and go infinite runs until stop."""
    s = Session("checkpoint:path=shipped:campaign-1084,sims=8")
    s.send("position startpos moves a3a4")
    info, move = s.go("go nodes 100")
    assert move is not None and info.sims == 100 and info.depth == 13 and info.pv[0] == move
    assert info.wp is not None and info.cp is not None and info.nodes is not None and info.time is not None
    info, _ = s.go("go depth 3")
    assert info.sims == 24 and info.depth == 3
    s.send("go infinite")
    s.send("isready")
    assert s.read() == "readyok"
    s.send("stop")
    info = parse_info(s.read())
    assert parse_bestmove(s.read()) is not None and info.sims is not None and info.sims % 8 == 0


@pytest.mark.slow
def test_rules_a_network_was_not_trained_on_are_refused_and_the_player_kept(tmp_path: Path) -> None:
    net = mixed_checkpoint(tmp_path / "net.pt", ["default"])
    s = Session(f"checkpoint:path={net},sims=2")
    player = s.engine.player
    s.send("setoption name Rules value dog_over_wolf")
    refusal = s.read()
    assert refusal.startswith("info string error setoption: Rules 'dog_over_wolf': ") and "default" in refusal
    assert s.engine.player is player and s.engine.rules == load_rules("default")
    _, move = s.go("go nodes 2")
    assert move is not None and Board().is_legal(move)


class RecordingPlayer:
    """Plays the first legal move and keeps the limits it was given."""

    name = "recording"

    def __init__(self) -> None:
        self.limits: list[Limit] = []

    def select_move(self, board: Board, limit: Optional[Limit] = None, stop: Optional[StopSignal] = None) -> Move:
        assert limit is not None
        self.limits.append(limit)
        return next(iter(board.legal_moves))

    def reset(self) -> None:
        pass


@pytest.mark.parametrize(
    "commands, limit",
    [
        (["go movetime 500"], Limit(time=0.45)),
        (["go wtime 3050 btime 10 winc 100"], Limit(time=0.2)),
        (["position startpos moves a3a4", "go wtime 10 btime 6050 binc 0 movestogo 2"], Limit(time=3.0)),
        (["setoption name MoveOverhead value 0", "go wtime 3000 btime 3000 winc 100"], Limit(time=0.2)),
        (["go depth 3 nodes 900 movetime 1050"], Limit(time=1.0, depth=3, nodes=900)),
        (["go infinite"], Limit()),
    ],
)
def test_go_gives_the_player_the_limits_of_the_side_to_move(commands: list[str], limit: Limit) -> None:
    s = Session("random")
    player = s.engine.player = RecordingPlayer()  # type: ignore[assignment]
    for line in commands:
        s.send(line)
    s.send("stop")
    assert parse_info(s.read()).time is not None and parse_bestmove(s.read()) is not None
    assert player.limits == [limit]

"""The replay viewer's frames: every position of a recorded game, each move checked by the rules engine."""

from __future__ import annotations

from typing import Any

from agents.arena.records import GameRecord, RecordError
from agents.play.view import end_reason, ply_info, side_name, trapped_squares
from envs.board import Board
from envs.notation import Side
from envs.rules import RuleSet

MAX_REPLAY_PLIES = 4000
"""The longest game the replay viewer accepts (a default-rules game ends within about 2000 plies)."""


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
        end["reason"] = end_reason(board, end["termination"], winner) or "the record gives no reason"
    return {"frames": frames, "plies": plies, "end": end}

"""The alpha-beta check on the checkpoint player's move (`guard=`)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from agents.alphazero.player.guard import AlphaBetaGuard
from agents.alphazero.player.player import CheckpointPlayer
from envs import Board, Move, RuleSet
from envs.encoding import move_to_action
from envs.players import PlayerSpecError, make_player
from tests import support

SHIPPED = support.ROOT / "checkpoints" / "shipped" / "results-only-60.pt"
# Blue's Rat on d2 is next to Red's den: every Red move but the capture d3d2 lets it enter d1.
STOP_DEN_ENTRY = "6e/7/7/7/C6/7/3E3/3r3/7 r 0 1"
# Red's Lion on d8 enters Blue's den d9 at once.
DEN_IN_ONE = "7/3L3/7/7/7/7/7/7/e6 r 0 1"


def _guard(seconds: float = 0.05, margin: int = 300) -> AlphaBetaGuard:
    return AlphaBetaGuard(RuleSet(), seconds, margin, tt_bits=16)


def _referenced(jfen: str, margin: int = 300) -> tuple[Board, AlphaBetaGuard]:
    """The board of `jfen` and a guard that has searched it."""
    board = Board.from_jfen(jfen)
    guard = _guard(margin=margin)
    guard.reference(board)
    return board, guard


def _later() -> float:
    return time.perf_counter() + 5.0


def test_a_move_into_a_forced_loss_is_passed_over_for_alpha_betas_move() -> None:
    board = Board.from_jfen(STOP_DEN_ENTRY)
    guard = _guard()
    assert guard.reference(board).move == Move.from_str("d3d2")
    assert guard.choose(board, [Move.from_str("a5a6")], _later()) == Move.from_str("d3d2")
    assert guard.checks == 1 and guard.vetoes == 1 and guard.last_vetoed


def test_the_searchs_next_choice_is_taken_when_it_holds() -> None:
    board, guard = _referenced(STOP_DEN_ENTRY)
    moves = [Move.from_str("a5a6"), Move.from_str("d3d2"), Move.from_str("a5a4")]
    assert guard.choose(board, moves, _later()) == Move.from_str("d3d2")
    assert guard.vetoes == 1


def test_a_move_that_holds_is_played_unchanged() -> None:
    board, guard = _referenced(STOP_DEN_ENTRY)
    assert guard.choose(board, [Move.from_str("d3d2")], _later()) == Move.from_str("d3d2")
    assert guard.checks == 1 and guard.vetoes == 0 and not guard.last_vetoed
    # From the start every move is close to even: with a wide margin the search's choice always stands.
    start, wide = _referenced(Board().jfen(), margin=100_000)
    assert wide.choose(start, [Move.from_str("a3a4")], _later()) == Move.from_str("a3a4")
    assert wide.vetoes == 0


def test_a_forced_win_is_played_and_a_move_that_wins_is_scored_as_won() -> None:
    board, guard = _referenced(DEN_IN_ONE)
    assert guard.choose(board, [Move.from_str("d8c8")], _later()) == Move.from_str("d8d9")
    assert guard.score_after(board, Move.from_str("d8d9"), 1, _later()) > guard.last_reference.score - 1  # type: ignore[union-attr]
    assert guard.choose(board, [Move.from_str("d8d9")], _later()) == Move.from_str("d8d9")
    assert guard.vetoes == 1


def test_bad_use_is_refused_with_a_line_naming_it() -> None:
    with pytest.raises(ValueError, match="guard=0"):
        AlphaBetaGuard(RuleSet(), 0.0)
    with pytest.raises(ValueError, match="guard_margin=-1"):
        AlphaBetaGuard(RuleSet(), 0.1, -1)
    guard = _guard()
    with pytest.raises(ValueError, match="reference"):
        guard.choose(Board(), [Move.from_str("a3a4")], _later())
    guard.reference(Board())
    with pytest.raises(ValueError, match="candidate"):
        guard.choose(Board(), [], _later())


def _action(uci: str, board: Board) -> int:
    return int(move_to_action(Move.from_str(uci).to_int(), int(board.side_to_move)))


def _forced_to(player: CheckpointPlayer, uci: str, board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the player's network search of `board` choose `uci`, whatever it found."""
    search = player.search.search

    def bad_choice(games, add_noise=False):  # type: ignore[no-untyped-def]
        out = search(games, add_noise=add_noise)
        action = out.action.copy()
        action[0] = _action(uci, board)
        return dataclasses.replace(out, action=action)

    monkeypatch.setattr(player.search, "search", bad_choice)


@pytest.mark.slow
@pytest.mark.parametrize("extra", ["sims=16", "time=0.3,sims=16"])
def test_the_player_with_a_guard_overrules_a_losing_search_choice(extra: str, monkeypatch: pytest.MonkeyPatch) -> None:
    board = Board.from_jfen(STOP_DEN_ENTRY)
    plain = make_player(f"checkpoint:path={SHIPPED},{extra}", seed=0)
    guarded = make_player(f"checkpoint:path={SHIPPED},{extra},guard=0.05", seed=0)
    assert isinstance(plain, CheckpointPlayer) and isinstance(guarded, CheckpointPlayer)
    _forced_to(plain, "a5a6", board, monkeypatch)
    _forced_to(guarded, "a5a6", board, monkeypatch)
    assert str(plain.select_move(board)) == "a5a6"
    assert str(guarded.select_move(board)) == "d3d2"
    assert guarded.guard is not None and guarded.guard.vetoes == 1 and guarded.guard.checks == 1


@pytest.mark.slow
def test_a_guarded_player_keeps_its_tree_on_the_move_it_played(monkeypatch: pytest.MonkeyPatch) -> None:
    board = Board.from_jfen(STOP_DEN_ENTRY)
    player = make_player(f"checkpoint:path={SHIPPED},sims=16,reuse=true,guard=0.05", seed=0)
    assert isinstance(player, CheckpointPlayer)
    _forced_to(player, "a5a6", board, monkeypatch)
    advanced: list[int] = []
    advance = player.search.advance

    def spy(game: int, action: int) -> None:
        advanced.append(action)
        advance(game, action)

    monkeypatch.setattr(player.search, "advance", spy)
    assert str(player.select_move(board)) == "d3d2"
    assert advanced[-1] == _action("d3d2", board)  # the kept tree is the played move's, not the vetoed one's
    player.reset()
    assert player.guard is not None and player.guard.last_reference is None


@pytest.mark.slow
def test_guard_options_are_checked() -> None:
    with pytest.raises(PlayerSpecError, match="guard=0.5 must be less than time=0.5"):
        make_player(f"checkpoint:path={SHIPPED},time=0.5,guard=0.5")
    with pytest.raises(PlayerSpecError, match="guard"):
        make_player(f"checkpoint:path={SHIPPED},guard=-1")
    with pytest.raises(PlayerSpecError, match="guard_margin"):
        make_player(f"checkpoint:path={SHIPPED},guard=0.1,guard_margin=x")
    player = make_player(f"checkpoint:path={SHIPPED},time=0.5,guard=0.1,guard_margin=200")
    assert isinstance(player, CheckpointPlayer) and player.guard is not None
    assert player.guard.seconds == 0.1 and player.guard.margin == 200
    assert make_player(f"checkpoint:path={SHIPPED}").guard is None  # type: ignore[attr-defined]

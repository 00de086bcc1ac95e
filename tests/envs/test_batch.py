"""`GameBatch`'s history room: a batch that starts small grows as its games need and plays the same games."""

from __future__ import annotations

import numpy as np
import pytest

from envs import Board, RuleSet
from envs.batch import GameBatch
from envs.batch_kernels import BatchArrays

RULES = RuleSet()


def random_legal(games: GameBatch, rng: np.random.Generator) -> np.ndarray:
    """A uniformly drawn legal action per game, -1 for a finished one."""
    masks = games.masks()
    return np.array([rng.choice(np.flatnonzero(row)) if row.any() else -1 for row in masks], dtype=np.int64)


def assert_same_games(a: GameBatch, b: GameBatch) -> None:
    np.testing.assert_array_equal(a.state, b.state)
    for i in range(a.n):
        ply = a.plies(i)
        np.testing.assert_array_equal(a.hist[i, :ply], b.hist[i, :ply])
        np.testing.assert_array_equal(a.hashes[i, : ply + 1], b.hashes[i, : ply + 1])
    for name in ("done", "truncated", "term", "winner"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("many", [True, False])
def test_a_small_room_grows_and_plays_the_games_of_a_full_one(many: bool) -> None:
    full, small = GameBatch(4, RULES, max_plies=40), GameBatch(4, RULES, max_plies=40, room=3)
    assert (full.room, small.room) == (40, 3)
    rng = np.random.default_rng(0)
    while not full.done.all():
        actions = random_legal(full, rng)
        for games in (full, small):
            if many:
                games.play_many(actions)
            else:
                for i in np.flatnonzero(actions >= 0).tolist():
                    games.play(i, int(actions[i]))
        assert_same_games(full, small)
    assert small.truncated.any() and small.room >= 40  # the cap still truncates; the history grew to hold it
    assert full.room == 40  # a batch with room for max_plies never grows


def test_never_truncated_without_max_plies() -> None:
    with pytest.raises(ValueError, match="max_plies=None needs room"):
        GameBatch(1, RULES, max_plies=None)
    games = GameBatch(2, RULES, max_plies=None, room=2)
    rng = np.random.default_rng(1)
    for _ in range(30):
        games.play_many(random_legal(games, rng))
    assert not games.done.any() and games.room >= 30  # a capped batch would have stopped at its room
    board = Board()
    for m in games.moves(0):
        board.push(m)
    np.testing.assert_array_equal(board.state, games.state[0])


def test_load_board_grows_the_room_and_arrays_follow() -> None:
    board = Board()
    rng = np.random.default_rng(2)
    for _ in range(12):
        moves = list(board.legal_moves)
        board.push(moves[rng.integers(len(moves))])
    games = GameBatch(2, RULES, max_plies=100, room=4)
    before = games.arrays()
    games.load_board(1, board)
    after = games.arrays()
    assert isinstance(after, BatchArrays) and games.room >= 12
    assert after.hist is games.hist and after.hashes is games.hashes and after.state is games.state
    assert before.hist.shape[1] == 4  # the arrays handed out before are the old ones
    np.testing.assert_array_equal(games.hashes[1, :13], board.hashes[:13])
    assert games.board(1).jfen() == board.jfen()


def test_grow_doubles_at_least_and_keeps_the_games() -> None:
    games = GameBatch(3, RULES, max_plies=None, room=5)
    hist = games.hist
    games.grow(5)
    assert games.hist is hist  # room enough: nothing changes
    games.play(0, int(np.flatnonzero(games.masks(0)[0])[0]))
    games.grow(6)
    assert games.room == 10 and games.hashes.shape == (3, 11)
    np.testing.assert_array_equal(games.hist[:, :5], hist)
    games.grow(25)
    assert games.room == 25
    assert games.moves(0) == [str(games.board(0).peek())]


MIXED = (RULES, RuleSet(no_capture_draw=6), RuleSet(rank_order="dog_over_wolf"), RuleSet(trapped_attacker="keeps_rank"))


@pytest.mark.parametrize("many", [True, False])
def test_each_game_of_a_mixed_batch_plays_its_own_rules(many: bool) -> None:
    """Game i of a batch mixing rule sets is game i of a batch playing its rule set alone, ply by ply:
    masks, observations, outcomes and a Board handed out."""
    n = 8
    mixed = GameBatch(n, RULES, max_plies=60)
    for i in range(n):
        if i % 2:
            mixed.reset(i, rules=MIXED[i % len(MIXED)])
    mixed.reset_many(np.array([4]), mixed.start[4], rules=MIXED[2])
    alone = {r: GameBatch(n, r, max_plies=60) for r in MIXED}
    rules_of = [MIXED[2] if i == 4 else (MIXED[i % len(MIXED)] if i % 2 else RULES) for i in range(n)]
    assert mixed.game_rules == rules_of
    np.testing.assert_array_equal(mixed.game_flags, np.stack([r.flags() for r in rules_of]))
    rng = np.random.default_rng(3)
    while not mixed.done.all():
        masks, obs = mixed.masks(), mixed.observations()
        for i, r in enumerate(rules_of):
            np.testing.assert_array_equal(masks[i], alone[r].masks([i])[0])
            np.testing.assert_array_equal(obs[i], alone[r].observations([i])[0])
            assert (mixed.done[i], mixed.outcome(i)) == (alone[r].done[i], alone[r].outcome(i))
        actions = random_legal(mixed, rng)
        for games in (mixed, *alone.values()):
            if many:
                games.play_many(np.where(games.done, -1, actions))
            else:
                for i in np.flatnonzero((actions >= 0) & ~games.done).tolist():
                    games.play(i, int(actions[i]))
    short = [i for i, r in enumerate(rules_of) if r.no_capture_draw == 6]
    assert short and all(mixed.plies(i) <= 6 for i in short)  # those games end by their own no-capture rule
    assert max(mixed.plies(i) for i in range(n) if i not in short) > 6
    board = mixed.board(3)
    assert board.rules == rules_of[3] != RULES
    np.testing.assert_array_equal(board.state, mixed.state[3])
    with pytest.raises(ValueError, match="game 0 of this GameBatch"):
        mixed.load_board(0, board)  # game 0 plays the default rules

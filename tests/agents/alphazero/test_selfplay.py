"""Self-play driver: data shapes, legality, value signs checked against the rules, records, playout caps."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from agents.alphazero.search import BatchedMCTS, GumbelConfig, MCTSConfig, uniform_evaluator
from agents.alphazero.selfplay.data import SelfPlayData
from agents.alphazero.selfplay.games import (
    SelfPlayConfig,
    SelfPlayConfigError,
    game_seed,
    keeps_draw,
    level_reached,
    play_games,
    policy_rows,
    value_targets,
)
from agents.alphazero.selfplay.rules_mix import RulesMixError, draw_rules, parse_rules_mix
from agents.arena.records import GameRecord, read_jsonl, write_jsonl
from envs import Board, Move, RuleSet
from envs import kernels as K
from envs.batch import GameBatch
from envs.encoding import N_ACTIONS, OBS_SHAPE, encode_observation, legal_action_mask, move_to_action
from tests.support.evaluators import counted, linear_evaluator

RULES = RuleSet(no_capture_draw=40)


def _play(algorithm: str, **kw) -> SelfPlayData:
    settings = SelfPlayConfig(parallel=3, max_plies=60, **kw)
    return play_games(
        uniform_evaluator,
        settings,
        mcts=MCTSConfig(algorithm=algorithm, num_simulations=6),
        rules=RULES,
        num_games=5,
        seed=11,
    )


@pytest.fixture(scope="module", params=("puct", "gumbel"))
def data(request: pytest.FixtureRequest) -> SelfPlayData:
    # Cut games score 0 here, so every value follows from the record (bootstrapping is tested below).
    return _play(request.param, truncated_value="draw")


def test_shapes_and_counts(data: SelfPlayData) -> None:
    n = len(data)
    assert data.obs.shape == (n,) + OBS_SHAPE and data.obs.dtype == np.float32
    assert data.mask.shape == (n, N_ACTIONS) and data.mask.dtype == np.bool_
    assert data.policy.shape == (n, N_ACTIONS) and data.value.shape == (n,) and data.full_search.shape == (n,)
    assert len(data.records) == data.stats.games == 5
    assert n == data.stats.positions == sum(len(r.moves) for r in data.records)
    assert data.stats.red_wins + data.stats.blue_wins + data.stats.draws == 5
    assert data.full_search.all()


def test_masks_legal_and_policy_inside_them(data: SelfPlayData) -> None:
    assert data.mask.any(axis=1).all()
    assert np.all(data.policy[~data.mask] == 0)
    np.testing.assert_allclose(data.policy.sum(axis=1), 1.0, atol=1e-5)


def test_positions_values_and_records_agree_with_the_rules(data: SelfPlayData) -> None:
    """Replay each record with the Board: observations, masks and values must match it."""
    row = 0
    obs = np.zeros(OBS_SHAPE, dtype=np.float32)
    mask = np.zeros(N_ACTIONS, dtype=np.bool_)
    for rec in data.records:
        board = Board.from_jfen(rec.start, rules=RuleSet.from_dict(rec.rules))
        sides = []
        for m in rec.moves:
            encode_observation(board.state, board.hashes, board.flags, obs)
            legal_action_mask(board.state, board.hist, board.flags, mask)
            np.testing.assert_array_equal(data.obs[row + len(sides)], obs)
            np.testing.assert_array_equal(data.mask[row + len(sides)], mask)
            sides.append(int(board.side_to_move))
            board.push(m)
        final = rec.replay()
        assert final.jfen() == board.jfen()
        out = board.outcome()
        if rec.termination == "ply_cap":
            assert out is None and len(rec.moves) == 60 and rec.result == "1/2-1/2"
        else:
            assert out is not None and out.result() == rec.result
            assert out.termination.name.lower() == rec.termination
        values = data.value[row : row + len(sides)]
        for side, v in zip(sides, values):
            if rec.result == "1/2-1/2":
                assert v == 0
            else:
                winner = 0 if rec.result == "1-0" else 1
                assert v == (1.0 if side == winner else -1.0)
        row += len(sides)
    assert row == len(data)


def test_records_round_trip_through_jsonl(data: SelfPlayData, tmp_path) -> None:
    path = tmp_path / "games.jsonl"
    write_jsonl(path, data.records)
    back = list(read_jsonl(path))
    assert [r.moves for r in back] == [r.moves for r in data.records]
    assert all(isinstance(r, GameRecord) and r.red == "selfplay" for r in back)


def test_playout_cap_marks_cheap_moves() -> None:
    d = _play("gumbel", playout_cap_fraction=0.5, cheap_simulations=2)
    assert 0 < d.full_search.sum() < len(d)
    assert d.stats.full_search_positions == int(d.full_search.sum())
    # Cheap searches are still distributions over the legal actions.
    assert np.all(d.policy[~d.mask] == 0)
    np.testing.assert_allclose(d.policy.sum(axis=1), 1.0, atol=1e-5)


def test_same_seed_same_games() -> None:
    a, b = _play("puct"), _play("puct")
    assert [r.moves for r in a.records] == [r.moves for r in b.records]
    np.testing.assert_array_equal(a.policy, b.policy)


def test_games_do_not_depend_on_the_number_played_in_parallel() -> None:
    """Game k draws its noise from its own seed: the lockstep width changes nothing."""
    cfg = MCTSConfig(algorithm="puct", num_simulations=6)
    runs = [
        play_games(
            uniform_evaluator,
            SelfPlayConfig(parallel=p, max_plies=40, playout_cap_fraction=0.3),
            mcts=cfg,
            rules=RULES,
            num_games=4,
            seed=5,
        )
        for p in (1, 4)
    ]
    by_index = [sorted(r.records, key=lambda rec: rec.extra["game_index"]) for r in runs]
    assert [r.moves for r in by_index[0]] == [r.moves for r in by_index[1]]
    assert len({tuple(r.moves) for r in by_index[0]}) == 4  # and the games differ from each other


def test_gamebatch_refuses_illegal_actions() -> None:
    games = GameBatch(1, RULES)
    with pytest.raises(ValueError, match="not legal"):
        games.play(0, 2)  # the Tiger on a1 moving south, off the board


def test_gamebatch_keeps_its_ruleset_and_refuses_bare_flags() -> None:
    rules = RuleSet(no_capture_draw=40, repetition="off")
    games = GameBatch(2, rules)
    assert games.rules is rules and games.board(1).rules is rules
    np.testing.assert_array_equal(games.flags, rules.flags())
    with pytest.raises(ValueError, match="RuleSet"):
        GameBatch(1, rules.flags())  # type: ignore[arg-type]


def test_load_board_copies_a_game_and_board_returns_it() -> None:
    """Board -> slot by copying arrays; slot -> Board equal to a replay; both go on in step."""
    board = Board.from_jfen("7/3E3/6e/7/7/7/7/7/7 b 3 9", rules=RULES)
    for m in ("g7g8", "d8c8", "g8f8", "c8c7"):
        board.push(m)
    games = GameBatch(3, RULES, max_plies=50)
    games.play(1, int(np.flatnonzero(games.masks(1)[0])[0]))
    games.load_board(1, board)
    assert games.start[1] == "7/3E3/6e/7/7/7/7/7/7 b 3 9"
    assert games.moves(1) == [str(m) for m in board.move_stack]
    np.testing.assert_array_equal(games.state[1], board.state)
    np.testing.assert_array_equal(games.hashes[1, : board.ply + 1], board.hashes[: board.ply + 1])
    obs = np.zeros(OBS_SHAPE, dtype=np.float32)
    encode_observation(board.state, board.hashes, board.flags, obs)
    np.testing.assert_array_equal(games.observations(1)[0], obs)
    assert not games.done[1] and games.plies(1) == 4
    back = games.board(1)
    assert back == board and back.move_stack == board.move_stack
    np.testing.assert_array_equal(back.hashes[: back.ply + 1], board.hashes[: board.ply + 1])
    for m in ("f8f9", "c7b7"):  # the batch and the board it handed out go on alike
        action = int(move_to_action(Move.from_str(m).to_int(), games.side_to_move(1)))
        games.play(1, action)
        board.push(m)
        assert games.board(1) == board
    back.push("f8f7")  # the copy handed out is the caller's own
    assert games.board(1) == board
    with pytest.raises(ValueError, match="plies"):
        GameBatch(1, RULES, max_plies=3).load_board(0, board)
    with pytest.raises(ValueError, match="plays"):
        GameBatch(1, RuleSet()).load_board(0, board)


def test_a_loaded_finished_game_is_done() -> None:
    board = Board(rules=RULES)
    for m in ["a3a4", "g7g6", "a4a3", "g6g7"] * 2:
        board.push(m)
    assert board.outcome() is not None
    out = board.outcome()
    assert out is not None and out.termination.name == "REPETITION"
    games = GameBatch(1, RULES)
    games.load_board(0, board)
    assert games.done[0] and not games.truncated[0] and not games.masks(0).any()
    assert games.outcome(0) == (out.termination.value, K.DRAW)


def test_board_replays_a_game_once_then_follows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    pushes = []
    real_push = Board.push
    monkeypatch.setattr(Board, "push", lambda self, move: (pushes.append(str(move)), real_push(self, move))[1])
    games = GameBatch(1, RULES)
    for _ in range(3):
        games.play(0, int(np.flatnonzero(games.masks(0)[0])[0]))
    games.board(0)
    assert len(pushes) == 3  # the first call replays the game so far
    for _ in range(4):
        games.play(0, int(np.flatnonzero(games.masks(0)[0])[0]))
        games.board(0)
    assert len(pushes) == 7  # then one push per move played, however often it is asked for
    games.reset(0)
    assert games.board(0).ply == 0 and len(pushes) == 7


class FirstMove:
    """A scripted opponent: the first legal move in the engine's order (checkable by replaying)."""

    name = "first-move"

    def __init__(self) -> None:
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1

    def select_move(self, board: Board):
        return next(iter(board.legal_moves))


def test_opponent_games_mix_the_players_and_train_only_the_networks_policy() -> None:
    opponent = FirstMove()
    d = play_games(
        uniform_evaluator,
        SelfPlayConfig(parallel=4, max_plies=60, opponent_fraction=0.5),
        mcts=MCTSConfig(num_simulations=6),
        rules=RULES,
        num_games=12,
        seed=3,
        opponents=[opponent],
    )
    theirs = [r for r in d.records if "first-move" in (r.red, r.blue)]
    assert 0 < len(theirs) < 12 and d.stats.opponent_games == len(theirs) == opponent.resets
    assert {r.red for r in theirs} == {"first-move", "selfplay"}  # the network plays both colours
    assert 0.0 <= d.stats.opponent_score <= 1.0
    row = 0
    for rec in d.records:
        board = Board.from_jfen(rec.start, rules=RULES)
        for m in rec.moves:
            mover = rec.red if board.side_to_move == 0 else rec.blue
            if mover == "first-move":
                assert m == str(next(iter(board.legal_moves)))  # the opponent's own move was played
                assert not d.full_search[row] and not d.policy[row].any()  # a value target only
            else:
                assert d.full_search[row] and d.policy[row].sum() == pytest.approx(1.0, abs=1e-5)
            board.push(m)
            row += 1
    assert row == len(d)


def test_opponent_fraction_needs_opponents() -> None:
    with pytest.raises(ValueError, match="opponent"):
        _play("gumbel", opponent_fraction=0.5)


def test_bad_settings_are_refused() -> None:
    for bad in (
        dict(parallel=0),
        dict(max_plies=0),
        dict(cheap_simulations=-1),
        dict(playout_cap_fraction=1.5),
        dict(opponent_fraction=-0.1),
        dict(opponents="random"),
    ):
        with pytest.raises(SelfPlayConfigError, match=next(iter(bad))):
            SelfPlayConfig(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="JFEN"):
        SelfPlayConfig(start_jfen="not a position")
    with pytest.raises(SelfPlayConfigError, match="paralel"):
        SelfPlayConfig.from_dict({"paralel": 4})
    assert SelfPlayConfig.from_dict({"parallel": 4, "name": "default"}).parallel == 4


def test_opponents_come_from_the_settings_specs() -> None:
    """Without player objects, play_games builds the settings' opponent specs (seeded from the call's seed)."""
    settings = SelfPlayConfig(
        parallel=4,
        max_plies=40,
        opponents=["random"],
        opponent_fraction=0.5,
        player_name="net",
        start_jfen="7/3E3/6e/7/7/7/7/7/7 b 0 1",
    )
    a, b = (
        play_games(uniform_evaluator, settings, mcts=MCTSConfig(num_simulations=4), rules=RULES, num_games=6, seed=2)
        for _ in range(2)
    )
    assert [r.moves for r in a.records] == [r.moves for r in b.records]
    assert {r.start for r in a.records} == {settings.start_jfen}
    assert 0 < a.stats.opponent_games < 6
    assert all({r.red, r.blue} <= {"net", "random"} and "net" in (r.red, r.blue) for r in a.records)


def test_value_targets_of_finished_cut_and_blended_games() -> None:
    sides = np.array([K.RED, K.BLUE, K.RED, K.BLUE, K.RED])
    q = np.array([0.2, -0.4, np.nan, 0.6, -0.8])  # root values, side to move's view; NaN: an opponent moved
    plain = SelfPlayConfig(value_q_weight=0.0)  # results alone (the default blends in the root values)
    np.testing.assert_array_equal(value_targets(sides, q, K.BLUE, False, plain), [-1, 1, -1, 1, -1])
    np.testing.assert_array_equal(value_targets(sides, q, K.DRAW, False, plain), [0, 0, 0, 0, 0])
    # Cut: the mean of the last 2 searched root values seen from Red: (-0.6 + -0.8) / 2 = -0.7.
    cut = value_targets(sides, q, K.DRAW, True, SelfPlayConfig(bootstrap_plies=2, value_q_weight=0.0))
    np.testing.assert_allclose(cut, [-0.7, 0.7, -0.7, 0.7, -0.7], rtol=1e-6)
    np.testing.assert_array_equal(
        value_targets(sides, q, K.DRAW, True, SelfPlayConfig(truncated_value="draw", value_q_weight=0.0)),
        [0, 0, 0, 0, 0],
    )
    # The default blends half of each position's root value into its result.
    np.testing.assert_allclose(
        value_targets(sides, q, K.BLUE, False, SelfPlayConfig()), [-0.4, 0.3, -1.0, 0.8, -0.9], rtol=1e-6
    )
    blend = value_targets(sides, q, K.RED, False, SelfPlayConfig(value_q_weight=0.25))
    np.testing.assert_allclose(blend, [0.8, -0.85, 1.0, -0.6, 0.55], rtol=1e-6)  # the opponent's move keeps z
    with pytest.raises(SelfPlayConfigError, match="truncated_value"):
        SelfPlayConfig(truncated_value="zero")
    with pytest.raises(SelfPlayConfigError, match="value_q_weight"):
        SelfPlayConfig(value_q_weight=1.5)


def test_cut_games_bootstrap_their_value_from_the_search() -> None:
    """Games cut at max_plies get the search's verdict, the same size for both sides with opposite signs."""
    settings = SelfPlayConfig(parallel=2, max_plies=12, value_q_weight=0.0)  # the bootstrap alone, unblended
    data = play_games(
        linear_evaluator(value_scale=0.2),
        settings,
        mcts=MCTSConfig(num_simulations=8),
        rules=RULES,
        num_games=3,
        seed=5,
    )
    row = 0
    cut = 0
    for rec in data.records:
        values = data.value[row : row + len(rec.moves)]
        if rec.termination == "ply_cap":
            cut += 1
            assert np.all(np.abs(values) == np.abs(values[0])) and values[0] != 0
            np.testing.assert_allclose(values[::2], -values[1::2][: len(values[::2])], rtol=1e-6)
            assert np.all(np.abs(values) <= 1)
        row += len(rec.moves)
    assert cut >= 1


def test_draw_contempt_ends_the_shuffling_into_repetitions() -> None:
    # Two lone Lions: uniform play shuffles into threefold repetitions; with contempt neither side
    # completes one while another move is open, and the games end by the den or a capture instead.
    terms = {}
    for contempt in (0.0, 0.5):
        settings = SelfPlayConfig(
            parallel=16, max_plies=200, draw_contempt=contempt, start_jfen="6l/7/7/7/7/7/7/7/L6 r 0 1"
        )
        data = play_games(
            uniform_evaluator, settings, mcts=MCTSConfig(num_simulations=16), rules=RuleSet(), num_games=16, seed=1
        )
        terms[contempt] = data.stats.terminations.get("repetition", 0)
    assert terms[0.0] >= 3 and terms[0.5] == 0
    with pytest.raises(SelfPlayConfigError, match="draw_contempt"):
        SelfPlayConfig(draw_contempt=1.5)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_pipelined_games_are_the_games_played_one_at_a_time(algorithm: str) -> None:
    """Each game searches on its own clock: a search that has finished plays its move (and the opponent's,
    or the slot's next game starts) and begins the next while the others go on. With an evaluator that
    batching cannot change, every game of a batch of 4 is the one played alone: moves, targets, values,
    playout-cap draws, kept subtrees, opponent games and refills; the network sees the same leaves in
    fewer calls."""
    mcts = MCTSConfig(algorithm=algorithm, num_simulations=12, gumbel=GumbelConfig(max_actions=4))
    runs = []
    for parallel in (1, 4):
        sizes: list[int] = []
        settings = SelfPlayConfig(
            parallel=parallel, max_plies=40, playout_cap_fraction=0.3, cheap_simulations=3, opponent_fraction=0.3
        )
        data = play_games(
            counted(linear_evaluator(3), sizes),
            settings,
            mcts=mcts,
            rules=RULES,
            num_games=7,
            seed=9,
            opponents=[FirstMove()],
        )
        runs.append((data, sizes))
    (alone, one), (together, four) = runs
    assert [r.moves for r in alone.records] == [r.moves for r in together.records]
    assert [r.extra["game_index"] for r in together.records] == list(range(7))
    for field in ("obs", "policy", "value", "full_search"):
        np.testing.assert_array_equal(getattr(alone, field), getattr(together, field))
    assert 0 < together.stats.opponent_games < 7 and 0 < (~together.full_search).sum() < len(together)
    assert together.stats.simulations == alone.stats.simulations
    assert sum(four) == sum(one) and len(four) < 0.5 * len(one)


def test_a_start_position_whose_counters_would_pass_their_limit_is_refused() -> None:
    with pytest.raises(SelfPlayConfigError, match="would pass 30000"):
        SelfPlayConfig(start_jfen="l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 29900 1", max_plies=200)
    SelfPlayConfig(start_jfen="l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 29800 1", max_plies=200)


def _mixed(tmp_path, parallel: int, algorithm: str = "gumbel") -> tuple[list, SelfPlayData]:
    """Eight games drawn from a mix of the default rules, keeps_rank and a yaml file's short no-capture limit."""
    short = tmp_path / "short.yaml"
    short.write_text("no_capture_draw: 8\n")
    mix = parse_rules_mix(["default", "keeps_rank:2", f"{short}:1.5"])
    data = play_games(
        uniform_evaluator,
        SelfPlayConfig(parallel=parallel, max_plies=40),
        mcts=MCTSConfig(algorithm=algorithm, num_simulations=6),
        rules=RuleSet(),
        num_games=8,
        seed=3,
        rules_mix=mix,
    )
    return mix, data


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_mixed_games_replay_move_for_move_under_their_own_rules(tmp_path, algorithm: str) -> None:
    """Each game of a mixed call plays the rule set its own seed draws, and its record (through games.jsonl)
    replays move for move under that rule set: the same observations, masks and end."""
    mix, data = _mixed(tmp_path, 3, algorithm)
    path = tmp_path / "games.jsonl"
    write_jsonl(path, data.records)
    records = list(read_jsonl(path))
    drawn = [draw_rules(mix, game_seed(3, k)) for k in range(8)]
    assert [RuleSet.from_dict(r.rules) for r in records] == [e.rules for e in drawn]
    assert [r.extra["rules_name"] for r in records] == [e.name for e in drawn]
    assert {e.name for e in drawn} == {"default", "keeps_rank", "short"}
    row = 0
    obs = np.zeros(OBS_SHAPE, dtype=np.float32)
    mask = np.zeros(N_ACTIONS, dtype=np.bool_)
    for rec in records:
        board = Board.from_jfen(rec.start, rules=RuleSet.from_dict(rec.rules))
        for p, m in enumerate(rec.moves):
            encode_observation(board.state, board.hashes, board.flags, obs)
            legal_action_mask(board.state, board.hist, board.flags, mask)
            np.testing.assert_array_equal(data.obs[row + p], obs)
            np.testing.assert_array_equal(data.mask[row + p], mask)
            board.push(m)
        assert rec.replay().jfen() == board.jfen()
        out = board.outcome()
        if rec.termination == "ply_cap":
            assert out is None and len(rec.moves) == 40
        else:
            assert out is not None and (out.result(), out.termination.name.lower()) == (rec.result, rec.termination)
        row += len(rec.moves)
    assert row == len(data)
    short = [r for r in records if r.extra["rules_name"] == "short"]
    assert short and all(len(r.moves) <= 8 for r in short)  # no game outlives its own no-capture limit
    assert any(r.termination == "no_capture_limit" and len(r.moves) == 8 for r in short)


def test_a_mixed_games_rules_do_not_depend_on_its_slot(tmp_path) -> None:
    """Game k draws its rule set from its own seed: the number of games played at once changes nothing."""
    _, one = _mixed(tmp_path, 1)
    _, four = _mixed(tmp_path, 4)
    assert [(r.rules, r.moves) for r in one.records] == [(r.rules, r.moves) for r in four.records]


def test_a_mix_refuses_the_tables_and_opponents() -> None:
    mix = parse_rules_mix(["default", "keeps_rank"])
    for settings, mcts in (
        (SelfPlayConfig(tablebase_adjudicate=True), MCTSConfig()),
        (SelfPlayConfig(tablebase_rescore=True), MCTSConfig()),
        (SelfPlayConfig(opponents=["random"], opponent_fraction=0.5), MCTSConfig()),
        (SelfPlayConfig(), MCTSConfig(tablebase=True)),
    ):
        with pytest.raises(RulesMixError, match="cannot be used with train.rules_mix"):
            play_games(uniform_evaluator, settings, mcts=mcts, rules=RuleSet(), num_games=1, seed=0, rules_mix=mix)


def test_a_draw_scores_the_material_balance_with_draw_score() -> None:
    sides = np.array([K.RED, K.BLUE, K.RED], dtype=np.int64)
    q = np.full(3, np.nan, dtype=np.float32)
    scored = SelfPlayConfig(draw_score=0.5, value_q_weight=0.0)
    # Red two pieces up at the end: Red's positions +0.5 * 2/8, Blue's the negation.
    np.testing.assert_allclose(value_targets(sides, q, K.DRAW, False, scored, 0.25), [0.125, -0.125, 0.125])
    np.testing.assert_allclose(
        value_targets(sides, q, K.DRAW, True, SelfPlayConfig(draw_score=0.5, truncated_value="draw"), -0.25),
        [-0.125, 0.125, -0.125],
    )
    # A decisive game keeps its result; without draw_score a draw stays 0.
    np.testing.assert_array_equal(value_targets(sides, q, K.BLUE, False, scored, 0.25), [-1, 1, -1])
    np.testing.assert_array_equal(value_targets(sides, q, K.DRAW, False, SelfPlayConfig(), 0.25), [0, 0, 0])
    with pytest.raises(SelfPlayConfigError, match="draw_score"):
        SelfPlayConfig(draw_score=-0.1)


def test_drawn_self_play_games_with_a_lead_train_towards_the_side_ahead() -> None:
    # Red's Lion and Rat against Blue's lone Lion: the games that repeat end a piece up for Red, so with
    # draw_score every Red position of a drawn game gets a positive target, every Blue one the negation.
    start = "6l/7/7/7/7/7/7/7/L5R r 0 1"
    settings = SelfPlayConfig(parallel=8, max_plies=60, draw_score=0.8, value_q_weight=0.0, truncated_value="draw")
    data = play_games(
        uniform_evaluator,
        dataclasses.replace(settings, start_jfen=start),
        mcts=MCTSConfig(num_simulations=8),
        rules=RuleSet(),
        num_games=8,
        seed=3,
    )
    row, drawn, ahead = 0, 0, 0
    for rec in data.records:
        values = data.value[row : row + len(rec.moves)]
        row += len(rec.moves)
        if rec.result != "1/2-1/2":
            continue
        drawn += 1
        final = Board.from_jfen(start, RuleSet())
        for m in rec.moves:
            final.push(m)
        lead = len(final.pieces(K.RED)) - len(final.pieces(K.BLUE))
        ahead += lead != 0
        np.testing.assert_allclose(values[0::2], 0.8 * lead / 8, rtol=1e-6)
        np.testing.assert_allclose(values[1::2], -0.8 * lead / 8, rtol=1e-6)
    assert drawn >= 1 and ahead >= 1


def test_random_plies_open_each_game_with_its_own_random_moves() -> None:
    # Games with random_plies differ from the searched games in their first moves, are the same for the same
    # seed in any number of parallel slots, and keep the search's later play legal and recorded.
    def openings(parallel: int, random_plies: int) -> list[tuple[str, ...]]:
        data = play_games(
            uniform_evaluator,
            SelfPlayConfig(parallel=parallel, max_plies=30, random_plies=random_plies),
            mcts=MCTSConfig(num_simulations=8),
            rules=RULES,
            num_games=6,
            seed=4,
        )
        assert len(data.value) == sum(len(r.moves) for r in data.records)
        for rec in data.records:  # every game replays under the rules
            board = Board.from_jfen(rec.start, RULES)
            for m in rec.moves:
                board.push(m)
        return [tuple(r.moves[:6]) for r in data.records]

    searched, random6 = openings(6, 0), openings(6, 6)
    assert random6 == openings(2, 6)
    assert sum(a != b for a, b in zip(searched, random6)) >= 5
    assert len(set(random6)) == 6
    with pytest.raises(SelfPlayConfigError, match="random_plies"):
        SelfPlayConfig(random_plies=-1)


def test_contempt_on_one_side_searches_that_side_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # contempt_sides=one: each game's contempt colour (in its record) searches with draws at -c, the other at 0.
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    begin = BatchedMCTS.begin

    def spy(self, games, idx, **kw):
        draws = np.broadcast_to(np.asarray(kw["draw_value"], dtype=np.float64), (games.n,))
        seen.append((games.state[idx, K.S_SIDE].copy(), draws[idx].copy(), np.asarray(idx).copy()))
        return begin(self, games, idx, **kw)

    monkeypatch.setattr(BatchedMCTS, "begin", spy)
    settings = SelfPlayConfig(
        parallel=8, max_plies=40, draw_contempt=0.4, contempt_sides="one", start_jfen="6l/7/7/7/7/7/7/7/L6 r 0 1"
    )
    data = play_games(
        uniform_evaluator, settings, mcts=MCTSConfig(num_simulations=8), rules=RuleSet(), num_games=8, seed=3
    )
    sides = [rec.extra["contempt_side"] for rec in data.records]
    assert set(sides) == {"red", "blue"}
    # Every game has a slot of its own (parallel = num_games): slot i plays game i.
    contempt = {i: (K.RED if sides[i] == "red" else K.BLUE) for i in range(8)}
    held = free = 0
    for to_move, draws, idx in seen:
        for side, value, slot in zip(to_move, draws, idx):
            mine = side == contempt[int(slot)]
            assert value == pytest.approx(-0.4 if mine else 0.0)
            held, free = held + mine, free + (not mine)
    assert held > 0 and free > 0
    with pytest.raises(SelfPlayConfigError, match="contempt_sides"):
        SelfPlayConfig(contempt_sides="neither")


def test_draw_keep_leaves_drawn_games_out_of_the_rows_only() -> None:
    # draw_keep: the same games are played and recorded; a drawn game's positions are all kept or all left
    # out, by a coin from its seed; decisive games always train; positions still count those left out.
    def run(keep: float):
        settings = SelfPlayConfig(parallel=16, max_plies=30, draw_keep=keep, start_jfen="6l/7/7/3e3/7/7/7/7/L6 r 0 1")
        return play_games(
            uniform_evaluator, settings, mcts=MCTSConfig(num_simulations=8), rules=RuleSet(), num_games=16, seed=5
        )

    full, half, none = run(1.0), run(0.5), run(0.0)
    assert [r.moves for r in half.records] == [r.moves for r in full.records] == [r.moves for r in none.records]
    drawn = [r.result == "1/2-1/2" for r in full.records]
    assert 0 < sum(drawn) < len(drawn)
    plies = [int(r.extra["plies"]) for r in full.records]
    starts = np.concatenate([[0], np.cumsum(plies)])
    kept = [not d or keeps_draw(r.seed, 0.5) for d, r in zip(drawn, full.records)]
    assert 0 < sum(k for k, d in zip(kept, drawn) if d) < sum(drawn)  # the coin keeps some draws, not all
    for data, keeps in ((half, kept), (none, [not d for d in drawn])):
        rows = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in range(16) if keeps[i]])
        np.testing.assert_array_equal(data.value, full.value[rows])
        np.testing.assert_array_equal(data.obs, full.obs[rows])
        np.testing.assert_array_equal(data.policy, full.policy[rows])
        assert data.stats.positions == full.stats.positions == len(full)
        assert data.stats.left_out == len(full) - len(rows) > 0
        assert data.stats.draws == full.stats.draws
    assert full.stats.left_out == 0
    with pytest.raises(SelfPlayConfigError, match="draw_keep"):
        SelfPlayConfig(draw_keep=1.5)


def test_cut_keep_decides_for_the_games_cut_at_max_plies_and_draw_keep_for_the_rules_draws() -> None:
    # cut_keep=1 with draw_keep=0: the games cut at the ply cap train whole, the draws by the rules stay out;
    # cut_keep=0 with draw_keep=1 the other way round; unset, draw_keep decides for both, as before.
    def run(**keep: float):
        settings = SelfPlayConfig(parallel=16, max_plies=30, start_jfen="6l/7/7/3e3/7/7/7/7/L6 r 0 1", **keep)
        return play_games(
            uniform_evaluator, settings, mcts=MCTSConfig(num_simulations=8), rules=RuleSet(), num_games=16, seed=5
        )

    every = run()
    terminations = [str(r.termination) for r in every.records]
    cut = [t == "ply_cap" for t in terminations]
    ruled = [r.result == "1/2-1/2" and not c for r, c in zip(every.records, cut)]
    assert any(cut) and any(ruled), terminations
    starts = np.concatenate([[0], np.cumsum([int(r.extra["plies"]) for r in every.records])])

    def rows(keeps: list[bool]) -> np.ndarray:
        return np.concatenate([np.arange(starts[i], starts[i + 1]) for i in range(16) if keeps[i]])

    for keep, expected in (
        (dict(draw_keep=0.0, cut_keep=1.0), [not r for r in ruled]),
        (dict(draw_keep=1.0, cut_keep=0.0), [not c for c in cut]),
        (dict(draw_keep=0.0), [not r and not c for r, c in zip(ruled, cut)]),
    ):
        data = run(**keep)
        assert [r.moves for r in data.records] == [r.moves for r in every.records]
        np.testing.assert_array_equal(data.obs, every.obs[rows(expected)], err_msg=str(keep))
        np.testing.assert_array_equal(data.value, every.value[rows(expected)], err_msg=str(keep))
        assert data.stats.left_out == len(every) - len(rows(expected))
    with pytest.raises(SelfPlayConfigError, match="cut_keep"):
        SelfPlayConfig(cut_keep=1.5)


def test_level_plies_ends_a_game_once_its_last_searched_root_values_lie_near_zero() -> None:
    # The same games with and without level_plies: a game ends at the first ply from level_plies on where its
    # last level_window root values (the value targets here: value_q_weight=1, nothing cut bootstrapped) lie
    # within level_margin of 0, else as before; a level game is cut (a draw, termination "level", cut_keep
    # decides whether it trains).
    evaluator = linear_evaluator(0, 0.03)
    base = SelfPlayConfig(
        parallel=16, max_plies=40, value_q_weight=1.0, truncated_value="draw", start_jfen="6l/7/7/3e3/7/7/7/7/L6 r 0 1"
    )
    level = dataclasses.replace(base, level_plies=6, level_window=4, level_margin=0.03)

    def run(settings: SelfPlayConfig) -> SelfPlayData:
        return play_games(
            evaluator, settings, mcts=MCTSConfig(num_simulations=8), rules=RuleSet(), num_games=16, seed=5
        )

    off, on = run(base), run(level)
    starts = np.concatenate([[0], np.cumsum([len(r.moves) for r in off.records])])
    rows, ended = [], 0
    for i, (before, after) in enumerate(zip(off.records, on.records)):
        values = off.value[starts[i] : starts[i + 1]]
        cut = next((p for p in range(6, len(values)) if level_reached(values, p, level)), None)
        if cut is None:
            assert after.moves == before.moves and after.termination == before.termination
            rows.append(np.arange(starts[i], starts[i + 1]))
            continue
        assert np.all(np.abs(values[cut - 4 : cut]) <= 0.03)
        assert after.moves == before.moves[:cut], i
        assert (after.termination, after.result) == ("level", "1/2-1/2")
        assert GameRecord.from_dict(json.loads(after.to_json())).termination == "level"
        rows.append(np.arange(starts[i], starts[i] + cut))
        ended += 1
    others = {r.termination for r in on.records} - {"level"}
    assert 0 < ended < 16 and {"den", "repetition", "ply_cap"} <= others, [r.termination for r in on.records]
    np.testing.assert_array_equal(on.obs, off.obs[np.concatenate(rows)])
    np.testing.assert_array_equal(on.value, off.value[np.concatenate(rows)])
    assert on.stats.truncated == ended + [r.termination for r in on.records].count("ply_cap")
    assert on.stats.terminations["level"] == ended
    dropped = run(dataclasses.replace(level, cut_keep=0.0))
    assert len(dropped) == len(on) - sum(len(r.moves) for r in on.records if r.termination in ("level", "ply_cap"))
    for bad in (dict(level_plies=-1), dict(level_window=0), dict(level_margin=1.5)):
        with pytest.raises(SelfPlayConfigError, match=next(iter(bad))):
            SelfPlayConfig(**bad)


def test_draw_policy_keeps_fully_searched_positions_of_left_out_draws_for_the_policy_alone() -> None:
    # draw_policy: of each draw that draw_keep leaves out, the fully searched positions a coin from the game's
    # seed picks come back as rows without a value target; decisive games' rows are untouched.
    def run(policy: float):
        settings = SelfPlayConfig(
            parallel=16,
            max_plies=30,
            draw_keep=0.0,
            draw_policy=policy,
            playout_cap_fraction=0.5,
            start_jfen="6l/7/7/3e3/7/7/7/7/L6 r 0 1",
        )
        return play_games(
            uniform_evaluator, settings, mcts=MCTSConfig(num_simulations=8), rules=RuleSet(), num_games=16, seed=5
        )

    off, half, all_ = run(0.0), run(0.5), run(1.0)
    reference = play_games(  # every position of every game, to cut the expected rows from
        uniform_evaluator,
        SelfPlayConfig(parallel=16, max_plies=30, playout_cap_fraction=0.5, start_jfen="6l/7/7/3e3/7/7/7/7/L6 r 0 1"),
        mcts=MCTSConfig(num_simulations=8),
        rules=RuleSet(),
        num_games=16,
        seed=5,
    )
    assert [r.moves for r in all_.records] == [r.moves for r in reference.records]
    drawn = [r.result == "1/2-1/2" for r in reference.records]
    assert 0 < sum(drawn) < len(drawn)
    plies = [int(r.extra["plies"]) for r in reference.records]
    starts = np.concatenate([[0], np.cumsum(plies)])
    decisive = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in range(16) if not drawn[i]])
    np.testing.assert_array_equal(off.obs, reference.obs[decisive])  # 0: draw_keep alone, as before
    assert off.trains_value.all() and off.stats.policy_only == 0
    for data, fraction in ((half, 0.5), (all_, 1.0)):
        rows, value_rows = [], []
        for i, record in enumerate(reference.records):
            game = np.arange(starts[i], starts[i + 1])
            if not drawn[i]:
                rows.append(game)
                value_rows.append(np.ones(len(game), np.bool_))
                continue
            picked = game[policy_rows(record.seed, reference.full_search[game], fraction)]
            rows.append(picked)
            value_rows.append(np.zeros(len(picked), np.bool_))
        taken = np.concatenate(rows)
        np.testing.assert_array_equal(data.obs, reference.obs[taken])
        np.testing.assert_array_equal(data.policy, reference.policy[taken])
        np.testing.assert_array_equal(data.trains_value, np.concatenate(value_rows))
        assert data.full_search[~data.trains_value].all()  # a cheap search has no policy target to give
        assert data.stats.policy_only == int((~data.trains_value).sum()) > 0
        assert data.stats.left_out == len(reference) - len(taken)
        assert data.stats.positions == len(reference)
        np.testing.assert_array_equal(data.value[data.trains_value], off.value)
    assert half.stats.policy_only < all_.stats.policy_only
    # every fully searched position of the left-out draws, and no other
    drawn_rows = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in range(16) if drawn[i]])
    assert all_.stats.policy_only == int(reference.full_search[drawn_rows].sum()) < len(drawn_rows)
    with pytest.raises(SelfPlayConfigError, match="draw_policy"):
        SelfPlayConfig(draw_policy=-0.1)

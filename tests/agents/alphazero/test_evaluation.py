"""Evaluation matches: colours alternate, openings are shared by pairs, scores add up."""

import math
from pathlib import Path

import pytest
import torch

from agents.alphazero.search import MCTSConfig, uniform_evaluator
from agents.alphazero.training.config import EvalConfig
from agents.alphazero.training.ladder import MatchResult, Searcher, evaluate_ladder, play_match, spec_tag
from agents.arena.ratings import elo_from_score
from agents.arena.tournament import random_openings
from envs import Board, RuleSet
from envs.players import RandomPlayer
from envs.tablebase import ROOT_ENV, Tablebase


def test_search_side_beats_random_more_often_than_not_and_counts_add_up() -> None:
    me = Searcher(uniform_evaluator, MCTSConfig(algorithm="gumbel", num_simulations=32), 32)
    r = play_match(me, RandomPlayer(seed=1), games=6, rules=RuleSet(), seed=2, max_plies=120, opening_plies=2)
    assert r.games == 6 and r.wins + r.draws + r.losses == 6
    assert r.plies > 0
    assert r.losses <= 1  # a 32-simulation search sees dens and captures a random mover walks into


def test_openings_are_legal_and_seeded() -> None:
    a = [o.board(RuleSet()).jfen() for o in random_openings(4, 3, 5, RuleSet())]
    b = [o.board(RuleSet()).jfen() for o in random_openings(4, 3, 5, RuleSet())]
    assert a == b
    for jfen in a:
        board = Board(jfen)
        assert board.outcome() is None and board.side_to_move == 1  # 3 plies: Blue to move


def test_elo_and_tags() -> None:
    assert elo_from_score(0.5, 10) == 0.0
    assert elo_from_score(0.75, 100) == pytest.approx(400 * math.log10(3))
    assert math.isfinite(elo_from_score(1.0, 10))
    assert elo_from_score(1.0, 10) == pytest.approx(-elo_from_score(0.0, 10))
    assert elo_from_score(1.0, 10) == pytest.approx(400 * math.log10(19))  # a 10-game sweep counts as a 0.95 score
    assert spec_tag("alphabeta:depth=2") == "alphabeta_depth2"
    assert MatchResult(wins=1, draws=2, losses=1).score == 0.5


def test_the_ladder_measures_the_value_head_on_the_tables_when_they_are_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ec = EvalConfig(opponents=[], vs_previous=False, tablebase_positions=40)

    def ladder() -> dict[str, float]:
        return evaluate_ladder(
            uniform_evaluator,
            torch.nn.Identity(),
            config=ec,
            mcts=MCTSConfig(),
            rules=RuleSet(),
            seed=1,
            iteration=3,
            device=torch.device("cpu"),
            precision="fp32",
            elo=0.0,
        )

    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    assert ladder() == {}
    Tablebase.build(RuleSet(), pieces=2).save()
    out = ladder()
    assert set(out) == {f"tablebase_{k}{n}" for k in ("accuracy", "sign", "mae") for n in ("", "_2")}
    assert out["tablebase_sign"] == 0.0 and 0.0 < out["tablebase_mae"] < 1.0  # the uniform evaluator's zeros
    ec.tablebase_positions = 0
    assert ladder() == {}
    with pytest.raises(TypeError):  # the settings by name only: ten in a row were easy to swap
        evaluate_ladder(  # type: ignore[misc]
            uniform_evaluator, torch.nn.Identity(), ec, MCTSConfig(), RuleSet(), 1, 3, torch.device("cpu"), "fp32", 0.0
        )

"""The rating fit recovers known strengths, counts draws, and its tests say what they should."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents.arena.ratings import (
    GameResult,
    RatingError,
    elo_from_score,
    expected_score,
    fit_ratings,
    head_to_head,
    pair_stats,
    sign_test_p_value,
    sprt,
)

TRUE = {"a": 0.0, "b": 150.0, "c": 300.0, "d": 500.0}


def synthetic(games_per_pair: int, draw_rate: float, seed: int) -> list[GameResult]:
    """Round robin between players of known Elo; draws take `draw_rate` of the games, keeping E."""
    rng = np.random.default_rng(seed)
    names = list(TRUE)
    out = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            e = expected_score(TRUE[names[i]] - TRUE[names[j]])
            d = min(draw_rate, 2 * min(e, 1 - e))
            w = e - d / 2
            for _ in range(games_per_pair):
                u = rng.random()
                out.append(GameResult(names[i], names[j], 1.0 if u < w else (0.5 if u < w + d else 0.0)))
    return out


@pytest.mark.parametrize("draw_rate", [0.0, 0.4])
def test_fit_recovers_known_gaps_within_intervals(draw_rate: float) -> None:
    table = fit_ratings(synthetic(300, draw_rate, seed=11), anchor="a", prior_games=0)
    assert [r.name for r in table.ratings] == ["d", "c", "b", "a"]
    for r in table.ratings:
        if r.name == "a":
            assert r.elo == 0 and r.ci_low == r.ci_high == 0
            continue
        assert r.ci_low < TRUE[r.name] < r.ci_high, (r, TRUE[r.name])
        assert r.ci_high - r.ci_low < 120


def test_draws_count_as_half_points_and_narrow_the_intervals() -> None:
    # 10 wins and 10 draws: score 0.75, about +191 Elo, like 15 wins and 5 losses.
    with_draws = [GameResult("x", "y", 1.0)] * 10 + [GameResult("x", "y", 0.5)] * 10
    decisive = [GameResult("x", "y", 1.0)] * 15 + [GameResult("x", "y", 0.0)] * 5
    t1 = fit_ratings(with_draws, anchor="y", prior_games=0)
    t2 = fit_ratings(decisive, anchor="y", prior_games=0)
    assert t1.elo("x") == pytest.approx(elo_from_score(0.75), abs=0.01)
    assert t2.elo("x") == pytest.approx(t1.elo("x"), abs=0.01)
    width1 = t1.ratings[0].ci_high - t1.ratings[0].ci_low
    width2 = t2.ratings[0].ci_high - t2.ratings[0].ci_low
    assert width1 < width2  # draws are less noisy than coin flips
    only_draws = fit_ratings([GameResult("x", "y", 0.5)] * 8, anchor="x")
    assert only_draws.elo("y") == pytest.approx(0.0, abs=1e-9)


def test_all_wins_stay_finite_with_the_prior_and_error_without() -> None:
    sweep = [GameResult("strong", "weak", 1.0)] * 20
    table = fit_ratings(sweep, anchor="weak", prior_games=1)
    assert 400 < table.elo("strong") < 1500
    assert table.ratings[0].ci_low > 0
    with pytest.raises(RatingError, match="prior_games"):
        fit_ratings(sweep, anchor="weak", prior_games=0)


def test_global_fit_uses_indirect_games() -> None:
    # a and c never met; c's rating comes through b.
    games = [GameResult("a", "b", 1.0)] * 30 + [GameResult("a", "b", 0.0)] * 10
    games += [GameResult("b", "c", 1.0)] * 30 + [GameResult("b", "c", 0.0)] * 10
    table = fit_ratings(games, anchor="a", prior_games=0)
    assert table.elo("b") == pytest.approx(-elo_from_score(0.75), abs=0.5)
    assert table.elo("c") == pytest.approx(-2 * elo_from_score(0.75), abs=0.5)
    d, lo, hi = table.difference("a", "c")
    assert lo < d < hi and d > 0


def test_bad_results_are_named() -> None:
    with pytest.raises(RatingError, match="'z'"):
        fit_ratings([GameResult("x", "y", 1.0)], players=["x", "y"], anchor="z")
    with pytest.raises(RatingError, match="links"):
        fit_ratings([GameResult("x", "y", 1.0), GameResult("u", "v", 0.0)], anchor="x")
    with pytest.raises(RatingError, match="0.7"):
        fit_ratings([GameResult("x", "y", 0.7)])


def test_pair_statistics_and_tests() -> None:
    p = pair_stats("A", "B", 60, 20, 20)
    assert p.games == 100 and p.score == pytest.approx(0.7)
    assert p.elo_low < p.elo_diff < p.elo_high and p.elo_diff == pytest.approx(elo_from_score(0.7))
    assert p.los > 0.99 and p.p_value < 1e-4 and p.sprt == "H1"
    even = pair_stats("A", "B", 20, 60, 20)
    assert even.los == pytest.approx(0.5) and even.p_value > 0.4 and even.sprt != "H1"
    assert sign_test_p_value(3, 0) == pytest.approx(0.125)
    assert sign_test_p_value(0, 0) == 1.0
    assert sprt(10, 80, 30)[1] == "H0"
    h2h = head_to_head([GameResult("A", "B", 1.0), GameResult("B", "A", 0.5), GameResult("B", "A", 1.0)])
    assert len(h2h) == 1 and (h2h[0].wins, h2h[0].draws, h2h[0].losses) == (1, 1, 1)
    assert math.isclose(expected_score(0.0), 0.5)


def test_sprt_gives_no_verdict_from_fewer_games_than_the_likelihood_supports() -> None:
    """One game, or a short run of one result, is no verdict; the LLR is the trinomial's, checked by hand."""
    s0, s1 = expected_score(0.0), expected_score(30.0)
    # One win: the best trinomial of score s is "win with probability s", so the LLR is log(s1 / s0).
    assert sprt(1, 0, 0) == (pytest.approx(math.log(s1 / s0)), "continue")
    # Draws only: score s is best met by draws with probability 2 (1 - s) (for s >= 1/2).
    assert sprt(0, 5, 0) == (pytest.approx(5 * math.log(2 * (1 - s1))), "continue")
    # The README's 0-0-4: four losses are 4 log((1 - s1) / (1 - s0)), far from a verdict.
    assert sprt(0, 0, 4) == (pytest.approx(4 * math.log((1 - s1) / (1 - s0))), "continue")
    # A clean sweep decides once its likelihood ratio passes Wald's bound log(0.95 / 0.05).
    needed = math.ceil(math.log(0.95 / 0.05) / math.log(s1 / s0))
    assert sprt(needed - 1, 0, 0)[1] == "continue" and sprt(needed, 0, 0)[1] == "H1"
    needed = math.ceil(math.log(0.05 / 0.95) / math.log((1 - s1) / (1 - s0)))
    assert sprt(0, 0, needed - 1)[1] == "continue" and sprt(0, 0, needed)[1] == "H0"


def test_sprt_llr_is_the_trinomial_likelihood_ratio_maximised_under_each_hypothesis() -> None:
    """Against a plain grid search over every trinomial with the hypothesis' expected score."""

    def best_log_likelihood(wins: int, draws: int, losses: int, score: float) -> float:
        draw_p = np.linspace(0.0, min(2 * score, 2 * (1 - score)), 200001)
        win_p, loss_p = score - draw_p / 2, 1 - score - draw_p / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = [
                n * np.log(p) if n else np.zeros_like(p) for n, p in ((wins, win_p), (draws, draw_p), (losses, loss_p))
            ]
        return float(np.max(sum(terms)))

    s0, s1 = expected_score(0.0), expected_score(30.0)
    for wdl in [(3, 2, 1), (1, 1, 1), (0, 3, 2), (60, 20, 20), (10, 80, 30), (7, 0, 2)]:
        expected = best_log_likelihood(*wdl, s1) - best_log_likelihood(*wdl, s0)
        assert sprt(*wdl)[0] == pytest.approx(expected, abs=1e-6), wdl


def test_the_error_rates_reach_the_pairings_sprt() -> None:
    # 80-40-80 is level: its LLR (twice that of 40-20-40, -0.465) is -0.93, inside the bounds +-log(19) = +-2.94
    # of alpha = beta = 0.05 but past H0's bound log(3/7) = -0.85 of alpha = beta = 0.3.
    llr, verdict = sprt(80, 40, 80)
    assert llr == pytest.approx(2 * sprt(40, 20, 40)[0]) and verdict == "continue"
    assert math.log(0.05 / 0.95) < llr < math.log(0.3 / 0.7)
    assert pair_stats("A", "B", 80, 40, 80, alpha=0.3, beta=0.3).sprt == "H0"
    games = [GameResult("A", "B", 1.0)] * 80 + [GameResult("A", "B", 0.5)] * 40 + [GameResult("A", "B", 0.0)] * 80
    assert [p.sprt for p in head_to_head(games)] == ["continue"]
    assert [p.sprt for p in head_to_head(games, alpha=0.3, beta=0.3)] == ["H0"]

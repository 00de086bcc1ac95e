"""Colour-swapped pairs scored as pairs (the pentanomial model): counts, score, Elo, nElo and the GSPRT."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.arena.errors import TournamentError
from agents.arena.openings import Opening
from agents.arena.ratings import (
    SPRT_MIN_PAIRS,
    RatingError,
    elo_from_score,
    expected_score,
    pair_class,
    pentanomial_sprt,
    pentanomial_stats,
    sprt,
)
from agents.arena.records import GameRecord
from agents.arena.reporting import summarize
from agents.arena.settings import TournamentSettings
from agents.arena.tournament import GameTask, SprtStop, run_tournament, schedule

ELO_PER_NAT = 400 / math.log(10)


def test_a_pair_is_classed_by_its_points() -> None:
    # Scores of one player in the two games of a pair: LL 0, LD 0.5, DD or WL 1, WD 1.5, WW 2 points.
    assert [pair_class(0, 0), pair_class(0, 0.5), pair_class(0.5, 0)] == [0, 1, 1]
    assert [pair_class(0.5, 0.5), pair_class(1, 0), pair_class(0, 1)] == [2, 2, 2]
    assert [pair_class(1, 0.5), pair_class(1, 1)] == [3, 4]
    with pytest.raises(RatingError, match="0.7"):
        pair_class(0.7, 1)


def test_score_variance_elo_and_nelo_worked_by_hand() -> None:
    # Pairs [LL, LD, DD|WL, WD, WW] = [1, 2, 3, 3, 1]: 10 pairs, per-game pair scores 0, .25, .5, .75, 1.
    # Mean: (0 + 2*.25 + 3*.5 + 3*.75 + 1) / 10 = 5.25 / 10 = 0.525.
    # Squared deviations: .525^2 = .275625, .275^2 = .075625, .025^2 = .000625, .225^2 = .050625, .475^2 = .225625;
    # variance: (.275625 + 2*.075625 + 3*.000625 + 3*.050625 + .225625) / 10 = .806250 / 10 = .080625.
    # Standard error of the mean: sqrt(.080625 / 10) = .0897914; the interval .525 -+ 1.959964 * .0897914.
    p = pentanomial_stats("A", "B", [1, 2, 3, 3, 1], draws=9)
    assert p.pairs == 10 and p.score == pytest.approx(0.525)
    assert p.pair_sd == pytest.approx(math.sqrt(0.080625))
    half = 1.959963984540054 * math.sqrt(0.080625 / 10)
    assert p.elo_diff == pytest.approx(-400 * math.log10(1 / 0.525 - 1))  # +17.4
    assert p.elo_low == pytest.approx(elo_from_score(0.525 - half))
    assert p.elo_high == pytest.approx(elo_from_score(0.525 + half))
    # nElo: (0.525 - 0.5) / (sd of a pair score * sqrt 2) in natural units, times 800 / ln 10.
    assert p.nelo == pytest.approx(0.025 / math.sqrt(2 * 0.080625) * 2 * ELO_PER_NAT)  # 21.6
    assert p.draw_ratio == pytest.approx(9 / 20)
    # 9 draws among the 20 games: both LD pairs, all three WD pairs and two of the three DD-or-WL pairs hold 9.


def test_published_pentanomial_example() -> None:
    """A published pentanomial result (test data only).

    From the "Raw Statistics" page of a fishtest instance, montytest.muzhen.org/tests/stats/69d3c8dc7c5b3724e29d2712:
    pairs [13, 37, 50, 25, 3], score 0.43750, variance 0.05762 (of the per-game pair score), stdev/game 0.33946,
    Elo -43.6578, normalized Elo -63.97, logistic exact GLLR -0.53772 for H0 = 0 and H1 = 2.716 logistic Elo
    (the page's rounding of its bound), LLR jumps per pair class [-0.022039, -0.015047, -0.004307, 0.014302,
    0.054441]."""
    counts = [13, 37, 50, 25, 3]
    p = pentanomial_stats("A", "B", counts, elo0=0.0, elo1=2.716)
    assert p.score == pytest.approx(0.43750)
    assert p.pair_sd**2 == pytest.approx(0.05762, abs=5e-6)
    assert math.sqrt(2 * p.pair_sd**2) == pytest.approx(0.33946, abs=5e-6)
    assert p.elo_diff == pytest.approx(-43.6578, abs=5e-5)
    assert p.nelo == pytest.approx(-63.97, abs=5e-3)
    assert p.sprt_llr == pytest.approx(-0.53772, abs=2e-4)  # the bound was rounded to 3 decimals on the page
    # Each class's jump: the LLR of counts plus one pair of that class, minus the LLR of the counts, tends to the
    # page's jumps; checked through the LLR being their weighted sum at the fitted distributions.
    jumps = [-0.022039, -0.015047, -0.004307, 0.014302, 0.054441]
    assert sum(c * j for c, j in zip(counts, jumps)) == pytest.approx(p.sprt_llr, abs=2e-4)


def best_log_likelihood(counts: list[int], s: float) -> float:
    """Largest log-likelihood of `counts` over five-class distributions of mean `s`, by a plain grid search.

    The middle three probabilities run over a grid; the outer two follow from the total and the mean. Finer
    grids around the best point so far make it exact to about 1e-7."""
    centre, width, best = np.full(3, 0.5), 0.5, -np.inf
    for _ in range(12):
        axes = [np.clip(np.linspace(c - width, c + width, 21), 0.0, 1.0) for c in centre]
        p1, p2, p3 = (a.ravel() for a in np.meshgrid(*axes, indexing="ij"))
        p4 = s - 0.25 * p1 - 0.5 * p2 - 0.75 * p3
        p0 = 1 - p1 - p2 - p3 - p4
        ok = (p0 >= 0) & (p4 >= 0)
        probs = np.stack([p0, p1, p2, p3, p4])[:, ok]
        with np.errstate(divide="ignore"):
            ll = sum(c * np.log(probs[k]) for k, c in enumerate(counts) if c)
        k = int(np.argmax(ll))
        best = max(best, float(ll[k]))
        centre, width = probs[1:4, k], width / 5
    return best


def test_pentanomial_llr_is_the_likelihood_ratio_maximised_under_each_hypothesis() -> None:
    """Against a grid search over every five-class distribution with the hypothesis' expected score."""
    s0, s1 = expected_score(0.0), expected_score(30.0)
    for counts in ([2, 3, 5, 3, 1], [0, 1, 4, 2, 0], [0, 0, 3, 0, 0], [1, 0, 0, 0, 2]):
        expected = best_log_likelihood(counts, s1) - best_log_likelihood(counts, s0)
        assert pentanomial_sprt(counts, min_pairs=0)[0] == pytest.approx(expected, abs=1e-5), counts


def test_pentanomial_llr_on_three_classes_is_the_trinomial_one() -> None:
    # Pairs that are all LL, DD or WW carry a trinomial on the pair's points: class k of 0, 2, 4 is like a game
    # scoring k / 4, so the pentanomial LLR of (a, 0, b, 0, c) is the trinomial LLR of c wins, b draws, a losses.
    for a, b, c in [(3, 5, 2), (0, 4, 0), (1, 0, 6), (7, 2, 0)]:
        assert pentanomial_sprt([a, 0, b, 0, c], min_pairs=0)[0] == pytest.approx(sprt(c, b, a)[0], abs=1e-9)


def test_no_verdict_from_fewer_pairs_than_the_model_supports() -> None:
    s0, s1 = expected_score(0.0), expected_score(30.0)
    # One pair of two wins is one observation: its LLR is log(s1 / s0) (the best distribution of mean s puts s on
    # the top class), however clear it looks; a sweep needs 36 such pairs for H1 at Wald's bound log(19).
    assert pentanomial_sprt([0, 0, 0, 0, 1]) == (pytest.approx(math.log(s1 / s0)), "continue")
    needed = math.ceil(math.log(0.95 / 0.05) / math.log(s1 / s0))
    assert pentanomial_sprt([0, 0, 0, 0, needed - 1])[1] == "continue"
    assert pentanomial_sprt([0, 0, 0, 0, needed])[1] == "H1"
    # Pair scores that never vary (all DD) are no division by zero: each pair moves the LLR by log((1-s1)/(1-s0)).
    assert pentanomial_sprt([0, 0, 5, 0, 0])[0] == pytest.approx(5 * math.log((1 - s1) / (1 - s0)))
    # Below the stated minimum nothing is decided, however far the LLR has gone (wide bounds make it go fast).
    assert pentanomial_sprt([0, 0, 0, 0, SPRT_MIN_PAIRS - 1], elo1=400)[1] == "continue"
    assert pentanomial_sprt([0, 0, 0, 0, SPRT_MIN_PAIRS], elo1=400)[1] == "H1"
    assert pentanomial_sprt([0, 0, 0, 0, 0]) == (0.0, "continue")


def test_an_interval_from_pairs_that_never_differ_is_wilsons_at_the_largest_variance() -> None:
    # One WW pair: no observed spread, so Wilson's interval for a score of 1 from 1 observation of variance at
    # most s (1 - s): from 1 / (1 + z^2) = 0.2065 (Elo -234) to 1 (as far as `elo_from_score` goes).
    z2 = 1.959963984540054**2
    one = pentanomial_stats("A", "B", [0, 0, 0, 0, 1])
    assert one.elo_low == pytest.approx(elo_from_score(1 / (1 + z2))) and one.elo_high == elo_from_score(1.0)
    # Ten WW pairs: from 1 / (1 + z^2 / 10) = 0.7224 (Elo +166) up.
    sweep = pentanomial_stats("A", "B", [0, 0, 0, 0, 10])
    assert sweep.elo_low == pytest.approx(elo_from_score(1 / (1 + z2 / 10))) and sweep.elo_low > 160
    # Four DD pairs: centred on 0.5, half-width z sqrt(1/16 + z^2/64) / (1 + z^2/4).
    even = pentanomial_stats("A", "B", [0, 0, 4, 0, 0])
    half = math.sqrt(z2) * math.sqrt(1 / 16 + z2 / 64) / (1 + z2 / 4)
    assert (even.elo_low, even.elo_high) == (pytest.approx(elo_from_score(0.5 - half)), pytest.approx(-even.elo_low))
    for p in (one, sweep, even):
        assert p.nelo is None
    none = pentanomial_stats("A", "B", [0, 0, 0, 0, 0], unpaired=1)
    assert none.pairs == 0 and none.score == 0.5 and none.sprt == "continue" and none.unpaired == 1


def test_bad_counts_are_named() -> None:
    with pytest.raises(RatingError, match="five"):
        pentanomial_stats("A", "B", [1, 2, 3])
    with pytest.raises(RatingError, match="-1"):
        pentanomial_sprt([1, -1, 0, 0, 0])


# --- in a tournament's tables and files --------------------------------------------------------------------
def scheduled_games(results: list[str], players: tuple[str, str] = ("A", "B")) -> list[GameRecord]:
    """Records of one pairing's games as `schedule` orders them (Red's result for each), with their extras."""
    tasks = schedule(2, len(results), [Opening()], seed=0, mode="round_robin")
    return [
        GameRecord(
            red=players[t.red],
            blue=players[t.blue],
            result=r,
            termination="den" if r != "1/2-1/2" else "repetition",
            extra={"game": t.index, "pairing": t.pairing, "opening_index": t.opening_index},
        )
        for t, r in zip(tasks, results)
    ]


def test_a_tournament_reports_its_pairs_next_to_its_games(tmp_path: Path) -> None:
    # Seven games: A wins both of pair 0 (WW), wins as Red and loses as Blue in pair 1 (WL), draws then wins in
    # pair 2 (DW: WD), and loses the lone seventh game, which has no partner.
    games = scheduled_games(["1-0", "0-1", "1-0", "1-0", "1/2-1/2", "0-1", "0-1"])
    result = summarize(games, ["A", "B"])
    p, q = result.pair("A", "B"), result.pairs("A", "B")
    assert (p.wins, p.draws, p.losses) == (4, 1, 2)
    assert q.counts == [0, 0, 1, 1, 1] and q.unpaired == 1 and q.draws == 1
    assert q.score == pytest.approx((0.5 + 0.75 + 1) / 3) and q.draw_ratio == pytest.approx(1 / 6)
    assert result.pairs("B", "A").counts == [1, 1, 1, 0, 0]
    text = result.table()
    assert "pairs 0-0-1-1-1  score 0.750" in text and "(1 unpaired)" in text
    assert max(map(len, text.splitlines())) <= 100
    paths = result.write(tmp_path, image=False)
    row = json.loads(paths["json"].read_text())["pairings"][0]
    assert (row["wins"], row["pairs"], row["pairs_dd_wl"], row["pairs_wd"], row["pairs_ww"]) == (4, 3, 1, 1, 1)
    assert row["unpaired"] == 1 and row["pairs_sprt"] == "continue" and row["nelo"] == pytest.approx(q.nelo)
    csv_row = next(csv.DictReader(paths["pairings_csv"].open()))
    assert (csv_row["pairs_ww"], csv_row["unpaired"], csv_row["pairs_sprt"]) == ("1", "1", "continue")
    assert float(csv_row["pairs_elo_diff"]) == pytest.approx(q.elo_diff, rel=1e-3)


def test_games_that_are_not_a_scheduled_pair_are_unpaired() -> None:
    games = scheduled_games(["1-0", "0-1", "1-0", "0-1"])
    # Game 2's partner is missing; game 0 lost its indices (a record from elsewhere); games 1 and 3 are each the
    # second game of a pair whose first game is gone or unusable.
    del games[3]
    games[0].extra = {}
    q = summarize(games, ["A", "B"]).pairs("A", "B")
    assert q.pairs == 0 and q.unpaired == 3
    # A record without a tournament's extras is counted in the games all the same.
    assert summarize(games, ["A", "B"]).pair("A", "B").games == 3
    # A pair stays a pair only when both games are of one opening: give game 1 another one.
    games = scheduled_games(["1-0", "0-1"])
    games[1].extra["opening_index"] = 5
    assert summarize(games, ["A", "B"]).pairs("A", "B").counts == [0, 0, 0, 0, 0]


# --- a gauntlet's early stop on the pair SPRT -----------------------------------------------------------
def gauntlet_games(games_per_pair: int) -> tuple[list[GameTask], list[GameRecord]]:
    """A gauntlet of P0 against P1 and P2 as `schedule` makes it: P0 wins every game against P1; against P2
    the pairs run WW, LL, WL over and over (an even score, pair scores far apart)."""
    tasks = schedule(3, games_per_pair, [Opening()], seed=0, mode="gauntlet")
    records = []
    for t in tasks:
        g = t.index - t.pairing * games_per_pair
        p0_wins = True if t.pairing == 0 else [True, True, False, False, True, False][g % 6]
        red_wins = p0_wins == (t.red == 0)
        records.append(
            GameRecord(
                red=f"P{t.red}",
                blue=f"P{t.blue}",
                result="1-0" if red_wins else "0-1",
                termination="den",
                extra={"game": t.index, "pairing": t.pairing, "opening_index": t.opening_index},
            )
        )
    return tasks, records


def test_the_stop_falls_at_the_same_pair_whatever_order_the_games_end_in() -> None:
    tasks, records = gauntlet_games(40)
    names = ["P0", "P1", "P2"]
    outcomes = []
    for seed in range(6):
        order = np.random.default_rng(seed).permutation(len(tasks)) if seed else np.arange(len(tasks))
        stop = SprtStop(tasks, names, elo0=0.0, elo1=400.0)
        seen: list[GameRecord | None] = [None] * len(tasks)
        for i in order:
            seen[i] = records[i]
            stop.see(int(i), seen)
        outcomes.append((stop.stops, [i for i in range(len(tasks)) if stop.skips(i)]))
    assert all(o == outcomes[0] for o in outcomes)
    stops, skipped = outcomes[0]
    # Against P1: ten WW pairs pass H1's bound log(19) from the fifth on; none decides below SPRT_MIN_PAIRS = 10.
    assert stops[0]["b"] == "P1" and (stops[0]["pairs"], stops[0]["verdict"]) == (SPRT_MIN_PAIRS, "H1")
    assert stops[0]["games_skipped"] == 40 - 2 * SPRT_MIN_PAIRS and skipped[:20] == list(range(20, 40))
    # Against P2 the verdict is the pair SPRT's on the pairs up to the stop, whatever it is.
    if len(stops) > 1:
        counts = [0] * 5
        for k in range(stops[1]["pairs"]):
            counts[[4, 0, 2][k % 3]] += 1
        assert pentanomial_sprt(counts, 0.0, 400.0)[1] == stops[1]["verdict"] != "continue"


@pytest.mark.slow
def test_a_gauntlet_stops_on_its_verdict_says_why_and_a_resume_plays_no_more() -> None:
    players = ["alphabeta:depth=1", "random"]
    kwargs: dict[str, Any] = dict(mode="gauntlet", games_per_pair=24, seed=0, elo1=400.0)
    kwargs["max_plies"] = 200
    stopping, every_game = TournamentSettings(sprt_stop=True, **kwargs), TournamentSettings(**kwargs)
    played: list[GameRecord] = []
    result = run_tournament(players, stopping, workers=0, on_game=played.append, progress=False)
    stop = result.sprt_stops[0]
    assert (stop["pairs"], stop["verdict"], stop["games_skipped"]) == (10, "H1", 4)
    assert len(result.games) == len(played) == 20 and result.pairs(*players).sprt == "H1"
    text = result.table()
    assert "SPRT stop: P1 vs P2 stopped after 10 pairs on H1 (pair LLR" in text
    assert json.loads(json.dumps(result.to_dict()))["sprt_stops"][0]["games_skipped"] == 4
    # Resumed with every game it kept: nothing more is played, and the tables are the same.
    again: list[GameRecord] = []
    resumed = run_tournament(players, stopping, workers=0, played=played, on_game=again.append, progress=False)
    assert again == [] and resumed.table().splitlines()[:-1] == text.splitlines()[:-1]
    # Off by default: every game is played.
    assert len(run_tournament(players, every_game, workers=0, progress=False).games) == 24
    # Worker processes stop at the same pair, and the games in flight past it are left out.
    parallel = run_tournament(players, stopping, workers=2, progress=False)
    assert [(g.red, g.seed, g.moves) for g in parallel.games] == [(g.red, g.seed, g.moves) for g in result.games]
    assert parallel.sprt_stops == result.sprt_stops


def test_the_stop_is_opt_in_for_gauntlets_and_its_bounds_are_checked(tmp_path: Path) -> None:
    from agents.arena.config import checked_config, compose_config, tournament_settings
    from agents.arena.run import SETTINGS_FILE, TournamentRun
    from agents.arena.settings import read_tournament_file, write_tournament_file
    from envs.config import ConfigError

    cfg = checked_config(compose_config(["mode=gauntlet"]))
    assert cfg.sprt_stop is False and (cfg.elo0, cfg.elo1, cfg.alpha, cfg.beta) == (0.0, 30.0, 0.05, 0.05)
    for overrides, message in [
        (["sprt_stop=true"], "sprt_stop=true stops a gauntlet's pairings; mode=round_robin has none to stop"),
        (["elo0=30"], "elo0=30.0 must be below elo1=30.0"),
        (["alpha=0.7"], "alpha=0.7 must lie in"),
        (["elo1=5000"], "elo1=5000"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            checked_config(compose_config(overrides))
    with pytest.raises(TournamentError, match="elo0"):
        run_tournament(["random", "random:name=b"], TournamentSettings(elo0=10, elo1=5), progress=False)
    # tournament.json keeps them (a resume plays on as set up); a file from before them resumes with the defaults.
    settings = tournament_settings(checked_config(compose_config(["mode=gauntlet", "sprt_stop=true", "elo1=10"])))
    assert (settings.sprt_stop, settings.elo1) == (True, 10.0)
    write_tournament_file(tmp_path / SETTINGS_FILE, ["random", "alphabeta:depth=1"], settings)
    stored = json.loads((tmp_path / SETTINGS_FILE).read_text())
    for key in ("sprt_stop", "elo0", "elo1", "alpha", "beta"):
        del stored[key]
    (tmp_path / SETTINGS_FILE).write_text(json.dumps(stored))
    _, old = read_tournament_file(tmp_path / SETTINGS_FILE)
    assert (old.sprt_stop, old.elo0, old.elo1, old.alpha, old.beta) == (False, 0.0, 30.0, 0.05, 0.05)
    with pytest.raises(TournamentError, match="sprt_stop"):
        TournamentRun.resume(tmp_path, ["sprt_stop=true"])


@pytest.mark.slow
def test_evaluate_py_stops_a_gauntlet_says_why_and_its_resume_plays_no_more(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.support import ROOT

    def evaluate(*overrides: str) -> subprocess.CompletedProcess:
        args = [sys.executable, str(ROOT / "evaluate.py"), *overrides, "workers=0", "image=false", "progress=false"]
        return subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)

    out = tmp_path / "out"
    players = 'players=["alphabeta:depth=1",random]'
    first = evaluate(
        "mode=gauntlet", players, "games_per_pair=24", "max_plies=200", "elo1=400", "sprt_stop=true", f"out_dir={out}"
    )
    assert first.returncode == 0, first.stderr
    assert "SPRT(0,400)" in first.stdout and "SPRT stop: P1 vs P2 stopped after 10 pairs on H1" in first.stdout
    assert len((out / "games.jsonl").read_text().splitlines()) == 20
    settings = json.loads((out / "tournament.json").read_text())
    assert (settings["sprt_stop"], settings["elo1"]) == (True, 400.0)
    again = evaluate(f"resume={out}")
    assert again.returncode == 0, again.stderr
    assert "SPRT stop: P1 vs P2 stopped after 10 pairs on H1" in again.stdout and "20 games in" in again.stdout
    assert len((out / "games.jsonl").read_text().splitlines()) == 20
    refused = evaluate(players, "sprt_stop=true", f"out_dir={tmp_path / 'other'}")
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        "evaluate.py: error: sprt_stop=true stops a gauntlet's pairings; mode=round_robin has none to stop"
    ]
    assert not (tmp_path / "other").exists()

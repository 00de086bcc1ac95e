"""bench/ladder_curve.py: checkpoints rated against the fixed alpha-beta ladder, by CPU-hour."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from PIL import Image
from torch.utils.tensorboard import SummaryWriter

from agents.arena.ratings import elo_from_score
from tests.support import ROOT

SCRIPT = ROOT / "bench" / "ladder_curve.py"
RATINGS = {"alphabeta:depth=1": 1000.0, "alphabeta:depth=2": 1200.0, "alphabeta:depth=3": 1400.0}


@pytest.fixture(scope="module")
def curve() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ladder_curve", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ladder_curve"] = module  # its dataclass looks its module up while the class is built
    spec.loader.exec_module(module)
    return module


def make_run(tmp_path: Path, name: str, scalars: dict[str, list[tuple[int, float]]], eval_games: int = 24) -> Path:
    run = tmp_path / name
    with SummaryWriter(str(run)) as writer:
        for tag, points in scalars.items():
            for step, value in points:
                writer.add_scalar(tag, value, step)
    (run / "config.yaml").write_text(f"train:\n  eval:\n    games: {eval_games}\n")
    return run


def write_results(path: Path, pairings: list[tuple[str, str, int, int, int]]) -> Path:
    path.mkdir(parents=True)
    rows = [{"a": a, "b": b, "wins": w, "draws": d, "losses": lo, "games": w + d + lo} for a, b, w, d, lo in pairings]
    (path / "results.json").write_text(json.dumps({"pairings": rows, "ratings": {}}))
    return path / "results.json"


def ratings_file(tmp_path: Path) -> Path:
    path = tmp_path / "ratings.json"
    path.write_text(json.dumps({"ratings": RATINGS}))
    return path


def test_one_opponent_gives_its_rating_plus_the_scores_elo(curve: ModuleType) -> None:
    for score in (0.2, 0.5, 0.75):
        elo, se = curve.fixed_opponent_elo([(1500.0, score, 40)])
        assert elo == pytest.approx(1500.0 + elo_from_score(score), abs=1e-6)
    _, se40 = curve.fixed_opponent_elo([(1500.0, 0.6, 40)])
    _, se160 = curve.fixed_opponent_elo([(1500.0, 0.6, 160)])
    assert se160 == pytest.approx(se40 / 2, rel=1e-3)  # four times the games, half the error


def test_several_opponents_and_a_sweep_stay_finite_and_ordered(curve: ModuleType) -> None:
    even, _ = curve.fixed_opponent_elo([(1000.0, 0.5, 20), (1400.0, 0.5, 20)])
    assert even == pytest.approx(1200.0, abs=1e-6)  # symmetric about the mean of two equal-sized matches
    better, _ = curve.fixed_opponent_elo([(1000.0, 0.9, 20), (1400.0, 0.6, 20)])
    assert better > 1400.0
    sweep, se = curve.fixed_opponent_elo([(1000.0, 1.0, 20), (1400.0, 1.0, 20)])
    assert 1400.0 < sweep < 2400.0 and se > 0
    zero, _ = curve.fixed_opponent_elo([(1000.0, 0.0, 20)])
    assert zero == pytest.approx(1000.0 + elo_from_score(0.0, 20), abs=1e-6)


def test_gauntlets_of_a_runs_checkpoints_become_points_by_cpu_hour(
    curve: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(
        tmp_path,
        "my-run",
        {
            "perf/seconds_selfplay": [(s, 90.0) for s in range(1, 21)],
            "perf/seconds_learn": [(s, 30.0) for s in range(1, 21)],
        },
    )
    ck = "checkpoint:path=checkpoints/my-run/iter_{:06d}.pt,sims=128"
    results = tmp_path / "runs"
    write_results(results / "g10", [(ck.format(10), "alphabeta:depth=1", 10, 0, 10)])
    write_results(
        results / "g20",
        [
            ("alphabeta:depth=2", ck.format(20), 5, 2, 13),  # the checkpoint as the second player: 13-2-5
            (ck.format(20), "alphabeta:depth=4", 0, 0, 20),  # not a rated level: left out
            ("checkpoint:path=checkpoints/my-run/iter_000020.pt,time=0.5", "alphabeta:depth=2", 0, 0, 20),
            ("checkpoint:path=checkpoints/other/iter_000020.pt,sims=128", "alphabeta:depth=2", 0, 0, 20),
        ],
    )
    write_results(results / "g20b", [(ck.format(20), "alphabeta:depth=2", 14, 2, 4)])  # adds to g20's
    out = tmp_path / "curve.png"
    argv = [str(run), "--results", str(results), "--ratings", str(ratings_file(tmp_path)), "--cores", "2"]
    assert curve.main([*argv, "--out", str(out)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| my-run")]
    assert len(rows) == 2
    assert rows[0].startswith("| my-run | 10 | 0.67 | 0.33 | +1000 [")  # 10 iterations of 2 min, two cores
    assert "alphabeta:depth=1 0.50 of 20" in rows[0]
    elo20 = 1200.0 + elo_from_score((27 + 2) / 40)  # 13-2-5 and 14-2-4 against depth 2
    assert rows[1].startswith(f"| my-run | 20 | 1.33 | 0.67 | {elo20:+.0f} [")
    assert "alphabeta:depth=2 0.72 of 40" in rows[1] and "depth=4" not in rows[1]
    with Image.open(out) as img:
        assert img.format == "PNG" and img.size == (curve.WIDTH, curve.HEIGHT)


def test_an_alias_counts_a_continued_runs_earlier_gauntlets_as_its_own(
    curve: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run continued in another directory: the gauntlets of its checkpoints under the old directory's name
    count as the new run's with `--alias OLD=NEW`, and are not its without."""
    run = make_run(tmp_path, "campaign", {"perf/seconds_selfplay": [(s, 60.0) for s in range(1, 21)]})
    results = tmp_path / "runs"
    write_results(
        results / "old", [("checkpoint:path=runs/first/iter_000010.pt,sims=128", "alphabeta:depth=1", 6, 0, 4)]
    )
    write_results(
        results / "new", [("checkpoint:path=runs/campaign/iter_000020.pt,sims=128", "alphabeta:depth=2", 5, 0, 5)]
    )
    argv = [
        str(run),
        "--results",
        str(results),
        "--ratings",
        str(ratings_file(tmp_path)),
        "--out",
        str(tmp_path / "c.png"),
    ]
    assert curve.main(argv) == 0
    assert [line.split(" | ")[1] for line in capsys.readouterr().out.splitlines() if line.startswith("| campaign")] == [
        "20"
    ]
    assert curve.main([*argv, "--alias", "first=campaign"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| campaign")]
    assert [row.split(" | ")[1] for row in rows] == ["10", "20"] and "alphabeta:depth=1 0.60 of 10" in rows[0]
    assert curve.main([*argv, "--alias", "first"]) == 2
    assert "--alias takes OLD=NEW" in capsys.readouterr().err


def test_without_results_the_in_training_evaluations_are_rated(
    curve: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(
        tmp_path,
        "r",
        {
            "eval/score_alphabeta_depth1": [(5, 0.75)],
            "eval/score_alphabeta_depth3": [(5, 0.25)],
            "eval/score_previous": [(5, 1.0)],
            "perf/seconds_selfplay": [(s, 60.0) for s in range(1, 6)],
        },
        eval_games=30,
    )
    assert curve.main([str(run), "--ratings", str(ratings_file(tmp_path)), "--out", str(tmp_path / "c.png")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| r |"))
    assert row.startswith("| r | 5 | 0.17 | 0.08 | +1200 [")  # symmetric about depth 2; 5 minutes on two cores
    assert "alphabeta:depth=1 0.75 of 30" in row and "previous" not in row


def test_a_run_that_measured_its_cpu_seconds_is_placed_by_them_not_by_wall_times_cores(
    curve: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    walls = [(s, 60.0) for s in range(1, 6)]  # 5 minutes of wall clock: 0.17 CPU-hours on two cores
    scores = {"eval/score_alphabeta_depth1": [(5, 0.75)], "eval/score_alphabeta_depth3": [(5, 0.25)]}
    shared = make_run(
        tmp_path,
        "shared",
        {**scores, "perf/seconds_selfplay": walls, "perf/cpu_seconds": [(s, 72.0) for s in range(1, 6)]},
    )
    gap = make_run(
        tmp_path,
        "gap",
        {**scores, "perf/seconds_selfplay": walls, "perf/cpu_seconds": [(s, 72.0) for s in range(2, 6)]},
    )
    live = make_run(  # iteration 6 in progress: its self-play logged, its CPU seconds not yet
        tmp_path,
        "live",
        {**scores, "perf/seconds_selfplay": [*walls, (6, 60.0)], "perf/cpu_seconds": [(s, 72.0) for s in range(1, 6)]},
    )
    argv = ["--ratings", str(ratings_file(tmp_path)), "--out", str(tmp_path / "c.png")]
    assert curve.main([str(shared), str(gap), str(live), *argv]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("| shared", "| gap", "| live"))]
    assert rows[0].startswith("| shared | 5 | 0.10 | 0.08 | +1200 [")  # 5 x 72 CPU seconds, whatever the wall clock
    assert rows[1].startswith("| gap | 5 | 0.17 | 0.08 | +1200 [")  # iteration 1 unmeasured: the wall clock for all
    assert rows[2].startswith("| live | 5 | 0.10 | 0.08 | +1200 [")  # still by its CPU seconds


def test_a_run_without_points_or_a_bad_ratings_file_is_refused_in_one_line(
    curve: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path, "empty", {"perf/seconds_selfplay": [(1, 60.0)]})
    assert curve.main([str(run), "--ratings", str(ratings_file(tmp_path)), "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ladder_curve.py: error: ") and "no eval/score_*" in err and len(err.splitlines()) == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert curve.main([str(run), "--ratings", str(bad)]) == 2
    assert "cannot read the ladder ratings" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_the_shipped_ratings_file_rates_the_ladder_in_order(curve: ModuleType) -> None:
    ratings = curve.load_ratings(curve.DEFAULT_RATINGS)
    depths = [ratings[f"alphabeta:depth={d}"] for d in range(1, 7)]
    assert depths == sorted(depths) and ratings["random"] == 0.0

"""bench/plot_run.py: the learning-curve PNG of a run, drawn from its TensorBoard scalars."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from PIL import Image
from torch.utils.tensorboard import SummaryWriter

from tests.support import ROOT

SCRIPT = ROOT / "bench" / "plot_run.py"


@pytest.fixture(scope="module")
def plot_run() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plot_run", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_run(run_dir: Path, scalars: dict[str, list[tuple[int, float]]], purge_step: int | None = None) -> None:
    with SummaryWriter(str(run_dir), purge_step=purge_step) as writer:
        for tag, points in scalars.items():
            for step, value in points:
                writer.add_scalar(tag, value, step)


def colour_count(img: Image.Image, colour: tuple[int, int, int]) -> int:
    colours = img.getcolors(img.width * img.height)
    assert colours is not None
    return sum(n for n, c in colours if c == colour)


def test_draws_each_score_curve(plot_run: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "my-run"
    steps = [2, 4, 6, 8]
    write_run(
        run,
        {
            "eval/score_alphabeta_depth1": [(s, 0.1 * s) for s in steps],
            "eval/score_random": [(s, 1.0) for s in steps],
            "eval/score_previous": [(s, 0.5) for s in steps],
            "perf/seconds_selfplay": [(s, 30.0) for s in range(1, 9)],
            "loss/total": [(s, 2.0) for s in range(1, 9)],
        },
    )
    assert plot_run.main([str(run)]) == 0
    out = run / "curve.png"
    assert f"wrote {out}" in capsys.readouterr().out
    with Image.open(out) as img:
        assert img.format == "PNG" and img.size == (plot_run.WIDTH, plot_run.HEIGHT)
        rgb = img.convert("RGB")
    first, second, third = plot_run.PALETTE[:3]
    assert colour_count(rgb, first) > 100  # alphabeta depth 1, the first tag in sorted order
    assert colour_count(rgb, second) > 100  # random
    assert colour_count(rgb, third) == 0  # `previous` is left out by default

    only = tmp_path / "only-random.png"
    assert plot_run.main([str(run), "--out", str(only), "--tags", "eval/score_random"]) == 0
    with Image.open(only) as img:
        rgb = img.convert("RGB")
    assert colour_count(rgb, first) > 100 and colour_count(rgb, second) == 0


def test_later_events_file_overrides_on_resume(plot_run: ModuleType, tmp_path: Path) -> None:
    write_run(tmp_path, {"eval/score_random": [(1, 0.1), (2, 0.2), (3, 0.3)]})
    write_run(tmp_path, {"eval/score_random": [(3, 0.9), (4, 1.0)]}, purge_step=3)
    points = plot_run.read_scalars(tmp_path)["eval/score_random"]
    assert [s for s, _ in points] == [1, 2, 3, 4]
    assert [round(v, 3) for _, v in points] == [0.1, 0.2, 0.9, 1.0]


def test_legend_names(plot_run: ModuleType) -> None:
    assert plot_run.readable_name("eval/score_alphabeta_depth1") == "alphabeta depth 1"
    assert plot_run.readable_name("eval/score_alphabeta_levelbeginner") == "alphabeta level beginner"
    assert plot_run.readable_name("eval/score_random") == "random"


def test_run_without_eval_scalars_is_a_clear_error(
    plot_run: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(tmp_path, {"loss/total": [(1, 2.0), (2, 1.5)]})
    assert plot_run.main([str(tmp_path)]) == 2
    assert "no eval/score_* scalars" in capsys.readouterr().err
    assert not (tmp_path / "curve.png").exists()

    assert plot_run.main([str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert plot_run.main([str(tmp_path), "--tags", "eval/score_nobody"]) == 2
    assert "eval/score_nobody" in capsys.readouterr().err


def test_logged_intervals_are_drawn_as_bars(plot_run: ModuleType, tmp_path: Path) -> None:
    steps = [10, 20, 30]
    scalars = {"eval/score_alphabeta_depth2": [(s, 0.5) for s in steps]}
    write_run(tmp_path / "plain", scalars)
    write_run(
        tmp_path / "bars",
        {
            **scalars,
            "eval/low_alphabeta_depth2": [(s, 0.1) for s in steps],
            "eval/high_alphabeta_depth2": [(s, 0.9) for s in steps],
        },
    )
    counts = []
    for name in ("plain", "bars"):
        assert plot_run.main([str(tmp_path / name)]) == 0
        with Image.open(tmp_path / name / "curve.png") as img:
            rgb = img.convert("RGB")
        counts.append(colour_count(rgb, plot_run.PALETTE[0]))
    plain, bars = counts
    assert bars > plain + 150  # three bars over 0.8 of the score axis (partly blended by the reduction)

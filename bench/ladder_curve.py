"""Strength by CPU-hour on the fixed alpha-beta ladder: checkpoints of one or more runs as Elo on one scale.

    python bench/ladder_curve.py checkpoints/<run> [more runs] --results runs/<gauntlet> [--results ...]
                                 [--alias OLD=NEW ...] [--cores 2] [--ratings bench/ladder_ratings.json]
                                 [--label NAME ...] [--out PNG]

The alpha-beta levels were rated once, together, by bench/ladder.py; their ratings
(bench/ladder_ratings.json, or `--ratings` with a file of that shape or a tournament's
results.json) stay fixed, so every checkpoint lands on one scale. With `--results`
(evaluate.py result files, or folders searched for results.json) a point is a checkpoint
`<run>/iter_NNNNNN.pt` that played rated levels there (games of several files add up);
without, a point is an in-training evaluation (`eval/score_<level>`, `train.eval.games`
games a level from the run's config.yaml), which runs higher than a gauntlet from 4-ply
openings. Its rating is the maximum-likelihood Elo against those levels with their
ratings held fixed (logistic model, draws as half a point; a clean sweep counted half a
game short), with a 95% interval from the likelihood's curvature. x = CPU-hours at the
end of that iteration: the CPU seconds the run's processes spent (its `perf/cpu_seconds`
summed, true on a shared machine too) or, for a run that did not measure them, its wall
clock (its `perf/seconds_*` summed) times `--cores`, the cores it kept busy. Prints one
table row per point (its wall clock hours beside) and draws every run into one PNG
(Pillow), the rated levels as dashed lines; written atomically to --out. A run with no
point exits with status 2 and says why.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from PIL import Image, ImageDraw  # noqa: E402
from plot_run import (  # noqa: E402
    GRID,
    INK,
    PALETTE,
    PAPER,
    SCALE,
    _font,
    cumulative_cpu_hours,
    cumulative_minutes,
    draw_curve,
    read_scalars,
)

from agents.alphazero.training.ladder import spec_tag  # noqa: E402
from agents.arena.ratings import expected_score  # noqa: E402
from agents.common.io import atomic_write_bytes  # noqa: E402

DEFAULT_RATINGS = Path(__file__).resolve().parent / "ladder_ratings.json"
WIDTH, HEIGHT = 1000, 470
LN10_400 = math.log(10.0) / 400.0


class CurveError(ValueError):
    """A run or ratings file that cannot be read into a curve."""


@dataclass(frozen=True)
class Point:
    """One evaluation of a run on the ladder's scale."""

    step: int
    cpu_hours: float
    wall_hours: float
    elo: float
    low: float
    high: float
    scores: dict[str, tuple[float, int]]
    """Rated level -> (score, games)."""


def load_ratings(path: Path) -> dict[str, float]:
    """Spec -> fixed Elo, from a ladder_ratings.json (`{"ratings": {spec: elo}}`) or a tournament results.json."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise CurveError(f"cannot read the ladder ratings {str(path)!r}: {e}") from None
    ratings = data.get("ratings") if isinstance(data, dict) else None
    if isinstance(ratings, dict) and isinstance(ratings.get("ratings"), list):  # a tournament's results.json
        try:
            return {p["name"]: float(p["elo"]) for p in ratings["ratings"]}
        except (KeyError, TypeError, ValueError):
            raise CurveError(f"{str(path)!r}: its ratings entries need a name and an elo") from None
    if not isinstance(ratings, dict) or not ratings:
        raise CurveError(f'{str(path)!r} holds no ratings (expected {{"ratings": {{spec: elo, ...}}}})')
    try:
        return {str(k): float(v) for k, v in ratings.items()}
    except (TypeError, ValueError):
        raise CurveError(f"{str(path)!r}: every rating must be a number") from None


def _slope_and_information(scores: Sequence[tuple[float, float, float]], elo: float) -> tuple[float, float]:
    """The log-likelihood's first derivative in `elo` and its Fisher information, for (opponent Elo, score, games)."""
    grad = info = 0.0
    for r, s, n in scores:
        p = expected_score(elo - r)
        grad += n * (s - p) * LN10_400
        info += n * p * (1 - p) * LN10_400**2
    return grad, info


def fixed_opponent_elo(results: Sequence[tuple[float, float, float]], iterations: int = 60) -> tuple[float, float]:
    """The maximum-likelihood Elo of one player against opponents of fixed Elo, and its standard error.

    results: (opponent Elo, score in [0, 1], games). A perfect or zero total is moved in by half a game
    (as `elo_from_score` does), so a sweep reads as a finite, bounded rating."""
    games = sum(n for _, _, n in results)
    if games <= 0:
        raise CurveError("no games to rate")
    points = sum(s * n for _, s, n in results)
    scores = list(results)
    if points >= games:  # a clean sweep: half a game short of it, spread evenly
        scores = [(r, 1.0 - 0.5 / games, n) for r, _, n in results]
    elif points <= 0:
        scores = [(r, 0.5 / games, n) for r, _, n in results]
    elo = sum(r * n for r, _, n in results) / games
    grad, info = _slope_and_information(scores, elo)
    for _ in range(iterations):  # Newton's method on the log-likelihood's slope
        step = grad / info
        elo += max(-400.0, min(400.0, step))
        grad, info = _slope_and_information(scores, elo)
        if abs(step) < 1e-6:
            break
    return elo, 1.0 / math.sqrt(info)


def run_games_per_level(run_dir: Path) -> int:
    """`train.eval.games` of the run's config.yaml."""
    from omegaconf import OmegaConf

    path = run_dir / "config.yaml"
    if not path.is_file():
        raise CurveError(f"{str(run_dir)!r} has no config.yaml (is it a train.py run directory?)")
    games = OmegaConf.select(OmegaConf.load(path), "train.eval.games")
    if not isinstance(games, int) or games < 1:
        raise CurveError(f"{str(path)!r} has no train.eval.games")
    return games


CHECKPOINT = re.compile(r"^checkpoint:(?:.*,)?path=([^,]+)")
ITERATION_FILE = re.compile(r"^iter_(\d+)\.pt$")
Record = dict[tuple[str, int], dict[str, list[int]]]


def search_options(spec: str) -> str:
    """A checkpoint spec's options but its path, sorted: `checkpoint:path=a.pt,sims=128` -> `sims=128`."""
    options = spec.partition(":")[2].split(",")
    return ",".join(sorted(o for o in options if o and not o.startswith("path=")))


def gauntlet_records(paths: Sequence[Path], search: str, aliases: Optional[dict[str, str]] = None) -> Record:
    """(run directory name, iteration) -> opponent spec -> [wins, draws, losses], from every pairing in the
    results.json files (or folders holding them) in which one side is a run's `iter_NNNNNN.pt` searching with
    exactly the options `search` (e.g. `sims=128`). `aliases`: directory names whose checkpoints count as
    another run's (old name -> the run's name: a run continued in another directory)."""
    aliases = aliases or {}
    wanted = search_options("checkpoint:" + search)
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(path.rglob("results.json"))
        elif path.is_file():
            files.append(path)
        else:
            raise CurveError(f"no results file or folder {str(path)!r}")
    if not files:
        raise CurveError(f"no results.json under {', '.join(map(str, paths))}")
    out: Record = {}
    for f in files:
        try:
            pairings = json.loads(f.read_text())["pairings"]
            rows = [(q["a"], q["b"], int(q["wins"]), int(q["draws"]), int(q["losses"])) for q in pairings]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CurveError(f"{str(f)!r} is not a tournament results.json ({e})") from None
        for a, b, won, drawn, lost in rows:
            for me, other, wdl in ((a, b, (won, drawn, lost)), (b, a, (lost, drawn, won))):
                m = CHECKPOINT.match(me)
                it = m and ITERATION_FILE.match(Path(m.group(1)).name)
                if m and it and search_options(me) == wanted:
                    run = Path(m.group(1)).parent.name
                    key = (aliases.get(run, run), int(it.group(1)))
                    tally = out.setdefault(key, {}).setdefault(other, [0, 0, 0])
                    for k in range(3):
                        tally[k] += wdl[k]
    return out


def run_curve(run_dir: Path, ratings: dict[str, float], cores: float, records: Optional[Record] = None) -> list[Point]:
    """The run's checkpoints that played rated levels in `records` (None: its in-training evaluations) as points."""
    if not run_dir.is_dir():
        raise CurveError(f"run directory {str(run_dir)!r} does not exist")
    scalars = read_scalars(run_dir)
    minutes, cpu = cumulative_minutes(scalars), cumulative_cpu_hours(scalars)
    by_step: dict[int, dict[str, tuple[float, int]]] = {}
    if records is None:
        games = run_games_per_level(run_dir)
        for spec in ratings:
            for step, value in scalars.get(f"eval/score_{spec_tag(spec)}", []):
                by_step.setdefault(step, {})[spec] = (value, games)
        what = f"eval/score_* against a rated level (rated: {', '.join(ratings)})"
    else:
        name = run_dir.resolve().name
        for (run, step), opponents in records.items():
            for spec, (won, drawn, lost) in opponents.items():
                if run == name and spec in ratings and won + drawn + lost:
                    n = won + drawn + lost
                    by_step.setdefault(step, {})[spec] = ((won + drawn / 2) / n, n)
        what = f"gauntlet of {name}/iter_*.pt against a rated level in the results given"
    if not by_step:
        raise CurveError(f"{str(run_dir)!r}: no {what}")
    points = []
    for step in sorted(by_step):
        scores = {spec: by_step[step][spec] for spec in ratings if spec in by_step[step]}  # weakest first
        elo, se = fixed_opponent_elo([(ratings[spec], s, n) for spec, (s, n) in scores.items()])
        hours = cpu.get(step, 0.0) if cpu is not None else minutes.get(step, 0.0) / 60.0 * cores
        wall = minutes.get(step, 0.0) / 60.0
        points.append(Point(step, hours, wall, elo, elo - 1.96 * se, elo + 1.96 * se, scores))
    return points


def render(curves: dict[str, list[Point]], ratings: dict[str, float], title: str) -> Image.Image:
    """One line per run (Elo against CPU-hours, a bar for each point's interval), the rated levels as lines."""
    s = SCALE
    img = Image.new("RGB", (WIDTH * s, HEIGHT * s), PAPER)
    draw = ImageDraw.Draw(img)
    title_font, label_font, tick_font = _font(17 * s), _font(13 * s), _font(12 * s)
    left, right, top, bottom = 70 * s, 700 * s, 64 * s, (HEIGHT - 64) * s
    pts = [p for c in curves.values() for p in c]
    y_lo = math.floor((min(p.low for p in pts) - 50) / 100) * 100
    y_hi = math.ceil((max(p.high for p in pts) + 50) / 100) * 100
    x_hi = max(p.cpu_hours for p in pts)
    x_step = next(m for m in (0.25, 0.5, 1, 2, 5, 10, 20, 50, 100) if x_hi / m <= 8)
    x_max = max(x_step * math.ceil(x_hi / x_step), x_step)

    def px(h: float) -> float:
        return left + (right - left) * h / x_max

    def py(e: float) -> float:
        return bottom - (bottom - top) * (min(max(e, y_lo), y_hi) - y_lo) / (y_hi - y_lo)

    draw.text((left, 14 * s), title, fill=INK, font=title_font)
    y_step = 100 if y_hi - y_lo <= 1000 else 200
    for e in range(int(y_lo), int(y_hi) + 1, y_step):
        draw.line([(left, py(e)), (right, py(e))], fill=GRID, width=s)
        draw.text((left - 8 * s, py(e)), f"{e}", fill=INK, font=tick_font, anchor="rm")
    for spec, e in ratings.items():  # the rated levels inside the range, labelled at the right
        if y_lo < e < y_hi:
            y = py(e)
            for x0 in range(int(left), int(right), 12 * s):
                draw.line([(x0, y), (min(x0 + 6 * s, right), y)], fill=(150, 150, 150), width=s)
            draw.text(
                (right + 6 * s, y), spec.replace("alphabeta:", "ab "), fill=(110, 110, 110), font=tick_font, anchor="lm"
            )
    draw.line([(left, top), (left, bottom)], fill=INK, width=s)
    draw.line([(left, bottom), (right, bottom)], fill=INK, width=s)
    k = 0
    while k * x_step <= x_max + 1e-9:
        h = k * x_step
        draw.line([(px(h), bottom), (px(h), bottom + 5 * s)], fill=INK, width=s)
        draw.text((px(h), bottom + 8 * s), f"{h:g}", fill=INK, font=tick_font, anchor="mt")
        k += 1
    draw.text(((left + right) / 2, bottom + 28 * s), "CPU-hours", fill=INK, font=label_font, anchor="mt")
    draw.text((left - 8 * s, top - 10 * s), "Elo (ladder)", fill=INK, font=label_font, anchor="lb")
    for points, colour in zip(curves.values(), PALETTE):
        for p in points:
            draw.line([(px(p.cpu_hours), py(p.low)), (px(p.cpu_hours), py(p.high))], fill=colour, width=s)
        draw_curve(draw, [(px(p.cpu_hours), py(p.elo)) for p in points], colour, s)
    lx, ly = right + 100 * s, top
    for i, (name, colour) in enumerate(zip(curves, PALETTE)):
        y = ly + 24 * i * s
        draw.line([(lx, y), (lx + 22 * s, y)], fill=colour, width=3 * s)
        draw.text((lx + 28 * s, y), name, fill=INK, font=label_font, anchor="lm")
    return img.reduce(s)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="training run directories (config.yaml, events files)")
    parser.add_argument(
        "--results",
        type=Path,
        action="append",
        default=[],
        help="evaluate.py results.json (or a folder of them) with gauntlets of the runs' checkpoints",
    )
    parser.add_argument(
        "--alias",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="gauntlets of OLD/iter_*.pt count as run NEW's (a run continued in another directory)",
    )
    parser.add_argument("--search", default="sims=128", help="the checkpoints' search options in the results to use")
    parser.add_argument(
        "--cores",
        type=float,
        default=2.0,
        help="cores a run without perf/cpu_seconds kept busy (CPU-hours = wall x cores)",
    )
    parser.add_argument("--ratings", type=Path, default=DEFAULT_RATINGS, help="the ladder's fixed ratings")
    parser.add_argument("--label", action="append", default=[], help="legend name of each run, in order")
    parser.add_argument("--out", type=Path, default=Path("ladder-curve.png"), help="PNG path")
    args = parser.parse_args(argv)
    if args.label and len(args.label) != len(args.runs):
        print(f"ladder_curve.py: error: {len(args.label)} --label for {len(args.runs)} runs", file=sys.stderr)
        return 2
    if args.cores <= 0:
        print(f"ladder_curve.py: error: --cores must be > 0 (got {args.cores})", file=sys.stderr)
        return 2
    aliases = dict(a.split("=", 1) for a in args.alias if "=" in a)
    if len(aliases) != len(args.alias) or not all(k and v for k, v in aliases.items()):
        print(f"ladder_curve.py: error: --alias takes OLD=NEW, two directory names (got {args.alias})", file=sys.stderr)
        return 2
    try:
        ratings = load_ratings(args.ratings)
        names = args.label or [r.resolve().name for r in args.runs]
        records = gauntlet_records(args.results, args.search, aliases) if args.results else None
        curves = {name: run_curve(run, ratings, args.cores, records) for name, run in zip(names, args.runs)}
    except CurveError as e:
        print(f"ladder_curve.py: error: {e}", file=sys.stderr)
        return 2
    print("| run | iteration | CPU-hours | wall hours | Elo (ladder) [95% CI] | scores |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, points in curves.items():
        for p in points:
            scores = ", ".join(f"{spec} {s:.2f} of {n}" for spec, (s, n) in p.scores.items())
            interval = f"{p.elo:+.0f} [{p.low:+.0f}, {p.high:+.0f}]"
            print(f"| {name} | {p.step} | {p.cpu_hours:.2f} | {p.wall_hours:.2f} | {interval} | {scores} |")
    buf = io.BytesIO()
    source = "gauntlets" if records is not None else "in-training evaluations"
    render(curves, ratings, f"Strength by CPU-hour on the alpha-beta ladder's Elo ({source})").save(
        buf, format="PNG", optimize=True
    )
    atomic_write_bytes(args.out, buf.getvalue())
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Learning-curve image of a training run: in-training evaluation scores against iteration.

    python bench/plot_run.py checkpoints/<run> [--out PNG] [--tags eval/score_random,eval/score_alphabeta_depth1]

Reads the run's TensorBoard scalars (every events file in the directory; on a
resumed run the later value of a step wins) and draws one line per
`eval/score_*` tag (default: all but `eval/score_previous`, which measures
each network against the one before it, not progress): x = iteration, with
the wall-clock minutes under each tick (summed from `perf/seconds_*`), y =
score 0..1 (win 1, draw 1/2, loss 0, from the network's side), with a bar for each
point's 95% interval where the run logged one (`eval/low_*`, `eval/high_*`). Drawn with
Pillow alone, 900x420, written atomically to --out (default RUN_DIR/curve.png).
A missing run directory, or one without `eval/score_*` scalars, exits with
status 2 and says why.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    from PIL import Image, ImageDraw, ImageFont
except ImportError:  # pragma: no cover - depends on the environment
    raise SystemExit("plot_run.py draws with Pillow, which is not installed: pip install pillow") from None

from agents.common.io import atomic_write_bytes  # noqa: E402

Series = dict[str, list[tuple[int, float]]]

SCORE_PREFIX = "eval/score_"
EXCLUDED_BY_DEFAULT = ("eval/score_previous",)
WIDTH, HEIGHT = 900, 420
SCALE = 2  # drawn at twice the size and reduced: smooth lines and text without an anti-aliasing library
# Line colours in legend order (a colour-blind-safe set: Okabe-Ito).
PALETTE = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (230, 159, 0),
    (86, 180, 233),
    (120, 120, 120),
    (240, 228, 66),
]
INK, GRID, PAPER = (40, 40, 40), (222, 222, 222), (255, 255, 255)
# Player-spec option names as spec_tag writes them (`alphabeta:depth=1` -> `alphabeta_depth1`).
OPTION_KEYS = ("depth", "level", "nodes", "time", "noise", "random", "sims", "threads", "algorithm")


class PlotError(ValueError):
    """The run directory cannot be plotted (missing, or without the scalars asked for)."""


def read_scalars(run_dir: Path) -> Series:
    """Every scalar tag of the run as sorted (step, value) pairs; a step written twice keeps its later value."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()  # reads the directory's events files in name (= creation time) order
    out: Series = {}
    for tag in acc.Tags()["scalars"]:
        by_step = {int(e.step): float(e.value) for e in acc.Scalars(tag)}
        out[tag] = sorted(by_step.items())
    return out


def readable_name(tag: str) -> str:
    """Legend text for a score tag: `eval/score_alphabeta_depth1` -> `alphabeta depth 1`."""
    words = []
    for part in tag.removeprefix(SCORE_PREFIX).split("_"):
        key = next((k for k in OPTION_KEYS if part.startswith(k) and len(part) > len(k)), None)
        words.append(f"{key} {part[len(key) :]}" if key else part)
    return " ".join(words)


def cumulative_minutes(scalars: Series) -> dict[int, float]:
    """Wall-clock minutes at the end of each iteration: the running sum of every `perf/seconds_*` phase."""
    per_step: dict[int, float] = {}
    for tag, points in scalars.items():
        if tag.startswith("perf/seconds_"):
            for step, value in points:
                per_step[step] = per_step.get(step, 0.0) + value
    out, total = {}, 0.0
    for step in sorted(per_step):
        total += per_step[step]
        out[step] = total / 60.0
    return out


def cumulative_cpu_hours(scalars: Series) -> Optional[dict[int, float]]:
    """CPU-hours at the end of each iteration, the running sum of `perf/cpu_seconds` (the run's process tree as
    measured); None unless every iteration with a wall clock up to the last one measured has one (a run of an
    older kit, or off Linux). A live run's iteration in progress, its phases logged before its CPU seconds, is
    left out rather than sending the whole run to the wall clock."""
    cpu = dict(scalars.get("perf/cpu_seconds", []))
    last = max(cpu, default=0)
    walls = {s for tag, points in scalars.items() if tag.startswith("perf/seconds_") for s, _ in points if s <= last}
    if not cpu or set(cpu) != walls:
        return None
    out, total = {}, 0.0
    for step in sorted(cpu):
        total += cpu[step]
        out[step] = total / 3600.0
    return out


def select_tags(scalars: Series, tags: Optional[Sequence[str]]) -> list[str]:
    """The score tags to draw: those asked for (each must exist), else every `eval/score_*` but `previous`."""
    if tags:
        missing = [t for t in tags if t not in scalars]
        if missing:
            have = ", ".join(t for t in sorted(scalars) if t.startswith(SCORE_PREFIX)) or "none"
            raise PlotError(f"no scalar {', '.join(missing)} in this run (eval/score_* tags present: {have})")
        return list(tags)
    return sorted(t for t in scalars if t.startswith(SCORE_PREFIX) and t not in EXCLUDED_BY_DEFAULT and scalars[t])


def nice_step(span: float, target_ticks: int = 8) -> int:
    """An integer tick spacing of 1, 2 or 5 times a power of ten giving about `target_ticks` ticks."""
    raw = max(span / target_ticks, 1.0)
    base = 10 ** math.floor(math.log10(raw))
    return int(next(m * base for m in (1, 2, 5, 10) if m * base >= raw))


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)  # Pillow >= 10.1 with FreeType: a scalable built-in font
    except TypeError:  # pragma: no cover - older Pillow: the small bitmap font
        return ImageFont.load_default()


def draw_curve(draw: ImageDraw.ImageDraw, xy: list[tuple[float, float]], colour: tuple[int, int, int], s: int) -> None:
    """A line through the pixel points `xy` with a dot on each, at drawing scale `s`."""
    if len(xy) > 1:
        draw.line(xy, fill=colour, width=3 * s, joint="curve")
    for x, y in xy:
        r = 4.5 * s
        draw.ellipse([(x - r, y - r), (x + r, y + r)], fill=colour, outline=PAPER, width=s)


def render(
    series: dict[str, list[tuple[int, float]]],
    title: str,
    minutes: dict[int, float],
    intervals: Optional[dict[str, dict[int, tuple[float, float]]]] = None,
) -> Image.Image:
    """Draw the curves: `series` maps legend text -> (iteration, score) points, in legend order;
    `intervals` (legend text -> iteration -> (low, high)) adds each point's 95% interval as a bar."""
    s = SCALE
    img = Image.new("RGB", (WIDTH * s, HEIGHT * s), PAPER)
    draw = ImageDraw.Draw(img)
    title_font, label_font, tick_font = _font(17 * s), _font(13 * s), _font(12 * s)
    left, right, top, bottom = 64 * s, 690 * s, 48 * s, (HEIGHT - 78) * s

    last = max(step for points in series.values() for step, _ in points)
    x_step = nice_step(last)
    x_max = max(x_step * math.ceil(last / x_step), 1)

    def px(it: float) -> float:
        return left + (right - left) * it / x_max

    def py(score: float) -> float:
        return bottom - (bottom - top) * score

    draw.text((left, 14 * s), title, fill=INK, font=title_font)
    for i in range(5):  # score gridlines at 0, 0.25, ..., 1
        y = py(i / 4)
        draw.line([(left, y), (right, y)], fill=GRID if i > 0 else INK, width=s)
        draw.text((left - 8 * s, y), f"{i / 4:.2f}", fill=INK, font=tick_font, anchor="rm")
    draw.line([(left, top), (left, bottom)], fill=INK, width=s)
    for it in range(0, x_max + 1, x_step):
        x = px(it)
        draw.line([(x, bottom), (x, bottom + 5 * s)], fill=INK, width=s)
        draw.text((x, bottom + 8 * s), str(it), fill=INK, font=tick_font, anchor="mt")
        wall = 0.0 if it == 0 else minutes.get(it)
        if wall is not None:
            draw.text((x, bottom + 25 * s), f"{wall:.0f} min", fill=(110, 110, 110), font=tick_font, anchor="mt")
    x_label = "iteration (wall-clock minutes below)" if minutes else "iteration"
    draw.text(((left + right) / 2, bottom + 46 * s), x_label, fill=INK, font=label_font, anchor="mt")
    draw.text((left - 8 * s, top - 10 * s), "score", fill=INK, font=label_font, anchor="rb")

    for (name, points), colour in zip(series.items(), PALETTE):
        xy = [(px(it), py(min(max(v, 0.0), 1.0))) for it, v in points]
        bars = (intervals or {}).get(name, {})
        for it, _ in points:
            if it in bars:
                low, high = bars[it]
                x = px(it)
                draw.line([(x, py(min(max(low, 0.0), 1.0))), (x, py(min(max(high, 0.0), 1.0)))], fill=colour, width=s)
        draw_curve(draw, xy, colour, s)

    lx, ly = right + 24 * s, top
    draw.text((lx, ly), "score against", fill=INK, font=label_font)
    for i, (name, colour) in enumerate(zip(series, PALETTE)):
        y = ly + (28 + 24 * i) * s
        draw.line([(lx, y), (lx + 28 * s, y)], fill=colour, width=3 * s)
        draw.ellipse([(lx + 14 * s - 4.5 * s, y - 4.5 * s), (lx + 14 * s + 4.5 * s, y + 4.5 * s)], fill=colour)
        draw.text((lx + 36 * s, y), name, fill=INK, font=label_font, anchor="lm")
    return img.reduce(s)


def plot_run(run_dir: Path, out: Path, tags: Optional[Sequence[str]] = None) -> Path:
    """Read `run_dir`'s scalars and write the learning-curve PNG to `out` (atomically); returns `out`."""
    if not run_dir.is_dir():
        raise PlotError(f"run directory {str(run_dir)!r} does not exist")
    scalars = read_scalars(run_dir)
    chosen = select_tags(scalars, tags)
    if not chosen:
        raise PlotError(
            f"no eval/score_* scalars in {str(run_dir)!r} (events files: "
            f"{len(list(run_dir.glob('events.out.tfevents.*')))}); was evaluation on (train.eval.every > 0)?"
        )
    if len(chosen) > len(PALETTE):
        raise PlotError(f"{len(chosen)} tags asked for; at most {len(PALETTE)} lines fit one image")
    series = {readable_name(t): scalars[t] for t in chosen}
    intervals = {}
    for t in chosen:  # eval/score_X -> eval/low_X and eval/high_X, written by train.py since they were added
        low, high = (scalars.get(t.replace(SCORE_PREFIX, f"eval/{end}_", 1), []) for end in ("low", "high"))
        if low and high:
            highs = dict(high)
            intervals[readable_name(t)] = {it: (v, highs[it]) for it, v in low if it in highs}
    title = f"{run_dir.resolve().name}: evaluation score during training"
    buf = io.BytesIO()
    render(series, title, cumulative_minutes(scalars), intervals).save(buf, format="PNG", optimize=True)
    atomic_write_bytes(out, buf.getvalue())
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a training run directory (holds events.out.tfevents.*)")
    parser.add_argument("--out", type=Path, default=None, help="PNG path (default RUN_DIR/curve.png)")
    parser.add_argument(
        "--tags",
        default="",
        help="comma-separated scalar tags to draw (default: every eval/score_* except eval/score_previous)",
    )
    args = parser.parse_args(argv)
    tags = [t.strip() for t in args.tags.split(",") if t.strip()] or None
    out = args.out if args.out is not None else args.run_dir / "curve.png"
    try:
        written = plot_run(args.run_dir, out, tags)
    except PlotError as e:
        print(f"plot_run.py: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

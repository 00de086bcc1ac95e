"""The specs the page plays: what a person types for an opponent, made a player spec within the page's limits.

`opponent_spec` reads a level's name, a checkpoint or a spec; `bounded_spec` keeps any spec the page accepts
within the page's limits and a time per move; `warm_up_jobs` are the moves the computer's workers play before
their first job.
"""

from __future__ import annotations

import difflib
import functools
import math
import os
from pathlib import Path
from typing import Any, Iterable, Optional

from agents.alphazero.net import shipped
from agents.play import levels
from agents.play.computer import ThinkJob, job_rules
from agents.play.errors import PlayError
from agents.play.levels import MOVE_SECONDS, available_levels, check_level_network, level_seconds
from envs.notation import START_JFEN
from envs.players import PlayerSpecError, known_kinds, parse_spec
from envs.rules import RuleSet

HINT_SPEC = "alphabeta:level=normal"
"""Where hints come from."""

CHECKPOINT_DIRS: tuple[Path, ...] = (Path("checkpoints"),)
"""Where the page may load checkpoints from (play.py adds the directory of its --opponent and --checkpoint-dir)."""

PAGE_MAX_SIMS = 4000
"""The most simulations a move of a checkpoint spec typed on the page (the option allows `MAX_SIMULATIONS`)."""

PAGE_MIN_THREADS = 1
"""The fewest torch threads of a checkpoint spec typed on the page (the option's 0, torch's own, takes every
core of a machine the page shares)."""

PAGE_MAX_DEPTH = 30
"""The deepest alpha-beta search of a spec typed on the page (the option allows `MAX_DEPTH`)."""

PAGE_MAX_NODES = 10**9
"""The most positions an alpha-beta move of a spec typed on the page may search."""

PAGE_MAX_TT = 24
"""The largest transposition table of an alpha-beta spec typed on the page: 2**24 entries."""


@functools.cache
def _spec_limits(kind: str) -> dict[str, tuple[float, float]]:
    """The page's limits of a spec of `kind`: its options' bounds (`AlphaBetaOptions`, `CheckpointOptions`),
    narrowed to the page's constants (`PAGE_MAX_DEPTH`, `PAGE_MAX_SIMS`, ...) and, for torch's threads, this
    machine's cores; a spec's time per move is the level's (`bounded_spec`). A kind's options are read only when
    a spec of it is checked (the checkpoint's import torch, which the page's own process otherwise does without)."""
    if kind == "alphabeta":
        from agents.alphabeta.options import AlphaBetaOptions

        bounds = AlphaBetaOptions.option_bounds
        return {
            "depth": _narrowed(bounds("depth"), PAGE_MAX_DEPTH),
            "nodes": _narrowed(bounds("nodes"), PAGE_MAX_NODES),
            "tt": _narrowed(bounds("tt"), PAGE_MAX_TT),
            "noise": _narrowed(bounds("noise")),
            "random": _narrowed(bounds("random")),
        }
    if kind != "checkpoint":
        return {}
    from agents.alphazero.player.options import CheckpointOptions

    sims, threads = CheckpointOptions.option_bounds("sims"), CheckpointOptions.option_bounds("threads")
    cores = min(os.cpu_count() or 1, threads[1] if threads[1] is not None else os.cpu_count() or 1)
    return {"sims": (sims[0], PAGE_MAX_SIMS), "threads": (max(threads[0], PAGE_MIN_THREADS), cores)}


def _narrowed(bounds: tuple[float, Optional[float]], most: Optional[float] = None) -> tuple[float, float]:
    """An option's (least, most), its most lowered to `most` where that is lower."""
    low, high = bounds
    highs = [h for h in (high, most) if h is not None]
    return low, min(highs) if highs else math.inf


def opponent_spec(text: Any, checkpoint_dirs: Optional[Iterable[Path]] = None) -> str:
    """What a person types for an opponent -> a player spec.

    A level name (`beginner`, `normal`, ... of `LEVELS`) is its spec; a path
    ending in `.pt`, an existing file or run directory, or a run name under
    `checkpoints/` is a checkpoint; anything else must already be a spec
    (`alphabeta:depth=3`, `checkpoint:path=...,sims=200`, `random`). With
    `checkpoint_dirs` (the page), a checkpoint must lie inside one of them, so
    that the page cannot probe other files.
    """
    if not isinstance(text, str) or not text.strip():
        raise PlayError(f"opponent {text!r} is empty; choose a level, a checkpoint path or a player spec")
    t = text.strip()
    if len(t) > 500:
        raise PlayError(f"opponent spec of {len(t)} characters is too long (at most 500)")
    for level in levels.LEVELS:  # read where the page's levels live, so that a test's own levels count
        if t == level.name:
            check_level_network(level)
            return level.spec
    if ":" not in t and (
        t.endswith(".pt") or "/" in t or _exists(Path(t)) or _exists(Path("checkpoints") / t, dir=True)
    ):
        t = f"checkpoint:path={t}"
    elif ":" not in t and t not in known_kinds():
        names = [level.name for level in levels.LEVELS]
        close = difflib.get_close_matches(t, names + known_kinds(), n=1)
        raise PlayError(
            f"opponent {t[:80]!r} is not a level ({', '.join(names)}), a player kind "
            f"({', '.join(known_kinds())}), a checkpoint file or a run under checkpoints/"
            + (f"; did you mean {close[0]!r}?" if close else "")
        )
    try:
        kind, options = parse_spec(t)
    except PlayerSpecError as e:
        raise PlayError(str(e)) from None
    if kind == "checkpoint" and checkpoint_dirs is not None:
        _check_checkpoint_place(options.get("path", ""), checkpoint_dirs)
    return t


def _exists(path: Path, dir: bool = False) -> bool:
    """Whether `path` exists (is a directory); a name the file system refuses (too long, say) names nothing."""
    try:
        return path.is_dir() if dir else path.exists()
    except OSError:
        return False


def _check_checkpoint_place(path: str, dirs: Iterable[Path]) -> None:
    """PlayError unless `path` (a file, run directory or run name) lies inside one of `dirs`, or is a shipped
    network."""
    if path.startswith(shipped.PREFIX):  # the manifest's own files only: nothing else can be probed this way
        try:
            shipped.network(path)
        except shipped.ShippedError as e:
            raise PlayError(str(e)) from None
        return
    dirs = [Path(d).resolve() for d in dirs]
    p = Path(path).expanduser()
    candidates = [p] if p.is_absolute() else [p, Path("checkpoints") / p]
    for c in candidates:
        resolved = c.resolve()
        if any(resolved == d or d in resolved.parents for d in dirs):
            return
    where = ", ".join(str(d) for d in dirs)
    raise PlayError(
        f"the page plays checkpoints from {where} only; {path!r} is not there "
        "(start play.py with --checkpoint-dir to add a directory)"
    )


def bounded_spec(spec: str, seconds: float) -> str:
    """The spec the computer really plays: options within the page's limits, alpha-beta stopping at `seconds`.

    A limit above the page's is refused (PlayError) rather than silently
    lowered; an alpha-beta spec gets `time=<seconds>` unless it asks for less.
    Other kinds keep their spec; the worker is stopped at `seconds` anyway.
    """
    try:
        kind, options = parse_spec(spec)
    except PlayerSpecError as e:
        raise PlayError(str(e)) from None
    for key, (low, high) in _spec_limits(kind).items():
        if key not in options:
            continue
        try:
            value = float(options[key])
        except ValueError:
            raise PlayError(f"{kind} option {key}={options[key]!r} is not a number") from None
        if not low <= value <= high:
            raise PlayError(f"{kind} option {key}={options[key]} is outside the page's limits [{low:g}, {high:g}]")
    if kind == "alphabeta":
        if "time" in options:
            try:
                t = float(options["time"])
            except ValueError:
                raise PlayError(f"alphabeta option time={options['time']!r} is not a number") from None
            if not 0 < t <= seconds:
                raise PlayError(
                    f"alphabeta option time={options['time']} is outside the page's limit of {seconds:g} s a move"
                )
        else:
            options["time"] = f"{seconds:g}"
    return kind + (":" + ",".join(f"{k}={v}" for k, v in options.items()) if options else "")


def warm_up_jobs(rules: RuleSet, opponents: Iterable[str] = (), seconds: float = MOVE_SECONDS) -> tuple[ThinkJob, ...]:
    """A move from the start for each offered level, the hints and `opponents`, as each would play on the page.

    The computer's workers play them before their first job (see
    `agents.play.computer.warm_up`), so that no move's clock pays for
    compiling a search. An opponent the page would refuse is left out (the
    game that names it is refused anyway)."""
    specs = [bounded_spec(level.spec, level.seconds) for level in available_levels()]
    specs.append(bounded_spec(HINT_SPEC, MOVE_SECONDS))
    for text in opponents:
        try:
            spec = opponent_spec(text)
            specs.append(bounded_spec(spec, level_seconds(spec, seconds)))
        except PlayError:
            continue
    return tuple(
        ThinkJob(key=f"warm-up:{i}", spec=spec, rules=job_rules(rules), seed=0, start=START_JFEN)
        for i, spec in enumerate(dict.fromkeys(specs))
    )

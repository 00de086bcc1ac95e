"""Seconds to a page level's first move on an empty numba cache, and on the cache that first move filled.

    python bench/first_move.py                   # the page's network and variants levels
    python bench/first_move.py network expert "checkpoint:path=shipped:default-150,time=1"

Each level (a name of the play page's levels, or a player spec) is played as the page plays it (its spec
within the page's limits, `agents.play.specs.bounded_spec`) by a fresh Python process, as a page's worker
would: the imports, building the player, its first move from the start position (where numba compiles every
kernel the search runs, or loads it from the cache) and a second move. The first process runs on an empty
numba cache directory (a fresh install), the second on what the first left there (every later start of
`play.py`). A move of a level that searches by time takes its level's time on top of any compilation. Figures
only, no assertions; `--cache-dir` keeps the cache in a given directory instead of a new temporary one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_LEVELS = ("network", "variants")


def level_spec(text: str) -> tuple[str, float]:
    """The spec the page plays for `text` (a level's name or a player spec) and its seconds a move."""
    from agents.play.levels import level_seconds
    from agents.play.specs import bounded_spec, opponent_spec

    spec = opponent_spec(text)  # a level's name is its spec
    seconds = level_seconds(spec)
    return bounded_spec(spec, seconds), seconds


def child(spec: str) -> dict[str, Any]:
    """In this process: the seconds of each step to a second move of `spec` (what the parent prints)."""
    t0 = time.perf_counter()
    from agents.play.computer import PlayerCache, ThinkJob, choose_move, job_rules
    from envs.notation import START_JFEN
    from envs.rules import RuleSet

    t1 = time.perf_counter()
    rules = job_rules(RuleSet())
    job = ThinkJob(key="bench", spec=spec, rules=rules, seed=0, start=START_JFEN)
    cache = PlayerCache(size=1)
    cache.get(job)
    t2 = time.perf_counter()
    first = choose_move(job, cache)
    t3 = time.perf_counter()
    second = choose_move(ThinkJob(key="bench", spec=spec, rules=rules, seed=0, start=START_JFEN, moves=(first,)), cache)
    t4 = time.perf_counter()
    return {
        "imports_s": t1 - t0,
        "build_s": t2 - t1,
        "first_move_s": t3 - t2,
        "second_move_s": t4 - t3,
        "moves": [first, second],
    }


def measure(spec: str, cache_dir: Path) -> dict[str, Any]:
    """Run `child(spec)` in a fresh process whose numba cache is `cache_dir`; its figures and wall seconds."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", spec],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"first_move: {spec!r} failed: {done.stderr.strip().splitlines()[-1:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["process_s"] = wall
    return figures


def run(levels: list[str], cache_dir: Optional[Path] = None) -> list[dict[str, Any]]:
    """For each level: its figures on an empty cache, then on the cache that run filled (one row each)."""
    rows = []
    for text in levels:
        spec, seconds = level_spec(text)
        with tempfile.TemporaryDirectory(prefix="first-move-numba-") as tmp:
            where = Path(tmp) if cache_dir is None else cache_dir / text.replace(":", "_").replace("/", "_")
            where.mkdir(parents=True, exist_ok=True)
            if any(where.iterdir()):
                raise SystemExit(f"first_move: the cache directory {where} is not empty")
            for cache in ("empty", "filled"):
                row = measure(spec, where)
                row.update(level=text, spec=spec, cache=cache, seconds=seconds)
                rows.append(row)
                print(
                    f"{text:>10} | {cache:>6} cache | imports {row['imports_s']:5.1f} s"
                    f" | player {row['build_s']:5.1f} s"
                    f" | first move {row['first_move_s']:6.1f} s | second move {row['second_move_s']:5.1f} s"
                    f" | process {row['process_s']:6.1f} s | {spec}",
                    flush=True,
                )
    return rows


def main(argv: Optional[list[str]] = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("levels", nargs="*", default=list(DEFAULT_LEVELS), help="page level names or player specs")
    ap.add_argument("--cache-dir", type=Path, default=None, help="keep each level's numba cache under this directory")
    ap.add_argument("--child", metavar="SPEC", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return []
    print(f"cpus {os.cpu_count()} | python {sys.version.split()[0]}", flush=True)
    return run(args.levels, args.cache_dir)


if __name__ == "__main__":
    main()

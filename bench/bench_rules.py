"""Speed of the rules kernels (prints figures; not a test).

    python bench/bench_rules.py            # about half a minute
    python bench/bench_rules.py --quick    # a few seconds

Prints, single-threaded, from the start position with the default rules:

* perft(6) (perft(5) with --quick) side by side with `bench/c/perft.c`, a
  plain single-file C bitboard perft of the same rules, built here with
  ``gcc -O2 -march=native`` into a temporary folder, in both modes: every
  node made (make and unmake at every node, the last ply included) and bulk
  counting at the last ply; leaves per second and the ratio numba / C
  (skipped with a message where gcc is missing or fails);
* uniformly random complete games (`kernels.random_games`): games and plies
  per second;
* the kernels' compile time on first call (a subprocess with an empty
  NUMBA_CACHE_DIR) against import + first call with the cache filled.

Rates are given per wall second and per CPU second of this process (the
latter is robust to other load on the machine). Each timing is the best of a
few repeats.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envs import Board, perft  # noqa: E402
from envs import kernels as K  # noqa: E402

FIRST_CALLS = """
import time
t0 = time.perf_counter()
import numpy as np
from envs import Board, perft
from envs import kernels as K
from envs import encoding
b = Board()
perft(b, 3); perft(b, 3, bulk=False)
K.perft_divide(b.state, b.hist, b.hashes, b.flags, 1, np.zeros(32, np.int64), np.zeros(32, np.int64))
b.push("a3a4"); b.outcome(); b.pop(); b.repetition_count()
K.count_moves(b.state, b.hist, b.flags); K.has_legal_move(b.state, b.hist, b.flags)
K.random_games(b.state, b.flags, 2, 50, 0, np.zeros(2, np.int64))
encoding.legal_action_mask(b.state, b.hist, b.flags, np.zeros(252, np.bool_))
obs = np.zeros(encoding.OBS_SHAPE, np.float32); encoding.encode_observation(b.state, b.hashes, b.flags, obs)
print(time.perf_counter() - t0)
"""


def best_of(fn: Callable[[], int], repeats: int) -> tuple[int, float, float]:
    """(value, best wall seconds, best CPU seconds) over `repeats` calls."""
    walls, cpus = [], []
    value = 0
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        value = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return value, min(walls), min(cpus)


C_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c", "perft.c")


def build_c_perft(folder: str) -> str | None:
    """Compile bench/c/perft.c into `folder`; its path, or None (with the reason printed) when that fails."""
    gcc = shutil.which("gcc")
    if gcc is None:
        print("C reference skipped: gcc not found on PATH")
        return None
    exe = os.path.join(folder, "perft")
    out = subprocess.run([gcc, "-O2", "-march=native", "-o", exe, C_SOURCE], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"C reference skipped: gcc failed: {out.stderr.strip()}")
        return None
    return exe


def c_perft(exe: str, depth: int, mode: str, repeats: int) -> tuple[int, float, float]:
    """(leaves, best wall seconds, best CPU seconds) of the C perft in `mode` ("made" or "bulk")."""
    out = subprocess.run([exe, str(depth), mode, str(repeats)], capture_output=True, text=True, check=True)
    leaves, wall, cpu = out.stdout.split()
    return int(leaves), float(wall), float(cpu)


def perft_against_c(board: Board, depth: int, repeats: int) -> None:
    """perft(depth) of the kernels and of the C program, both modes, one after the other."""
    perft(board, 3)
    perft(board, 3, bulk=False)
    with tempfile.TemporaryDirectory() as folder:
        exe = build_c_perft(folder)
        print(f"perft({depth}) from the start, best of {repeats}; rates per CPU second (per wall second)")
        for label, bulk, mode in (("every node made", False, "made"), ("bulk last ply", True, "bulk")):
            leaves, wall, cpu = best_of(lambda bulk=bulk: perft(board, depth, bulk=bulk), repeats)
            line = f"  {label:16s} numba {leaves / cpu / 1e6:7.1f} M leaves/s ({leaves / wall / 1e6:.1f})"
            if exe is not None:
                c_leaves, c_wall, c_cpu = c_perft(exe, depth, mode, repeats)
                if c_leaves != leaves:
                    raise SystemExit(f"perft({depth}) {mode}: the kernels count {leaves}, the C program {c_leaves}")
                line += (
                    f"   C {c_leaves / c_cpu / 1e6:7.1f} M leaves/s ({c_leaves / c_wall / 1e6:.1f})"
                    f"   numba / C {c_cpu / cpu:.2f} ({c_wall / wall:.2f})"
                )
            print(line)


def first_call_seconds(cache_dir: str | None) -> float:
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", FIRST_CALLS], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller depths and fewer games")
    args = parser.parse_args()
    depth, n_games, repeats = (5, 5_000, 2) if args.quick else (6, 50_000, 5)

    board = Board()
    perft_against_c(board, depth, repeats)

    results = np.zeros(n_games, dtype=np.int64)
    K.random_games(board.state, board.flags, 10, 1000, 0, results)
    plies, wall, cpu = best_of(lambda: K.random_games(board.state, board.flags, n_games, 1000, 1, results), repeats)
    print(
        f"random games   {n_games:>11,} games   {wall:7.3f} s  {n_games / wall / 1e3:6.1f} k games/s  "
        f"({n_games / cpu / 1e3:.1f} k per CPU s; {plies / n_games:.0f} plies/game, "
        f"{plies / wall / 1e6:.1f} M plies/s)"
    )
    ends = np.bincount(results // 4, minlength=6)
    names = ["ply cap", "den", "all captured", "no moves", "repetition", "no-capture limit"]
    print("  ends: " + ", ".join(f"{names[t]} {ends[t] / n_games:.0%}" for t in range(6) if ends[t]))

    with tempfile.TemporaryDirectory() as empty:
        cold = first_call_seconds(empty)
    first_call_seconds(None)  # make sure the normal cache is filled
    warm = first_call_seconds(None)
    print(f"first call, empty numba cache (compile): {cold:6.1f} s")
    print(f"first call, cache filled (import + load): {warm:6.2f} s")


if __name__ == "__main__":
    main()

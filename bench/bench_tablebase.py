"""Time and size of the endgame tablebase builds, and the speed of a probe (prints figures; not a test).

    python bench/bench_tablebase.py                 # the 2- and 3-piece builds, default rules (about a minute)
    python bench/bench_tablebase.py --pieces 2      # the 2-piece build only (seconds)
    python bench/bench_tablebase.py --rule trapped_attacker=keeps_rank

Prints, single-threaded: the kernels' compile time (a 2-piece build in a
subprocess with an empty NUMBA_CACHE_DIR, less the same build with the cache
filled), then for each build the wall and CPU seconds (compiled kernels), the
positions, the file's size and its sha256; then probes per second of the
numba batch probe (`probe_states`) and of `Tablebase.probe` from Python on
random positions of the largest build. Files go to a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envs import Board  # noqa: E402
from envs import kernels as K  # noqa: E402
from envs.notation import state_to_jfen  # noqa: E402
from envs.rules import add_rule_arguments, rules_from_arguments  # noqa: E402
from envs.tablebase import Tablebase, probe_states  # noqa: E402
from envs.tablebase.index import set_position  # noqa: E402

BUILD_2 = """
import time
t0 = time.perf_counter()
from envs.rules import RuleSet
from envs.tablebase import Tablebase
Tablebase.build(RuleSet(), pieces=2)
print(time.perf_counter() - t0)
"""


def compile_seconds() -> tuple[float, float]:
    """(seconds of a 2-piece build with an empty numba cache, the same with the cache filled), in subprocesses."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    times = []
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(2):
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            out = subprocess.run(
                [sys.executable, "-c", BUILD_2], cwd=root, env=env, capture_output=True, text=True, check=True
            )
            times.append(float(out.stdout.strip().splitlines()[-1]))
    return times[0], times[1]


def random_states(tb: Tablebase, n: int, seed: int = 0) -> np.ndarray:
    """`n` random positions of the tables' materials as state arrays [n, STATE_LEN] (Red to move)."""
    rng = np.random.default_rng(seed)
    out = np.zeros((n, K.STATE_LEN), dtype=np.int16)
    st = np.zeros(K.STATE_LEN, dtype=np.int16)
    i = 0
    while i < n:
        m = tb.materials[int(rng.integers(len(tb.materials)))]
        st[:] = 0
        st[K.S_PIECES : K.S_PIECES + 16] = -1
        st[K.S_MOVENO] = 1
        if set_position(st, m.pieces(), m.n_pieces, int(rng.integers(m.size()))):
            out[i] = st
            i += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pieces", type=int, default=3, choices=(2, 3), help="the largest build")
    add_rule_arguments(parser)
    args = parser.parse_args()
    rules = rules_from_arguments(args)
    cold, warm = compile_seconds()
    print(f"compile: {cold - warm:.1f} s (2-piece build {cold:.1f} s with an empty numba cache, {warm:.1f} s filled)")
    Tablebase.build(rules, pieces=2)  # this process's kernels loaded
    tb = None
    with tempfile.TemporaryDirectory() as out:
        for n in range(2, args.pieces + 1):
            t0, c0 = time.perf_counter(), time.process_time()
            tb = Tablebase.build(rules, pieces=n)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            path, digest = tb.save(out)
            positions = int(sum(m.size() for m in tb.materials))
            print(
                f"{n} pieces: {len(tb.materials)} tables, {positions:,} index entries, built in {wall:.2f} s wall "
                f"/ {cpu:.2f} s CPU; file {path.stat().st_size / 1e6:.2f} MB, sha256 {digest}"
            )
    assert tb is not None
    states = random_states(tb, 200_000)
    out_arr = np.zeros((len(states), 4), dtype=np.int64)
    flags = rules.flags()
    probe_states(states[:10], flags, tb.arrays, out_arr[:10])
    t0 = time.perf_counter()
    probe_states(states, flags, tb.arrays, out_arr)
    dt = time.perf_counter() - t0
    print(f"probe_states: {len(states) / dt / 1e6:.1f} M positions/s")
    boards = [Board(state_to_jfen(s), rules=rules) for s in states[:2000]]
    t0 = time.perf_counter()
    for b in boards:
        tb.probe(b)
    dt = time.perf_counter() - t0
    print(f"Tablebase.probe (every move's value too): {len(boards) / dt:,.0f} positions/s")


if __name__ == "__main__":
    main()

"""Alpha-beta speed: nodes per second in middlegame positions, time to depth from the start.

    python bench/bench_alphabeta.py [--depth 8] [--positions 8]

Middlegame positions come from seeded games of a noisy depth-2 alpha-beta
against itself, 20-40 plies in (after 4 random opening plies), so they look
like positions a game reaches. Each search starts with an empty
transposition table. A "node" is a position visited (a move made), the
quiescence search included. Figures use CPU time of this single-threaded
process (robust to other load on the machine); wall time is printed too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agents.alphabeta.search import AlphaBeta, describe_score  # noqa: E402
from envs import Board, Move  # noqa: E402


def middlegame_positions(count: int, seed: int = 0) -> list[Board]:
    """`count` positions 20-40 plies into noisy depth-2 self-play games (history dropped)."""
    out: list[Board] = []
    g = 0
    while len(out) < count:
        rng = np.random.default_rng([seed, g])
        engine = AlphaBeta(tt_bits=16, noise=60, seed=int(rng.integers(1 << 30)))
        board = Board()
        target = int(rng.integers(20, 41))
        for ply in range(target):
            if board.outcome() is not None:
                break
            if ply < 4:
                legal = board.legal_move_ints()
                board.push(Move.from_int(int(legal[rng.integers(len(legal))])))
            else:
                r = engine.search(board, depth=2)
                assert r.move is not None
                board.push(r.move)
        if board.outcome() is None:
            out.append(Board.from_jfen(board.jfen()))
        g += 1
    return out


def timed_search(board: Board, depth: int) -> tuple[int, float, float, str]:
    engine = AlphaBeta(tt_bits=20)
    c0, w0 = time.process_time(), time.perf_counter()
    r = engine.search(board, depth=depth)
    return r.nodes, time.process_time() - c0, time.perf_counter() - w0, describe_score(r.score)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=8, help="search depth in the middlegame positions")
    parser.add_argument("--positions", type=int, default=8, help="number of middlegame positions")
    args = parser.parse_args()

    t0 = time.perf_counter()
    AlphaBeta(tt_bits=12).search(Board(), depth=2)
    print(f"first search (compile or cache load): {time.perf_counter() - t0:.2f} s")

    print("\nFrom the start position (empty table each time):")
    print(f"  {'depth':>5}  {'nodes':>10}  {'cpu s':>8}  {'wall s':>8}  {'nodes/s':>10}  score")
    for depth in range(1, 10):
        nodes, cpu, wall, score = timed_search(Board(), depth)
        print(f"  {depth:>5}  {nodes:>10}  {cpu:>8.3f}  {wall:>8.3f}  {nodes / max(cpu, 1e-9):>10.0f}  {score}")
        if cpu > 5:
            break

    positions = middlegame_positions(args.positions)
    print(f"\nMiddlegame positions, depth {args.depth}:")
    total_nodes, total_cpu = 0, 0.0
    for board in positions:
        nodes, cpu, wall, score = timed_search(board, args.depth)
        total_nodes += nodes
        total_cpu += cpu
        print(f"  {board.jfen():<44}  {nodes:>9} nodes  {cpu:>7.3f} s  {nodes / max(cpu, 1e-9):>10.0f} n/s  {score}")
    print(
        f"\nmiddlegame: {total_nodes} nodes in {total_cpu:.2f} CPU s = "
        f"{total_nodes / max(total_cpu, 1e-9) / 1e6:.2f} M nodes/s"
    )
    nodes, cpu, wall, _ = timed_search(Board(), 6)
    print(f"expert (6 plies) from the start: {cpu:.3f} CPU s, {wall:.3f} wall s, {nodes} nodes")


if __name__ == "__main__":
    main()

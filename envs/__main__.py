"""Command line for the rules engine: perft and move lists of a JFEN position (or `startpos`, the start).

    python -m envs perft "<jfen>" <depth> [--divide] [--rules NAME] [--rule key=value ...]
    python -m envs moves "<jfen>" [--rules NAME] [--rule key=value ...]
    python -m envs perft startpos 5                  (startpos: the start position, as in UCI)
    python -m envs tablebase build|probe|stats ...   (see envs.tablebase.cli)

`perft` prints the leaf count (with `--divide`: one `move count` line per
root move, sorted, then `total count`); `moves` prints one legal move per
line, sorted. The rule set is `--rules` (a name in `configs/rules/` or a
yaml path; default: `default`) and `--rule` overrides single keys, as in
play.py (`envs.rules.add_rule_arguments`). Bad input prints `error: ...`
and exits with 2; a reader that goes away (`| head`) ends the command quietly.
Installed as the console script `jungle-perft`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Optional, Sequence

from envs.board import MAX_PERFT_DEPTH, Board, perft, perft_divide
from envs.rules import add_rule_arguments, rules_from_arguments
from envs.tablebase import cli as tablebase_cli

EXIT_BAD_INPUT = 2
EXIT_BROKEN_PIPE = 1
"""The exit status when the output's reader went away (Python's own status for an unhandled broken pipe)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m envs",
        description="Jungle rules engine: perft and legal moves of a JFEN position (or startpos).",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def add_position(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "jfen", help='position: a JFEN, e.g. "l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1", or startpos'
        )
        add_rule_arguments(p)

    p_perft = sub.add_parser("perft", help="count the legal move sequences of a given depth")
    add_position(p_perft)
    p_perft.add_argument("depth", type=int, help="plies (>= 0)")
    p_perft.add_argument("--divide", action="store_true", help="print the count under each root move")
    p_perft.add_argument("--time", action="store_true", help="print the elapsed time and rate on stderr")

    p_moves = sub.add_parser("moves", help="list the legal moves, one per line, sorted")
    add_position(p_moves)
    tablebase_cli.add_parser(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input, 1 when the reader of the output
    went away: ``python -m envs moves ... | head -5`` stops quietly, without a BrokenPipeError traceback)."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a broken pipe is met here, not at the interpreter's exit
    except BrokenPipeError:
        # Whatever is still buffered goes to the null device, so Python's own flush at exit says nothing.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE


def _run(argv: Optional[Sequence[str]]) -> int:
    args = _parser().parse_args(argv)
    if args.command == "tablebase":
        return tablebase_cli.run(args)
    try:
        board = Board.from_jfen(args.jfen, rules=rules_from_arguments(args))
        if args.command == "moves":
            for m in sorted(str(m) for m in board.legal_moves):
                print(m)
            return 0
        if not (1 if args.divide else 0) <= args.depth <= MAX_PERFT_DEPTH:
            raise ValueError(f"depth {args.depth} must lie in [{1 if args.divide else 0}, {MAX_PERFT_DEPTH}]")
        t0 = time.perf_counter()
        if args.divide:
            counts = perft_divide(board, args.depth)
            for move in sorted(counts):
                print(f"{move} {counts[move]}")
            total = sum(counts.values())
            print(f"total {total}")
        else:
            total = perft(board, args.depth)
            print(total)
        if args.time:
            dt = time.perf_counter() - t0
            print(f"{total} leaves in {dt:.3f} s ({total / max(dt, 1e-9) / 1e6:.1f} M leaves/s)", file=sys.stderr)
        return 0
    except ValueError as e:  # JFENError, RuleSetError and friends are ValueErrors
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())

"""The ``python -m envs tablebase`` command: build, probe and the statistics of the endgame tables.

    python -m envs tablebase build --pieces 3 [--rules NAME] [--rule key=value ...] [--out DIR]
    python -m envs tablebase probe "<jfen>" [--rules NAME] [--rule key=value ...] [--dir DIR] [--moves]
    python -m envs tablebase stats [--pieces N] [--rules NAME] [--rule key=value ...] [--dir DIR]

`build` solves every material of 2..N pieces and writes one file under DIR
(default: ``$JUNGLE_ZERO_TABLEBASES`` or ``~/.cache/jungle-zero/tablebases``),
with its progress and ETA on stderr and the file, its size and its sha256 on
stdout; a directory it cannot write to is refused before the solve. `probe`
prints the value of a position for the side to move, its distances, the
verdict of the no-capture rule at the JFEN's clock and the best moves
(`--moves`: every move's value). `stats` prints a markdown table per material.
Bad input prints ``error: ...`` and exits with 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Optional

from envs.board import Board
from envs.rules import RuleSet, add_rule_arguments, rules_from_arguments
from envs.tablebase.errors import TablebaseError
from envs.tablebase.index import MAX_PIECES, materials
from envs.tablebase.stats import material_stats, stats_markdown
from envs.tablebase.store import check_table_dir, table_path
from envs.tablebase.table import RESULT_NAMES, Tablebase

EXIT_BAD_INPUT = 2
PROGRESS_EVERY = 2.0
"""Seconds between two progress lines of a build."""


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the `tablebase` command and its subcommands to the `python -m envs` parser."""
    p = sub.add_parser("tablebase", help="build and probe the endgame tablebases (up to 3 pieces)")
    tsub = p.add_subparsers(dest="tablebase_command", required=True)

    build = tsub.add_parser("build", help="solve every material of 2..N pieces and write the tables")
    build.add_argument("--pieces", type=int, default=MAX_PIECES, help=f"pieces on the board, 2..{MAX_PIECES}")
    add_rule_arguments(build)
    build.add_argument("--out", metavar="DIR", help="root directory of the tables (default: the cache directory)")

    probe = tsub.add_parser("probe", help="the tables' value of a position and its best moves")
    probe.add_argument("jfen", help='position, e.g. "6e/7/7/7/7/7/7/7/R6 r 0 1"')
    add_rule_arguments(probe)
    probe.add_argument("--dir", metavar="DIR", help="root directory of the tables (default: the cache directory)")
    probe.add_argument("--moves", action="store_true", help="print every legal move's value too")

    stats = tsub.add_parser("stats", help="a markdown table of every material's figures")
    stats.add_argument("--pieces", type=int, help="only the materials of this many pieces")
    add_rule_arguments(stats)
    stats.add_argument("--dir", metavar="DIR", help="root directory of the tables (default: the cache directory)")


def run(args: argparse.Namespace) -> int:
    """Run a parsed `tablebase` command; returns the exit status (0 ok, 2 bad input)."""
    try:
        rules = rules_from_arguments(args)
        if args.tablebase_command == "build":
            return _build(rules, args.pieces, args.out)
        tb = Tablebase.open(rules, root=args.dir)
        if args.tablebase_command == "probe":
            return _probe(tb, Board.from_jfen(args.jfen, rules=rules), args.moves)
        return _stats(tb, args.pieces)
    except ValueError as e:  # RuleSetError, JFENError, TablebaseError are ValueErrors
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as e:  # the tables could not be written (a full disk...): the directory was checked before
        print(f"error: {e.filename or args.out}: {e.strerror or e}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _build(rules: RuleSet, pieces: int, out: Optional[str]) -> int:
    if not 2 <= pieces <= MAX_PIECES:
        raise ValueError(f"--pieces {pieces} must be in 2..{MAX_PIECES}")
    root = Path(out) if out is not None else None
    target = table_path(rules, pieces, root)
    check_table_dir(target.parent, write=True)  # before the solve, which takes seconds to minutes
    if os.path.lexists(target) and not target.is_file():
        raise TablebaseError(f"tablebase file {str(target)!r} cannot be written: something else is there")
    t0 = time.perf_counter()
    last = [t0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] < PROGRESS_EVERY and done < total:
            return
        last[0] = now
        spent = now - t0
        eta = spent * (total - done) / max(done, 1)
        print(
            f"tablebase: {100 * done / total:5.1f}% ({done:,} of {total:,} positions) in {spent:.1f} s, "
            f"ETA {eta:.0f} s",
            file=sys.stderr,
            flush=True,
        )

    tb = Tablebase.build(rules, pieces, progress=progress)
    path, digest = tb.save(root)
    spent = time.perf_counter() - t0
    size = path.stat().st_size
    print(
        f"wrote {path}: {len(tb.materials)} tables, {int(sum(m.size() for m in tb.materials)):,} positions, "
        f"{size / 1e6:.1f} MB in {spent:.1f} s"
    )
    print(f"sha256 {digest}")
    return 0


def _probe(tb: Tablebase, board: Board, show_moves: bool) -> int:
    p = tb.probe(board)
    print(f"value: {p.describe()}")
    print(f"dtm: {'-' if p.dtm is None else p.dtm}")
    print(f"dtz: {'-' if p.dtz is None else p.dtz}")
    if p.plies_left is None:
        print("clock: no no-capture rule")
    else:
        print(f"clock: {RESULT_NAMES[p.clock_wdl]} ({p.plies_left} plies left)")
    print(f"best moves: {' '.join(str(m) for m in p.best_moves) or '-'}")
    if show_moves:
        for m in sorted(p.moves, key=str):
            v = p.moves[m]
            dist = "" if v.dtm is None else f" dtm {v.dtm} dtz {v.dtz}"
            print(f"{m} {RESULT_NAMES[v.wdl]}{dist} clock {RESULT_NAMES[v.clock_wdl]}")
    return 0


def _stats(tb: Tablebase, pieces: Optional[int]) -> int:
    wanted = set(materials(pieces)) if pieces is not None else None
    rows = [material_stats(tb, m) for m in tb.materials if wanted is None or m in wanted]
    sys.stdout.write(stats_markdown(rows))
    return 0

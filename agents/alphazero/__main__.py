"""Command line of the AlphaZero agent's tools.

    python -m agents.alphazero export <checkpoint or shipped:NAME> --out PATH [--format onnx|torchscript]
    python -m agents.alphazero mine-starts RECORDS.jsonl ... --out FILE [--depth 4] [--margin 300]
        [--plies 0:60] [--player PATTERN ...] [--last N]

`export` writes the checkpoint's network as an ONNX or TorchScript file and its metadata as ``PATH.json``
(`agents.alphazero.net.export`, docs/export.md). Installed as the console script `jungle-export` (the `export`
command alone). `mine-starts` writes the positions of game records where the move played scores more than the
margin below a shallow alpha-beta search's best, a start-position file for ``train.selfplay.starts``
(`agents.alphazero.selfplay.starts`, docs/training.md). Bad input prints one line, ``<command>: error: ...``,
and exits with 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Iterable, NoReturn, Optional, Sequence

EXIT_BAD_INPUT = 2


class _OneLineParser(argparse.ArgumentParser):
    """argparse whose refusals are one line, ``<prog>: error: ...``, without the usage lines above it."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _add_export_arguments(p: argparse.ArgumentParser) -> None:
    from agents.alphazero.net.export import FORMATS

    p.add_argument("checkpoint", help="a checkpoint file, a run directory or name, or shipped:NAME")
    p.add_argument("--out", required=True, help="the file to write; its metadata goes to OUT.json beside it")
    p.add_argument("--format", default="onnx", help=f"{' or '.join(FORMATS)} (default: onnx)")


def _plies(text: str) -> tuple[int, int]:
    first, sep, end = text.partition(":")
    try:
        lo, hi = int(first), int(end)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not FIRST:END (two whole numbers)") from None
    if not sep or not 0 <= lo < hi:
        raise argparse.ArgumentTypeError(f"{text!r} is not FIRST:END with 0 <= FIRST < END")
    return lo, hi


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be at least 1")
    return value


def _add_mine_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("records", nargs="+", help="game record files (JSONL: a run's games.jsonl, a match's games)")
    p.add_argument("--out", required=True, help="the start-position file to write (one JFEN a line)")
    p.add_argument("--depth", type=_positive, default=4, help="alpha-beta's depth in plies (default: 4)")
    p.add_argument("--margin", type=int, default=300, help="evaluation units below the best (default: 300, a Dog)")
    p.add_argument("--plies", type=_plies, default=(0, 60), help="FIRST:END plies of each game (default: 0:60)")
    p.add_argument(
        "--player",
        action="append",
        help="mine only the moves of players whose names match this shell pattern (repeatable; default: all)",
    )
    p.add_argument("--last", type=_positive, help="only the last N games of each file")


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="python -m agents.alphazero", description="The AlphaZero agent's tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_export_arguments(
        sub.add_parser(
            "export", help="export a checkpoint's network to ONNX or TorchScript", description=__doc__.splitlines()[0]
        )
    )
    _add_mine_arguments(
        sub.add_parser(
            "mine-starts",
            help="write the positions where a game's move and a shallow alpha-beta search disagree",
            description="Write the positions of game records where the move played scores more than --margin "
            "below alpha-beta's best at --depth: start positions for train.selfplay.starts.",
        )
    )
    return parser


def _mine(args: argparse.Namespace, prog: str) -> int:
    from collections import deque
    from itertools import chain

    from agents.alphazero.selfplay.starts import mine_starts, write_starts
    from agents.arena.records import GameRecord, read_jsonl

    def games(path: str) -> Iterable[GameRecord]:
        return deque(read_jsonl(path), maxlen=args.last) if args.last else read_jsonl(path)

    if args.margin < 0:
        print(f"{prog}: error: --margin {args.margin} must be >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    header = (
        f"positions where the move played scores more than {args.margin} below alpha-beta's best at depth "
        f"{args.depth}, plies {args.plies[0]}:{args.plies[1]}"
        + (f", moves of {', '.join(args.player)}" if args.player else "")
        + (f", the last {args.last} games of each of" if args.last else ", from")
        + "\n"
        + "\n".join(args.records)
    )
    try:
        found = mine_starts(
            chain.from_iterable(games(path) for path in args.records),
            depth=args.depth,
            margin=args.margin,
            plies=args.plies,
            players=args.player,
            progress=True,
        )
        count = write_starts(args.out, found, header=header)
    except (ValueError, OSError) as e:  # RecordError, a move that does not replay; a failed read or write
        text = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)
        print(f"{prog}: error: {' '.join(text.split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"wrote {count} positions to {args.out}")
    return 0


def _export(args: argparse.Namespace, prog: str) -> int:
    from agents.alphazero.net.export import export_checkpoint, sidecar_path

    try:
        meta = export_checkpoint(args.checkpoint, args.out, args.format)
    except (ValueError, OSError) as e:  # CheckpointError, ExportError, ShippedError; a failed write
        text = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)
        print(f"{prog}: error: {' '.join(text.split())}", file=sys.stderr)
        return EXIT_BAD_INPUT

    def shown(entry: dict) -> str:
        return f"{entry['name']} [{', '.join(map(str, entry['shape']))}]"

    outputs = ", ".join(shown(entry) for entry in meta["outputs"])
    print(f"wrote {args.out} ({args.format}: {shown(meta['input'])} -> {outputs}) and {sidecar_path(args.out)}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m agents.alphazero COMMAND ...` (`export`, `mine-starts`); returns the exit status (0 done, 2 bad
    input)."""
    args = _parser().parse_args(argv)
    if args.command == "mine-starts":
        return _mine(args, "python -m agents.alphazero mine-starts")
    return _export(args, "python -m agents.alphazero export")


def export_main(argv: Optional[Sequence[str]] = None) -> int:
    """The console script `jungle-export`: the `export` command's arguments alone."""
    parser = _OneLineParser(prog="jungle-export", description="Export a checkpoint's network to ONNX or TorchScript.")
    _add_export_arguments(parser)
    return _export(parser.parse_args(argv), "jungle-export")


if __name__ == "__main__":
    sys.exit(main())

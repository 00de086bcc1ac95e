"""Command line of the AlphaZero agent's tools.

    python -m agents.alphazero export <checkpoint or shipped:NAME> --out PATH [--format onnx|torchscript]

`export` writes the checkpoint's network as an ONNX or TorchScript file and its metadata as ``PATH.json``
(`agents.alphazero.net.export`, docs/export.md). Installed as the console script `jungle-export` (the `export`
command alone). Bad input prints one line, ``<command>: error: ...``, and exits with 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn, Optional, Sequence

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


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="python -m agents.alphazero", description="The AlphaZero agent's tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_export_arguments(
        sub.add_parser(
            "export", help="export a checkpoint's network to ONNX or TorchScript", description=__doc__.splitlines()[0]
        )
    )
    return parser


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
    """`python -m agents.alphazero COMMAND ...`; returns the exit status (0 done, 2 bad input)."""
    args = _parser().parse_args(argv)
    return _export(args, "python -m agents.alphazero export")


def export_main(argv: Optional[Sequence[str]] = None) -> int:
    """The console script `jungle-export`: the `export` command's arguments alone."""
    parser = _OneLineParser(prog="jungle-export", description="Export a checkpoint's network to ONNX or TorchScript.")
    _add_export_arguments(parser)
    return _export(parser.parse_args(argv), "jungle-export")


if __name__ == "__main__":
    sys.exit(main())

"""``jungle-engine`` (or ``python -m agents.engine``): any player spec of the kit as an engine of the Jungle
Engine Protocol, on standard input and output (docs/protocol.md).

    jungle-engine --player alphabeta:depth=4
    jungle-engine --player checkpoint:path=shipped:campaign-1084,sims=64 --rules default

A bad ``--player`` or ``--rules`` stops it before it reads a line: ``jungle-engine: error: ...``, exit
status 2. Afterwards nothing it reads stops it but ``quit`` or the end of its input (a bad command is
answered by ``info string error ...``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from agents.common.cli import refuse
from agents.engine.engine import Engine
from envs.rules import add_rule_arguments, rules_from_arguments

PROG = "jungle-engine"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--player", required=True, help="the player spec to serve, e.g. alphabeta:depth=4")
    parser.add_argument("--seed", type=int, default=None, help="the player's seed (noise, random moves)")
    add_rule_arguments(parser)
    return parser


def _write(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Serve the protocol until ``quit`` or the end of the input; 0, or 2 for a bad command line."""
    args = _parser().parse_args(argv)
    try:
        rules = rules_from_arguments(args)
        engine = Engine(args.player, _write, rules=rules, seed=args.seed)
    except ValueError as e:
        refuse(PROG, e)
    try:
        while True:
            line = sys.stdin.readline()
            if not line or not engine.handle(line):
                break
    except KeyboardInterrupt:
        pass
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

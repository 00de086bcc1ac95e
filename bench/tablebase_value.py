"""How well a network's value head knows the endgames: its accuracy on random endgame-table positions.

    python -m envs tablebase build --pieces 3        # once
    python bench/tablebase_value.py                  # every shipped network
    python bench/tablebase_value.py shipped:default-180 checkpoints/my-run/best.pt --positions 5000

For each network and piece count: the share of positions whose raw value
falls in the third of [-1, 1] of the tables' result (above 1/3 a win, within
1/3 of 0 a draw, below -1/3 a loss), the share of won and lost positions whose
value has the result's sign, and the mean absolute error against the exact
value (+1, 0, -1); the positions are random table positions with Red to move
at clock 0 (`agents.alphazero.selfplay.endgames.value_accuracy`, the figures training
logs as ``eval/tablebase_*``). Raw network output only (no search), fp32.
The tables are those of each network's rules in the default location.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "checkpoints",
        nargs="*",
        help="checkpoint files (.pt) or shipped networks (shipped:<name>); default: every shipped network",
    )
    ap.add_argument("--positions", type=int, default=2000, help="random table positions per piece count")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import torch

    from agents.alphazero.net import shipped
    from agents.alphazero.net.checkpoint import load_model, rules_of
    from agents.alphazero.net.runtime import make_evaluator
    from agents.alphazero.selfplay.endgames import value_accuracy
    from envs.tablebase import TablebaseError, default_tablebase

    if args.positions < 1:
        print(f"error: --positions={args.positions} must be >= 1", file=sys.stderr)
        return 2
    paths = args.checkpoints or [net.spec_path for net in shipped.networks()]
    print("| network | pieces | positions | accuracy | sign | mean abs error |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for path in paths:
        try:
            model, state = load_model(path)
            rules = rules_of(state)
            tables = default_tablebase(rules)
        except (TablebaseError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        report = value_accuracy(
            make_evaluator(model, torch.device("cpu"), "fp32"), rules, tables, positions=args.positions, seed=args.seed
        )
        for n in sorted(report.positions):
            print(
                f"| `{path}` | {n} | {report.positions[n]} | {report.accuracy[n]:.1%} | {report.sign[n]:.1%} | "
                f"{report.mae[n]:.3f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

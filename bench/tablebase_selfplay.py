"""What the endgame tables change in self-play's training data: adjudicated games and rescored value targets.

    python -m envs tablebase build --pieces 3        # once
    python bench/tablebase_selfplay.py               # shipped:default-180, 64 games
    python bench/tablebase_selfplay.py checkpoints/my-run/best.pt --games 128 --simulations 32

Plays the same self-play games (same seed, the network's own search settings) three times: with both
switches off, with `train.selfplay.tablebase_rescore` (the same games; the value targets of positions the
tables hold become their exact values) and with `train.selfplay.tablebase_adjudicate` (a game ends at its
first position the tables hold with a known result). Prints, for each: games, positions, mean length,
the games ended by the tables, and how many value targets the tables changed and how many of those
changed sign. fp32, one torch thread, on the CPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from dataclasses import replace
from typing import Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", nargs="?", default="shipped:default-180", help="a .pt file or shipped:<name>")
    ap.add_argument("--games", type=int, default=64, help="self-play games per setting")
    ap.add_argument("--simulations", type=int, default=32, help="search simulations a move")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import numpy as np
    import torch

    from agents.alphazero.net.checkpoint import load_model, rules_of, stored_mcts
    from agents.alphazero.net.runtime import make_evaluator
    from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
    from envs.tablebase import TablebaseError, default_tablebase

    torch.set_num_threads(1)
    model, state = load_model(args.checkpoint)
    rules = rules_of(state)
    try:
        default_tablebase(rules)
    except TablebaseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    mcts = replace(stored_mcts(state.get("config", ""), str(args.checkpoint)), num_simulations=args.simulations)
    evaluator = make_evaluator(model, "cpu", "fp32")
    base = SelfPlayConfig(parallel=min(64, args.games))
    settings = {
        "off": base,
        "rescore": dataclasses.replace(base, tablebase_rescore=True),
        "adjudicate": dataclasses.replace(base, tablebase_adjudicate=True),
    }
    print(f"{args.checkpoint}: {args.games} self-play games, {mcts.algorithm} {mcts.num_simulations} simulations")
    print("| switch | games | positions | mean plies | ended by the tables | value targets changed | of them, sign |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    values_off = None
    for name, s in settings.items():
        t0 = time.perf_counter()
        data = play_games(evaluator, s, mcts=mcts, rules=rules, num_games=args.games, seed=args.seed)
        st = data.stats
        changed = signs = "-"
        if name == "off":
            values_off = data.value.copy()
        elif name == "rescore" and values_off is not None and len(values_off) == len(data.value):
            diff = ~np.isclose(values_off, data.value)
            changed = str(int(diff.sum()))
            signs = str(int((np.sign(values_off[diff]) != np.sign(data.value[diff])).sum()))
        ended = st.terminations.get("tablebase", 0)
        print(
            f"| {name} | {st.games} | {st.positions} | {st.mean_length:.1f} | {ended} | {changed} | {signs} |"
            f"  ({time.perf_counter() - t0:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

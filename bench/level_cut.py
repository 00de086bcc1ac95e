"""What `train.selfplay.level_plies` would end in a run's self-play: games, plies saved, and the games it would have
cut short that went on to a win.

    python bench/level_cut.py runs/my-run/latest.pt                      # 64 games, the run's own self-play
    python bench/level_cut.py runs/my-run/latest.pt --games 128 --plies 80 120 --window 10 20 --margin 0.05 0.1

Plays self-play games as the checkpoint's run plays them (its `train.selfplay` settings, its search, its rule
mix; the same seed gives the same games), with the level rule off and without playout caps or opponent games (so
that every position is fully searched by the network), and keeps every searched position's root value.
Then, for each setting of the grid (`level_plies`, `level_window`, `level_margin`), it finds where the rule would
have ended each game (`level_reached` at each ply from `level_plies` on, as self-play checks it) and prints: the
games it ends; the share of all positions played that it saves; how the games it ends did end (cut at the ply
cap, a draw by the rules, or a win: the rule's false positives, which would train as level); and the mean root
value (from Red) over the last positions before the cut of the games that went on to a win, signed toward the
winner (near 0: the search saw nothing coming). fp32, one torch thread, on the CPU. Figures only.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", help="a training run's .pt file (its stored config gives the self-play settings)")
    ap.add_argument("--games", type=int, default=64, help="self-play games")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plies", type=int, nargs="+", default=[80, 100, 120], help="level_plies values")
    ap.add_argument("--window", type=int, nargs="+", default=[10, 20], help="level_window values")
    ap.add_argument("--margin", type=float, nargs="+", default=[0.05, 0.1, 0.2], help="level_margin values")
    args = ap.parse_args(argv)
    import numpy as np
    import torch

    from agents.alphazero.net.checkpoint import load_model, rules_of
    from agents.alphazero.net.runtime import make_evaluator
    from agents.alphazero.selfplay.games import play_games
    from agents.alphazero.selfplay.rules_mix import parse_rules_mix
    from agents.alphazero.training.config import checked_config, resumed_config

    torch.set_num_threads(1)
    model, state = load_model(args.checkpoint)
    cfg = checked_config(resumed_config(state["config"], Path(args.checkpoint), []))
    # Root values as the rows' value targets: the value targets change, the games do not.
    settings = dataclasses.replace(
        cfg.train.selfplay, value_q_weight=1.0, truncated_value="draw", draw_keep=1.0, cut_keep=None,
        draw_policy=0.0, level_plies=0, playout_cap_fraction=0.0, opponent_fraction=0.0, tablebase_rescore=False,
    )  # fmt: skip
    mix = parse_rules_mix(cfg.train.rules_mix) if cfg.train.rules_mix else []
    evaluator = make_evaluator(model, "cpu", "fp32")
    t0 = time.perf_counter()
    data = play_games(
        evaluator, settings, mcts=cfg.mcts, rules=rules_of(state), num_games=args.games, seed=args.seed,
        rules_mix=mix, progress=True,
    )  # fmt: skip
    print(
        f"{args.checkpoint}: {args.games} self-play games ({time.perf_counter() - t0:.0f} s), "
        f"{len(data)} positions, {cfg.mcts.algorithm} {cfg.mcts.num_simulations} simulations, "
        f"max_plies {settings.max_plies}; endings: {dict(sorted(data.stats.terminations.items()))}"
    )
    starts = np.concatenate([[0], np.cumsum([len(r.moves) for r in data.records])])
    games = [(r, data.value[starts[i] : starts[i + 1]]) for i, r in enumerate(data.records)]
    print(
        "| level_plies | level_window | level_margin | games ended | positions saved "
        "| of them: ply cap / rules draw / win | win games' value before the cut |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for plies, window, margin in itertools.product(args.plies, args.window, args.margin):
        rule = dataclasses.replace(settings, level_plies=plies, level_window=window, level_margin=margin)
        t = tally(games, rule)
        mean = f"{np.mean(t.toward):+.3f}" if t.toward else "-"
        print(
            f"| {plies} | {window} | {margin} | {t.ended} of {len(games)} | {t.saved / max(len(data), 1):.1%} | "
            f"{t.cut} / {t.drawn} / {t.won} | {mean} |"
        )
    return 0


@dataclasses.dataclass
class Tally:
    """What the level rule would end among a set of played games."""

    cut: int = 0
    """Games it ends that were cut at the ply cap."""
    drawn: int = 0
    """Games it ends that were drawn by the rules."""
    won: int = 0
    """Games it ends that went on to a win (its false positives)."""
    saved: int = 0
    """Positions the games it ends would not have played."""
    toward: list[float] = dataclasses.field(default_factory=list)
    """For each won game it ends: the mean root value from Red over its last `level_window` positions before the
    cut, signed toward the winner."""

    @property
    def ended(self) -> int:
        return self.cut + self.drawn + self.won


def tally(games: Sequence[tuple[Any, Any]], rule: Any) -> Tally:
    """Where `rule` (a `SelfPlayConfig` with `level_plies` > 0) would have ended each of `games` ((record, root
    values from each position's side to move) pairs, played without it), as self-play checks it."""
    import numpy as np

    from agents.alphazero.selfplay.games import level_reached

    t = Tally()
    for record, values in games:
        cut = next((p for p in range(rule.level_plies, len(values)) if level_reached(values, p, rule)), None)
        if cut is None:
            continue
        t.saved += len(values) - cut
        if record.termination == "ply_cap":
            t.cut += 1
        elif record.result == "1/2-1/2":
            t.drawn += 1
        else:
            t.won += 1
            red_to_move = (np.arange(cut) % 2 == 0) == (record.start.split()[1] == "r")
            red = np.where(red_to_move, values[:cut], -values[:cut])[-rule.level_window :]
            t.toward.append(float(red.mean()) * (1.0 if record.result == "1-0" else -1.0))
    return t


if __name__ == "__main__":
    raise SystemExit(main())

"""How often a player still falls into the holes of a start-position file: its move on each position, scored by a
shallow alpha-beta search.

    python bench/holes.py --starts holes.txt 'checkpoint:path=runs/a/latest.pt,sims=128' \
        'checkpoint:path=runs/b/latest.pt,sims=128' [--depth 4] [--margin 300] [--json holes.json]

The file is one of ``python -m agents.alphazero mine-starts``: positions where some player's move scored more than
a margin below alpha-beta's best (docs/training.md, "Start positions"). Each player (a spec of envs/players.py)
chooses a move on every position, from a fresh game (no history before it); the move is a hole again when it
scores more than `--margin` below alpha-beta's best at `--depth` plies, as the miner judged it
(`agents.alphazero.selfplay.starts.move_deficit`), under the rule set its line's ``rules=`` tag names (the default
rules untagged; a tagged file is also counted by rule set). Printed per player: the positions, the holes, their
share with a 95% Wilson interval, and the mean deficit; then each player against the first on the same positions
(paired): the positions only one of the two falls into, and McNemar's exact two-sided p of that split. Mine the
file from other games than those of the run being measured when it trains on starts (a held-out file), or the
figure measures memory.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agents.alphabeta.search import AlphaBeta  # noqa: E402
from agents.alphazero.selfplay.starts import load_starts, move_deficit, split_start, start_rules  # noqa: E402
from agents.common.io import atomic_write_text  # noqa: E402
from envs import Board, RuleSet  # noqa: E402
from envs.players import make_player  # noqa: E402


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson interval of a share k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, mid - half), min(1.0, mid + half)


def measure(spec: str, positions: tuple[str, ...], depth: int, margin: int, rules: RuleSet) -> dict[str, Any]:
    """One player's holes on `positions`, each under its line's rules tag (`split_start`; untagged: `rules`)."""
    tagged = start_rules(positions, None)
    players: dict[Optional[str], Any] = {}
    engines: dict[Optional[str], AlphaBeta] = {}
    holes, deficits, names, t0 = 0, [], [], time.perf_counter()
    for i, line in enumerate(positions, 1):
        jfen, name = split_start(line)
        here = tagged[name] if name is not None else rules
        if name not in players:  # one player and one alpha-beta a rule set
            players[name] = make_player(spec, rules=here, seed=0)
            engines[name] = AlphaBeta(here, tt_bits=18)
        player, engine = players[name], engines[name]
        board = Board.from_jfen(jfen, rules=here)
        player.reset()
        move = player.select_move(board)
        engine.clear()
        _, deficit = move_deficit(engine, board, move, depth)
        deficits.append(deficit)
        names.append(name)
        holes += deficit > margin
        if i % 100 == 0:
            seconds = time.perf_counter() - t0
            print(f"  {spec}: {i}/{len(positions)} positions, {holes} holes, {seconds:.0f}s", flush=True)
    lo, hi = wilson(holes, len(positions))
    by_rules: dict[str, list[int]] = {}
    for name, deficit in zip(names, deficits):
        counts = by_rules.setdefault(name or "untagged", [0, 0])
        counts[0] += deficit > margin
        counts[1] += 1
    return {
        "player": spec,
        "positions": len(positions),
        "holes": holes,
        "share": holes / len(positions),
        "interval": [lo, hi],
        "mean_deficit": sum(deficits) / len(deficits),
        "deficits": deficits,
        "by_rules": {name: {"holes": k, "positions": n} for name, (k, n) in by_rules.items()},
        "seconds": time.perf_counter() - t0,
    }


def mcnemar(only_a: int, only_b: int) -> float:
    """McNemar's exact two-sided p: how likely a split at least this uneven of the positions where exactly one
    of two players falls in, if each were as likely to be the one (a binomial test at 1/2)."""
    n, k = only_a + only_b, min(only_a, only_b)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def paired(first: dict[str, Any], other: dict[str, Any], margin: int) -> tuple[int, int, float]:
    """(positions only `other` falls into, positions only `first` falls into, McNemar's p)."""
    a = [d > margin for d in first["deficits"]]
    b = [d > margin for d in other["deficits"]]
    only_b = sum(1 for x, y in zip(a, b) if y and not x)
    only_a = sum(1 for x, y in zip(a, b) if x and not y)
    return only_b, only_a, mcnemar(only_a, only_b)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("players", nargs="+", help="player specs (envs/players.py), e.g. checkpoint:path=X,sims=128")
    p.add_argument("--starts", required=True, help="a start-position file (python -m agents.alphazero mine-starts)")
    p.add_argument("--depth", type=int, default=4, help="alpha-beta's depth in plies (default: 4)")
    p.add_argument("--margin", type=int, default=300, help="evaluation units below the best (default: 300)")
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args()
    if args.depth < 1 or args.margin < 0:
        p.error(f"--depth {args.depth} must be >= 1 and --margin {args.margin} >= 0")
    positions = load_starts(args.starts)
    rules = RuleSet()
    rows = []
    print(f"{len(positions)} positions of {args.starts}; alpha-beta depth {args.depth}, margin {args.margin}")
    for spec in args.players:
        rows.append(measure(spec, positions, args.depth, args.margin, rules))
    print(f"\n{'player':<60} {'holes':>11} {'share':>6} {'95% interval':>14} {'mean deficit':>13}")
    for r in rows:
        lo, hi = r["interval"]
        print(
            f"{r['player']:<60} {r['holes']:>5}/{r['positions']:<5} {r['share']:>6.3f} "
            f"{f'[{lo:.3f}, {hi:.3f}]':>14} {r['mean_deficit']:>13.0f}"
        )
    if any(len(r["by_rules"]) > 1 for r in rows):
        print("\nby rule set (the lines' rules= tags): holes / positions")
        for r in rows:
            cells = ", ".join(f"{name} {c['holes']}/{c['positions']}" for name, c in sorted(r["by_rules"].items()))
            print(f"{r['player']}: {cells}")
    for r in rows[1:]:
        only, first_only, pvalue = paired(rows[0], r, args.margin)
        print(
            f"{r['player']}: {only} positions it alone falls into, {first_only} only {rows[0]['player']} does "
            f"(McNemar p {pvalue:.3f})"
        )
    if args.json:
        atomic_write_text(args.json, json.dumps({"starts": args.starts, "depth": args.depth, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()

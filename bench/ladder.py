"""Strength ladder of the alpha-beta levels: each level against the next, rated together.

    python bench/ladder.py [--games 100] [--max-depth 6] [--workers 2] [--seed 0] [--out runs/ladder]

Players, weakest first: `random`, `alphabeta:level=beginner` (1 ply, 20%
random moves), then `alphabeta:depth=d` for d = 1 .. max-depth (`normal` is
depth 3, `expert` depth 6). Neighbours play `--games` games each as
colour-swapped pairs from seeded 4-ply random openings; one Bradley–Terry fit
over all games gives Elo with 95% intervals (anchor: random = 0), and each
pairing gets W/D/L, the Elo difference and the sign-test p-value of "the
deeper level is stronger". Writes the usual tournament files to --out.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agents.arena.settings import TournamentSettings  # noqa: E402
from agents.arena.tournament import run_tournament  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100, help="games per pairing (colour-swapped pairs)")
    parser.add_argument("--min-depth", type=int, default=1, help="shallowest explicit depth on the ladder")
    parser.add_argument("--max-depth", type=int, default=6, help="deepest explicit depth on the ladder")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-random", action="store_true", help="leave out random and beginner")
    parser.add_argument("--out", default="runs/ladder", help="output directory")
    args = parser.parse_args()

    players = [] if args.no_random else ["random", "alphabeta:level=beginner"]
    players += [f"alphabeta:depth={d}" for d in range(args.min_depth, args.max_depth + 1)]
    result = run_tournament(
        players,
        TournamentSettings(
            games_per_pair=args.games, seed=args.seed, mode="ladder", opening_plies=4, anchor=players[0]
        ),
        workers=args.workers,
    )
    print(result.table())
    print("Ladder steps (the stronger-looking side first):")
    for p in result.pairings:
        up = result.pair(p.b, p.a)  # the later (deeper) player's view
        print(
            f"  {up.a:>22} vs {up.b:<22} W-D-L {up.wins}-{up.draws}-{up.losses}  score {up.score:.3f}  "
            f"Elo {up.elo_diff:+.0f} [{up.elo_low:+.0f}, {up.elo_high:+.0f}]  p {up.p_value:.2g}"
        )
    paths = result.write(args.out)
    print("wrote " + ", ".join(str(p) for p in paths.values()))


if __name__ == "__main__":
    main()

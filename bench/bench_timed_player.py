"""Simulations a move of checkpoint players searching by time, side by side on the same positions.

    python bench/bench_timed_player.py          # the shipped strongest network: the old and the new settings
    python bench/bench_timed_player.py --moves 30 \\
        "checkpoint:path=shipped:campaign-1084,time=0.5,leaf_batch=8,cache=0" \\
        "checkpoint:path=shipped:campaign-1084,time=0.5,leaf_batch=16"

The players follow one recorded game (a gauntlet's games.jsonl, by default the first game of
campaign-1084's equal-time match) and each searches every position from ply 4 on, in turn, so every
player sees the same positions, in the order of a game (an evaluation cache or a kept tree carries over
from move to move as in a match), and the machine's load falls on all alike. For each player: mean
simulations a move, CPU seconds a move (a search by time spends its wall-clock budget; a busy machine
gives it less CPU), simulations per CPU second, and the cache's hit rate where it has one; then each
player's simulations per CPU second against the first's. Figures only, no assertions.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agents.alphazero.player.player import CheckpointPlayer  # noqa: E402
from agents.arena.records import read_jsonl  # noqa: E402
from envs import Board, RuleSet  # noqa: E402
from envs.players import make_player  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GAMES = ROOT / "checkpoints" / "campaign-e13" / "gauntlets" / "iter_001084-t05-t05" / "games.jsonl"
DEFAULT_PLAYERS = (
    "checkpoint:path=shipped:campaign-1084,time=0.5,leaf_batch=8,cache=0,precision=fp32",
    "checkpoint:path=shipped:campaign-1084,time=0.5,leaf_batch=8",
    "checkpoint:path=shipped:campaign-1084,time=0.5,leaf_batch=16",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("players", nargs="*", default=list(DEFAULT_PLAYERS), help="checkpoint player specs")
    ap.add_argument("--games", type=Path, default=GAMES, help="a games.jsonl whose first game is followed")
    ap.add_argument("--game", type=int, default=0, help="which line of --games")
    ap.add_argument("--moves", type=int, default=40, help="positions searched (plies 4 on)")
    args = ap.parse_args()
    record = next(itertools.islice(read_jsonl(args.games), args.game, None), None)
    if record is None:
        raise SystemExit(f"{args.games} holds no game {args.game}")
    players = []
    for spec in args.players:
        player = make_player(spec)
        if not isinstance(player, CheckpointPlayer):
            raise SystemExit(f"{spec!r} is not a checkpoint player")
        players.append(player)
    board = Board.from_jfen(record.start, rules=RuleSet.from_dict(record.rules))
    for player in players:  # warm-up: compilation and the first allocations
        player.select_move(board)
        player.reset()
        if player.cache is not None:
            player.cache.clear()
    sims = [0] * len(players)
    cpu = [0.0] * len(players)
    searched = 0
    for ply, move in enumerate(record.moves):
        if searched == args.moves:
            break
        if ply >= 4 and not board.is_game_over():
            for i, player in enumerate(players):
                t0 = time.process_time()
                player.select_move(board)
                cpu[i] += time.process_time() - t0
                sims[i] += player.last_simulations
            searched += 1
        board.push(move)
    print(f"{searched} positions of game {args.game} of {args.games}; per move:")
    for i, (spec, player) in enumerate(zip(args.players, players)):
        cache = player.cache
        hits = f", cache hits {cache.hits / max(cache.hits + cache.misses, 1):.0%}" if cache is not None else ""
        print(
            f"  {sims[i] / searched:7.0f} simulations in {cpu[i] / searched:.3f} CPU s "
            f"({sims[i] / cpu[i]:6.0f} per CPU s, x{sims[i] * cpu[0] / (cpu[i] * sims[0]):.2f}{hits})  {spec}"
        )


if __name__ == "__main__":
    main()

"""Tournaments and ratings: play players against each other and rate them (Hydra entry point).

    python evaluate.py                                              # random vs beginner vs normal, 20 games a pair
    python evaluate.py 'players=[random,"alphabeta:depth=2","alphabeta:depth=4"]' games_per_pair=40 workers=2
    python evaluate.py mode=gauntlet 'players=["checkpoint:path=checkpoints/best.pt,sims=200",random,"alphabeta:level=expert"]'
    python evaluate.py openings=my_openings.txt seed=3 out_dir=runs/eval/try1

Writes to `out_dir`: results.json, ratings.csv, pairings.csv, games.jsonl
(one GameRecord per game) and crosstable.png (when Pillow is installed), and
prints the table. The same seed replays the same games. Bad input (an
unknown player spec, a missing checkpoint, a malformed openings file, an
unknown config key) stops with one clear message before any game.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Optional

import hydra
from hydra.core.config_store import ConfigStore

from envs.config import SCHEMA


@dataclass
class EvaluateConfig:
    """Settings of one tournament (configs/evaluate/evaluate.yaml holds the defaults)."""

    players: list[str] = field(default_factory=lambda: ["random", "alphabeta:level=beginner", "alphabeta:level=normal"])
    """Player specs: `random`, `alphabeta:depth=4`, `alphabeta:level=expert`, `alphabeta:time=0.5`,
    `checkpoint:path=...,sims=200` (see agents/players.py). Names must be distinct."""
    mode: str = "round_robin"
    """`round_robin` (every pair meets), `gauntlet` (the first player meets each of the others) or
    `ladder` (each player meets the next in the list)."""
    games_per_pair: int = 20
    """Games per pairing, played as colour-swapped pairs from the same opening."""
    seed: int = 0
    """Decides openings and player seeds: the same seed replays the same games."""
    workers: int = 2
    """Worker processes playing games at once (0 or 1: in this process)."""
    opening_plies: int = 4
    """Random plies from the start position that make each opening (ignored with `openings`)."""
    openings: Optional[str] = None
    """Openings file: one JFEN, move list, or `JFEN | moves` per line (cycled if short)."""
    max_plies: int = 600
    """Moves per game after the opening before it is scored a draw (`ply_cap`)."""
    rules: str = "default"
    """Rule set: a name in configs/rules (`dog_over_wolf`, ...) or a yaml file path."""
    anchor: Optional[str] = None
    """The player rated 0 Elo (default: the first player)."""
    prior_games: float = 1.0
    """Virtual drawn games per played pairing that keep a clean sweep's rating finite (0: none)."""
    out_dir: str = "runs/evaluate/${now:%Y-%m-%d_%H-%M-%S}"
    """Where the result files go (Hydra also writes its .hydra/ config record there)."""
    progress: bool = True
    """Show a progress bar (games done, W/D/L of the first player, ETA)."""
    image: bool = True
    """Also write crosstable.png (needs Pillow; skipped without it)."""
    start_method: str = "spawn"
    """multiprocessing start method for the workers: `spawn`, `forkserver` or `fork`."""


ConfigStore.instance().store(name=SCHEMA, node=EvaluateConfig)  # configs/evaluate/evaluate.yaml starts from it


@hydra.main(version_base=None, config_path="configs/evaluate", config_name="evaluate")
def main(cfg: EvaluateConfig) -> None:
    from envs.rules import load_rules
    from agents.arena.tournament import run_tournament

    try:
        rules = load_rules(cfg.rules)
        result = run_tournament(
            list(cfg.players),
            games_per_pair=cfg.games_per_pair,
            seed=cfg.seed,
            workers=cfg.workers,
            mode=cfg.mode,
            rules=rules,
            opening_plies=cfg.opening_plies,
            openings=cfg.openings,
            max_plies=cfg.max_plies,
            anchor=cfg.anchor,
            prior_games=cfg.prior_games,
            progress=cfg.progress,
            start_method=cfg.start_method,
        )
    except ValueError as e:  # PlayerSpecError, OpeningsError, TournamentError, RuleSetError, RatingError
        print(f"evaluate.py: error: {e}", file=sys.stderr)
        sys.exit(2)
    print(result.table())
    paths = result.write(cfg.out_dir, image=cfg.image)
    print("wrote " + ", ".join(str(p) for p in paths.values()))


if __name__ == "__main__":
    main()

"""What a network's value head thinks a piece is worth: the value lost by the side missing each animal.

    python bench/probe_value.py shipped:results-only-60 shipped:opponents-60

For each animal, the start position without that animal of one colour is
evaluated with either side to move; the drop in the value of the side
missing it (its own view, against the full start position with the same side
to move) is averaged over both colours and both sides to move. A network that
has learned what material is worth loses much for the Elephant or Lion and
little for the Rat; one that has not shows drops near 0. The last rows give
the raw values of the start position with Red and with Blue to move (a large
gap is a bias by colour the canonical frame should not have).
Raw network output only (no search), fp32.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envs import kernels as K  # noqa: E402
from envs.notation import START_JFEN  # noqa: E402
from envs.rules import RuleSet  # noqa: E402

Evaluator = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def without(jfen: str, letter: str, side: str) -> str:
    """`jfen` with the piece `letter` (case gives the colour; "" removes none) removed, `side` ('r'/'b') to move."""
    placement, _, clock, moveno = jfen.split()
    rows = []
    for row in placement.split("/"):
        cells = "".join("." * int(ch) if ch.isdigit() else ch for ch in row)
        if letter:
            cells = cells.replace(letter, ".")
        out, run = "", 0
        for ch in cells:
            if ch == ".":
                run += 1
                continue
            out += (str(run) if run else "") + ch
            run = 0
        rows.append(out + (str(run) if run else ""))
    return f"{'/'.join(rows)} {side} {clock} {moveno}"


def values(evaluator: Evaluator, jfens: Sequence[str], rules: RuleSet) -> np.ndarray:
    """The evaluator's values (side to move's view) of `jfens`."""
    from envs.batch import GameBatch

    games = GameBatch(len(jfens), rules)
    for i, jfen in enumerate(jfens):
        games.reset(i, jfen)
    _, v = evaluator(games.observations(), games.masks())
    return np.asarray(v, dtype=np.float64).reshape(-1)


def probe(evaluator: Evaluator, rules: RuleSet = RuleSet()) -> dict[str, float]:
    """Value drop of the side missing each animal (keys: animal names), plus ``start, Red to move`` and
    ``start, Blue to move`` (raw values)."""
    base = values(evaluator, [without(START_JFEN, "", "r"), without(START_JFEN, "", "b")], rules)
    out: dict[str, float] = {}
    for animal in range(1, 9):
        drops = []
        for upper, colour in ((True, "r"), (False, "b")):
            letter = K.ANIMAL_LETTERS[animal] if upper else K.ANIMAL_LETTERS[animal].lower()
            v = values(evaluator, [without(START_JFEN, letter, "r"), without(START_JFEN, letter, "b")], rules)
            # The missing side's view: its own value when it moves, minus the opponent's when that one moves.
            own, opp = (0, 1) if colour == "r" else (1, 0)
            drops.append(v[own] - base[own])
            drops.append(-v[opp] + base[opp])
        out[K.ANIMAL_NAMES[animal]] = float(np.mean(drops))
    out["start, Red to move"] = float(base[0])
    out["start, Blue to move"] = float(base[1])
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="+", help="checkpoint files (.pt) or shipped networks (shipped:<name>)")
    args = ap.parse_args(argv)
    import torch

    from agents.alphazero.net.checkpoint import load_model, rules_of
    from agents.alphazero.net.runtime import make_evaluator

    columns = []
    for path in args.checkpoints:
        model, state = load_model(path)
        columns.append(probe(make_evaluator(model, torch.device("cpu"), "fp32"), rules_of(state)))
    names = [
        p if p.startswith("shipped:") else os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p)
        for p in args.checkpoints
    ]
    print("| value drop of the side missing | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for key in columns[0]:
        print(f"| {key} | " + " | ".join(f"{c[key]:+.2f}" for c in columns) + " |")


if __name__ == "__main__":
    main()

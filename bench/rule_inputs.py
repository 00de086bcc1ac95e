"""Whether a network reads the rule planes: its value and policy on positions where the rule sets differ.

    python bench/rule_inputs.py --checkpoint checkpoints/<run>/latest.pt [--json rule_inputs.json]

Each position of `PROBES` is drawn so that one or two rule sets change what its side to move may do: a
capture the variant makes legal (a river rat taking a bank rat, a Lion jumping over its own rat, a trapped
piece taking, a Dog taking a Wolf), a move it makes illegal (the 7-3 anti-chase rule) or a move whose
result it changes (a third repetition, the no-capture limit). The engine checks every position first:
it must be legal, and the one-ply facts (the legal moves and the result after each) must differ from the
default rules' under exactly the rule sets the position names (`PositionError` otherwise), so a wrong
position is caught rather than measured.

Then the network is evaluated directly, without search, under each rule set (`RULE_SETS` and the
position's own extras, whether or not the checkpoint was trained on them): its value (side to move), the
prior of the position's key move with the legal moves of that rule set as the mask (what the search
gets; 0 when the move is illegal there), the same prior with one mask shared by all rule sets of the
position (the legal moves under any of them: the inputs alone change, so a difference is the network
reading the rule planes), and its top move. The masked training loss gives the logits of moves illegal
under a game's rules no signal, so the shared-mask prior of a move the variant forbids says little; the
value and the prior of a move the variant allows are the measurement. fp32, CPU.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envs import kernels as K  # noqa: E402
from envs.board import Board  # noqa: E402
from envs.encoding import move_to_action  # noqa: E402
from envs.notation import Move, Side  # noqa: E402
from envs.rules import RuleSet, load_rules  # noqa: E402

Evaluator = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]

RULE_SETS = ("default", "keeps_rank", "enemy_rat", "rats_ignore_water", "dog_over_wolf", "anti_chase")
"""The rule sets every position is evaluated under (those of the multi-variant mix)."""


class PositionError(ValueError):
    """A probe position that is not legal or does not show the difference it names."""


@dataclass(frozen=True)
class Probe:
    """A position (a JFEN and the moves played from it) whose one-ply facts differ under the rule sets
    `differs`, shown by its `key` move; `extra` are rule sets evaluated besides `RULE_SETS`."""

    name: str
    jfen: str
    moves: tuple[str, ...]
    key: str
    differs: tuple[str, ...]
    extra: tuple[str, ...] = ()

    def rule_sets(self) -> tuple[str, ...]:
        return RULE_SETS + tuple(r for r in self.extra if r not in RULE_SETS)


PROBES = (
    Probe(
        "river rat beside a bank rat",
        "l5t/1d3c1/2p1w1e/7/rR5/7/E1W1P2/1C3D1/T5L r 0 1",
        (),
        "b5a5",
        ("rats_ignore_water",),
    ),
    Probe(
        "Lion jump over its own rat",
        "l5t/1d3c1/r1p3e/7/3w1RL/7/E1W1P2/1C3D1/T6 r 0 1",
        (),
        "g5d5",
        ("enemy_rat",),
    ),
    Probe(
        "Leopard in the enemy trap beside a Cat",
        "l5t/1d1Pc2/r1p1w1e/7/7/7/E1W3R/1C3D1/T5L r 0 1",
        (),
        "d8e8",
        ("keeps_rank",),
    ),
    Probe(
        "Dog facing a Wolf",
        "l5t/1d3c1/r1p3e/3w3/3D3/7/E1W1P1R/1C5/T5L r 0 1",
        (),
        "d5d6",
        ("dog_over_wolf",),
    ),
    Probe(
        "third repetition, Red two pieces down",
        "l5t/1d3c1/r1p1w1e/7/7/7/2W1P1R/1C3D1/T6 b 0 1",
        ("a9a8", "a1a2", "a8a9", "a2a1", "a9a8", "a1a2", "a8a9"),
        "a2a1",
        ("no_repetition",),
        ("no_repetition",),
    ),
    Probe(
        "Tiger's fourth entry in seven moves (7-3)",
        "l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1",
        ("a1a2", "g7g6", "a2a1", "c7d7", "a1a2", "e7e8", "a2a1", "d7d6", "a1a2", "g6g5", "a2a1", "b8b7"),
        "a1a2",
        ("anti_chase",),
    ),
    Probe(
        "119 plies without capture, Red two pieces up",
        "6t/1d3c1/r1p1w2/7/7/7/E1W1P1R/1C3D1/T5L r 119 60",
        (),
        "a3a4",
        ("hundred_rounds",),
        ("hundred_rounds",),
    ),
)


def probe_board(probe: Probe, rules: RuleSet) -> Board:
    """The probe's position under `rules`: its JFEN with its moves pushed (IllegalMoveError naming a move
    not legal there)."""
    board = Board.from_jfen(probe.jfen, rules=rules)
    for move in probe.moves:
        board.push(move)
    return board


def _result(board: Board, mover: Side) -> str:
    """The result after a move by `mover`: '' while the game goes on, else e.g. 'wins (den)'."""
    over = board.outcome()
    if over is None:
        return ""
    verb = "draws" if over.winner is None else ("wins" if over.winner == mover else "loses")
    return f"{verb} ({over.termination.name.lower().replace('_', ' ')})"


def one_ply_facts(board: Board) -> dict[str, str]:
    """Every legal move of `board` and the result after it ('' when the game goes on)."""
    mover = board.side_to_move
    facts = {}
    for move in board.legal_moves:
        board.push(move)
        facts[str(move)] = _result(board, mover)
        board.pop()
    return facts


def move_status(board: Board, move: str) -> str:
    """`move` in `board` in words: 'illegal', or 'legal' with what it takes and how the game ends."""
    if not board.is_legal(move):
        return "illegal"
    target = board.piece_at(Move.from_str(move).to_square)
    parts = ["legal"] + ([f"takes the {K.ANIMAL_NAMES[target.animal]}"] if target is not None else [])
    board.push(move)
    result = _result(board, board.side_to_move.other)
    board.pop()
    return ", ".join(parts + ([result] if result else []))


def check_probe(probe: Probe) -> dict[str, Board]:
    """The probe's Board under each of its rule sets, after checking with the engine that it is legal, not
    over, and that its one-ply facts and its key move differ from the default rules' under exactly
    `probe.differs`; PositionError naming the position and what is wrong."""
    boards: dict[str, Board] = {}
    for name in ("default",) + probe.rule_sets():
        try:
            boards[name] = probe_board(probe, load_rules(name))
        except ValueError as e:
            raise PositionError(f"position {probe.name!r} under {name}: {e}") from None
    for name, board in boards.items():
        if board.outcome() is not None:
            over = _result(board, board.side_to_move.other)
            raise PositionError(
                f"position {probe.name!r} under {name}: the game is already over (the last move {over})"
            )
    base = boards["default"]
    facts = {name: one_ply_facts(b) for name, b in boards.items()}
    differ = tuple(name for name in boards if facts[name] != facts["default"])
    if sorted(differ) != sorted(probe.differs):
        raise PositionError(
            f"position {probe.name!r}: its moves differ from the default rules' under "
            f"{', '.join(differ) or 'no rule set'}, not under {', '.join(probe.differs)} as it says"
        )
    base_key = move_status(base, probe.key)
    for name in probe.differs:
        if move_status(boards[name], probe.key) == base_key:
            raise PositionError(
                f"position {probe.name!r}: its key move {probe.key} is the same under {name} ({base_key})"
            )
    return boards


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)


def measure(
    evaluator: Evaluator, probes: Sequence[Probe] = PROBES, trained: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """One row per probe and rule set: the engine's facts and the network's value and priors (module doc).
    `trained` names the rule sets the network was trained on (each row says whether its is one)."""
    from envs.batch import GameBatch

    cases = []
    for probe in probes:
        boards = check_probe(probe)
        cases += [(probe, name, boards[name]) for name in probe.rule_sets()]
    games = GameBatch(len(cases), load_rules("default"), max_plies=None, room=64)
    for i, (probe, _, board) in enumerate(cases):
        games.reset(i, probe.jfen, rules=board.rules)
        games.load_board(i, board)
    obs, masks = games.observations(), games.masks()
    shared = masks.copy()
    for probe in probes:
        rows = [i for i, case in enumerate(cases) if case[0] is probe]
        shared[rows] = masks[rows].any(axis=0)
    own_logits, values = evaluator(obs, masks)
    shared_logits, _ = evaluator(obs, shared)
    own, common = _softmax(np.asarray(own_logits)), _softmax(np.asarray(shared_logits))
    out = []
    for i, (probe, name, board) in enumerate(cases):
        side = int(board.side_to_move)
        actions = {move_to_action(m.to_int(), side): str(m) for m in board.legal_moves}
        key = move_to_action(Move.from_str(probe.key).to_int(), side)
        top = max(actions, key=lambda a: own[i, a])
        status = move_status(board, probe.key)
        out.append(
            {
                "position": probe.name,
                "rules": name,
                "trained": name in trained,
                "differs": name in probe.differs,  # what check_probe found with the engine
                "key_move": probe.key,
                "key_move_here": status,
                "value": float(values[i]),
                "key_prior": float(own[i, key]) if key in actions else 0.0,
                "key_prior_shared": float(common[i, key]),
                "top_move": actions[top],
                "top_prior": float(own[i, top]),
            }
        )
    return out


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a markdown table (a rule set the network was not trained on is marked ``untrained``)."""
    lines = [
        "| position | rules | differs | key move here | value | key prior | key prior, shared mask | top move |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    last = None
    for r in rows:
        where = f"{r['position']} (`{r['key_move']}`)" if r["position"] != last else ""
        last = r["position"]
        rules = r["rules"] + ("" if r["trained"] else " (untrained)")
        lines.append(
            f"| {where} | {rules} | {'yes' if r['differs'] else 'no'} | {r['key_move_here']} | {r['value']:+.2f} "
            f"| {r['key_prior']:.3f} | {r['key_prior_shared']:.3f} | {r['top_move']} {r['top_prior']:.2f} |"
        )
    return "\n".join(lines)


def positions_markdown(probes: Sequence[Probe] = PROBES) -> str:
    """The probe positions as a markdown table: JFEN, the moves played from it, the key move."""
    lines = ["| position | JFEN | then | key move |", "| --- | --- | --- | --- |"]
    for p in probes:
        lines.append(f"| {p.name} | `{p.jfen}` | {' '.join(p.moves) or '-'} | `{p.key}` |")
    return "\n".join(lines)


def _commit() -> Optional[str]:
    """The commit of this tree, when it is a git checkout."""
    try:
        r = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=os.path.dirname(os.path.abspath(__file__)),
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return r.stdout.strip() or None


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True, help="checkpoint file (.pt) or shipped network (shipped:<name>)")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the rows and the positions as JSON")
    args = ap.parse_args(argv)
    import torch

    from agents.alphazero.net.checkpoint import load_model, trained_rule_sets
    from agents.alphazero.net.runtime import make_evaluator
    from agents.common.io import atomic_write_json

    try:
        model, state = load_model(args.checkpoint)
        trained = [name for name, _ in trained_rule_sets(state, args.checkpoint)]
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    rows = measure(make_evaluator(model, torch.device("cpu"), "fp32"), PROBES, trained)
    iteration = (state.get("counters") or {}).get("iteration")
    shown = "unknown" if iteration is None else iteration
    print(f"checkpoint {args.checkpoint}, iteration {shown}, trained on {', '.join(trained)}\n")
    print(markdown(rows) + "\n")
    print(positions_markdown(PROBES))
    if args.json:
        atomic_write_json(
            args.json,
            {
                "checkpoint": str(args.checkpoint),
                "iteration": iteration,
                "trained_rules": trained,
                "commit": _commit(),
                "rows": rows,
                "positions": [
                    {"name": p.name, "jfen": p.jfen, "moves": list(p.moves), "key": p.key, "differs": list(p.differs)}
                    for p in PROBES
                ],
            },
        )


if __name__ == "__main__":
    main()

"""Perft: golden counts, and the kernels checked against an independent reference.

Golden numbers were produced by the kernels and confirmed by
`tests/support/reference_rules.py` (a plain implementation of RULES.md sharing no
code with the kernels); the cross-checks below keep confirming them. On a
mismatch the failure message holds a divide (per-root-move counts) of both
implementations.
"""

from __future__ import annotations

import random

import pytest

from envs import START_JFEN, Board, RuleSet, perft, perft_divide
from tests.support import reference_rules as ref
from tests.support.perft_positions import CHASE_JFEN, CHASE_LINES, POSITIONS, VARIANTS

START_PERFT = [24, 576, 12240, 260099, 5111620]

GOLDEN: dict[str, dict[str, list[int]]] = {
    "jumps": {
        "default": [14, 238, 3560, 57605],
        "dog_over_wolf": [14, 238, 3560, 57605],
        "rats_ignore_water": [14, 238, 3560, 57606],
        "enemy_rat": [15, 270, 4167, 71019],
        "keeps_rank": [14, 238, 3560, 57605],
        "anti_chase": [14, 238, 3560, 57605],
        "all_switched": [15, 270, 4167, 71020],
    },
    "river_rats": {
        "default": [10, 95, 989, 9984],
        "dog_over_wolf": [10, 95, 989, 9984],
        "rats_ignore_water": [11, 111, 1201, 12268],
        "enemy_rat": [10, 95, 989, 9984],
        "keeps_rank": [10, 95, 989, 9984],
        "anti_chase": [10, 95, 989, 9984],
        "all_switched": [11, 111, 1201, 12268],
    },
    "river_rats_b": {
        "default": [11, 96, 918, 7685],
        "dog_over_wolf": [11, 96, 918, 7685],
        "rats_ignore_water": [11, 96, 919, 7703],
        "enemy_rat": [11, 96, 928, 7910],
        "keeps_rank": [11, 96, 918, 7685],
        "anti_chase": [11, 96, 918, 7685],
        "all_switched": [11, 96, 929, 7928],
    },
    "traps": {
        "default": [13, 176, 2139, 28591],
        "dog_over_wolf": [13, 176, 2139, 28590],
        "rats_ignore_water": [13, 176, 2139, 28591],
        "enemy_rat": [13, 176, 2139, 28591],
        "keeps_rank": [15, 202, 2735, 35755],
        "anti_chase": [13, 176, 2139, 28591],
        "all_switched": [15, 202, 2735, 35754],
    },
    "dens": {
        "default": [13, 178, 2397, 32981],
        "dog_over_wolf": [13, 178, 2397, 32981],
        "rats_ignore_water": [13, 178, 2397, 32981],
        "enemy_rat": [13, 178, 2397, 32981],
        "keeps_rank": [13, 178, 2408, 33111],
        "anti_chase": [13, 178, 2397, 32981],
        "all_switched": [13, 178, 2408, 33111],
    },
    "dog_wolf": {
        "default": [8, 64, 551, 4653],
        "dog_over_wolf": [8, 64, 550, 4690],
        "rats_ignore_water": [8, 64, 551, 4653],
        "enemy_rat": [8, 64, 551, 4653],
        "keeps_rank": [8, 64, 551, 4653],
        "anti_chase": [8, 64, 551, 4653],
        "all_switched": [8, 64, 550, 4690],
    },
}


def divide_report(board: Board, pos: ref.Pos, rules: ref.Rules, depth: int) -> str:
    """Per-move counts of the kernels and of the reference, mismatches marked."""
    ours = perft_divide(board, depth)
    theirs = ref.divide(rules, pos, depth)
    lines = [f"divide at depth {depth} of {board.jfen()!r} ({board.rules}):"]
    for m in sorted(set(ours) | set(theirs)):
        a, b = ours.get(m), theirs.get(m)
        lines.append(f"  {m}: kernels {a} reference {b}{'' if a == b else '   <-- differs'}")
    lines.append(f"  total: kernels {sum(ours.values())} reference {sum(theirs.values())}")
    return "\n".join(lines)


def check_against_reference(board: Board, pos: ref.Pos, rules: ref.Rules, depth: int) -> None:
    ours = sorted(str(m) for m in board.legal_moves)
    theirs = ref.legal_moves(rules, pos)
    assert ours == theirs, f"legal moves differ in {board.jfen()!r}: kernels {ours}, reference {theirs}"
    got, want = perft(board, depth), ref.perft(rules, pos, depth)
    assert got == want, divide_report(board, pos, rules, depth)


def golden_check(board: Board, expected: list[int], pos: ref.Pos, rules: ref.Rules) -> None:
    for depth, want in enumerate(expected, start=1):
        got = perft(board, depth)
        assert got == want, f"perft({depth}) = {got}, golden {want}\n" + divide_report(board, pos, rules, depth)


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_start_position(depth: int) -> None:
    board = Board()
    got = perft(board, depth)
    if got != START_PERFT[depth - 1]:
        pytest.fail(f"perft({depth}) = {got}, golden {START_PERFT[depth - 1]}; divide: {perft_divide(board, depth)}")


def test_start_position_every_node_made() -> None:
    """The make-every-leaf perft agrees with the bulk-counting one."""
    assert perft(Board(), 4, bulk=False) == START_PERFT[3]


def test_start_position_matches_reference() -> None:
    rules = ref.Rules()
    check_against_reference(Board(), ref.parse(START_JFEN), rules, 3)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("name", sorted(POSITIONS))
def test_hand_made_positions(name: str, variant: str) -> None:
    rules = RuleSet(**VARIANTS[variant])
    board = Board.from_jfen(POSITIONS[name], rules=rules)
    pos, rr = ref.parse(POSITIONS[name]), ref.Rules.of(rules)
    check_against_reference(board, pos, rr, 3)
    golden = GOLDEN[name].get(variant, GOLDEN[name]["default"])
    golden_check(board, golden, pos, rr)


@pytest.mark.parametrize("name", sorted(CHASE_LINES))
def test_anti_chase_lines(name: str) -> None:
    moves, golden_off, golden_on = CHASE_LINES[name]
    for setting, golden in (("off", golden_off), ("7-3+17-5", golden_on)):
        rules = RuleSet(anti_chase=setting, repetition="off")
        board = Board.from_jfen(CHASE_JFEN, rules=rules)
        for m in moves:
            board.push(m)
        pos, rr = ref.replay(CHASE_JFEN, moves), ref.Rules.of(rules)
        check_against_reference(board, pos, rr, 3)
        golden_check(board, golden, pos, rr)


def test_variants_differ_where_designed() -> None:
    """Each variant switch changes some golden count (the positions do test it)."""
    for variant in VARIANTS:
        if variant in ("default", "anti_chase", "all_switched", "no_repetition", "hundred_rounds"):
            continue
        assert any(GOLDEN[p][variant] != GOLDEN[p]["default"] for p in GOLDEN), variant
    assert any(on != off for _, off, on in CHASE_LINES.values())


def test_perft_ignores_draw_rules() -> None:
    """Draw rules 11-12 do not cut perft lines (RULES.md)."""
    near_limit = POSITIONS["jumps"].replace(" r 0 1", " r 119 1")
    assert perft(Board.from_jfen(near_limit), 3) == GOLDEN["jumps"]["default"][2]
    assert perft(Board.from_jfen(near_limit, rules=RuleSet(no_capture_draw=0)), 3) == GOLDEN["jumps"]["default"][2]


def test_winning_move_counts_at_last_ply_only() -> None:
    """A den entry counts as a leaf at the last ply and ends its line earlier."""
    board = Board.from_jfen("7/3L3/7/7/7/7/7/7/6l r 0 1")
    # Red's Lion on d8 may enter the den d9 (a win) or go to c8, e8, d7.
    moves = {str(m) for m in board.legal_moves}
    assert "d8d9" in moves
    div = perft_divide(board, 2)
    assert div["d8d9"] == 0
    assert perft(board, 1) == len(moves) == 4
    assert sum(div.values()) == perft(board, 2) == 3 * 2


def test_finished_game_has_no_moves() -> None:
    """A JFEN whose game is already won parses, has no legal moves, perft 0."""
    board = Board.from_jfen("3L3/7/7/7/7/7/7/7/6l b 0 1")
    assert board.outcome() is not None
    assert len(board.legal_moves) == 0
    assert perft(board, 1) == 0 and perft(board, 0) == 1


def _random_lines(rules: RuleSet, n_games: int, rng: random.Random) -> list[tuple[Board, list[str]]]:
    out = []
    for _ in range(n_games):
        board = Board(rules=rules)
        moves: list[str] = []
        for _ in range(rng.randrange(0, 160)):
            if board.outcome() is not None:
                break
            m = rng.choice(sorted(str(x) for x in board.legal_moves))
            board.push(m)
            moves.append(m)
        out.append((board, moves))
    return out


@pytest.mark.parametrize("variant", sorted(set(VARIANTS) - {"no_repetition", "hundred_rounds"}))
def test_random_positions_match_reference(variant: str) -> None:
    """Legal moves and perft(2) agree with the reference along random games."""
    rules = RuleSet(**{**VARIANTS[variant], "repetition": "off", "no_capture_draw": 0})
    rng = random.Random(f"perft-{variant}")
    rr = ref.Rules.of(rules)
    for board, moves in _random_lines(rules, 25, rng):
        check_against_reference(board, ref.replay(START_JFEN, moves), rr, 2)

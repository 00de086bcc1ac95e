"""One named test per rule of RULES.md and per variant value, on tiny JFEN positions.

Board diagrams in the comments list pieces by square; upper case is Red.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from envs import Board, IllegalMoveError, RuleSet, Side, Termination


def moves(jfen: str, **rules: object) -> set[str]:
    return {str(m) for m in Board.from_jfen(jfen, rules=RuleSet(**rules)).legal_moves}  # type: ignore[arg-type]


def play(jfen: str, line: list[str], **rules: object) -> Board:
    board = Board.from_jfen(jfen, rules=RuleSet(**rules))  # type: ignore[arg-type]
    for m in line:
        board.push(m)
    return board


# --- moving -----------------------------------------------------------------
def test_rule_1_one_orthogonal_step_and_sides_alternate() -> None:
    # Red Cat d3 alone in the middle of the board; Blue Rat a9.
    jfen = "r6/7/7/7/7/7/3C3/7/7 r 0 1"
    assert moves(jfen) == {"d3d4", "d3e3", "d3d2", "d3c3"}
    board = play(jfen, ["d3d4"])
    assert board.side_to_move == Side.BLUE
    assert {str(m) for m in board.legal_moves} == {"a9a8", "a9b9"}
    with pytest.raises(IllegalMoveError):
        board.push("d4d5")


def test_rule_2_no_own_square_no_own_den() -> None:
    # Red Dog d2 and Cat c1 next to their own den d1; Red Wolf e2 beside the Dog.
    jfen = "r6/7/7/7/7/7/7/3DW2/2C4 r 0 1"
    got = moves(jfen)
    assert "d2d1" not in got and "c1d1" not in got
    assert "d2e2" not in got and "e2d2" not in got
    assert {"d2d3", "d2c2", "c1b1", "c1c2", "e2e1", "e2f2", "e2e3"} <= got


def test_rule_3_only_the_rat_swims() -> None:
    # Red Rat a4 and Cat a5 beside the left river; Red Rat may swim on.
    assert "a4b4" in moves("r6/7/7/7/C6/R6/7/7/7 r 0 1")
    assert "a5b5" not in moves("r6/7/7/7/C6/R6/7/7/7 r 0 1")
    swim = moves("r6/7/7/7/7/1R5/7/7/7 r 0 1")  # Red Rat in b4
    assert swim == {"b4b5", "b4c4", "b4b3", "b4a4"}


def test_rule_4_jumps_across_and_along_the_river() -> None:
    # Red Lion a5 jumps right to d5; Red Tiger b3 jumps up to b7; Leopard d4 cannot jump.
    jfen = "6r/7/7/7/L6/3P3/1T5/7/7 r 0 1"
    got = moves(jfen)
    assert "a5d5" in got and "b3b7" in got
    assert not any(m.startswith("d4") and m[2:] in ("a4", "g4", "b4", "c4", "e4", "f4") for m in got)


@pytest.mark.parametrize("rat", ["R", "r"])
def test_rule_4_any_rat_in_the_line_blocks_the_jump(rat: str) -> None:
    # Lion a5, a rat of either side in c5: no jump a5d5.
    jfen = f"6e/7/7/7/L1{rat}4/7/7/7/6C r 0 1"
    assert "a5d5" not in moves(jfen)
    assert "a5d5" in moves("6e/7/7/7/L6/7/7/7/6C r 0 1")


def test_rule_4_landing_square() -> None:
    # Lion a5: d5 holds a Blue Tiger (capturable), then a Blue Elephant (not), then own Cat (not).
    assert "a5d5" in moves("6r/7/7/7/L2t3/7/7/7/7 r 0 1")
    assert "a5d5" not in moves("6r/7/7/7/L2e3/7/7/7/7 r 0 1")
    assert "a5d5" not in moves("6r/7/7/7/L2C3/7/7/7/7 r 0 1")


# --- capturing --------------------------------------------------------------
def test_rule_5_piece_in_opponent_trap_has_rank_zero() -> None:
    # Blue Lion in Red's trap c1: the Red Rat on c2 takes it; the Lion cannot take the Red Cat b1.
    jfen = "7/7/7/7/7/7/7/2R4/1Cl4 r 0 1"
    assert "c2c1" in moves(jfen)
    assert "c1b1" not in moves(jfen.replace(" r ", " b "))


def test_rule_5_own_trap_keeps_rank() -> None:
    # Red Cat in its own trap c1, Blue Rat b1: the Rat cannot take it.
    assert "b1c1" not in moves("7/7/7/7/7/7/7/3E3/1rC4 b 0 1")


def test_rule_6_rank_order_and_rat_elephant() -> None:
    # Red Tiger d5 vs Blue Tiger d6 (equal: captures), Blue Lion d6 (higher: not).
    assert "d5d6" in moves("7/7/7/3t3/3T3/7/7/7/7 r 0 1")
    assert "d5d6" not in moves("7/7/7/3l3/3T3/7/7/7/7 r 0 1")
    # Red Rat d5 takes the Blue Elephant d6; the Elephant cannot take the Rat.
    jfen = "7/7/7/3e3/3R3/7/7/7/7 r 0 1"
    assert "d5d6" in moves(jfen)
    assert "d6d5" not in moves(jfen.replace(" r ", " b "))


def test_rule_7_water_and_land_do_not_mix() -> None:
    # Red river Rat b4 next to a Blue Elephant a4 on the bank and a Blue land Rat b3.
    jfen = "7/7/7/7/7/eR5/1r5/7/7 r 0 1"
    got = moves(jfen)
    assert "b4a4" not in got and "b4b3" not in got
    assert "b3b4" not in moves(jfen.replace(" r ", " b "))


def test_rule_7_rats_both_in_water_capture() -> None:
    jfen = "7/7/7/7/1r5/1R5/7/7/7 r 0 1"  # Red Rat b4, Blue Rat b5
    assert "b4b5" in moves(jfen)
    assert "b5b4" in moves(jfen.replace(" r ", " b "))


# --- ending -----------------------------------------------------------------
def test_rule_8_entering_the_enemy_den_wins() -> None:
    board = play("7/3L3/7/7/7/7/7/7/6l r 0 1", ["d8d9"])
    outcome = board.outcome()
    assert outcome is not None and outcome.winner == Side.RED and outcome.termination == Termination.DEN
    assert len(board.legal_moves) == 0


def test_rule_9_capturing_the_last_piece_wins() -> None:
    board = play("7/7/7/7/7/7/7/Lr5/7 r 0 1", ["a2b2"])
    outcome = board.outcome()
    assert outcome is not None and outcome.winner == Side.RED
    assert outcome.termination == Termination.ALL_CAPTURED


def test_rule_10_no_legal_move_loses() -> None:
    # Red's only piece, a Cat on a9, boxed in by a Blue Dog a8 and Wolf b9.
    board = Board.from_jfen("Cw5/d6/7/7/7/7/7/7/7 r 0 1")
    assert len(board.legal_moves) == 0
    outcome = board.outcome()
    assert outcome is not None and outcome.winner == Side.BLUE
    assert outcome.termination == Termination.NO_MOVES


SHUTTLE_JFEN = "r6/6l/7/7/7/7/7/L6/6R r 0 1"
SHUTTLE = ["a2a3", "g8g7", "a3a2", "g7g8"]


def test_rule_11_third_occurrence_draws() -> None:
    board = play(SHUTTLE_JFEN, SHUTTLE)
    assert board.repetition_count() == 2 and board.outcome() is None
    for m in SHUTTLE:
        board.push(m)
    outcome = board.outcome()
    assert board.repetition_count() == 3
    assert outcome is not None and outcome.winner is None and outcome.termination == Termination.REPETITION


def test_rule_11_side_to_move_is_part_of_the_position() -> None:
    red, blue = Board.from_jfen(SHUTTLE_JFEN), Board.from_jfen(SHUTTLE_JFEN.replace(" r ", " b "))
    assert red.zobrist_hash() != blue.zobrist_hash()


def test_rule_11_counters_do_not_count() -> None:
    a = Board.from_jfen(SHUTTLE_JFEN)
    b = Board.from_jfen(SHUTTLE_JFEN.replace(" r 0 1", " r 37 20"))
    assert a.zobrist_hash() == b.zobrist_hash()


def test_rule_12_no_capture_limit_draws() -> None:
    board = play(SHUTTLE_JFEN.replace(" r 0 1", " r 119 60"), ["a2a3"])
    assert board.halfmove_clock == 120
    outcome = board.outcome()
    assert outcome is not None and outcome.winner is None
    assert outcome.termination == Termination.NO_CAPTURE_LIMIT


def test_rule_12_capture_on_the_last_ply_is_not_a_draw() -> None:
    board = play("7/6l/7/7/7/7/7/Lr5/6R r 119 60", ["a2b2"])
    assert board.halfmove_clock == 0 and board.outcome() is None


def test_precedence_den_on_the_last_capture_free_ply_wins() -> None:
    board = play("7/3L2l/7/7/7/7/7/7/6R r 119 60", ["d8d9"])
    outcome = board.outcome()
    assert outcome is not None and outcome.winner == Side.RED and outcome.termination == Termination.DEN


def test_precedence_both_draws_at_once_is_repetition() -> None:
    board = play(SHUTTLE_JFEN.replace(" r 0 1", " r 112 60"), SHUTTLE * 2)
    assert board.halfmove_clock == 120 and board.repetition_count() == 3
    outcome = board.outcome()
    assert outcome is not None and outcome.termination == Termination.REPETITION


def test_move_number_grows_after_blue_moves() -> None:
    board = play(SHUTTLE_JFEN, ["a2a3"])
    assert board.move_number == 1
    board.push("g8g7")
    assert board.move_number == 2


def test_draws_leave_moves_listed_but_wins_do_not() -> None:
    """Arbiter's choice: a won position has no legal moves; after a draw the moves stay listed
    (as python-chess does after a draw rule fires) and `outcome()` says the game is over."""
    drawn = play(SHUTTLE_JFEN, SHUTTLE * 2)
    assert drawn.outcome() is not None and len(drawn.legal_moves) > 0
    won = Board.from_jfen("7/7/7/7/7/7/7/7/3l2R r 0 1")  # Blue Lion sits in Red's den
    assert won.outcome() is not None and len(won.legal_moves) == 0
    with pytest.raises(IllegalMoveError, match="game is over"):
        won.push("g1g2")


# --- variants -----------------------------------------------------------------
def test_variant_rank_order_standard() -> None:
    jfen = "7/7/7/3w3/3D3/7/7/7/7 r 0 1"  # Red Dog d5, Blue Wolf d6
    assert "d5d6" not in moves(jfen)
    assert "d6d5" in moves(jfen.replace(" r ", " b "))


def test_variant_rank_order_dog_over_wolf() -> None:
    jfen = "7/7/7/3w3/3D3/7/7/7/7 r 0 1"
    assert "d5d6" in moves(jfen, rank_order="dog_over_wolf")
    assert "d6d5" not in moves(jfen.replace(" r ", " b "), rank_order="dog_over_wolf")


def test_variant_river_rats_strict() -> None:
    jfen = "7/7/7/7/7/Rr5/7/7/7 r 0 1"  # Red land Rat a4, Blue river Rat b4
    assert "a4b4" not in moves(jfen)
    assert "b4a4" not in moves(jfen.replace(" r ", " b "))


def test_variant_river_rats_ignore_water() -> None:
    jfen = "7/7/7/7/7/Rr5/7/7/7 r 0 1"
    assert "a4b4" in moves(jfen, river_rats="rats_ignore_water")
    assert "b4a4" in moves(jfen.replace(" r ", " b "), river_rats="rats_ignore_water")
    # Nothing else changes: the river Rat still cannot take the Elephant on the bank.
    assert "b4a4" not in moves("7/7/7/7/7/eR5/7/7/7 r 0 1", river_rats="rats_ignore_water")


def test_variant_jump_blocking_any_rat() -> None:
    assert "a5d5" not in moves("6e/7/7/7/LR5/7/7/7/7 r 0 1")  # own Rat b5 blocks


def test_variant_jump_blocking_enemy_rat() -> None:
    assert "a5d5" in moves("6e/7/7/7/LR5/7/7/7/7 r 0 1", jump_blocking="enemy_rat")
    assert "a5d5" not in moves("6e/7/7/7/Lr5/7/7/7/7 r 0 1", jump_blocking="enemy_rat")


TRAPPED = "1eR1Lc1/7/7/7/7/7/7/7/7 r 0 1"  # Red Rat in c9 beside a Blue Elephant b9, Red Lion e9 beside a Blue Cat f9


def test_variant_trapped_attacker_powerless() -> None:
    got = moves(TRAPPED)
    assert "c9b9" not in got and "e9f9" not in got
    assert {"b9c9", "f9e9"} <= moves(TRAPPED.replace(" r ", " b "))


def test_variant_trapped_attacker_keeps_rank() -> None:
    got = moves(TRAPPED, trapped_attacker="keeps_rank")
    assert {"c9b9", "e9f9"} <= got
    assert {"b9c9", "f9e9"} <= moves(TRAPPED.replace(" r ", " b "), trapped_attacker="keeps_rank")


def test_variant_repetition_draw() -> None:
    outcome = play(SHUTTLE_JFEN, SHUTTLE * 2, repetition="draw").outcome()
    assert outcome is not None and outcome.termination == Termination.REPETITION


def test_variant_repetition_off() -> None:
    board = play(SHUTTLE_JFEN, SHUTTLE * 3, repetition="off")
    assert board.repetition_count() == 4 and board.outcome() is None


def test_variant_no_capture_draw_120() -> None:
    start = SHUTTLE_JFEN.replace(" r 0 1", " r 118 60")
    assert play(start, ["a2a3"]).outcome() is None
    assert play(start, ["a2a3", "g8g7"]).outcome() is not None


def test_variant_no_capture_draw_200() -> None:
    assert play(SHUTTLE_JFEN.replace(" r 0 1", " r 119 60"), ["a2a3"], no_capture_draw=200).outcome() is None
    outcome = play(SHUTTLE_JFEN.replace(" r 0 1", " r 199 60"), ["a2a3"], no_capture_draw=200).outcome()
    assert outcome is not None and outcome.termination == Termination.NO_CAPTURE_LIMIT


def test_variant_no_capture_draw_off() -> None:
    assert play(SHUTTLE_JFEN.replace(" r 0 1", " r 29990 60"), ["a2a3"], no_capture_draw=0).outcome() is None


# --- anti-chase -----------------------------------------------------------------
CHASE = "r6/6l/7/7/7/7/7/L6/6R r 0 1"  # Red Lion a2, Rat g1; Blue Lion g8, Rat a9
RED_SHUTTLE = ["a2a3", "a3a2"] * 3
BLUE_SHUTTLE = ["g8g7", "g7g8"] * 3


def _interleave(red: list[str], blue: list[str]) -> list[str]:
    return [m for pair in zip(red, blue) for m in pair]


def test_variant_anti_chase_off() -> None:
    board = play(CHASE, _interleave(RED_SHUTTLE, BLUE_SHUTTLE), repetition="off")
    assert "a2a3" in {str(m) for m in board.legal_moves}


def test_anti_chase_7_3_bars_a_fourth_entry() -> None:
    board = play(CHASE, _interleave(RED_SHUTTLE, BLUE_SHUTTLE), anti_chase="7-3+17-5", repetition="off")
    got = {str(m) for m in board.legal_moves}
    assert "a2a3" not in got  # a3 entered 3 times in Red's last 7 moves
    assert {"a2a1", "a2b2", "g1f1", "g1g2"} <= got  # other squares, other pieces
    # Two entries are allowed: after four shuttle moves a2a3 is still legal.
    early = play(CHASE, _interleave(RED_SHUTTLE[:4], BLUE_SHUTTLE[:4]), anti_chase="7-3+17-5", repetition="off")
    assert "a2a3" in {str(m) for m in early.legal_moves}


def test_anti_chase_7_3_trap_exemption() -> None:
    # Red's Rat steps into Red's own trap e1 first: one of Red's last 7 moves entered a trap.
    red = ["g1f1", "f1e1"] + RED_SHUTTLE
    blue = ["a9a8", "a8a9"] + BLUE_SHUTTLE
    board = play(CHASE, _interleave(red, blue), anti_chase="7-3+17-5", repetition="off")
    assert "a2a3" in {str(m) for m in board.legal_moves}
    for m in ["a2a3", "a9b9", "a3a4", "b9a9"]:
        board.push(m)
    # The trap entry has left Red's last 7 moves, which enter a3 three times.
    assert "a4a3" not in {str(m) for m in board.legal_moves}


def test_anti_chase_7_3_attacked_exemption() -> None:
    # A Blue Elephant walks g3 -> b2 while the Red Lion shuttles; at the end it attacks a2.
    jfen = "r6/6l/7/7/7/7/6e/L6/6R r 0 1"
    walk = ["g3f3", "f3e3", "e3d3", "d3c3", "c3c2", "c2b2"]
    attacked = play(jfen, _interleave(RED_SHUTTLE, walk), anti_chase="7-3+17-5", repetition="off")
    assert "a2a3" in {str(m) for m in attacked.legal_moves}
    not_attacked = play(jfen, _interleave(RED_SHUTTLE, walk[:5] + ["c2c3"]), anti_chase="7-3+17-5", repetition="off")
    assert "a2a3" not in {str(m) for m in not_attacked.legal_moves}


LOOP_RED = ["a2b2", "b2b3", "b3a3", "a3a2"]
LOOP_BLUE = ["g8f8", "f8f7", "f7g7", "g7g8"]


def _loops(red_loop: list[str], n_red: int, blue_loop: list[str] = LOOP_BLUE) -> list[str]:
    red = [red_loop[i % len(red_loop)] for i in range(n_red)]
    blue = [blue_loop[i % len(blue_loop)] for i in range(n_red)]
    return _interleave(red, blue)


def test_anti_chase_17_5_bars_the_loop() -> None:
    board = play(CHASE, _loops(LOOP_RED, 17), anti_chase="7-3+17-5", repetition="off")
    got = {str(m) for m in board.legal_moves}
    assert board.piece_at("b2") is not None
    assert "b2a2" not in got and "b2b3" not in got  # squares of the loop
    assert {"b2b1", "b2c2", "g1f1", "g1g2"} <= got  # new squares and other pieces stay free
    # After 16 moves the rule does not apply yet.
    board16 = play(CHASE, _loops(LOOP_RED, 16), anti_chase="7-3+17-5", repetition="off")
    assert "a2b2" in {str(m) for m in board16.legal_moves}


def test_anti_chase_17_5_needs_at_most_5_squares() -> None:
    six = ["a2b2", "b2c2", "c2c3", "c3b3", "b3a3", "a3a2"]
    board = play(CHASE, _loops(six, 17), anti_chase="7-3+17-5", repetition="off")
    assert board.piece_at("a3") is not None
    got = {str(m) for m in board.legal_moves}
    assert {"a3a2", "a3b3"} <= got


def test_anti_chase_17_5_needs_one_piece() -> None:
    # Red's 9th move is made by the Rat instead: the Lion's loop moves are not all 17.
    red = [LOOP_RED[i % 4] for i in range(16)]
    red.insert(8, "g1g2")
    blue = [LOOP_BLUE[i % 4] for i in range(17)]
    board = play(CHASE, _interleave(red, blue), anti_chase="7-3+17-5", repetition="off")
    got = {str(m) for m in board.legal_moves}
    assert board.piece_at("a2") is not None and "a2b2" in got


def test_anti_chase_17_5_trap_exemption() -> None:
    # The Red Lion loops c2 d2 d3 c3 through its own trap d2.
    jfen = "r6/6l/7/7/7/7/7/2L4/6R r 0 1"
    loop = ["c2d2", "d2d3", "d3c3", "c3c2"]
    board = play(jfen, _loops(loop, 17), anti_chase="7-3+17-5", repetition="off")
    got = {str(m) for m in board.legal_moves}
    assert board.piece_at("d2") is not None and "d2d3" in got and "d2c2" in got


# --- named rule sets (configs/rules/) ----------------------------------------------
def test_every_named_rule_set_loads() -> None:
    from envs.rules import load_rules, rule_set_names

    names = rule_set_names()
    assert {
        "default",
        "dog_over_wolf",
        "rats_ignore_water",
        "enemy_rat",
        "keeps_rank",
        "no_repetition",
        "hundred_rounds",
        "anti_chase",
    } <= set(names)
    assert load_rules("default") == RuleSet()
    assert load_rules("dog_over_wolf") == RuleSet(rank_order="dog_over_wolf")
    assert load_rules("hundred_rounds") == RuleSet(no_capture_draw=200)
    assert load_rules("no_repetition") == RuleSet(repetition="off")
    assert load_rules("anti_chase") == RuleSet(anti_chase="7-3+17-5")
    for name in names:
        if name != "default":
            assert load_rules(name) != RuleSet(), name


def test_load_rules_errors(tmp_path: object) -> None:
    from pathlib import Path

    from envs.rules import RuleSetError, load_rules

    with pytest.raises(RuleSetError, match="no_such_set"):
        load_rules("no_such_set")
    bad_key = Path(str(tmp_path)) / "bad_key.yaml"
    bad_key.write_text("rank_order: standard\ncolour: green\n")
    with pytest.raises(RuleSetError, match="colour"):
        load_rules(bad_key)
    bad_value = Path(str(tmp_path)) / "bad_value.yaml"
    bad_value.write_text("jump_blocking: no_rat\n")
    with pytest.raises(RuleSetError, match="no_rat"):
        load_rules(str(bad_value))
    bare_off = Path(str(tmp_path)) / "bare_off.yaml"
    bare_off.write_text("repetition: off\nanti_chase: off\n")
    assert load_rules(bare_off) == RuleSet(repetition="off")


def test_rule_files_may_start_from_the_schema_like_the_group(tmp_path: object) -> None:
    """A rules yaml file may carry the group's Hydra defaults list (``[schema, _self_]``) and nothing else there."""
    from pathlib import Path

    from envs.rules import RuleSetError, load_rules

    like_group = Path(str(tmp_path)) / "mine.yaml"
    like_group.write_text("defaults:\n  - schema\n  - _self_\njump_blocking: enemy_rat\n")
    assert load_rules(like_group) == RuleSet(jump_blocking="enemy_rat")
    other = Path(str(tmp_path)) / "other.yaml"
    other.write_text("defaults:\n  - dog_over_wolf\n")
    with pytest.raises(RuleSetError, match="defaults list"):
        load_rules(other)
    listed = Path(str(tmp_path)) / "listed.yaml"
    listed.write_text("- rank_order\n")
    with pytest.raises(RuleSetError, match="mapping"):
        load_rules(listed)


NESTED_ALIASES = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))
    + "rank_order: *i\n"
)
"""A few hundred bytes that expand to 9**9 strings (a YAML "billion laughs")."""


@pytest.mark.parametrize(
    "text, words",
    [
        (NESTED_ALIASES, "anchors (&a) are not allowed"),
        ("rank_order: standard\nrepetition: *r\n", "aliases (*r) are not allowed"),
        ("rank_order: ${oc.env:HOME}\n", "rank_order='${oc.env:HOME}' is not one of"),
        ("no_capture_draw: .inf\n", "no_capture_draw=inf must be an integer"),
        ("no_capture_draw: 1e400\n", "no_capture_draw=inf must be an integer"),
        ("no_capture_draw: .nan\n", "no_capture_draw=nan must be an integer"),
        ("no_capture_draw: 2.5\n", "no_capture_draw=2.5 must be an integer"),
        ("repetition: off\nrepetition: draw\n", "key 'repetition' is given twice"),
        ("rank_order: !!python/object/apply:os.system ['true']\n", "could not determine a constructor"),
        ("x: " + "a" * 70_000 + "\n", "larger than 65536 bytes"),
    ],
)
def test_rule_files_are_data_read_safely(text: str, words: str, tmp_path: object) -> None:
    """Rule files go through a safe YAML loader: no aliases (a few hundred bytes once kept the reader busy for
    over a minute), no tags, nothing interpolated (``${oc.env:HOME}`` is shown as written, never resolved),
    a bounded size, and numbers that cannot be a ply count refused in one line."""
    import os
    import time
    from pathlib import Path

    from envs.rules import RuleSetError, load_rules

    path = Path(str(tmp_path)) / "rules.yaml"
    path.write_text(text)
    t0 = time.perf_counter()
    with pytest.raises(RuleSetError) as e:
        load_rules(path)
    assert words in str(e.value) and "\n" not in str(e.value) and str(path) in str(e.value)
    assert os.environ.get("HOME", "/nowhere") not in str(e.value).replace(str(path), "")
    assert time.perf_counter() - t0 < 5


def test_a_non_finite_no_capture_draw_is_a_rule_error_not_an_overflow() -> None:
    from envs.rules import RuleSetError

    for value in (float("inf"), float("-inf"), float("nan"), "1e400", 10**400):
        with pytest.raises(RuleSetError, match="no_capture_draw"):
            RuleSet.from_dict({"no_capture_draw": value})
    assert RuleSet.from_dict({"no_capture_draw": 200.0}).no_capture_draw == 200


def test_anti_chase_can_leave_no_move_and_that_loses() -> None:
    """Ruling: moves barred by anti-chase are illegal, so rule 10 applies to them."""
    # Red's only piece, a Lion, loops b1 a1 a2 b2 for 17 moves and ends in the corner a1:
    # both its squares (a2, b1) are in the loop, so 17-5 leaves it nothing.
    jfen = "r6/6l/7/7/7/7/7/7/1L5 r 0 1"
    loop = ["b1a1", "a1a2", "a2b2", "b2b1"]
    line = _loops(loop, 17)
    stuck = play(jfen, line, anti_chase="7-3+17-5", repetition="off")
    assert stuck.piece_at("a1") is not None and len(stuck.legal_moves) == 0
    outcome = stuck.outcome()
    assert outcome is not None and outcome.winner == Side.BLUE and outcome.termination == Termination.NO_MOVES
    free = play(jfen, line, anti_chase="off", repetition="off")
    assert {str(m) for m in free.legal_moves} == {"a1a2", "a1b1"} and free.outcome() is None


# --- rule files and rule mappings are checked before they are trusted ----------------------------
def _refused_file(text: str, tmp_path: object) -> str:
    """The one line `load_rules` refuses a rule file holding `text` with (it names the file)."""
    from pathlib import Path

    from envs.rules import RuleSetError, load_rules

    path = Path(str(tmp_path)) / "rules.yaml"
    path.write_text(text)
    with pytest.raises(RuleSetError) as e:
        load_rules(path)
    line = str(e.value)
    assert "\n" not in line and str(path) in line
    return line


@pytest.mark.parametrize(
    "text",
    [
        "rank_order: " + "[" * 20_000 + "]" * 20_000 + "\n",
        "rank_order: " + "{a: " * 12_000 + "x" + "}" * 12_000 + "\n",
        "- " * 20_000 + "x\n",
    ],
    ids=["flow-lists", "flow-mappings", "block-lists"],
)
def test_a_rule_file_nested_20000_deep_is_one_line_not_a_recursion_error(text: str, tmp_path: object) -> None:
    """The reader stops at `CONFIG_FILE_MAX_DEPTH` levels while it parses, so a deep document never reaches
    Python's recursion limit."""
    from envs.config import CONFIG_FILE_MAX_DEPTH

    assert f"nested deeper than {CONFIG_FILE_MAX_DEPTH} levels" in _refused_file(text, tmp_path)


def test_a_rule_file_nested_to_the_depth_limit_is_read_as_data(tmp_path: object) -> None:
    from envs.config import CONFIG_FILE_MAX_DEPTH

    at_limit = "rank_order: " + "[" * (CONFIG_FILE_MAX_DEPTH - 1) + "]" * (CONFIG_FILE_MAX_DEPTH - 1) + "\n"
    assert "is not one of standard, dog_over_wolf" in _refused_file(at_limit, tmp_path)
    past_limit = "rank_order: " + "[" * CONFIG_FILE_MAX_DEPTH + "]" * CONFIG_FILE_MAX_DEPTH + "\n"
    assert f"nested deeper than {CONFIG_FILE_MAX_DEPTH} levels" in _refused_file(past_limit, tmp_path)


@pytest.mark.parametrize(
    "text, words",
    [
        ("? [a, b]\n: 1\n", "the key [a, b] is not a string"),
        ("? {rank_order: standard}\n: 1\n", "the key {rank_order: standard} is not a string"),
        ("1: 2\n", "the key 1 is not a string"),
        ("~: standard\n", "the key ~ is not a string"),
        ("yes: standard\n", "the key yes is not a string"),
    ],
)
def test_a_rule_file_with_a_key_that_is_not_a_string_is_one_line(text: str, words: str, tmp_path: object) -> None:
    assert words in _refused_file(text, tmp_path)


@pytest.mark.parametrize(
    "text, words",
    [
        ("no_capture_draw: true\n", "rule no_capture_draw=True must be an integer"),
        ("no_capture_draw: no\n", "rule no_capture_draw=False must be an integer"),
        ("no_capture_draw: '200'\n", "rule no_capture_draw='200' must be an integer"),
        ("no_capture_draw: [200]\n", "rule no_capture_draw=[200] must be an integer"),
        ("rank_order: true\n", "rule rank_order=True is not one of"),
        ("repetition: [draw]\n", "rule repetition=['draw'] is not one of"),
    ],
)
def test_a_rule_file_value_of_another_type_is_one_line_naming_the_key(text: str, words: str, tmp_path: object) -> None:
    """`no_capture_draw: true` once read as 1 (a draw after one ply without capture); only an integer is a
    ply count, as `--rule no_capture_draw=true` already said."""
    assert words in _refused_file(text, tmp_path)


def test_a_mapping_of_rules_holding_a_bool_for_a_number_is_refused() -> None:
    """`RuleSet.from_dict` is the one check of every rule mapping: files, checkpoints, saved games, records."""
    import numpy as np

    from envs.rules import RuleSetError

    for value in (True, False, np.bool_(True), "120", None, [120]):
        with pytest.raises(RuleSetError, match="no_capture_draw"):
            RuleSet.from_dict({"no_capture_draw": value})
    with pytest.raises(RuleSetError, match="no_capture_draw='true' must be an integer"):
        RuleSet().with_overrides(["no_capture_draw=true"])
    assert RuleSet.from_dict({"no_capture_draw": np.int64(80)}).no_capture_draw == 80
    with pytest.raises(RuleSetError, match=r"unknown rule key\(s\) '1', x"):
        RuleSet.from_dict({1: 2, "x": 3})  # keys of mixed types, named in one line


@pytest.mark.parametrize("name", ["a" * 300, "x/" + "b" * 300 + ".yaml", "bad\0name", "bad\0name.yaml"])
def test_a_rules_name_the_file_system_refuses_is_one_line(name: str) -> None:
    """A path component longer than the file system takes (once ``OSError: File name too long``) or a NUL."""
    import argparse

    from envs.rules import RuleSetError, load_rules, rules_from_arguments

    for read in (load_rules, lambda n: rules_from_arguments(argparse.Namespace(rules=n, rule=[]))):
        with pytest.raises(RuleSetError) as e:
            read(name)
        assert "\n" not in str(e.value) and len(str(e.value)) < 300 and repr(name)[:40] in str(e.value)


def _rule_files() -> object:
    """Rule files as hypothesis draws them: mappings of rule keys and odd keys to values of every yaml type,
    written by yaml's dumper; lines of odd keys and values written by hand; and strings of yaml's punctuation."""
    import yaml
    from hypothesis import strategies as hs

    from envs.rules import RuleSet

    rule_keys = [*RuleSet.__dataclass_fields__, "name"]
    scalars = hs.one_of(hs.none(), hs.booleans(), hs.integers(-(2**70), 2**70), hs.floats(), hs.text(max_size=10))
    values = hs.recursive(
        scalars,
        lambda inner: hs.lists(inner, max_size=3) | hs.dictionaries(hs.text(max_size=6), inner, max_size=3),
        max_leaves=10,
    )
    keys = hs.sampled_from(rule_keys) | hs.integers() | hs.booleans() | hs.text(max_size=6)
    dumped = hs.dictionaries(keys, values, max_size=4).map(lambda d: yaml.safe_dump(d, allow_unicode=True))
    odd_keys = hs.sampled_from([*rule_keys, "? [a, b]\n", "? {a: 1}\n", "1", "~", "yes", "2.5"])
    odd_values = ["true", "no", "off", "'200'", "200", "2.5", "[200]", "{a: 1}", "[[[]]]", "~", "standard", "draw"]
    odd_values += ["&a x", "*a", "!!str 1", "!!binary aGk=", "1e400", ".nan"]
    lines = hs.lists(hs.tuples(odd_keys, hs.sampled_from(odd_values)), max_size=4)
    written = lines.map(lambda pairs: "".join(f"{k}: {v}\n" for k, v in pairs))
    pieces = ["? ", ": ", "- ", "[", "]", "{", "}", ", ", "\n", "  ", "~", "1", "true", "&a ", "*a", "#", "x"]
    punctuation = hs.lists(hs.sampled_from(pieces), max_size=24).map("".join)
    return dumped | written | punctuation


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_rule_files())
def test_any_rule_file_is_a_rule_set_or_one_line(text: str, tmp_path: object) -> None:
    """Whatever a rule file holds, `load_rules` returns a RuleSet or raises one RuleSetError line naming the
    file, never another exception."""
    from pathlib import Path

    import yaml

    from envs.rules import RuleSetError, load_rules

    path = Path(str(tmp_path)) / "rules.yaml"
    path.write_text(text)
    try:
        rules = load_rules(path)
    except RuleSetError as e:
        assert "\n" not in str(e) and str(path) in str(e)
        return
    values = yaml.safe_load(text) or {}  # what the file says, read by yaml's own safe loader
    assert all(isinstance(key, str) for key in values)
    assert type(values.get("no_capture_draw", 120)) in (int, float)
    expected = RuleSet().to_dict() | {k: v for k, v in values.items() if k not in ("name", "defaults")}
    expected |= {k: "off" for k in ("repetition", "anti_chase") if expected[k] is False}  # yaml 1.1's bare off
    assert rules.to_dict() == expected

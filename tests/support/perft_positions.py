"""The perft tests' positions (rule variants, hand-made positions, anti-chase lines), shared with the kernel tests."""

from __future__ import annotations

VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "dog_over_wolf": {"rank_order": "dog_over_wolf"},
    "rats_ignore_water": {"river_rats": "rats_ignore_water"},
    "enemy_rat": {"jump_blocking": "enemy_rat"},
    "keeps_rank": {"trapped_attacker": "keeps_rank"},
    "anti_chase": {"anti_chase": "7-3+17-5"},
    # Draw rules do not cut perft lines: these two share the default's golden values.
    "no_repetition": {"repetition": "off"},
    "hundred_rounds": {"no_capture_draw": 200},
    "all_switched": {
        "rank_order": "dog_over_wolf",
        "river_rats": "rats_ignore_water",
        "jump_blocking": "enemy_rat",
        "trapped_attacker": "keeps_rank",
        "anti_chase": "7-3+17-5",
    },
}

# Hand-made positions, each aimed at a group of rules.
POSITIONS = {
    # Lion and Tiger jumps across and along the rivers; a Red rat in the
    # Lion's line (blocks only under any_rat), a Blue rat in both Tigers' line.
    "jumps": "6c/2e4/1t5/3l3/1r5/3LR2/1T5/6E/C6 r 0 1",
    # A land rat beside a river rat, elephants on the bank.
    "river_rats": "5l1/7/2w4/7/e6/Rr5/1E2D2/7/6L r 0 1",
    # Two rats in the same river, a Tiger whose jump they block; Blue to move.
    "river_rats_b": "7/7/3e3/l6/1Rr4/E6/2T4/7/7 b 0 1",
    # Pieces in the enemy's traps (powerless or keeping their rank) beside the den.
    "traps": "1eR1Lt1/7/p2w3/7/7/E6/3D3/3c3/1C5 r 0 1",
    # Pieces beside their own den (may not enter) and the enemy den (wins).
    "dens": "r6/4e2/3L2t/7/7/7/R5E/2cW3/2l1D2 b 0 1",
    # Dog and Wolf face to face.
    "dog_wolf": "6r/7/4e2/3w2d/3D2W/7/2E4/7/R6 r 0 1",
}

# Anti-chase needs a history: (JFEN, moves played first, golden perft 1..4 off / on).
CHASE_JFEN = "r6/6l/7/7/7/7/7/L6/6R r 0 1"
_CYCLE_RED = ["a2b2", "b2b3", "b3a3", "a3a2"]
_CYCLE_BLUE = ["g8f8", "f8f7", "f7g7", "g7g8"]
CHASE_LINES = {
    # Both Lions walk a 4-square loop for 17 moves each: 17-5 then bars the loop.
    "loop_17_moves": (
        [m for i in range(17) for m in (_CYCLE_RED[i % 4], _CYCLE_BLUE[i % 4])],
        [6, 36, 216, 1296],
        [4, 16, 92, 529],
    ),
    # Both Lions shuttle between two squares: 7-3 bars the third entry.
    "shuttle": (
        [m for i in range(6) for m in (["a2a3", "a3a2"][i % 2], ["g8g7", "g7g8"][i % 2])],
        [5, 25, 135, 729],
        [4, 16, 72, 324],
    ),
}

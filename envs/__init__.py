"""Jungle (Dou Shou Qi): rules kernels, a Board API and a Gymnasium environment."""

from envs.board import (
    START_JFEN,
    Animal,
    Board,
    IllegalMoveError,
    InvalidMoveError,
    JFENError,
    Move,
    Outcome,
    Piece,
    Side,
    Termination,
    parse_square,
    perft,
    perft_divide,
)
from envs.rules import DEFAULT_RULES, RuleSet, RuleSetError

__all__ = [
    "START_JFEN",
    "Animal",
    "Board",
    "DEFAULT_RULES",
    "IllegalMoveError",
    "InvalidMoveError",
    "JFENError",
    "Move",
    "Outcome",
    "Piece",
    "RuleSet",
    "RuleSetError",
    "Side",
    "Termination",
    "parse_square",
    "perft",
    "perft_divide",
]

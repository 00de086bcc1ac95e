"""Jungle (Dou Shou Qi): rules kernels, a Board API and a Gymnasium environment."""

from pathlib import Path as _Path

from envs import numba_cache as _numba_cache

_numba_cache.guard(_Path(__file__).parent, [_Path(__file__).parent])

import gymnasium as _gym  # noqa: E402  (after the numba cache guard, which must run first)

from envs.board import (  # noqa: E402
    START_JFEN,
    STARTPOS,
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
from envs.env import GameOverError, IllegalActionError, JungleEnv  # noqa: E402  (needs Board first)
from envs.rules import DEFAULT_RULES, RuleSet, RuleSetError  # noqa: E402

if "Jungle-v0" not in _gym.registry:
    _gym.register(id="Jungle-v0", entry_point="envs.env:JungleEnv", vector_entry_point="envs.vector:JungleVectorEnv")

__all__ = [
    "START_JFEN",
    "STARTPOS",
    "Animal",
    "Board",
    "DEFAULT_RULES",
    "GameOverError",
    "IllegalActionError",
    "JungleEnv",
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

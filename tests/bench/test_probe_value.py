"""bench/probe_value.py: the value a network gives up for each missing animal, checked with known evaluators."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from envs.board import Board
from envs.notation import START_JFEN
from tests.support import ROOT

SPEC = importlib.util.spec_from_file_location("probe_value", ROOT / "bench" / "probe_value.py")
assert SPEC is not None and SPEC.loader is not None
probe_value = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(probe_value)

WORTH = np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype=np.float32) / 20.0


def material(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value = the mover's material minus the opponent's (planes 0-7 against 8-15), weighted by rank."""
    mine = obs[:, 0:8].sum(axis=(2, 3)) @ WORTH
    theirs = obs[:, 8:16].sum(axis=(2, 3)) @ WORTH
    return np.zeros(mask.shape, dtype=np.float32), np.tanh(mine - theirs).astype(np.float32)


def colour_blind(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value 0.5 whenever Blue is to move (plane 23), whatever the pieces."""
    return np.zeros(mask.shape, dtype=np.float32), 0.5 * obs[:, 23, 0, 0]


def test_the_removed_piece_and_the_side_to_move_are_as_asked() -> None:
    start = START_JFEN.split()[0]
    for letter, side in (("E", "b"), ("l", "r"), ("", "b")):
        jfen = probe_value.without(START_JFEN, letter, side)
        board = Board(jfen)
        assert board.jfen().split()[1] == side
        placement = jfen.split()[0]
        if letter:
            assert letter in start and letter not in placement and letter.swapcase() in placement
            assert sum(ch.isalpha() for ch in placement) == 15
        else:
            assert placement == start


def test_a_material_evaluator_loses_more_for_stronger_animals() -> None:
    drops = probe_value.probe(material)
    animals = ["Rat", "Cat", "Dog", "Wolf", "Leopard", "Tiger", "Lion", "Elephant"]
    got = [drops[a] for a in animals]
    assert all(d < 0 for d in got) and got == sorted(got, reverse=True)
    assert drops["Elephant"] == pytest.approx(-np.tanh(8 / 20), abs=1e-6)
    assert drops["start, Red to move"] == pytest.approx(0.0, abs=1e-6)


def test_a_colour_bias_shows_in_the_start_rows_not_as_material() -> None:
    drops = probe_value.probe(colour_blind)
    assert drops["start, Red to move"] == 0.0 and drops["start, Blue to move"] == pytest.approx(0.5)
    assert all(abs(drops[a]) < 1e-6 for a in ("Rat", "Lion", "Elephant"))

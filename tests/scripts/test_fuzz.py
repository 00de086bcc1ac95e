"""Fuzzing the JFEN and move parsers, and train.py's and evaluate.py's config checks: a clean one-line
ValueError or a valid result, never a crash."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as hs

from agents.alphazero.net.device import resolve_device
from agents.alphazero.training import config as train_config
from agents.arena import config as evaluate_config
from envs import START_JFEN, Board, Move
from envs.config import dotted_keys

JFEN_ALPHABET = "rcdwpteRCDWPTLEl0123456789/ bx-+"


def parse_or_value_error(text: str) -> None:
    try:
        board = Board.from_jfen(text)
    except ValueError as e:
        assert str(e)
        return
    # Parsed: the board is sound and round-trips.
    assert Board.from_jfen(board.jfen()).jfen() == board.jfen()
    assert len(board.legal_moves) >= 0
    board.outcome()


@settings(max_examples=300, deadline=None)
@given(hs.text())
@example("")
@example("\x00")
@example("7/7/7/7/7/7/7/7/7 r 0 1")
@example("7/7/7/7/7/7/7/7/7 r 99999999999999999999 1")
@example("７/7/7/7/7/7/7/7/7 r 0 1")
@example("7/7/7/7/7/7/7/7/7 r ١ 1")
def test_jfen_arbitrary_text(text: str) -> None:
    parse_or_value_error(text)


@settings(max_examples=300, deadline=None)
@given(hs.text(alphabet=JFEN_ALPHABET, max_size=60))
def test_jfen_near_alphabet(text: str) -> None:
    parse_or_value_error(text)


@settings(max_examples=300, deadline=None)
@given(
    hs.lists(
        hs.tuples(hs.integers(0, len(START_JFEN)), hs.integers(0, 2), hs.sampled_from(JFEN_ALPHABET)),
        min_size=1,
        max_size=4,
    )
)
def test_jfen_mutations(edits: list[tuple[int, int, str]]) -> None:
    """Insert, replace or delete characters of the start JFEN."""
    text = START_JFEN
    for pos, kind, ch in edits:
        pos = min(pos, len(text))
        if kind == 0:
            text = text[:pos] + ch + text[pos:]
        elif kind == 1:
            text = text[:pos] + ch + text[pos + 1 :]
        else:
            text = text[:pos] + text[pos + 1 :]
    parse_or_value_error(text)


@settings(max_examples=300, deadline=None)
@given(hs.text(max_size=8) | hs.text(alphabet="abcdefghz0123456789 ", max_size=6))
@example("a3a4")
@example("a1a1")
@example("a3a4\n")
def test_move_parser(text: str) -> None:
    try:
        move = Move.from_str(text)
    except ValueError as e:
        assert repr(text) in str(e)
        return
    assert Move.from_str(str(move)) == move
    assert str(move) == text.strip()
    board = Board()
    try:
        board.push(move)
    except ValueError:
        assert move not in board.legal_moves


# --------------------------------------------------------------------------------------------
# train.py's and evaluate.py's config checks: random overrides through Hydra's compose API
# --------------------------------------------------------------------------------------------
WORDS = hs.sampled_from(
    [
        "",
        " ",
        ".",
        "..",
        "../../etc",
        "/",
        "/etc",
        "a/b",
        "a\\b",
        "~",
        "${oc.env:HOME}",
        "${now:%H}",
        "'x y'",
        "random",
        "alphabeta:depth=2",
        "checkpoint:path=nowhere.pt",
        "cuda",
        "cuda:7",
        "cpu",
        "auto",
        "gumbel",
        "puct",
        "true",
        "null",
        "[]",
        "[1,2]",
        "{a:1}",
        "[random,'alphabeta:depth=-1']",
        "x" * 300,
    ]
)
NUMBERS = hs.sampled_from(
    [
        "nan",
        "inf",
        "-inf",
        "1e400",
        "-1e400",
        "1e9",
        "1e11",
        "0",
        "-1",
        "1",
        "0.5",
        "2.5",
        str(2**32),
        str(2**63),
        str(10**30),
        "-0",
        "1_000",
    ]
)
VALUES = hs.one_of(
    WORDS,
    NUMBERS,
    hs.integers(-(2**70), 2**70).map(str),
    hs.floats(allow_nan=True, allow_infinity=True).map(repr),
    hs.text(alphabet="abc/._-~:$={}[],'0123456789 ", max_size=12),
)


def overrides(known: list[str]) -> hs.SearchStrategy[list[str]]:
    keys = hs.one_of(
        hs.sampled_from(known),
        hs.sampled_from(known).map(lambda k: k[:-1] or "x"),
        hs.sampled_from(["trian.iterations", "bogus", "train.bogus", "gamesperpair", "hydra.foo"]),
        hs.text(alphabet="abcdefghijklmnopqrstuvwxyz._", min_size=1, max_size=12),
    )
    item = hs.tuples(hs.sampled_from(["", "", "", "+", "++", "~"]), keys, VALUES).map(
        lambda t: f"{t[0]}{t[1]}" if t[0] == "~" else f"{t[0]}{t[1]}={t[2]}"
    )
    return hs.lists(item, min_size=1, max_size=4)


def assert_checked_or_one_line(check: Any, compose: Any, args: list[str]) -> Any:
    """`check(compose(args))`, or None when it raised a ValueError of one line; any other exception fails."""
    try:
        return check(compose(args))
    except ValueError as e:
        text = str(e)
        assert text and "\n" not in text, (args, text)
        return None


def assert_finite_and_plain(node: Any, where: str = "") -> None:
    """Every number of a checked config is finite (dataclasses walked)."""
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if dataclasses.is_dataclass(value):
            assert_finite_and_plain(value, f"{where}{f.name}.")
        elif isinstance(value, float):
            assert math.isfinite(value), f"{where}{f.name}={value}"


@pytest.mark.slow  # hundreds of examples, each composed by Hydra
@settings(max_examples=60, deadline=None)
@given(overrides(dotted_keys(train_config.Config)))
@example(["trian.iterations=3"])
@example(["train.learner.lr=1e400"])
@example(["seed=4294967296"])
@example(["name=../../etc"])
@example(["train.replay_capacity=100000000000"])
@example(["seed=${oc.env:HOME}"])
@example(["rules=[1,2]"])
def test_train_config_checks_give_a_valid_config_or_one_line(args: list[str]) -> None:
    conf = assert_checked_or_one_line(train_config.checked_config, train_config.compose_config, args)
    if conf is not None:
        assert isinstance(conf, train_config.Config)
        assert_finite_and_plain(conf)
        assert 0 <= conf.seed < 2**32 and 1 <= conf.mcts.num_simulations <= 100_000
        assert conf.name == "" or ("/" not in conf.name and conf.name not in (".", ".."))
        resolve_device(conf.device)


@pytest.mark.slow  # hundreds of examples, each composed by Hydra
@settings(max_examples=60, deadline=None)
@given(overrides(dotted_keys(evaluate_config.EvaluateConfig)))
@example(["gamesperpair=4"])
@example(["+gamesperpair=4"])
@example(["games_per_pair=1e11"])
@example(["prior_games=nan"])
@example(["seed=${oc.env:HOME}"])
@example(["rules=[1,2]"])
def test_evaluate_config_checks_give_a_valid_config_or_one_line(args: list[str]) -> None:
    conf = assert_checked_or_one_line(evaluate_config.checked_config, evaluate_config.compose_config, args)
    if conf is not None:
        assert isinstance(conf, evaluate_config.EvaluateConfig)
        assert_finite_and_plain(conf)
        assert 1 <= conf.games_per_pair <= 100_000 and conf.seed >= 0

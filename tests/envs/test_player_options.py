"""The options of a player kind declared once (`envs.player_options`): read from a spec or from keywords with the same
checks, refused in one line naming the kind and the key, and written as a docs table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

import pytest

from envs.player_options import PlayerOptions, option
from envs.players import PlayerSpecError


@dataclass(frozen=True)
class ToyOptions(PlayerOptions):
    """A made-up kind with one option of each type."""

    KIND: ClassVar[str] = "toy"
    GROUPS: ClassVar[tuple[str, ...]] = ("limits", "player")
    RENAMED: ClassVar[dict[str, str]] = {"plies": "depth"}

    style: str = option("calm", "how it plays", group="player", choices=("calm", "wild"))
    depth: int = option(3, "plies searched", group="limits", bounds=(1, 30))
    time: Optional[float] = option(None, "seconds a move", group="limits", bounds=(0, None), shown_default="none")
    fast: bool = option(False, "hurry", group="player")


def test_a_spec_and_keywords_give_the_same_options() -> None:
    by_spec = ToyOptions.from_spec({"depth": "4", "time": "0.5", "style": "wild", "fast": "TRUE"})
    assert by_spec == ToyOptions.from_keywords({"depth": 4, "time": 0.5, "style": "wild", "fast": True})
    assert by_spec == ToyOptions(depth=4, time=0.5, style="wild", fast=True)
    assert ToyOptions.from_spec({}) == ToyOptions()


@pytest.mark.parametrize(
    ("key", "keyword", "text", "line"),
    [
        ("depth", 0, "0", "player 'toy': depth=0 must lie in [1, 30]"),
        ("depth", "x", "x", "player 'toy': depth='x' must be an integer in [1, 30]"),
        ("time", -1.0, "-1", "player 'toy': time=-1.0 must be >= 0"),
        ("time", "soon", "soon", "player 'toy': time='soon' must be a number >= 0"),
        ("style", "mad", "mad", "player 'toy': style='mad' is not one of calm, wild"),
        ("fast", "yes", "yes", "player 'toy': fast='yes' must be true or false"),
    ],
)
def test_a_bad_value_is_refused_in_the_same_line_either_way(key: str, keyword: object, text: str, line: str) -> None:
    with pytest.raises(PlayerSpecError) as by_keyword:
        ToyOptions.from_keywords({key: keyword})
    with pytest.raises(PlayerSpecError) as by_spec:
        ToyOptions.from_spec({key: text})
    assert str(by_keyword.value) == str(by_spec.value) == line


def test_an_unknown_or_renamed_key_is_refused_naming_the_known_ones() -> None:
    for read in (ToyOptions.from_spec, ToyOptions.from_keywords):
        with pytest.raises(PlayerSpecError) as unknown:
            read({"colour": "red"})
        assert str(unknown.value) == "player 'toy' has no option(s) colour; known: depth, fast, style, time"
        with pytest.raises(PlayerSpecError) as renamed:
            read({"plies": "3"})
        assert str(renamed.value) == "player 'toy' has no option plies; it is called depth now"


def test_the_table_and_the_bounds_come_from_the_declarations() -> None:
    assert ToyOptions.table() == (
        "| option | group | default | bounds | what it is |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| `depth` | limits | `3` | [1, 30] | plies searched |\n"
        "| `time` | limits | none | >= 0 | seconds a move |\n"
        "| `style` | player | `calm` | `calm`, `wild` | how it plays |\n"
        "| `fast` | player | `false` | `true`, `false` | hurry |\n"
    )
    assert ToyOptions.option_bounds("depth") == (1, 30)
    with pytest.raises(KeyError, match="has no bounds"):
        ToyOptions.option_bounds("style")

"""The alpha-beta player's options: one dataclass (`AlphaBetaOptions`), the same player by keywords or by spec."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from agents.alphabeta import player as alphabeta_player
from agents.alphabeta.options import AlphaBetaOptions
from agents.alphabeta.player import AlphaBetaPlayer
from envs.players import PlayerSpecError, make_player
from tests import support

# one value other than the default and one refused value (None: the option refuses no string) per option
SAMPLES: dict[str, tuple[Any, Any]] = {
    "level": ("expert", "master"),
    "depth": (4, 0),
    "nodes": (500, 0),
    "time": (0.5, 0.0),
    "noise": (20, -1),
    "random": (0.1, 2.0),
    "tt": (12, 29),
    "tablebase": (True, "yes"),
    "name": ("mine", None),
}


def _spelled(value: Any) -> str:
    """`value` as a spec writes it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _settings(player: AlphaBetaPlayer) -> tuple[Any, ...]:
    """What decides how a player plays: its resolved options, its limits, its search's table, noise, tables and
    random streams."""
    engine = player.engine
    return (
        player.options,
        player.depth,
        player.nodes,
        player.time,
        player.random,
        engine.ws.tt_keys.shape,
        engine.noise,
        engine.tablebase,
        str(player.rng.bit_generator.state),
        str(engine.rng.bit_generator.state),
    )


def test_every_option_has_samples() -> None:
    assert set(SAMPLES) == {f.name for f in dataclasses.fields(AlphaBetaOptions)}


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_keywords_and_spec_build_the_same_player(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each option, given to `AlphaBetaPlayer` as a keyword or to `make_player` in a spec, makes the same player
    (alone and with a level, which fills in what is not given), and a refused value the same one line."""
    tables = SimpleNamespace(serves=lambda rules: True)  # stands for the endgame tables at their default location
    monkeypatch.setattr(alphabeta_player, "default_tablebase", lambda rules=None: tables)
    good, bad = SAMPLES[key]
    for extra in ({}, {"level": "beginner"}):
        keywords = {**extra, key: good}
        spec = "alphabeta:" + ",".join(f"{k}={_spelled(v)}" for k, v in keywords.items())
        by_spec = make_player(spec, seed=3)
        assert isinstance(by_spec, AlphaBetaPlayer)
        by_keywords = AlphaBetaPlayer(seed=3, **keywords)
        assert _settings(by_keywords) == _settings(by_spec)
        assert by_spec.name == ("mine" if key == "name" else spec)  # make_player names it by its spec
    if bad is None:
        return
    with pytest.raises(PlayerSpecError) as by_keywords_refused:
        AlphaBetaPlayer(**{key: bad})
    with pytest.raises(PlayerSpecError) as by_spec_refused:
        make_player(f"alphabeta:{key}={_spelled(bad)}")
    line = str(by_keywords_refused.value)
    assert line == str(by_spec_refused.value)
    assert line.startswith(f"player 'alphabeta': {key}=") and _spelled(bad) in line and "\n" not in line


@pytest.mark.parametrize(
    ("spec", "depth", "nodes", "time", "random"),
    [
        ("alphabeta", 3, None, None, 0.0),
        ("alphabeta:level=beginner", 1, None, None, 0.2),
        ("alphabeta:level=expert", 6, None, None, 0.0),
        ("alphabeta:level=beginner,random=0.1,depth=4", 4, None, None, 0.1),
        ("alphabeta:random=0.1", 3, None, None, 0.1),
        ("alphabeta:time=0.5", None, None, 0.5, 0.0),
        ("alphabeta:nodes=500", None, 500, None, 0.0),
        ("alphabeta:level=expert,time=0.5", 6, None, 0.5, 0.0),
    ],
)
def test_a_level_fills_in_what_is_not_given(spec: str, depth: Any, nodes: Any, time: Any, random: float) -> None:
    """The specs that worked before the options had one dataclass search as they did: a level gives its depth
    and chance of a random move; without a level or a limit, the `normal` level's."""
    player = make_player(spec)
    assert isinstance(player, AlphaBetaPlayer)
    assert (player.depth, player.nodes, player.time, player.random) == (depth, nodes, time, random)


def test_an_unknown_or_renamed_option_is_refused_in_one_line() -> None:
    with pytest.raises(PlayerSpecError, match=r"^player 'alphabeta' has no option\(s\) colour; known: depth, level"):
        make_player("alphabeta:colour=red")
    with pytest.raises(PlayerSpecError, match="^player 'alphabeta' has no option tt_bits; it is called tt now$"):
        AlphaBetaPlayer(tt_bits=16)
    with pytest.raises(PlayerSpecError, match="^player 'alphabeta': depth='x' must be an integer in \\[1, 48\\]$"):
        make_player("alphabeta:depth=x")


def test_the_docs_table_is_the_generated_one() -> None:
    """docs/evaluation.md's table of the alpha-beta options is `AlphaBetaOptions.table()`'s."""
    assert AlphaBetaOptions.table() in (support.ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")


def test_the_play_page_limits_read_the_options_bounds() -> None:
    """The page's limits of an alpha-beta spec are the options' bounds, narrowed only by its named constants."""
    from agents.play import specs
    from agents.play.errors import PlayError

    limits = specs._spec_limits("alphabeta")
    bounds = AlphaBetaOptions.option_bounds
    assert limits["depth"] == (bounds("depth")[0], specs.PAGE_MAX_DEPTH)
    assert limits["tt"] == (bounds("tt")[0], specs.PAGE_MAX_TT)
    assert limits["noise"] == bounds("noise") and limits["random"] == bounds("random")
    with pytest.raises(PlayError, match=f"depth={specs.PAGE_MAX_DEPTH + 1} is outside the page's limits"):
        specs.bounded_spec(f"alphabeta:depth={specs.PAGE_MAX_DEPTH + 1}", 1.0)

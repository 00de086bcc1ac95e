"""One config error base: every config error class is a ConfigError, and each names the key it refuses."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from agents.alphazero.distributed.pools import make_selfplay_pool
from agents.alphazero.distributed.settings import (
    InferenceConfig,
    InferenceSettingsError,
    WorkerBackendError,
    WorkerSettings,
)
from agents.alphazero.net.network import NetworkConfig, NetworkShapeError
from agents.alphazero.search import MCTSConfig, MCTSConfigError
from agents.alphazero.selfplay.games import SelfPlayConfig, SelfPlayConfigError
from agents.alphazero.training.learner import LearnerConfig, LearnerConfigError
from envs.config import ConfigError, check_choice, check_range
from envs.players import PlayerSpecError, make_player
from envs.rules import RuleSet, RuleSetError
from envs.vector import JungleVectorEnv

CLASSES = [
    RuleSetError,
    PlayerSpecError,
    NetworkShapeError,
    MCTSConfigError,
    LearnerConfigError,
    SelfPlayConfigError,
    WorkerBackendError,
    InferenceSettingsError,
]


def _pool(backend: str, workers: int) -> Any:
    settings = WorkerSettings(network=NetworkConfig(), mcts=MCTSConfig(), rules=RuleSet())
    return make_selfplay_pool(backend, workers, settings)


@pytest.mark.parametrize("error", CLASSES, ids=lambda c: c.__name__)
def test_every_config_error_class_is_a_config_error(error: type[Exception]) -> None:
    assert issubclass(error, ConfigError) and issubclass(error, ValueError)


BAD: list[tuple[type[Exception], Callable[[], Any], str]] = [
    (ConfigError, lambda: JungleVectorEnv(num_envs=0), "num_envs=0 must be >= 1"),
    (ConfigError, lambda: JungleVectorEnv(num_envs=2, max_plies=0), "max_plies=0 must be >= 1"),
    (
        RuleSetError,
        lambda: RuleSet(rank_order="wolf_first"),
        "rule rank_order='wolf_first' is not one of standard, dog_over_wolf",
    ),
    (RuleSetError, lambda: RuleSet(no_capture_draw=-1), "rule no_capture_draw=-1 must lie in [0, 30000]"),
    (PlayerSpecError, lambda: make_player("alphabeta:depth=0"), "player 'alphabeta': depth=0 must lie in [1, 48]"),
    (PlayerSpecError, lambda: make_player("alphabeta:random=2"), "player 'alphabeta': random=2.0 must lie in [0, 1]"),
    (
        PlayerSpecError,
        lambda: make_player("checkpoint:path=none.pt,sims=0"),
        "player 'checkpoint': sims=0 must lie in [1, 100000]",
    ),
    (
        PlayerSpecError,
        lambda: make_player("checkpoint:path=none.pt,algorithm=mcts"),
        "player 'checkpoint': algorithm='mcts' is not one of puct, gumbel",
    ),
    (NetworkShapeError, lambda: NetworkConfig(channels=0), "model.channels=0 must lie in [1, 512]"),
    (NetworkShapeError, lambda: NetworkConfig(value_head="mlp"), "model.value_head='mlp' is not one of scalar, wdl"),
    (
        MCTSConfigError,
        lambda: MCTSConfig(algorithm="alphabeta"),
        "mcts.algorithm='alphabeta' is not one of puct, gumbel",
    ),
    (
        LearnerConfigError,
        lambda: LearnerConfig(optimizer="adam"),
        "train.learner.optimizer='adam' is not one of sgd, adamw",
    ),
    (
        LearnerConfigError,
        lambda: LearnerConfig(schedule="linear"),
        "train.learner.schedule='linear' is not one of constant, cosine, step",
    ),
    (
        SelfPlayConfigError,
        lambda: SelfPlayConfig(truncated_value="loss"),
        "train.selfplay.truncated_value='loss' is not one of search, draw",
    ),
    (
        WorkerBackendError,
        lambda: _pool("threads", 2),
        "self-play backend='threads' is not one of inprocess, process, ray",
    ),
    (WorkerBackendError, lambda: _pool("process", -1), "self-play workers=-1 must be >= 0"),
    (InferenceSettingsError, lambda: InferenceConfig(max_wait=-1), "train.inference.max_wait=-1 must lie in [0, 10]"),
    (InferenceSettingsError, lambda: InferenceConfig(halves=3), "train.inference.halves=3 must lie in [1, 2]"),
]


@pytest.mark.parametrize(
    "error, make, message",
    BAD,
    ids=[f"{error.__name__}-{message.split('=')[0].split()[-1]}" for error, _, message in BAD],
)
def test_each_config_error_names_its_key_in_one_line(
    error: type[Exception], make: Callable[[], Any], message: str
) -> None:
    with pytest.raises(ConfigError) as e:
        make()
    assert type(e.value) is error and str(e.value) == message


def test_check_range_and_check_choice_read_objects_and_mappings() -> None:
    """The first bad field is named, under `where` (dotted) or after a `where` that ends in a space."""
    with pytest.raises(ConfigError, match=r"^train\.b=-1 must be >= 0$"):
        check_range({"a": 1, "b": -1, "c": -1}, "train", a=(0, 1), b=(0, None), c=(0, None))
    with pytest.raises(RuleSetError, match=r"^rule no_capture_draw=nan must lie in \[0, 5\]$"):
        check_range({"no_capture_draw": float("nan")}, "rule ", RuleSetError, no_capture_draw=(0, 5))
    with pytest.raises(ConfigError, match=r"^x=1000.*\.\.\. must lie in \[0, 10\]$"):  # an int too large for a float
        check_range({"x": 10**400}, "", x=(0, 10))
    with pytest.raises(ConfigError, match=r"^mode=\['x'\] is not one of a, b$"):
        check_choice({"mode": ["x"]}, "", mode=("a", "b"))
    check_range(NetworkConfig(), "model", blocks=(0, 64))
    check_choice(RuleSet(), "rule ", anti_chase=iter(["off", "7-3+17-5"]))


def test_an_unknown_key_holding_odd_characters_is_named_quoted_in_one_line() -> None:
    """Plain names as typed, anything else quoted: a key with a line break keeps the message on one line."""
    with pytest.raises(RuleSetError) as e:
        RuleSet.from_dict({"\n": 1, "colour": 2})
    assert "\n" not in str(e.value)
    assert str(e.value).startswith("unknown rule key(s) '\\n', colour;")


@pytest.mark.slow
@pytest.mark.parametrize("script", ["train", "evaluate"])
def test_a_hostile_rule_file_on_hydras_searchpath_is_one_line(script: str, tmp_path: Any) -> None:
    """`rules=NAME` with ``hydra.searchpath=[file://DIR]`` reads DIR/rules/NAME.yaml as ``--rules`` reads a file:
    once a RecursionError (20 000 nested lists) and yaml's several lines (a list as a key); a bool for a
    number is refused too (by Hydra's typed node)."""
    if script == "train":
        from agents.alphazero.training.config import compose_config
    else:
        from agents.arena.config import compose_config

    mine = tmp_path / "rules"
    mine.mkdir()
    hostile = {
        "deep": ("rank_order: " + "[" * 20_000 + "]" * 20_000 + "\n", "nested deeper than 32 levels"),
        "listkey": ("? [a, b]\n: 1\n", "the key [a, b] is not a string"),
        "aliases": ("rank_order: &a standard\nrepetition: *a\n", "anchors (&a) are not allowed"),
        "boolean": ("no_capture_draw: true\n", "rules.no_capture_draw"),
    }
    for name, (text, words) in hostile.items():
        (mine / f"{name}.yaml").write_text(text)
        with pytest.raises(ConfigError) as refused:
            compose_config([f"hydra.searchpath=[file://{tmp_path}]", f"rules={name}"])
        line = str(refused.value)
        assert words in line and "\n" not in line and (name in line if name == "boolean" else str(mine) in line)

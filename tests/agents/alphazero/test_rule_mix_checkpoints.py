"""A checkpoint trained on a mix of rule sets: what it says it knows, and the checkpoint player under each; the
mix itself checked before it is trusted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from agents.alphazero.net import shipped
from agents.alphazero.net.checkpoint import CheckpointError, load_checkpoint, load_model, trained_rule_sets
from agents.alphazero.search import MCTSConfig, uniform_evaluator
from agents.alphazero.selfplay.games import SelfPlayConfig, SelfPlayLoop
from agents.alphazero.selfplay.rules_mix import RulesMixError, parse_rules_mix
from agents.alphazero.training.config import Config, TrainConfig
from envs import Board, RuleSet
from envs.config import ConfigError
from envs.players import PlayerSpecError, make_player
from envs.rules import load_rules
from tests.support.checkpoints import mixed_checkpoint
from tests.support.hostile import HOSTILE_RULE_FILES
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread)

MIX = ("default", "keeps_rank", "enemy_rat")


def test_trained_rule_sets_of_a_mix_and_of_one_rule_set(tmp_path: Path) -> None:
    path = mixed_checkpoint(tmp_path / "mix.pt", MIX)
    assert trained_rule_sets(load_checkpoint(path)) == [(name, load_rules(name)) for name in MIX]
    for net in shipped.networks():  # one rule set each, named by the set of configs/rules/ it equals; or its mix
        expected = net.entry.get("rules", "default")
        names = [expected] if isinstance(expected, str) else expected
        assert trained_rule_sets(load_checkpoint(net.path)) == [(name, load_rules(name)) for name in names]
    state = load_checkpoint(path)
    del state["rules_mix"]
    state["rules"] = load_rules("dog_over_wolf").to_dict()
    assert trained_rule_sets(state) == [("dog_over_wolf", load_rules("dog_over_wolf"))]
    state["rules"] = RuleSet(no_capture_draw=77).to_dict()
    assert trained_rule_sets(state) == [("custom", RuleSet(no_capture_draw=77))]
    for bad in (
        [],
        "default",
        [{"name": "x"}],
        [{"name": "x", "rules": {"rank_order": "wolf"}}],
        [{"name": "x", "rules": {"no_capture_draw": True}}],  # once read as a draw after one ply
    ):
        state["rules_mix"] = bad
        with pytest.raises(CheckpointError, match="rules_mix"):
            trained_rule_sets(state, path)


def _plays(player: object, rules: RuleSet, plies: int = 3) -> Board:
    board = Board(rules=rules)
    for _ in range(plies):
        move = player.select_move(board.copy())  # type: ignore[attr-defined]
        assert board.is_legal(move)
        board.push(move)
    return board


@pytest.mark.parametrize("name", MIX)
def test_the_checkpoint_player_plays_every_rule_set_of_its_mix(tmp_path: Path, name: str) -> None:
    path = mixed_checkpoint(tmp_path / "mix.pt", MIX)
    rules = load_rules(name)
    player = make_player(f"checkpoint:path={path},sims=4,device=cpu", rules=rules, seed=0)
    assert player.rules == rules  # type: ignore[attr-defined]
    _plays(player, rules)
    load_model(path, rules=rules)  # so does loading the model for those rules


def test_rules_outside_the_mix_are_refused_naming_the_mix_unless_any_rules(tmp_path: Path) -> None:
    path = mixed_checkpoint(tmp_path / "mix.pt", MIX)
    outside = RuleSet(trapped_attacker="keeps_rank", jump_blocking="enemy_rat")  # a combination it never saw
    with pytest.raises(CheckpointError) as refused:
        make_player(f"checkpoint:path={path},sims=4,device=cpu", rules=outside)
    line = str(refused.value)
    assert "\n" not in line and "another rule set" in line and "default, keeps_rank, enemy_rat" in line
    assert "any_rules=true" in line
    with pytest.raises(CheckpointError, match="default, keeps_rank, enemy_rat"):
        load_model(path, rules=outside)
    player = make_player(f"checkpoint:path={path},sims=4,device=cpu,any_rules=true", rules=outside, seed=0)
    _plays(player, outside)
    with pytest.raises(PlayerSpecError, match="any_rules='yes'"):
        make_player(f"checkpoint:path={path},any_rules=yes")


def test_a_single_rule_checkpoint_refuses_other_rules_as_before(tmp_path: Path) -> None:
    net = shipped.network("shipped:default-60")
    with pytest.raises(CheckpointError, match=r"another rule set \(its rule set default; rank_order"):
        make_player(f"checkpoint:path={net.path},sims=4,device=cpu", rules=load_rules("dog_over_wolf"))
    player = make_player(f"checkpoint:path={net.path},sims=4,device=cpu", seed=0)
    assert player.rules == RuleSet()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "entries, words",
    [
        (["default:1e308", "keeps_rank:1e308"], "the weights add up to inf"),
        (["default:1.7e308", "keeps_rank:1", "enemy_rat:1.7e308"], "the weights add up to inf"),
        (["default:inf"], "the weight must be a positive finite number, not inf"),
        (["default:nan", "keeps_rank"], "the weight must be a positive finite number"),
        (["default:-1", "keeps_rank"], "the weight must be a positive finite number"),
        (["default:0", "keeps_rank"], "the weight must be a positive finite number"),
    ],
)
def test_rule_mix_weights_and_their_sum_are_finite_and_positive(entries: list[str], words: str) -> None:
    """Weights of 1e308 each were taken, their sum overflowed and every game drew the same rule set."""
    with pytest.raises(RulesMixError) as refused:
        parse_rules_mix(entries)
    assert words in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(ConfigError, match="train.rules_mix"):
        TrainConfig(rules_mix=["default:1e308", "keeps_rank:1e308"])


@settings(max_examples=60, deadline=None)
@given(weights=hs.lists(hs.floats() | hs.sampled_from([1e308, 1.7976931348623157e308, 5e-324]), min_size=1, max_size=3))
def test_a_mix_of_any_weights_draws_every_rule_set_by_weight_or_is_one_line(weights: list[float]) -> None:
    """Whatever the weights, the mix is refused in one line or each rule set's share of the draws is its weight
    over a finite sum (so every rule set is drawn, and none more than its share)."""
    names = ("default", "keeps_rank", "enemy_rat")
    try:
        mix = parse_rules_mix([f"{name}:{w!r}" for name, w in zip(names, weights)])
    except RulesMixError as e:
        assert "\n" not in str(e)
        return
    drawn = np.array([m.weight for m in mix])
    bounds = np.cumsum(drawn) / drawn.sum()  # what `draw_rules` cuts [0, 1) at
    assert np.isfinite(bounds).all() and abs(bounds[-1] - 1) < 1e-12
    np.testing.assert_allclose(np.diff(bounds, prepend=0.0), drawn / drawn.sum(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("entry", ["a" * 300, "/tmp/" + "b" * 300 + ".yaml", "c" * 300 + ":2"])
def test_a_rule_mix_entry_too_long_for_the_file_system_is_one_line(entry: str) -> None:
    with pytest.raises(RulesMixError) as refused:
        parse_rules_mix(["default", entry])
    line = str(refused.value)
    assert line.startswith("train.rules_mix entry ") and "\n" not in line and len(line) < 300


@HOSTILE_RULE_FILES
def test_a_hostile_rule_file_in_a_mix_is_one_line(text: str, words: str, tmp_path: Path) -> None:
    """The same check as ``--rules`` (`envs.rules.load_rules`): once a RecursionError, a TypeError and a mix
    whose games were drawn after one ply."""
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    with pytest.raises(RulesMixError) as refused:
        parse_rules_mix(["default", str(path)])
    line = str(refused.value)
    assert "\n" not in line and str(path) in line and words in line


TWO_RULE_SETS = ["default", "keeps_rank"]


@pytest.mark.parametrize(
    "mcts, selfplay",
    [
        (MCTSConfig(tablebase=True), SelfPlayConfig()),
        (MCTSConfig(), SelfPlayConfig(tablebase_adjudicate=True)),
        (MCTSConfig(), SelfPlayConfig(tablebase_rescore=True)),
        (MCTSConfig(), SelfPlayConfig(opponents=["random"], opponent_fraction=0.5)),
    ],
    ids=["mcts.tablebase", "tablebase_adjudicate", "tablebase_rescore", "opponent_fraction"],
)
def test_what_a_mix_cannot_play_is_refused_alike_by_the_config_and_the_games(
    mcts: MCTSConfig, selfplay: SelfPlayConfig
) -> None:
    """One list of the settings a mix of rule sets cannot play with: the run's config and the self-play loop
    refuse each with the same line."""
    with pytest.raises(RulesMixError) as by_config:
        Config(mcts=mcts, train=TrainConfig(rules_mix=TWO_RULE_SETS, selfplay=selfplay))
    with pytest.raises(RulesMixError) as by_games:
        SelfPlayLoop(
            uniform_evaluator,
            selfplay,
            mcts=mcts,
            rules=RuleSet(),
            num_games=1,
            seed=0,
            rules_mix=parse_rules_mix(TWO_RULE_SETS),
        )
    assert str(by_config.value) == str(by_games.value)
    assert str(by_config.value).endswith("cannot be used with train.rules_mix (the games play several rule sets)")
    Config(mcts=mcts, train=TrainConfig(selfplay=selfplay))  # without a mix, each is a setting like any other

"""A checkpoint trained on a mix of rule sets: what it says it knows, and the checkpoint player under each."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.alphazero import shipped
from agents.alphazero.checkpoint import CheckpointError, load_checkpoint, load_model, trained_rule_sets
from envs import Board, RuleSet
from envs.players import PlayerSpecError, make_player
from envs.rules import load_rules
from tests.support.checkpoints import mixed_checkpoint
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
    for bad in ([], "default", [{"name": "x"}], [{"name": "x", "rules": {"rank_order": "wolf"}}]):
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

"""The rule planes of the observation (planes 24-31 of `envs.encoding`): what they hold, that every rule that
changes play changes them, and that the mirror and the packed form keep them."""

from __future__ import annotations

import itertools
from dataclasses import fields, replace

import numpy as np
import pytest
import torch

from agents.alphazero.net.packing import pack_observations, unpack_observations
from agents.alphazero.net.runtime import unpack_on_device
from agents.alphazero.training.replay import ReplayBuffer
from envs import Board, RuleSet
from envs.encoding import (
    LEGACY_PLANES,
    N_ACTIONS,
    N_PLANES,
    N_RULE_PLANES,
    OBS_SHAPE,
    RULE_FIRST_PLANE,
    encode_observation,
    rule_planes,
)
from envs.rules import _CHOICES, COUNTER_LIMIT, load_rules, rule_set_names

LIMITS = (0, 1, 2, 60, 119, 120, 121, 200, 1000, COUNTER_LIMIT - 1, COUNTER_LIMIT)
"""No-capture limits the tests try: off, the smallest, around the default, and the largest."""


def observe(board: Board) -> np.ndarray:
    obs = np.empty(OBS_SHAPE, np.float32)
    encode_observation(board.state, board.hashes, board.flags, obs)
    return obs


def played(rules: RuleSet, moves: tuple[str, ...] = ("a3a4", "g7g6", "a4a5")) -> Board:
    board = Board(rules=rules)
    for m in moves:
        board.push(m)
    return board


def every_rule_set() -> list[RuleSet]:
    """Every combination of the rule choices with every limit of `LIMITS`."""
    keys = list(_CHOICES)
    return [
        RuleSet(**dict(zip(keys, values)), no_capture_draw=limit)
        for values in itertools.product(*(_CHOICES[k] for k in keys))
        for limit in LIMITS
    ]


def test_the_planes_follow_the_legacy_ones() -> None:
    assert RULE_FIRST_PLANE == LEGACY_PLANES == 24 and N_PLANES == 32 and OBS_SHAPE == (32, 9, 7)
    assert N_RULE_PLANES == N_PLANES - RULE_FIRST_PLANE


def test_default_rules_give_zero_rule_planes_and_planes_0_23_do_not_see_the_rules() -> None:
    """Under the default rules the rule planes are 0; any rule set leaves planes 0-23 of a position alone
    (a limit other than 120 changes plane 21, the clock over the limit, as before the rule planes)."""
    base = observe(played(RuleSet()))
    assert not base[RULE_FIRST_PLANE:].any()
    for rules in every_rule_set():
        obs = observe(played(rules))
        keep = [p for p in range(LEGACY_PLANES) if p != 21]
        np.testing.assert_array_equal(obs[keep], base[keep])
        for p in range(RULE_FIRST_PLANE, N_PLANES):
            assert (obs[p] == obs[p, 0, 0]).all() and 0.0 <= obs[p, 0, 0] <= 1.0


@pytest.mark.parametrize("key", [f.name for f in fields(RuleSet)])
def test_every_rule_that_changes_play_changes_the_input(key: str) -> None:
    """Each field's every other value (and every limit of `LIMITS`) changes the rule planes, from the default
    rules and from a rule set where every other field differs too."""
    others = _CHOICES[key] if key in _CHOICES else LIMITS
    for base in (RuleSet(), RuleSet(**{k: v[1] for k, v in _CHOICES.items()}, no_capture_draw=200)):
        for value in others:
            changed = replace(base, **{key: value})
            if changed == base:
                continue
            a, b = observe(played(base)), observe(played(changed))
            assert not np.array_equal(a[RULE_FIRST_PLANE:], b[RULE_FIRST_PLANE:]), (key, value)


def test_distinct_rule_sets_give_distinct_rule_planes() -> None:
    """No two rule sets of every combination share their rule planes (so the network can tell any two apart)."""
    sets = every_rule_set()
    planes = {tuple(rule_planes(r.flags()).tolist()) for r in sets}
    assert len(planes) == len(sets)


def test_equal_rule_sets_give_equal_inputs() -> None:
    """The same rules however they are named: a RuleSet, its dict, the named file, overrides."""
    ways = {
        "keeps_rank": [
            RuleSet(trapped_attacker="keeps_rank"),
            RuleSet.from_dict({"trapped_attacker": "keeps_rank"}),
            load_rules("keeps_rank"),
            RuleSet().with_overrides(["trapped_attacker=keeps_rank"]),
        ],
        "hundred_rounds": [RuleSet(no_capture_draw=200), load_rules("hundred_rounds")],
        "default": [RuleSet(), load_rules("default"), RuleSet.from_dict(RuleSet().to_dict())],
    }
    for name, rule_sets in ways.items():
        first = observe(played(rule_sets[0]))
        for rules in rule_sets[1:]:
            np.testing.assert_array_equal(observe(played(rules)), first, err_msg=name)


def test_named_rule_sets_have_their_own_planes() -> None:
    planes = {name: tuple(rule_planes(load_rules(name).flags()).tolist()) for name in rule_set_names()}
    assert len(set(planes.values())) == len(planes)
    assert planes["default"] == (0.0,) * N_RULE_PLANES
    assert planes["dog_over_wolf"][0] == planes["rats_ignore_water"][1] == planes["enemy_rat"][2] == 1.0
    assert planes["keeps_rank"][3] == planes["no_repetition"][4] == planes["anti_chase"][7] == 1.0
    assert planes["hundred_rounds"][5] == pytest.approx(1 - 120 / 200)


def test_the_mirror_and_the_packed_forms_keep_the_rule_planes() -> None:
    rule_sets = [load_rules(name) for name in rule_set_names()] + [
        RuleSet(no_capture_draw=0),
        RuleSet(no_capture_draw=7),
    ]
    obs = np.stack([observe(played(r)) for r in rule_sets])
    bits, scalars = pack_observations(obs)
    np.testing.assert_array_equal(unpack_observations(bits, scalars), obs)
    on_device = unpack_on_device(torch.from_numpy(bits), torch.from_numpy(scalars))
    np.testing.assert_array_equal(on_device.numpy(), obs)
    buf = ReplayBuffer(len(obs), mirror=False)
    n = len(obs)
    buf.add(obs, np.ones((n, N_ACTIONS), bool), np.full((n, N_ACTIONS), 1 / N_ACTIONS), np.zeros(n))
    got = buf.get(np.arange(n), mirror=np.ones(n, bool)).obs
    np.testing.assert_array_equal(got[:, RULE_FIRST_PLANE:], obs[:, RULE_FIRST_PLANE:])
    np.testing.assert_array_equal(got[:, :RULE_FIRST_PLANE], obs[:, :RULE_FIRST_PLANE, :, ::-1])


def test_a_replay_state_saved_before_the_rule_planes_loads_with_them_at_zero() -> None:
    obs = np.stack([observe(played(load_rules("keeps_rank")))] * 2)
    buf = ReplayBuffer(4, mirror=False)
    buf.add(obs, np.ones((2, N_ACTIONS), bool), np.full((2, N_ACTIONS), 1 / N_ACTIONS), np.zeros(2))
    state = buf.state_dict()
    state["scalars"] = state["scalars"][:, : LEGACY_PLANES - 21]  # planes 21-23, as saved then
    old = ReplayBuffer(4, mirror=False)
    old.load_state_dict(state)
    got = old.get(np.arange(2)).obs
    np.testing.assert_array_equal(got[:, :LEGACY_PLANES], obs[:, :LEGACY_PLANES])
    assert not got[:, LEGACY_PLANES:].any()

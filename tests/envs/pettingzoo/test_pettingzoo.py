"""The PettingZoo AEC env `jungle_v0`: PettingZoo's own API and seed tests, full random games, views, ends."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, seed_test  # noqa: E402

from envs.env import IllegalActionError, JungleEnv  # noqa: E402
from envs.pettingzoo import jungle_v0  # noqa: E402

DEN_IN_ONE_BLUE = "R6/7/7/7/7/7/7/3l3/7 b 0 1"  # Blue to move: its Lion d2 enters Red's den d1


@pytest.mark.parametrize("make", [jungle_v0.env, jungle_v0.raw_env])
def test_pettingzoo_api_test(make: type) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its hints for dict observations, as for every classic game
        api_test(make(), num_cycles=1000)


def test_pettingzoo_seed_test() -> None:
    seed_test(jungle_v0.env, num_cycles=500)


def test_random_games_with_agent_iter_match_jungle_v0() -> None:
    """The standard loop plays full games; each observation and mask is `Jungle-v0`'s under the same actions."""
    rng = np.random.default_rng(0)
    env = jungle_v0.env()
    results = []
    for game in range(4):
        env.reset(seed=game)
        single = JungleEnv()
        obs, info = single.reset(seed=game)
        totals = {"player_0": 0.0, "player_1": 0.0}
        for agent in env.agent_iter():
            observation, reward, termination, truncation, pinfo = env.last()
            totals[agent] += reward
            if termination or truncation:
                env.step(None)
                continue
            assert agent == ("player_0", "player_1")[int(single.side_to_move)]
            np.testing.assert_array_equal(observation["observation"], obs)
            np.testing.assert_array_equal(observation["action_mask"], info["action_mask"])
            action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
            env.step(action)
            obs, _, done, cut, info = single.step(action)
        assert not env.agents
        assert totals["player_0"] == -totals["player_1"]
        assert pinfo["termination"] == info["termination"]
        if info["winner"] is not None:
            winner = ("player_0", "player_1")[int(info["winner"])]
            assert pinfo["winner"] == winner and totals[winner] == 1.0
        else:
            assert totals["player_0"] == 0.0
        results.append(info["termination"])
    assert len(results) == 4


def test_observe_the_other_agent_from_its_own_side() -> None:
    env = jungle_v0.raw_env()
    env.reset(seed=0)
    red, blue = env.observe("player_0"), env.observe("player_1")
    # The start position maps onto itself under the 180-degree turn: only the colour plane differs.
    np.testing.assert_array_equal(red["observation"][:23], blue["observation"][:23])
    assert red["observation"][23].max() == 0.0 and blue["observation"][23].min() == 1.0
    assert red["action_mask"].sum() == 24 and blue["action_mask"].sum() == 0
    env.step(int(np.flatnonzero(red["action_mask"])[0]))
    assert env.agent_selection == "player_1"
    after = env.observe("player_0")["observation"]
    assert not np.array_equal(after[:8], red["observation"][:8])  # Red's moved piece, seen by Red


def test_win_rewards_and_start_position_option() -> None:
    env = jungle_v0.env(render_mode="ansi")
    env.reset(options={"start_jfen": DEN_IN_ONE_BLUE})
    assert env.agent_selection == "player_1"
    action = JungleEnv(start_jfen=DEN_IN_ONE_BLUE).move_to_action("d2d1")
    env.step(action)
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0}
    assert env.infos["player_0"] == {"termination": "den", "winner": "player_1"}
    assert "Blue wins by den" in env.render()


def test_truncation_at_max_plies() -> None:
    env = jungle_v0.env(max_plies=6)
    env.reset(seed=0)
    plies = 0
    for _agent in env.agent_iter():
        observation, reward, termination, truncation, info = env.last()
        if termination or truncation:
            assert truncation and not termination and reward == 0 and info["termination"] == "ply_cap"
            env.step(None)
            continue
        env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        plies += 1
    assert plies == 6


def test_illegal_action_loses_in_env_and_raises_in_raw_env() -> None:
    env = jungle_v0.env()
    env.reset(seed=0)
    illegal = int(np.flatnonzero(env.observe("player_0")["action_mask"] == 0)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(illegal)
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": -1.0, "player_1": 0.0}
    raw = jungle_v0.raw_env()
    raw.reset(seed=0)
    with pytest.raises(IllegalActionError):
        raw.step(illegal)


def test_rgb_array_render() -> None:
    env = jungle_v0.env(render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.shape[2] == 3

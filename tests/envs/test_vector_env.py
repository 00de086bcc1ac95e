"""The batched vector env: equal to N independent `Jungle-v0` under the same actions, autoreset, opponents."""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import envs  # noqa: F401  (registers Jungle-v0 and its vector entry point)
from envs import Move, RuleSet, Side, Termination
from envs.batch_kernels import TERM_PLY_CAP
from envs.encoding import N_ACTIONS, OBS_SHAPE
from envs.env import IllegalActionError, JungleEnv
from envs.vector import TERMINATIONS, JungleVectorEnv

DEN_IN_ONE = "r6/3L3/7/7/7/7/7/7/7 r 0 1"  # Red Lion d8 enters Blue's den d9


@pytest.fixture
def tiny_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start the vector env with room for 8 plies, so that its history arrays grow during the test."""
    monkeypatch.setattr("envs.vector.INITIAL_PLY_ROOM", 8)


def random_actions(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A uniformly drawn legal action per row of int8 `masks[N, 252]`; 0 where none is legal."""
    out = np.zeros(len(masks), dtype=np.int64)
    for i, row in enumerate(masks):
        legal = np.flatnonzero(row)
        if len(legal):
            out[i] = legal[rng.integers(len(legal))]
    return out


def test_make_vec_returns_the_batched_env() -> None:
    venv = gym.make_vec("Jungle-v0", num_envs=3, vectorization_mode="vector_entry_point", max_plies=50)
    assert isinstance(venv.unwrapped, JungleVectorEnv)
    assert venv.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert venv.num_envs == 3 and venv.unwrapped.max_plies == 50
    obs, info = venv.reset(seed=0)
    assert obs.shape == (3, *OBS_SHAPE) and obs.dtype == np.float32
    assert venv.observation_space.contains(obs)
    assert info["action_mask"].shape == (3, N_ACTIONS) and info["action_mask"].dtype == np.int8
    assert (info["action_mask"].sum(axis=1) == 24).all()
    actions = venv.action_space.sample()
    assert actions.shape == (3,) and info["action_mask"][np.arange(3), actions].all()


@pytest.mark.parametrize("max_plies", [None, 45])
def test_self_play_equals_independent_envs(max_plies: Optional[int], tiny_history: None) -> None:
    """Observations, rewards, flags, masks and ends equal gymnasium's SyncVectorEnv of N Jungle-v0,
    autoresets included (next-step mode in both)."""
    n, steps = 6, 700
    venv = JungleVectorEnv(n, max_plies=max_plies)
    sync = gym.make_vec("Jungle-v0", num_envs=n, vectorization_mode="sync", max_plies=max_plies)
    rng = np.random.default_rng(1)
    obs, info = venv.reset(seed=3)
    sobs, sinfo = sync.reset(seed=3)
    np.testing.assert_array_equal(obs, sobs)
    np.testing.assert_array_equal(info["action_mask"], sinfo["action_mask"])
    ends = set()
    for _ in range(steps):
        actions = random_actions(rng, info["action_mask"])
        obs, rew, term, trunc, info = venv.step(actions)
        sobs, srew, sterm, strunc, sinfo = sync.step(actions)
        np.testing.assert_array_equal(obs, sobs)
        np.testing.assert_array_equal(rew, srew)
        np.testing.assert_array_equal(term, sterm)
        np.testing.assert_array_equal(trunc, strunc)
        np.testing.assert_array_equal(info["action_mask"], sinfo["action_mask"])
        np.testing.assert_array_equal(info["side_rewards"], sinfo["side_rewards"])
        np.testing.assert_array_equal(info["side_to_move"], sinfo["side_to_move"].astype(np.int8))
        for i in np.flatnonzero(term | trunc):
            name = sinfo["termination"][i]
            assert TERMINATIONS[info["termination"][i]] == name
            winner = sinfo["winner"][i]
            assert info["winner"][i] == (int(winner) if winner is not None else (2 if term[i] else -1))
            ends.add(name)
        assert not (info["termination"][~(term | trunc)]).any()
    assert venv._batch.hist.shape[1] > 8  # the history grew
    if max_plies is None:
        assert ends and "ply_cap" not in ends
    else:
        assert "ply_cap" in ends
    for i in range(n):  # the histories agree too
        assert venv.board(i).jfen() == sync.envs[i].unwrapped.board.jfen()


class ReplayOpponent:
    """A `Jungle-v0` opponent that plays the moves the vector env's opponent played in the same game."""

    def __init__(self) -> None:
        self.next_move: Optional[int] = None

    def __call__(self, board: Any) -> Move:
        assert self.next_move is not None and self.next_move >= 0, "the vector env's opponent did not move here"
        move, self.next_move = Move.from_int(self.next_move), None
        return move


def check_against_replays(venv: JungleVectorEnv, steps: int, seed: int) -> set[tuple[str, float]]:
    """Step `venv` with random legal actions beside one `Jungle-v0` per game whose opponent replays the vector
    env's replies (each episode built with the side the vector env drew); assert equal outputs. Returns the
    (termination, reward) pairs seen."""
    n = venv.num_envs
    rng = np.random.default_rng(seed)
    replays = [ReplayOpponent() for _ in range(n)]
    singles: list[JungleEnv] = [None] * n  # type: ignore[list-item]

    def restart(i: int, info: dict[str, Any]) -> np.ndarray:
        side = Side(int(info["agent_side"][i]))
        singles[i] = JungleEnv(opponent=replays[i], agent_side=side.name.lower(), max_plies=venv.max_plies)
        replays[i].next_move = int(info["opponent_move"][i])
        obs, sinfo = singles[i].reset()
        np.testing.assert_array_equal(info["action_mask"][i], sinfo["action_mask"])
        return obs

    obs, info = venv.reset(seed=seed)
    for i in range(n):
        np.testing.assert_array_equal(obs[i], restart(i, info))
    done = np.zeros(n, dtype=bool)
    ends: set[tuple[str, float]] = set()
    sides = set()
    for _ in range(steps):
        actions = random_actions(rng, info["action_mask"])
        obs, rew, term, trunc, info = venv.step(actions)
        for i in range(n):
            if done[i]:
                np.testing.assert_array_equal(obs[i], restart(i, info))
                assert rew[i] == 0 and not term[i] and not trunc[i]
                continue
            replays[i].next_move = int(info["opponent_move"][i])
            sobs, srew, sterm, strunc, sinfo = singles[i].step(int(actions[i]))
            np.testing.assert_array_equal(obs[i], sobs)
            assert (rew[i], term[i], trunc[i]) == (srew, sterm, strunc)
            np.testing.assert_array_equal(info["action_mask"][i], sinfo["action_mask"])
            np.testing.assert_array_equal(info["side_rewards"][i], sinfo["side_rewards"])
            assert info["agent_side"][i] == int(sinfo["agent_side"])
            assert (info["opponent_move"][i] >= 0) == ("opponent_move" in sinfo)
            if sterm or strunc:
                assert TERMINATIONS[info["termination"][i]] == sinfo["termination"]
                ends.add((sinfo["termination"], float(srew)))
            sides.add(int(info["agent_side"][i]))
        done = term | trunc
    assert sides == {0, 1}
    return ends


@pytest.mark.slow
@pytest.mark.parametrize("max_plies", [None, 61])
def test_versus_random_equals_independent_envs(max_plies: Optional[int], tiny_history: None) -> None:
    venv = JungleVectorEnv(8, opponent="random", agent_side="random", max_plies=max_plies)
    ends = check_against_replays(venv, steps=500, seed=5)
    if max_plies is None:  # wins by the agent's move and by the opponent's reply
        assert {("den", 1.0), ("den", -1.0), ("no_capture_limit", 0.0)} <= ends
    else:
        assert ("ply_cap", 0.0) in ends


def test_versus_a_batched_policy_equals_independent_envs() -> None:
    rng = np.random.default_rng(9)
    calls = []

    def policy(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        assert obs.shape == (len(mask), *OBS_SHAPE) and mask.shape == (len(mask), N_ACTIONS)
        assert (mask.sum(axis=1) > 0).all()  # only games whose opponent is to move
        calls.append(len(mask))
        return random_actions(rng, mask)

    venv = JungleVectorEnv(4, opponent=policy, agent_side="random", max_plies=80)
    ends = check_against_replays(venv, steps=300, seed=2)
    assert ("ply_cap", 0.0) in ends and calls and max(calls) <= 4


def test_autoreset_next_step() -> None:
    """The step after a game ends resets it: its action is ignored (any value), reward 0, flags False."""
    venv = JungleVectorEnv(2, start_jfen=DEN_IN_ONE)
    first, info = venv.reset(seed=0)
    enter, sidestep = (JungleEnv(start_jfen=DEN_IN_ONE).move_to_action(m) for m in ("d8d9", "d8c8"))
    obs, rew, term, trunc, info = venv.step(np.array([enter, sidestep]))
    assert term.tolist() == [True, False] and rew.tolist() == [1.0, 0.0]
    assert TERMINATIONS[info["termination"][0]] == "den" and info["winner"][0] == 0
    assert info["side_rewards"][0].tolist() == [1.0, -1.0]
    assert not info["action_mask"][0].any() and info["action_mask"][1].any()
    blue = random_actions(np.random.default_rng(0), info["action_mask"])
    obs, rew, term, trunc, info = venv.step(np.array([-7, blue[1]]))
    np.testing.assert_array_equal(obs[0], first[0])
    assert rew[0] == 0.0 and not term[0] and not trunc[0] and info["termination"][0] == 0
    assert info["action_mask"][0].sum() == 4 and info["side_to_move"].tolist() == [0, 0]


def test_illegal_action_raises_and_changes_nothing() -> None:
    venv = JungleVectorEnv(3)
    obs, info = venv.reset(seed=0)
    actions = venv.action_space.sample()
    bad = actions.copy()
    bad[2] = int(np.flatnonzero(info["action_mask"][2] == 0)[0])
    with pytest.raises(IllegalActionError, match="game 2"):
        venv.step(bad)
    with pytest.raises(IllegalActionError, match="shape"):
        venv.step(actions[:2])
    assert [venv.board(i).ply for i in range(3)] == [0, 0, 0]  # nothing was played
    obs2, *_ = venv.step(actions)
    assert not np.array_equal(obs2, obs)


@pytest.mark.parametrize("copy", [True, False])
def test_reset_mask_resets_only_those_games(copy: bool) -> None:
    venv = JungleVectorEnv(3, copy=copy)
    first, _ = venv.reset(seed=0)
    first = first.copy()
    moved = venv.step(venv.action_space.sample())[0].copy()
    obs, info = venv.reset(options={"reset_mask": np.array([True, False, True])})
    np.testing.assert_array_equal(obs[[0, 2]], first[[0, 2]])
    np.testing.assert_array_equal(obs[1], moved[1])
    with pytest.raises(ValueError, match="reset option"):
        venv.reset(options={"start_jfen": DEN_IN_ONE})


def test_copy_true_returns_arrays_of_the_callers_own() -> None:
    venv = JungleVectorEnv(2)
    obs, info = venv.reset(seed=0)
    kept_obs, kept_mask = obs.copy(), info["action_mask"].copy()
    obs2, *_, info2 = venv.step(venv.action_space.sample())
    np.testing.assert_array_equal(obs, kept_obs)
    np.testing.assert_array_equal(info["action_mask"], kept_mask)
    assert not np.array_equal(obs2, obs)
    obs2[:] = 0.0
    info2["action_mask"][:] = 0  # the env does not see the caller's changes
    assert venv.action_masks().any(axis=1).all()


def test_copy_false_returns_the_buffers() -> None:
    venv = JungleVectorEnv(2, copy=False)
    obs, info = venv.reset(seed=0)
    obs2, *_ = venv.step(venv.action_space.sample())
    assert obs2 is obs


def test_seeded_random_opponent_is_reproducible() -> None:
    def run() -> list[np.ndarray]:
        venv = JungleVectorEnv(4, opponent="random", agent_side="random")
        venv.action_space.seed(1)
        out = [venv.reset(seed=11)[1]["opponent_move"]]
        for _ in range(30):
            out.append(venv.step(venv.action_space.sample())[4]["opponent_move"])
        return out

    a, b = run(), run()
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_termination_names_follow_the_kernel_codes() -> None:
    assert TERMINATIONS[TERM_PLY_CAP] == "ply_cap"
    assert all(TERMINATIONS[t.value] == t.name.lower() for t in Termination)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_envs": 0}, "num_envs"),
        ({"num_envs": 2, "opponent": "alphabeta:depth=1"}, "opponent"),
        ({"num_envs": 2, "agent_side": "blue"}, "needs an opponent"),
        ({"num_envs": 2, "opponent": "random", "agent_side": "green"}, "agent_side"),
        ({"num_envs": 2, "max_plies": 0}, "max_plies"),
        ({"num_envs": 2, "start_jfen": "3L3/7/7/7/7/7/7/7/r6 b 0 1"}, "already over"),
    ],
)
def test_bad_arguments_are_value_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        JungleVectorEnv(**kwargs)


@pytest.mark.slow
def test_a_game_is_truncated_at_the_counters_limit_without_a_ply_cap() -> None:
    from envs.encoding import move_to_action
    from envs.rules import COUNTER_LIMIT

    cycle = [Move.from_str(m).to_int() for m in ("a1a2", "a9a8", "a2a1", "a8a9")]
    env = JungleVectorEnv(
        1, rules=RuleSet(repetition="off", no_capture_draw=0), max_plies=None, start_jfen="l6/7/7/7/7/7/7/7/L6 r 0 1"
    )
    env.reset(seed=0)
    for k in range(COUNTER_LIMIT):
        _, _, terminated, truncated, infos = env.step(np.array([move_to_action(cycle[k % 4], k % 2)]))
        if truncated[0]:
            break
    assert (k, bool(terminated[0]), bool(truncated[0])) == (COUNTER_LIMIT - 1, False, True)

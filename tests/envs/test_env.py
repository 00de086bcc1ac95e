"""The Gymnasium environment `Jungle-v0`: API conformance, masks, rewards, rendering, seeding."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import envs  # noqa: F401  (registers Jungle-v0)
from envs import Board, Move, RuleSet, Side
from envs.encoding import MIRROR_ACTION, N_ACTIONS, OBS_SHAPE, encode_observation, mirror_action, move_to_action
from envs.env import GameOverError, IllegalActionError, JungleEnv, LegalActionSpace
from envs.render import IMAGE_SHAPE

DEN_IN_ONE_RED = "r6/3L3/7/7/7/7/7/7/7 r 0 1"  # Red Lion d8 enters Blue's den d9
DEN_IN_ONE_BLUE = "7/7/7/7/7/7/7/3l3/R6 r 0 1"  # Red to move (a rat far away), then Blue Lion d2 -> d1
BLUE_WINS_NEXT = "R6/7/7/7/7/7/7/3l3/7 r 0 1"  # whatever Red does, Blue's Lion enters d1


def play_random(env: JungleEnv, seed: int, policy_seed: int = 0, max_steps: int = 10_000) -> list[tuple]:
    """Play one episode with uniformly random legal actions; return (obs, reward, term, trunc, info) per step."""
    rng = np.random.default_rng(policy_seed)
    obs, info = env.reset(seed=seed)
    steps = [(obs, 0.0, False, False, info)]
    for _ in range(max_steps):
        legal = np.flatnonzero(info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(int(legal[rng.integers(len(legal))]))
        steps.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return steps


# --- Gymnasium conformance ------------------------------------------------------------------
@pytest.mark.parametrize("render_mode", [None, "ansi", "rgb_array"])
def test_check_env_self_play(render_mode: str | None) -> None:
    env = gym.make("Jungle-v0", render_mode=render_mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the self-play env passes without a single warning
        check_env(env.unwrapped)


def test_check_env_versus_opponent() -> None:
    # check_step_determinism draws its action *before* a seeded reset. Versus an
    # opponent the position at that moment is two plies in, so its (legal)
    # sample may be illegal after the reset, and an illegal action raises. With
    # illegal_action="lose" such an action is a deterministic loss instead, so
    # every other check runs unchanged; the raising mode is tested below.
    for side in ("red", "blue", "random"):
        env = gym.make("Jungle-v0", opponent="random", agent_side=side, illegal_action="lose")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)


def test_make_and_spaces() -> None:
    env = gym.make("Jungle-v0", rules={"rank_order": "dog_over_wolf"}, max_plies=50)
    assert env.unwrapped.rules == RuleSet(rank_order="dog_over_wolf")
    assert env.observation_space.shape == OBS_SHAPE == (32, 9, 7)
    assert env.action_space == gym.spaces.Discrete(252)
    obs, info = env.reset(seed=1)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (N_ACTIONS,)
    assert info["jfen"] == Board().jfen() and info["side_to_move"] == Side.RED
    # Discrete.sample(mask=...) accepts the info mask as it is
    assert info["action_mask"][env.action_space.sample(info["action_mask"])] == 1
    env.close()


def test_vector_env_runs() -> None:
    vec = gym.make_vec("Jungle-v0", num_envs=3, vectorization_mode="sync")
    obs, info = vec.reset(seed=0)
    assert obs.shape == (3, *OBS_SHAPE) and info["action_mask"].shape == (3, N_ACTIONS)
    ended = 0
    for _ in range(40):
        # after an episode ends the next step only resets (autoreset "next step"): any action does
        actions = np.array([np.flatnonzero(m)[0] if m.any() else 0 for m in info["action_mask"]])
        obs, reward, terminated, truncated, info = vec.step(actions)
        ended += int(terminated.sum())
    assert ended > 0  # the lowest legal action shuffles a Tiger back and forth: repetition draws
    vec.close()


def test_action_space_samples_legal_actions_and_pickles_as_discrete() -> None:
    env = JungleEnv()
    env.reset(seed=0)
    env.action_space.seed(3)
    for _ in range(30):
        a = env.action_space.sample()
        assert env.action_masks()[a]
        env.step(a)
    space = pickle.loads(pickle.dumps(env.action_space))
    assert type(space) is gym.spaces.Discrete and space == env.action_space
    assert isinstance(env.action_space, LegalActionSpace)


def test_rules_by_name_dict_and_errors() -> None:
    assert JungleEnv(rules="default").rules == RuleSet()
    assert JungleEnv(rules="dog_over_wolf").rules == RuleSet(rank_order="dog_over_wolf")
    assert JungleEnv(rules=RuleSet(repetition="off")).rules.repetition == "off"
    with pytest.raises(ValueError, match="no-such-rules"):
        JungleEnv(rules="no-such-rules")
    with pytest.raises(ValueError, match="bogus"):
        JungleEnv(rules={"bogus": 1})
    with pytest.raises(ValueError, match="agent_side"):
        JungleEnv(agent_side="blue")  # self-play has no agent side
    with pytest.raises(ValueError, match="purple"):
        JungleEnv(opponent="random", agent_side="purple")
    for bad in (0, 2.5, "10", True):
        with pytest.raises(ValueError, match="max_plies"):
            JungleEnv(max_plies=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="xyz"):
        JungleEnv(start_jfen="xyz")
    with pytest.raises(ValueError, match="nope"):
        JungleEnv(opponent="nope")


# --- masks and the action encoding -------------------------------------------------------------
def board_actions(board: Board) -> set[int]:
    side = int(board.side_to_move)
    return {int(move_to_action(m.to_int(), side)) for m in board.legal_moves}


@pytest.mark.parametrize(
    "rules",
    [
        RuleSet(),
        RuleSet(anti_chase="7-3+17-5", no_capture_draw=0, repetition="off"),
        RuleSet(river_rats="rats_ignore_water", jump_blocking="enemy_rat", trapped_attacker="keeps_rank"),
    ],
)
def test_mask_matches_board_at_every_step(rules: RuleSet) -> None:
    env = JungleEnv(rules=rules, max_plies=400)
    rng = np.random.default_rng(0)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        terminated = truncated = False
        while True:
            mask = info["action_mask"]
            live = env.board  # a Board with the game's history, which anti-chase and repetition read
            assert live.jfen() == info["jfen"] and live.side_to_move == info["side_to_move"]
            np.testing.assert_array_equal(mask, env.action_masks())
            expected = np.zeros(OBS_SHAPE, dtype=np.float32)
            encode_observation(live.state, live.hashes, live.flags, expected)
            np.testing.assert_array_equal(obs, expected)
            if terminated or truncated:
                assert not mask.any()
                assert truncated or live.outcome() == info["outcome"]
                break
            assert mask.any(), f"empty mask before the end in {info['jfen']}"
            assert live.outcome() is None
            assert set(np.flatnonzero(mask).tolist()) == board_actions(live)
            if rules.anti_chase == "off":  # the JFEN alone (no history) gives the same moves
                assert board_actions(Board.from_jfen(info["jfen"], rules=rules)) == board_actions(live)
            legal = np.flatnonzero(mask)
            obs, _, terminated, truncated, info = env.step(int(legal[rng.integers(len(legal))]))


def test_action_round_trip_both_sides() -> None:
    env = JungleEnv()
    sides_seen = set()
    env.reset(seed=0)
    rng = np.random.default_rng(9)
    for _ in range(60):
        sides_seen.add(env.side_to_move)
        board = env.board
        for move in board.legal_moves:
            a = env.move_to_action(move)
            assert env.action_masks()[a]
            assert env.action_to_move(a) == move
            assert env.move_to_action(str(move)) == a
        for a in env.legal_actions():
            assert env.move_to_action(env.action_to_move(int(a))) == a
        _, _, terminated, _, _ = env.step(int(rng.choice(env.legal_actions())))
        if terminated:
            break
    assert sides_seen == {Side.RED, Side.BLUE}
    # canonical frame: Blue's forward is towards rank 1, so Red's a3a4 and Blue's g7g6 are one action
    env.reset()
    assert env.move_to_action("a3a4") == 2 * 7 * 4 + 0
    env.step(env.move_to_action("a3a4"))
    assert env.move_to_action("g7g6") == 2 * 7 * 4 + 0
    with pytest.raises(ValueError, match="g7g4"):
        env.move_to_action("g7g4")  # not a step nor a jump
    with pytest.raises(IllegalActionError, match="leaves the board"):
        env.action_to_move(2)  # a9 back (Blue's canonical a1 back)


def test_mirror_action_matches_mirrored_board() -> None:
    assert sorted(MIRROR_ACTION.tolist()) == list(range(N_ACTIONS))
    assert all(mirror_action(mirror_action(a)) == a for a in range(N_ACTIONS))
    env = JungleEnv()
    rng = np.random.default_rng(2)
    env.reset(seed=2)
    for _ in range(80):
        board = env.board
        side = int(board.side_to_move)
        for move in board.legal_moves:
            assert move_to_action(move.mirror().to_int(), side) == mirror_action(move_to_action(move.to_int(), side))
        assert board_actions(board.mirror()) == {mirror_action(a) for a in board_actions(board)}
        _, _, terminated, truncated, _ = env.step(int(rng.choice(env.legal_actions())))
        if terminated or truncated:
            env.reset()


# --- rewards, modes, episode end -------------------------------------------------------------------
def test_self_play_rewards_sum_to_zero() -> None:
    env = JungleEnv()
    endings = set()
    for seed in range(8):
        steps = play_random(env, seed=seed, policy_seed=100 + seed)
        total = np.zeros(2)
        for (_, _, _, _, before), (_, reward, terminated, _, info) in zip(steps, steps[1:]):
            mover = int(before["side_to_move"])
            assert info["side_to_move"] == 1 - mover
            assert reward == info["side_rewards"][mover]
            total += info["side_rewards"]
            if not terminated:
                assert reward == 0.0
        final = steps[-1][4]
        assert steps[-1][2], "default rules end every game before the default cap"
        assert total.sum() == 0.0
        winner = final["winner"]
        endings.add(final["termination"])
        if winner is None:
            assert steps[-1][1] == 0.0 and final["outcome"].winner is None
        else:
            assert total[int(winner)] == 1.0 and total[1 - int(winner)] == -1.0
            assert steps[-1][1] == 1.0  # only the side that just moved can have won
            assert final["outcome"].winner == winner
    assert endings  # names like 'den', 'no_capture_limit'


def test_agent_wins_by_entering_the_den() -> None:
    env = JungleEnv(opponent="random", start_jfen=DEN_IN_ONE_RED)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.move_to_action("d8d9"))
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["winner"] == Side.RED and info["termination"] == "den" and "opponent_move" not in info

    env = JungleEnv(opponent="random", agent_side="blue", start_jfen=DEN_IN_ONE_BLUE)
    obs, info = env.reset(seed=0)
    assert info["side_to_move"] == Side.BLUE and "opponent_move" in info
    assert obs[23].min() == 1.0  # Blue to move
    obs, reward, terminated, truncated, info = env.step(env.move_to_action("d2d1"))
    assert (reward, terminated) == (1.0, True) and info["winner"] == Side.BLUE


def test_agent_loses_to_the_opponents_den_entry() -> None:
    calls = []

    def enter_den(board: Board) -> Move:
        calls.append(board.jfen())
        return Move.from_str("d2d1")

    env = JungleEnv(opponent=enter_den, start_jfen=BLUE_WINS_NEXT)
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step(env.move_to_action("a9b9"))
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["winner"] == Side.BLUE and info["opponent_move"] == "d2d1"
    np.testing.assert_array_equal(info["side_rewards"], [-1.0, 1.0])
    assert len(calls) == 1 and calls[0].split()[1] == "b"


def test_opponent_illegal_move_is_reported() -> None:
    env = JungleEnv(opponent=lambda board: "a1a2")
    env.reset()
    with pytest.raises(ValueError, match="opponent played illegal move a1a2"):
        env.step(env.move_to_action("a3a4"))


def test_truncation_at_the_ply_cap() -> None:
    env = JungleEnv(max_plies=10)
    env.reset(seed=0)
    for i in range(10):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert not terminated and truncated == (i == 9)
    assert reward == 0.0 and info["termination"] == "ply_cap" and info["winner"] is None
    assert not info["action_mask"].any()
    with pytest.raises(GameOverError):
        env.step(0)

    env = JungleEnv(opponent="random", max_plies=5)  # the cap falls after the agent's 3rd move
    env.reset(seed=0)
    results = [env.step(env.action_space.sample())[3] for _ in range(3)]
    assert results == [False, False, True] and env.board.ply == 5


def test_illegal_actions_and_steps_after_the_end() -> None:
    env = JungleEnv()
    with pytest.raises(GameOverError, match="reset"):
        env.step(0)  # before the first reset
    env.reset()
    with pytest.raises(IllegalActionError, match=r"illegal action 5: .*b1c1.*no piece on b1"):
        env.step(5)
    with pytest.raises(IllegalActionError, match="leaves the board"):
        env.step(2)
    with pytest.raises(IllegalActionError, match="out of range"):
        env.step(252)
    with pytest.raises(IllegalActionError, match="not an integer"):
        env.step(1.5)
    assert env.board.ply == 0  # nothing was played
    env.step(np.int64(env.move_to_action("a3a4")))  # numpy integers are fine

    env = JungleEnv(start_jfen=DEN_IN_ONE_RED)
    env.reset()
    env.step(env.move_to_action("d8d9"))
    with pytest.raises(GameOverError, match="Red wins by den"):
        env.step(0)

    lose = JungleEnv(illegal_action="lose")
    lose.reset()
    obs, reward, terminated, truncated, info = lose.step(5)
    assert (reward, terminated, info["termination"], info["winner"]) == (-1.0, True, "illegal_action", Side.BLUE)
    with pytest.raises(GameOverError):
        lose.step(0)


def test_start_position_already_over_is_refused() -> None:
    env = JungleEnv(start_jfen="3L3/7/7/7/7/7/7/7/r6 b 0 1")  # Red Lion sits in Blue's den
    with pytest.raises(ValueError, match="already over"):
        env.reset()


def test_reset_option_start_jfen() -> None:
    env = JungleEnv()
    obs, info = env.reset(options={"start_jfen": DEN_IN_ONE_RED})
    assert info["jfen"] == DEN_IN_ONE_RED
    obs, info = env.reset()
    assert info["jfen"] == Board().jfen()
    with pytest.raises(ValueError, match="colour"):
        env.reset(options={"colour": "red"})


# --- seeding ------------------------------------------------------------------------------------------
def trajectory(env: JungleEnv, seed: int) -> list[str]:
    """JFENs of an episode where the agent always plays its lowest legal action."""
    obs, info = env.reset(seed=seed)
    jfens = [info["jfen"]]
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        jfens.append(info["jfen"])
        if terminated or truncated:
            break
    return jfens


def test_seeding_reproduces_trajectories() -> None:
    make = lambda: JungleEnv(opponent="random", agent_side="random")  # noqa: E731
    first = [trajectory(make(), seed) for seed in range(4)]
    again = [trajectory(make(), seed) for seed in range(4)]
    assert first == again
    assert len({tuple(t) for t in first}) == 4  # seeds change the opponent (and the agent's side)
    env = make()
    trajectory(env, 0)
    assert trajectory(env, 1) == first[1]  # a seeded reset reseeds the opponent mid-life
    sides = {make().reset(seed=s)[1]["agent_side"] for s in range(12)}
    assert sides == {Side.RED, Side.BLUE}

    # action_space.sample() is reproducible from its own seed
    env1, env2 = JungleEnv(), JungleEnv()
    for env in (env1, env2):
        env.reset(seed=0)
        env.action_space.seed(7)
    assert [env1.action_space.sample() for _ in range(10)] == [env2.action_space.sample() for _ in range(10)]


# --- rendering --------------------------------------------------------------------------------------
def test_render_ansi() -> None:
    env = JungleEnv(render_mode="ansi")
    env.reset()
    text = env.render()
    assert isinstance(text, str)
    lines = text.splitlines()
    assert lines[0].split() == list("abcdefg") and lines[10].split() == list("abcdefg")
    assert lines[1].split() == ["9", "l", ".", "#", "*", "#", ".", "t", "9"]
    assert lines[9].split() == ["1", "T", ".", "#", "*", "#", ".", "L", "1"]
    assert "~" in lines[5] and "Red to move" in text
    env.step(env.move_to_action("a3a4"))
    text = env.render()
    assert "[E]" in text.splitlines()[6] and "(.)" in text.splitlines()[7]  # rank 4 and rank 3
    assert "Blue to move" in text


def test_render_rgb_array() -> None:
    env = JungleEnv(render_mode="rgb_array")
    env.reset()
    first = env.render()
    assert isinstance(first, np.ndarray)
    assert first.shape == IMAGE_SHAPE and first.dtype == np.uint8
    assert first.shape[0] % 2 == 0 and first.shape[1] % 2 == 0

    def dominant(img: np.ndarray, square: str) -> tuple[int, ...]:
        from envs.notation import parse_square
        from envs.render import CELL, _cell_origin

        y, x = _cell_origin(parse_square(square))
        patch = img[y + 6 : y + CELL - 6, x + 6 : x + CELL - 6].reshape(-1, 3)
        values, counts = np.unique(patch, axis=0, return_counts=True)
        return tuple(int(v) for v in values[counts.argmax()])

    red_tiger, blue_tiger, empty = dominant(first, "a1"), dominant(first, "g9"), dominant(first, "a4")
    assert red_tiger[0] > red_tiger[2] and blue_tiger[2] > blue_tiger[0]  # side colours
    assert len({red_tiger, blue_tiger, empty}) == 3
    env.step(env.move_to_action("a3a4"))
    second = env.render()
    assert not np.array_equal(first, second)
    assert dominant(second, "a4") == red_tiger and dominant(second, "a3") == dominant(first, "a4")


def test_render_without_mode_warns() -> None:
    env = JungleEnv()
    env.reset()
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


def test_alphabeta_opponent_by_spec() -> None:
    env = JungleEnv(opponent="alphabeta:depth=2,tt=12", start_jfen=BLUE_WINS_NEXT)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.move_to_action("a9b9"))
    assert info["opponent_move"] == "d2d1" and (reward, terminated) == (-1.0, True)


def test_a_bool_is_not_an_action() -> None:
    """env.step(True) once played action 1 (a bool is an int to Python); it is refused like any non-integer."""
    env = JungleEnv()
    env.reset(seed=0)
    for action in (True, False, np.bool_(True), np.array(True)):
        with pytest.raises(IllegalActionError, match="is not an integer"):
            env.step(action)
    assert env.unwrapped._board.ply == 0  # nothing was played

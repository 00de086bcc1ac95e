"""The survival head (off by default): its targets from self-play, their way through the replay buffer, the
network's extra head, the learner's extra loss and the config switch."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from agents.alphazero.net.checkpoint import check_compatible, load_model, save_checkpoint
from agents.alphazero.net.network import NetworkConfig, NetworkShapeError, build_network
from agents.alphazero.net.runtime import fuse_for_inference, make_evaluator
from agents.alphazero.search import MCTSConfig, uniform_evaluator
from agents.alphazero.selfplay.data import SelfPlayData, merge_selfplay
from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
from agents.alphazero.training import config as train_config
from agents.alphazero.training.learner import Learner, LearnerConfig, alphazero_loss
from agents.alphazero.training.replay import ReplayBuffer, ReplayError
from envs import Board, RuleSet
from envs import kernels as K
from envs.encoding import N_ACTIONS, OBS_SHAPE
from tests.support import ROOT
from tests.support.checkpoints import randomise_norms
from tests.support.positions import played_positions

RULES = RuleSet()
TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
WITH_HEAD = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2, survival_head=True)
SETTINGS = SelfPlayConfig(parallel=3, max_plies=100)  # games cut at the cap, with captures


def _play(num_games: int, first_game: int = 0) -> SelfPlayData:
    return play_games(
        uniform_evaluator,
        SETTINGS,
        mcts=MCTSConfig(num_simulations=4),
        rules=RULES,
        num_games=num_games,
        first_game=first_game,
        seed=5,
    )


@pytest.fixture(scope="module")
def data() -> SelfPlayData:
    return _play(6)


def _on_board(board: Board) -> np.ndarray:
    """bool [2, 8]: whether each colour's (RED, BLUE) animal stands on a square of `board` (read from the
    squares, not from the piece list)."""
    squares = board.state[: K.N_SQUARES]
    return np.array(
        [[np.any(squares == (a if colour == K.RED else -a)) for a in range(1, 9)] for colour in (K.RED, K.BLUE)]
    )


def _game_rows(data: SelfPlayData) -> list[tuple[slice, Board]]:
    """Each game's rows of `data` and its last position, replayed from its record."""
    out, first = [], 0
    for record in data.records:
        board = Board.from_jfen(record.start, rules=RULES)
        for move in record.moves:
            board.push(move)
        out.append((slice(first, first + len(record.moves)), board))
        first += len(record.moves)
    assert first == len(data)
    return out


def test_targets_are_the_last_positions_pieces_from_each_rows_side(data: SelfPlayData) -> None:
    assert data.survival.shape == (len(data), 16) and data.survival.dtype == np.float32
    captured_games = 0
    for rows, final in _game_rows(data):
        alive = _on_board(final)
        blue = data.obs[rows, 23, 0, 0] > 0.5  # plane 23: Blue to move
        expected = np.where(
            blue[:, None], np.concatenate([alive[K.BLUE], alive[K.RED]]), np.concatenate([alive[K.RED], alive[K.BLUE]])
        ).astype(np.float32)
        np.testing.assert_array_equal(data.survival[rows], expected)
        # A piece missing from a game's last searched position stays missing at the end.
        last_on_board = data.obs[rows.stop - 1, :16].reshape(16, -1).any(axis=1)
        assert not (data.survival[rows.stop - 1] > last_on_board).any()
        for colour, animal in zip(*np.nonzero(~alive)):
            captured_games += 1
            # Every earlier row, of either side to move, says the piece does not survive, though it stood
            # on the board at the start.
            mine = np.where(blue, colour == K.BLUE, colour == K.RED)
            column = np.where(mine, animal, 8 + animal)
            assert (data.survival[rows][np.arange(len(column)), column] == 0).all()
            assert (data.obs[rows.start, column[0]] == 1).any()
    assert captured_games > 0  # the games above did capture something


def test_targets_of_games_played_apart_merge_into_those_played_together(data: SelfPlayData) -> None:
    merged = merge_selfplay([_play(2), _play(4, first_game=2)])
    assert [r.moves for r in merged.records] == [r.moves for r in data.records]
    np.testing.assert_array_equal(merged.survival, data.survival)


# -- replay -------------------------------------------------------------------------------------
def _pieces_in(obs: np.ndarray) -> np.ndarray:
    return obs[:, :16].reshape(len(obs), 16, -1).max(axis=2) > 0


def test_replay_keeps_survival_through_mirror_and_state_dict() -> None:
    obs, mask, policy = played_positions(40)
    survival = np.random.default_rng(1).random((40, 16)) < 0.5
    buf = ReplayBuffer(64, seed=0)
    buf.add(obs, mask, policy, np.zeros(40, np.float32), np.ones(40, np.bool_), survival.astype(np.float32))
    idx = np.arange(40)
    for mirror in (np.zeros(40, np.bool_), np.ones(40, np.bool_)):
        batch = buf.get(idx, mirror)
        assert batch.survival.dtype == np.float32
        np.testing.assert_array_equal(batch.survival, survival)  # a mirror moves squares, not pieces
    again = ReplayBuffer(64)
    again.load_state_dict(buf.state_dict())
    np.testing.assert_array_equal(again.get(idx).survival, survival)


def test_replay_without_given_survival_takes_the_pieces_on_the_board(data: SelfPlayData) -> None:
    n = len(data)
    assert not _pieces_in(data.obs).all()  # some positions have lost pieces
    buf = ReplayBuffer(n, seed=0)
    buf.add(data.obs, data.mask, data.policy, data.value)
    np.testing.assert_array_equal(buf.get(np.arange(n)).survival, _pieces_in(data.obs))
    with pytest.raises(ReplayError, match="survival"):
        buf.add(data.obs[:2], data.mask[:2], data.policy[:2], data.value[:2], None, np.zeros((2, 15)))


def test_an_older_replay_state_without_survival_loads_from_its_observations(data: SelfPlayData) -> None:
    n = len(data)
    buf = ReplayBuffer(n, seed=0)
    buf.add(data.obs, data.mask, data.policy, data.value, data.full_search, data.survival)
    old = buf.state_dict()
    del old["survival"]
    loaded = ReplayBuffer(n)
    loaded.load_state_dict(old)
    stored = loaded.get(np.arange(n))
    np.testing.assert_array_equal(stored.survival, _pieces_in(data.obs))
    assert (stored.survival != data.survival).any()  # the approximation: what stands now, not at the end


def test_the_newest_survival_rows_fit_when_more_positions_come_than_the_capacity() -> None:
    obs, mask, policy = played_positions(12, seed=4)
    survival = np.eye(12, 16, dtype=np.float32)
    buf = ReplayBuffer(5)
    buf.add(obs, mask, policy, np.zeros(12, np.float32), None, survival)
    order = (buf.add_count - 5 + np.arange(5)) % 5  # the slots of positions 7 .. 11
    np.testing.assert_array_equal(buf.get(order).survival, survival[7:])


# -- network ------------------------------------------------------------------------------------
def test_the_head_exists_only_when_switched_on() -> None:
    off, on = build_network(TINY), build_network(WITH_HEAD)
    assert not any(name.startswith("survival") for name in off.state_dict())
    extra = set(on.state_dict()) - set(off.state_dict())
    assert set(off.state_dict()) < set(on.state_dict()) and all(k.startswith("survival_") for k in extra)
    assert {"survival_fc.weight", "survival_fc.bias"} < extra
    x = torch.zeros((3,) + OBS_SHAPE)
    out = on(x)
    assert len(out) == 2 and out[0].shape == (3, N_ACTIONS) and out[1].shape == (3,)
    logits, value, survival = on.forward_with_survival(x)
    assert logits.shape == (3, N_ACTIONS) and value.shape == (3,) and survival.shape == (3, 16)
    with pytest.raises(NetworkShapeError, match="survival"):
        off.forward_with_survival(x)
    with pytest.raises(NetworkShapeError, match="survival_head"):
        NetworkConfig(survival_head="yes")  # type: ignore[arg-type]
    assert NetworkConfig().survival_head is False


def test_the_head_changes_neither_the_other_weights_nor_the_evaluator() -> None:
    torch.manual_seed(0)
    off = build_network(TINY)
    torch.manual_seed(0)
    on = build_network(WITH_HEAD)
    shared = off.state_dict()
    assert all(torch.equal(shared[k], on.state_dict()[k]) for k in shared)  # the same draws for the same layers
    randomise_norms(off)
    randomise_norms(on)
    on.load_state_dict(off.state_dict(), strict=False)
    obs, mask, _ = played_positions(6, seed=5)
    a, b = make_evaluator(off)(obs, mask), make_evaluator(on)(obs, mask)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    # The fused inference copy folds the head's norm too: same survival logits as the eval-mode network.
    x = torch.from_numpy(obs)
    with torch.no_grad():
        want = on.eval().forward_with_survival(x)[2]
        got = fuse_for_inference(on).forward_with_survival(x)[2]
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_checkpoints_keep_the_switch_and_older_ones_load_without_it(tmp_path: Path) -> None:
    on = build_network(WITH_HEAD)
    state = {"model": on.state_dict(), "network": WITH_HEAD.to_dict(), "rules": RULES.to_dict()}
    save_checkpoint(tmp_path / "on.pt", state)
    model, _ = load_model(tmp_path / "on.pt")
    assert model.config.survival_head is True
    assert all(torch.equal(v, on.state_dict()[k]) for k, v in model.state_dict().items())
    older = build_network(TINY)
    network = TINY.to_dict()
    del network["survival_head"]
    save_checkpoint(tmp_path / "old.pt", {"model": older.state_dict(), "network": network, "rules": RULES.to_dict()})
    model, stored = load_model(tmp_path / "old.pt", network=TINY)
    assert model.config.survival_head is False
    check_compatible(stored, tmp_path / "old.pt", network=TINY)  # a missing key counts at its default
    with pytest.raises(ValueError, match="survival_head"):
        check_compatible(stored, tmp_path / "old.pt", network=WITH_HEAD)


# -- learner ------------------------------------------------------------------------------------
def _batch(seed: int = 6):
    obs, mask, policy = played_positions(32, seed=seed)
    buf = ReplayBuffer(32, mirror=False)
    rng = np.random.default_rng(seed)
    buf.add(
        obs,
        mask,
        policy,
        rng.choice([-1.0, 0.0, 1.0], 32).astype(np.float32),
        rng.random(32) < 0.8,
        (rng.random((32, 16)) < 0.6).astype(np.float32),
    )
    return buf.get(np.arange(32))


def _tensors(batch) -> tuple[torch.Tensor, ...]:
    return tuple(
        torch.from_numpy(np.ascontiguousarray(a))
        for a in (batch.obs, batch.mask, batch.policy, batch.value, batch.full_search, batch.survival)
    )


def test_without_the_head_the_loss_is_policy_plus_value_alone() -> None:
    torch.manual_seed(1)
    model = build_network(TINY).train()
    obs, mask, policy, value, full, survival = _tensors(_batch())
    total, parts = alphazero_loss(model, obs, mask, policy, value, full, 0.7, survival, 5.0)
    assert set(parts) == {"policy", "value", "total", "policy_entropy"}
    logits, v = model(obs)
    logp = F.log_softmax(logits.masked_fill(~mask, torch.finfo(torch.float32).min), -1)
    policy_loss = (-(policy * logp).sum(-1) * full.float()).sum() / full.float().sum()
    torch.testing.assert_close(total, policy_loss + 0.7 * F.mse_loss(v, value))


def test_with_the_head_the_survival_loss_adds_to_the_others() -> None:
    torch.manual_seed(0)
    off = build_network(TINY).train()
    torch.manual_seed(0)
    on = build_network(WITH_HEAD).train()
    obs, mask, policy, value, full, survival = _tensors(_batch())
    base, _ = alphazero_loss(off, obs, mask, policy, value, full, 1.0, survival, 2.0)
    total, parts = alphazero_loss(on, obs, mask, policy, value, full, 1.0, survival, 2.0)
    want = F.binary_cross_entropy_with_logits(on.forward_with_survival(obs)[2], survival)
    torch.testing.assert_close(parts["survival"], want.detach())
    torch.testing.assert_close(total, base + 2.0 * want)


def test_learner_steps_lower_the_survival_loss() -> None:
    torch.manual_seed(0)
    batch = _batch(seed=8)
    learner = Learner(
        build_network(WITH_HEAD),
        LearnerConfig(lr=0.01, warmup_steps=0, schedule="constant"),
        device=torch.device("cpu"),
    )
    before = learner.evaluate_loss(batch).survival
    metrics = [learner.step(batch) for _ in range(8)]
    assert all("loss/survival" in m.tags() for m in metrics)
    assert learner.evaluate_loss(batch).survival < before
    plain = Learner(build_network(TINY), LearnerConfig(), device=torch.device("cpu"))
    assert "loss/survival" not in plain.step(batch).tags()


def test_survival_weight_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="survival_weight"):
        LearnerConfig(survival_weight=-0.5)


# -- config -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_switch_and_the_weight_are_config_keys() -> None:
    conf = train_config.checked_config(
        train_config.compose_config(["model=tiny", "model.survival_head=true", "train.learner.survival_weight=0.25"])
    )
    assert conf.model.survival_head is True and conf.train.learner.survival_weight == 0.25
    default = train_config.checked_config(train_config.compose_config([]))
    assert default.model.survival_head is False
    with pytest.raises(ValueError, match="survival_weight"):
        train_config.checked_config(train_config.compose_config(["train.learner.survival_weight=-1"]))


@pytest.mark.slow
def test_a_tiny_run_with_the_head_logs_the_survival_loss(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    r = subprocess.run(
        [
            sys.executable,
            "train.py",
            "train=tiny",
            "model=tiny",
            "mcts.num_simulations=4",
            "seed=3",
            "train.iterations=1",
            "train.eval.every=0",
            "model.survival_head=true",
            f"out_dir={tmp_path}",
            "name=survival",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    acc = EventAccumulator(str(tmp_path / "survival"), size_guidance={"scalars": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss/survival")] == [1]
    model, _ = load_model(tmp_path / "survival" / "latest.pt")
    assert model.config.survival_head is True

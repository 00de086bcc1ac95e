"""Rows that train the policy alone (`SelfPlayConfig.draw_policy`): their flag through the replay buffer and
its checkpoint state, the learner's value loss that leaves them out, and the config key. The rows themselves,
cut from left-out draws, are tested with the other self-play settings (test_selfplay.py)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.training import config as train_config
from agents.alphazero.training.learner import Learner, LearnerConfig, alphazero_loss, host_tensors
from agents.alphazero.training.replay import Batch, ReplayBuffer, ReplayError
from tests.support.positions import played_positions

TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
WDL = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2, value_head="wdl")


def _buffer(n: int = 40) -> tuple[ReplayBuffer, np.ndarray]:
    obs, mask, policy = played_positions(n)
    trains_value = np.arange(n) % 3 != 0
    buf = ReplayBuffer(64, seed=0)
    value = np.where(np.arange(n) % 2 == 0, 1.0, -1.0).astype(np.float32)
    buf.add(obs, mask, policy, value, None, None, trains_value)
    return buf, trains_value


def test_the_flag_goes_through_the_buffer_its_mirror_and_its_state() -> None:
    buf, trains_value = _buffer()
    idx = np.arange(len(trains_value))
    for mirror in (np.zeros(len(idx), np.bool_), np.ones(len(idx), np.bool_)):
        np.testing.assert_array_equal(buf.get(idx, mirror).trains_value, trains_value)
    again = ReplayBuffer(64)
    again.load_state_dict(buf.state_dict())
    np.testing.assert_array_equal(again.get(idx).trains_value, trains_value)
    plain = ReplayBuffer(8)
    obs, mask, policy = played_positions(3)
    plain.add(obs, mask, policy, np.zeros(3, np.float32))
    assert plain.get(np.arange(3)).trains_value.all()  # by default every row trains the value
    with pytest.raises(ReplayError, match="trains_value"):
        plain.add(obs, mask, policy, np.zeros(3, np.float32), None, None, np.ones(2, np.bool_))


def test_an_older_replay_state_without_the_flag_trains_every_value() -> None:
    buf, trains_value = _buffer()
    old = buf.state_dict()
    del old["trains_value"]
    loaded = ReplayBuffer(64)
    loaded.load_state_dict(old)
    assert not trains_value.all()
    assert loaded.get(np.arange(len(trains_value))).trains_value.all()


@pytest.mark.parametrize("shape", [TINY, WDL], ids=["scalar", "wdl"])
def test_the_value_loss_is_the_mean_over_the_rows_that_train_it(shape: NetworkConfig) -> None:
    torch.manual_seed(0)
    model = build_network(shape).eval()  # batch-norm statistics of its own: a subset of rows sees the same layers
    buf, trains_value = _buffer()
    batch = buf.get(np.arange(len(trains_value)))
    obs, mask, policy, value, full, flag = host_tensors(batch, torch.device("cpu"), survival=False)
    _, parts = alphazero_loss(model, obs, mask, policy, value, full, 1.0, None, 1.0, flag)
    _, only = alphazero_loss(model, obs[flag], mask[flag], policy[flag], value[flag], full[flag])
    torch.testing.assert_close(parts["value"], only["value"])
    _, every = alphazero_loss(model, obs, mask, policy, value, full)
    torch.testing.assert_close(parts["policy"], every["policy"])  # the policy still trains on every row
    assert not torch.allclose(parts["value"], every["value"])
    # The value targets of the rows that do not train it change nothing, gradients included.
    changed = torch.where(flag, value, -value)
    grads = []
    for targets in (value, changed):
        model.zero_grad()
        total, _ = alphazero_loss(model, obs, mask, policy, targets, full, 1.0, None, 1.0, flag)
        total.backward()
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    assert all(torch.equal(a, b) for a, b in zip(*grads))
    nothing = torch.zeros_like(flag)
    _, none = alphazero_loss(model, obs, mask, policy, value, full, 1.0, None, 1.0, nothing)
    assert float(none["value"]) == 0.0


def test_a_learner_step_trains_the_policy_of_a_batch_without_value_rows() -> None:
    torch.manual_seed(0)
    buf, _ = _buffer()
    batch = buf.get(np.arange(40))
    policy_only = Batch(
        batch.obs,
        batch.mask,
        batch.policy,
        batch.value,
        batch.full_search,
        batch.survival,
        np.zeros(len(batch), np.bool_),
    )
    learner = Learner(
        build_network(TINY), LearnerConfig(lr=0.01, warmup_steps=0, schedule="constant"), device=torch.device("cpu")
    )
    before = learner.evaluate_loss(policy_only)
    steps = [learner.step(policy_only) for _ in range(6)]
    assert all(s.value == 0.0 for s in steps)
    assert learner.evaluate_loss(policy_only).policy < before.policy
    mse = F.mse_loss(
        learner.model(torch.from_numpy(batch.obs))[1].detach(), torch.from_numpy(batch.value)
    )  # the model's real value error, which the flag hides from the loss
    assert float(mse) > 0.0


@pytest.mark.slow
def test_draw_policy_is_a_checked_config_key() -> None:
    conf = train_config.checked_config(train_config.compose_config(["train.selfplay.draw_policy=0.5"]))
    assert conf.train.selfplay.draw_policy == 0.5
    assert train_config.checked_config(train_config.compose_config([])).train.selfplay.draw_policy == 0.0
    with pytest.raises(ValueError, match="draw_policy"):
        train_config.checked_config(train_config.compose_config(["train.selfplay.draw_policy=1.5"]))

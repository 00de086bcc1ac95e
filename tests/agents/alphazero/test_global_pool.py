"""Global pooling in the residual blocks (`NetworkConfig.global_pool`, off by default): what it lets a square see,
the network it leaves alone when off, its checkpoints, its learner steps and its config switch."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.alphazero.net.checkpoint import (
    CheckpointError,
    check_compatible,
    load_checkpoint,
    load_model,
    save_checkpoint,
)
from agents.alphazero.net.network import NetworkConfig, NetworkShapeError, build_network, count_parameters
from agents.alphazero.training import config as train_config
from agents.alphazero.training.learner import Learner, LearnerConfig
from agents.alphazero.training.replay import ReplayBuffer
from envs import Board, RuleSet
from envs.encoding import OBS_SHAPE, encode_observation
from tests.support import ROOT
from tests.support.checkpoints import randomise_norms
from tests.support.positions import position_batch

RULES = RuleSet()
PLAIN = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
POOLED = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2, global_pool=True)
START = "l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1"
NO_BLUE_TIGER = "l6/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1"
"""The start position without Blue's tiger on g9, eight ranks and six files from a1."""


def _observation(jfen: str) -> torch.Tensor:
    board = Board.from_jfen(jfen)
    obs = np.zeros((1,) + OBS_SHAPE, np.float32)
    encode_observation(board.state, board.hashes, board.flags, obs[0])
    return torch.from_numpy(obs)


def _tower_at_a1(net: torch.nn.Module, obs: torch.Tensor) -> torch.Tensor:
    """The tower's output [C] on a1 (row 0, file 0 of Red's observation)."""
    with torch.no_grad():
        return net.tower(net._stem(obs))[0, :, 0, 0]


def _draw_wide(model: torch.nn.Module) -> None:
    """Every weight and batch-norm statistic of `model` drawn at random from a fixed seed."""
    gen = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for name, v in model.state_dict().items():
            if name.endswith("running_var"):
                v.copy_(torch.rand(v.shape, generator=gen) + 0.5)
            elif v.is_floating_point():
                v.copy_(torch.randn(v.shape, generator=gen) * 0.5)


def test_one_block_with_global_pool_sees_a_piece_beyond_its_convolutions_reach() -> None:
    """The stem and one block are three 3x3 convolutions: a1's output reads squares at most 3 away, so taking
    Blue's tiger off g9 cannot change it without the pool (exactly: the same numbers), and does with it. The two
    networks share every weight but the pool's, drawn wide so that one piece moves the board's mean visibly."""
    plain, pooled = build_network(PLAIN).eval(), build_network(POOLED).eval()
    _draw_wide(pooled)
    plain.load_state_dict(pooled.state_dict(), strict=False)
    start, without = _observation(START), _observation(NO_BLUE_TIGER)
    assert (start != without).sum() == 1 and start[0, :, 8, 6].any()  # one plane entry, on g9
    assert torch.equal(_tower_at_a1(plain, start), _tower_at_a1(plain, without))
    assert (_tower_at_a1(pooled, start) - _tower_at_a1(pooled, without)).abs().max() > 1e-2


def test_the_option_off_is_the_plain_network_and_on_adds_one_linear_layer_per_block() -> None:
    small = build_network(NetworkConfig())
    assert count_parameters(small) == 137113 and not any("pool" in k for k in small.state_dict())
    assert NetworkConfig().global_pool is False
    pooled = build_network(NetworkConfig(global_pool=True))
    extra = set(pooled.state_dict()) - set(small.state_dict())
    assert set(small.state_dict()) < set(pooled.state_dict())
    assert extra == {f"tower.{i}.pool_fc.{p}" for i in range(3) for p in ("weight", "bias")}
    assert count_parameters(pooled) == 137113 + 3 * (2 * 32 * 32 + 32)


def test_the_pools_draw_their_weights_after_every_other_layer() -> None:
    torch.manual_seed(0)
    plain = build_network(PLAIN).state_dict()
    torch.manual_seed(0)
    pooled = build_network(POOLED).state_dict()
    assert all(torch.equal(v, pooled[k]) for k, v in plain.items())


def test_the_switch_is_a_bool_and_older_shapes_read_it_off() -> None:
    for bad in ("yes", 1, None):
        with pytest.raises(NetworkShapeError, match="global_pool"):
            NetworkConfig(global_pool=bad)  # type: ignore[arg-type]
    older = PLAIN.to_dict()
    del older["global_pool"]
    assert NetworkConfig.from_dict(older).global_pool is False
    assert NetworkConfig.from_stored(older).global_pool is False
    assert NetworkConfig.from_dict(POOLED.to_dict()) == POOLED


# -- checkpoints --------------------------------------------------------------------------------
def _state(model: torch.nn.Module, network: dict) -> dict:
    return {"model": model.state_dict(), "network": network, "rules": RULES.to_dict()}


def test_a_checkpoint_keeps_the_switch_and_its_weights(tmp_path: Path) -> None:
    torch.manual_seed(2)
    net = build_network(POOLED)
    randomise_norms(net)
    path = save_checkpoint(tmp_path / "pooled.pt", _state(net, POOLED.to_dict()))
    model, stored = load_model(path)
    assert model.config == POOLED
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in model.state_dict().items())
    check_compatible(stored, path, network=POOLED)
    with pytest.raises(CheckpointError, match="global_pool: checkpoint True vs wanted False"):
        check_compatible(stored, path, network=PLAIN)


def test_a_checkpoint_stored_before_the_switch_loads_with_it_off(tmp_path: Path) -> None:
    older = PLAIN.to_dict()
    del older["global_pool"]
    path = save_checkpoint(tmp_path / "older.pt", _state(build_network(PLAIN), older))
    model, stored = load_model(path, network=PLAIN)
    assert model.config.global_pool is False
    with pytest.raises(CheckpointError, match="global_pool"):
        check_compatible(stored, path, network=POOLED)


def test_weights_that_do_not_fit_the_stated_switch_are_refused_before_anything_is_built(tmp_path: Path) -> None:
    """The meta-device shape check knows the pools: a pooled shape over plain weights lacks them, a plain shape
    over pooled weights has them to spare; one line each."""
    plain = save_checkpoint(tmp_path / "plain.pt", _state(build_network(PLAIN), POOLED.to_dict()))
    with pytest.raises(CheckpointError, match=r"do not fit the stated shape .*missing tower\.0\.pool_fc\.bias") as e:
        load_model(plain)
    assert "\n" not in str(e.value)
    pooled = save_checkpoint(tmp_path / "pooled.pt", _state(build_network(POOLED), PLAIN.to_dict()))
    with pytest.raises(CheckpointError, match=r"unexpected tower\.0\.pool_fc\.bias"):
        load_model(pooled)


# -- learner ------------------------------------------------------------------------------------
def test_a_learner_step_trains_the_pools() -> None:
    torch.manual_seed(3)
    obs, mask = position_batch(16)
    rng = np.random.default_rng(3)
    policy = np.where(mask, rng.random(mask.shape), 0).astype(np.float32)
    buf = ReplayBuffer(16, mirror=False, seed=0)
    buf.add(obs, mask, policy / policy.sum(1, keepdims=True), rng.choice([-1.0, 0.0, 1.0], 16).astype(np.float32))
    model = build_network(POOLED)
    learner = Learner(model, LearnerConfig(lr=0.01, warmup_steps=0), device=torch.device("cpu"))
    before = model.tower[0].pool_fc.weight.detach().clone()
    metrics = learner.step(buf.get(np.arange(16)))
    assert np.isfinite(metrics.total)
    assert not torch.equal(model.tower[0].pool_fc.weight, before)


# -- config -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_switch_is_a_config_key_and_a_typo_of_it_is_refused() -> None:
    conf = train_config.checked_config(train_config.compose_config(["preset=smoke", "model.global_pool=true"]))
    assert conf.model.global_pool is True
    assert train_config.checked_config(train_config.compose_config([])).model.global_pool is False
    with pytest.raises(train_config.ConfigError, match="did you mean model.global_pool"):
        train_config.checked_config(train_config.compose_config(["preset=smoke", "model.global_pol=true"]))


@pytest.mark.slow
def test_a_smoke_run_with_global_pool_stores_it_and_its_resume_keeps_it(tmp_path: Path) -> None:
    def train(*args: str) -> None:
        r = subprocess.run([sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]

    common = ["train.eval.every=0"]
    train("preset=smoke", "model.global_pool=true", "train.iterations=1", *common, f"out_dir={tmp_path}", "name=gp")
    run = tmp_path / "gp"
    assert "global_pool: true" in load_checkpoint(run / "latest.pt")["config"]
    train(f"resume={run}", "train.iterations=2")
    state = load_checkpoint(run / "latest.pt")
    assert state["counters"]["iteration"] == 2 and state["network"]["global_pool"] is True
    assert "global_pool: true" in state["config"]
    model, _ = load_model(run / "latest.pt")
    assert model.config.global_pool is True and model.tower[0].pool_fc is not None

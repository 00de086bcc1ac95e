"""Checkpoints: round trip, weights_only loading, clear errors for bad files and mismatches."""

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.alphazero.net.checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_model,
    resolve_checkpoint_path,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.training.learner import Learner, LearnerConfig
from agents.alphazero.training.replay import ReplayBuffer
from envs import RuleSet
from envs.encoding import N_ACTIONS, OBS_SHAPE

TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)


def _state(model: torch.nn.Module, rules: RuleSet = RuleSet()) -> dict:
    learner = Learner(model, LearnerConfig(), device=torch.device("cpu"))
    buf = ReplayBuffer(4, seed=0)
    rng = np.random.default_rng(0)
    buf.add(
        rng.integers(0, 2, (3,) + OBS_SHAPE).astype(np.float32),
        np.ones((3, N_ACTIONS), bool),
        np.full((3, N_ACTIONS), 1 / N_ACTIONS, np.float32),
        np.array([1.0, 0.0, -1.0], np.float32),
    )
    return {
        "model": model.state_dict(),
        "network": TINY.to_dict(),
        "rules": rules.to_dict(),
        "config": "seed: 1\n",
        "counters": {"iteration": 3, "learner_steps": 7},
        "learner": learner.state_dict(),
        "replay": buf.state_dict(),
        "rng": rng_state(),
        "extra": {"elo": [0.0, 12.5]},
    }


def test_round_trip_with_weights_only(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = build_network(TINY)
    path = save_checkpoint(tmp_path / "run" / "latest.pt", _state(model))
    raw = torch.load(path, weights_only=True)  # must not need any unsafe global
    assert raw["counters"]["learner_steps"] == 7
    loaded, state = load_model(tmp_path / "run")  # a run directory resolves to its latest.pt
    x = torch.randn(2, *OBS_SHAPE)
    model.eval()
    for a, b in zip(model(x), loaded(x)):
        assert torch.equal(a, b)
    buf = ReplayBuffer(4)
    buf.load_state_dict(state["replay"])
    assert len(buf) == 3 and buf.value[2] == -1.0
    Learner(build_network(TINY), LearnerConfig(), device=torch.device("cpu")).load_state_dict(state["learner"])


def test_rng_states_restore(tmp_path: Path) -> None:
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    save_checkpoint(tmp_path / "c.pt", {"model": {}, "network": {}, "rules": {}, "rng": rng_state()})
    want = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(9)
    np.random.seed(9)
    torch.manual_seed(9)
    set_rng_state(load_checkpoint(tmp_path / "c.pt")["rng"])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == want


def test_truncated_and_garbage_files_are_refused_naming_the_path(tmp_path: Path) -> None:
    path = save_checkpoint(tmp_path / "latest.pt", _state(build_network(TINY)))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated") as e:
        load_checkpoint(path)
    assert str(path) in str(e.value)
    path.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match=str(path)):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        resolve_checkpoint_path(tmp_path / "nowhere")


def test_a_pickled_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    torch.save({"format": "jungle-zero/1", "model": {}, "network": {}, "rules": {}, "obj": Path("x")}, path)
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_checkpoint(path)


def test_other_shape_or_rules_are_refused(tmp_path: Path) -> None:
    path = save_checkpoint(tmp_path / "c.pt", _state(build_network(TINY)))
    with pytest.raises(CheckpointError, match="another network shape.*channels"):
        load_model(path, network=NetworkConfig(blocks=1, channels=16, value_hidden=8, policy_channels=2))
    with pytest.raises(CheckpointError, match="another rule set.*rank_order"):
        load_model(path, rules=RuleSet(rank_order="dog_over_wolf"))
    load_model(path, network=TINY, rules=RuleSet())


@pytest.mark.slow
def test_checkpoint_player_plays_legal_moves_and_fails_early(tmp_path: Path) -> None:
    from envs import Board
    from envs.players import PlayerSpecError, make_player

    save_checkpoint(tmp_path / "run" / "latest.pt", _state(build_network(TINY)))
    player = make_player(f"checkpoint:path={tmp_path / 'run'},sims=4", seed=0)
    assert player.name.startswith("checkpoint:")
    board = Board()
    for _ in range(4):
        move = player.select_move(board)
        assert board.is_legal(move)
        board.push(move)
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        make_player(f"checkpoint:path={tmp_path / 'missing'}")
    with pytest.raises(CheckpointError, match="another rule set"):
        make_player(f"checkpoint:path={tmp_path / 'run'}", rules=RuleSet(repetition="off"))
    with pytest.raises(PlayerSpecError, match="simz"):
        make_player(f"checkpoint:path={tmp_path / 'run'},simz=3")


def test_a_checkpoint_with_a_non_finite_weight_is_never_written_and_never_loaded(tmp_path: Path) -> None:
    """save_checkpoint refuses NaN or infinity in any floating-point tensor (weights, statistics, replay,
    optimizer); a file holding one anyway (written some other way) is refused by every loader: a player, a
    run's init= and resume= all read through load_checkpoint."""
    from envs.players import make_player

    torch.manual_seed(0)
    model = build_network(TINY)
    state = _state(model)
    state["model"] = dict(state["model"])
    state["model"]["tower.0.bn1.running_var"] = torch.full_like(state["model"]["tower.0.bn1.running_var"], np.inf)
    with pytest.raises(CheckpointError, match=r"its entry model.tower.0.bn1.running_var holds NaN or infinity"):
        save_checkpoint(tmp_path / "run" / "latest.pt", state)
    assert not (tmp_path / "run" / "latest.pt").exists()
    good = _state(model)
    good["replay"] = dict(good["replay"], value=torch.tensor([1.0, float("nan"), 0.0]))
    with pytest.raises(CheckpointError, match=r"its entry replay.value holds NaN"):
        save_checkpoint(tmp_path / "run" / "latest.pt", good)
    bad = tmp_path / "bad.pt"
    torch.save(dict(state, format="jungle-zero/1"), bad)  # bypassing save_checkpoint's check
    with pytest.raises(CheckpointError, match=r"holds NaN or infinity in model.tower.0.bn1.running_var"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match="NaN or infinity"):
        make_player(f"checkpoint:path={bad},sims=2")


def test_a_network_with_non_finite_outputs_raises_instead_of_playing() -> None:
    from agents.alphazero.net.runtime import NonFiniteOutputError, make_evaluator

    torch.manual_seed(0)
    model = build_network(TINY).eval()
    obs, mask = np.zeros((3,) + OBS_SHAPE, np.float32), np.ones((3, N_ACTIONS), bool)
    for precision in ("fp32", "bf16"):
        make_evaluator(model, "cpu", precision)(obs, mask)
    with torch.no_grad():
        model.value_fc[2].bias.fill_(float("nan"))
    for precision in ("fp32", "bf16"):
        with pytest.raises(NonFiniteOutputError, match="not finite"):
            make_evaluator(model, "cpu", precision)(obs, mask)


def _built_on(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The devices every network the checkpoint module builds is built on (recorded as it builds)."""
    import agents.alphazero.net.checkpoint as checkpoint_module

    devices: list[str] = []
    real = checkpoint_module.build_network

    def spy(config: object) -> torch.nn.Module:
        devices.append(torch.empty(0).device.type)  # the default device: "meta" inside torch.device("meta")
        return real(config)  # type: ignore[arg-type]

    monkeypatch.setattr(checkpoint_module, "build_network", spy)
    return devices


@pytest.mark.parametrize("claim", [dict(channels=4000), dict(blocks=64, channels=512), dict(value_hidden=4096)])
def test_a_checkpoint_claiming_a_large_shape_is_refused_before_anything_is_built(
    claim: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stated shape is checked against the bounds and against the stored tensors before any network is
    built for real (the expected shapes come from the meta device): a small file cannot make the loader
    allocate gigabytes."""
    state = _state(build_network(TINY))
    state["network"] = dict(TINY.to_dict(), **claim)
    path = save_checkpoint(tmp_path / "claims.pt", state)
    devices = _built_on(monkeypatch)
    with pytest.raises(CheckpointError, match="channels=4000 must lie in|do not fit the stated shape") as e:
        load_model(path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)
    assert all(d == "meta" for d in devices), devices
    load_model(save_checkpoint(tmp_path / "fits.pt", _state(build_network(TINY))))  # a checkpoint that fits loads


def test_a_file_that_is_not_a_checkpoint_says_so_without_unsafe_advice(tmp_path: Path) -> None:
    text = tmp_path / "notes.pt"
    text.write_text("these are my notes\n")
    with pytest.raises(CheckpointError, match="is not a Jungle Zero checkpoint: it is not a PyTorch file"):
        load_checkpoint(text)
    pickled = tmp_path / "object.pt"
    torch.save({"format": "jungle-zero/1", "model": {}, "network": {}, "rules": {}, "obj": Path("x")}, pickled)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(pickled)
    assert "objects other than tensors" in str(e.value)
    assert "weights_only" not in str(e.value) and "\n" not in str(e.value)


def test_a_stored_config_that_is_not_yaml_is_refused_naming_the_file(tmp_path: Path) -> None:
    from envs.players import make_player

    for config in ("mcts: {algorithm: [unclosed", "- just\n- a list\n", "mcts:\n  num_simulations: many\n"):
        state = dict(_state(build_network(TINY)), config=config)
        path = save_checkpoint(tmp_path / "c.pt", state)
        with pytest.raises(CheckpointError, match=r"c.pt'.*stored (config|search settings)") as e:
            make_player(f"checkpoint:path={path},sims=2")
        assert "\n" not in str(e.value)

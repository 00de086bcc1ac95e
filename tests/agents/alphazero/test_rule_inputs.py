"""How the network reads the rule planes (`envs.encoding` planes 24-31), and networks stored before them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from agents.alphazero.net import shipped
from agents.alphazero.net.checkpoint import load_model
from agents.alphazero.net.network import NetworkConfig, NetworkShapeError, build_network
from agents.alphazero.net.packing import pack_masks, pack_observations
from agents.alphazero.net.planestem import PlaneStem
from agents.alphazero.net.runtime import make_evaluator, make_packed_evaluator
from agents.alphazero.training.config import resumed_config
from envs import Board, RuleSet
from envs.encoding import LEGACY_PLANES, N_PLANES, OBS_SHAPE, RULE_FIRST_PLANE, encode_observation
from envs.rules import load_rules
from tests.support.positions import position_batch
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread)

OUTPUTS_BEFORE_RULE_PLANES = Path(__file__).parents[2] / "data" / "shipped_24_plane_outputs.npz"
"""Each shipped 24-plane network's fp32 outputs on `position_batch(24)` (`<name>/logits`: the legal moves'
logits; `<name>/value`). They stand for the digests of rounded outputs recorded before the rule planes, on an
AVX-512 CPU, which an AVX2 CPU missed by the last bits' rounding; so they are compared to float32 rounding."""
RECORDED_NAMES = ("default-120", "default-180", "default-60", "opponents-60", "qblend-60", "results-only-60")


def recorded_outputs(name: str) -> tuple[np.ndarray, np.ndarray]:
    with np.load(OUTPUTS_BEFORE_RULE_PLANES) as f:
        return f[f"{name}/logits"], f[f"{name}/value"]


def with_random_rule_planes(obs: np.ndarray, seed: int = 0) -> np.ndarray:
    """`obs` with every rule plane set to a constant drawn at random (per position)."""
    rng = np.random.default_rng(seed)
    out = obs.copy()
    out[:, RULE_FIRST_PLANE:] = rng.random((len(obs), N_PLANES - RULE_FIRST_PLANE, 1, 1)).astype(np.float32)
    return out


def test_every_shipped_network_is_covered() -> None:
    # Every network shipped before the rule planes is checked below; those shipped since read all 32 planes.
    old = [net.name for net in shipped.networks() if load_model(net.path)[0].config.input_planes == LEGACY_PLANES]
    assert sorted(old) == list(RECORDED_NAMES)
    with np.load(OUTPUTS_BEFORE_RULE_PLANES) as f:
        assert sorted(f.files) == sorted(f"{name}/{part}" for name in RECORDED_NAMES for part in ("logits", "value"))


@pytest.mark.parametrize("name", RECORDED_NAMES)
def test_a_shipped_network_reads_the_24_planes_of_its_time_and_answers_as_before(name: str) -> None:
    """Its outputs are those recorded before the rule planes, and no rule plane changes them, on every path
    (fp32, bf16 with the stem from the planes, packed)."""
    model, _ = load_model(shipped.resolve(f"shipped:{name}"))
    assert model.config.input_planes == LEGACY_PLANES
    assert model.stem[0].weight.shape[1] == LEGACY_PLANES
    obs, mask = position_batch(24)
    logits, value = make_evaluator(model, "cpu", "fp32")(obs, mask)
    want_logits, want_value = recorded_outputs(name)
    np.testing.assert_allclose(logits[mask], want_logits, rtol=0, atol=1e-4)
    np.testing.assert_allclose(value, want_value, rtol=0, atol=1e-5)
    odd = with_random_rule_planes(obs)
    for precision in ("fp32", "bf16"):
        ev = make_evaluator(model, "cpu", precision)
        a, b = ev(obs, mask), ev(odd, mask)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        packed = make_packed_evaluator(model, "cpu", precision)(*pack_observations(odd), pack_masks(mask))
        np.testing.assert_array_equal(packed[0], a[0])


def test_a_new_network_reads_the_rule_planes_and_starts_as_the_24_plane_network_of_its_seed() -> None:
    """A fresh network's stem reads 32 planes; its weights are those a 24-plane network of the same seed draws,
    with the rule planes' weights 0 (so the same seed plays the same games as before the rule planes)."""
    assert NetworkConfig().input_planes == N_PLANES
    torch.manual_seed(3)
    new = build_network(NetworkConfig())
    torch.manual_seed(3)
    old = build_network(NetworkConfig(input_planes=LEGACY_PLANES))
    new_state, old_state = new.state_dict(), old.state_dict()
    assert new_state.keys() == old_state.keys()
    for key, tensor in new_state.items():
        if key == "stem.0.weight":
            assert tensor.shape[1] == N_PLANES and not tensor[:, LEGACY_PLANES:].any()
            tensor = tensor[:, :LEGACY_PLANES]
        torch.testing.assert_close(tensor, old_state[key], rtol=0, atol=0)


def _rule_aware_network(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    net = build_network(NetworkConfig(blocks=1, channels=16))
    with torch.no_grad():
        net.stem[0].weight[:, RULE_FIRST_PLANE:].normal_(0, 0.5)
    return net.eval()


@pytest.mark.parametrize("precision", ("fp32", "bf16"))
def test_a_network_with_rule_weights_answers_each_rule_set_its_own_way(precision: str) -> None:
    """The same position under each named rule set: the rule planes reach the outputs, on every path."""
    net = _rule_aware_network(1)
    names = ("default", "keeps_rank", "enemy_rat", "rats_ignore_water", "dog_over_wolf", "anti_chase")
    obs = np.zeros((len(names),) + OBS_SHAPE, np.float32)
    for i, name in enumerate(names):
        board = Board(rules=load_rules(name))
        encode_observation(board.state, board.hashes, board.flags, obs[i])
    mask = np.ones((len(names), 252), bool)
    logits, value = make_evaluator(net, "cpu", precision)(obs, mask)
    assert len({round(float(v), 6) for v in value}) == len(names)
    packed = make_packed_evaluator(net, "cpu", precision)(*pack_observations(obs), pack_masks(mask))
    np.testing.assert_array_equal(packed[1], value)
    with torch.no_grad():
        dense_logits, _ = net(torch.from_numpy(obs))
    tol = 1e-4 if precision == "fp32" else 0.1
    np.testing.assert_allclose(logits, dense_logits.numpy(), atol=tol, rtol=tol)


def test_the_stem_from_planes_of_a_24_plane_convolution_reads_those_planes_only() -> None:
    torch.manual_seed(2)
    conv = torch.nn.Conv2d(LEGACY_PLANES, 8, 3, padding=1).to(torch.bfloat16)
    obs, _ = position_batch(6)
    a = PlaneStem(conv)(obs).float()
    b = PlaneStem(conv)(with_random_rule_planes(obs)).float()
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    x = torch.from_numpy(obs[:, :LEGACY_PLANES]).to(torch.bfloat16).float()
    dense = torch.relu(torch.nn.functional.conv2d(x, conv.weight.float(), conv.bias.float(), padding=1))
    torch.testing.assert_close(a, dense.to(torch.bfloat16).float(), rtol=1e-2, atol=1e-2)


def test_a_stored_shape_without_input_planes_reads_24_and_the_planes_are_bounded() -> None:
    assert NetworkConfig.from_stored({"blocks": 1}).input_planes == LEGACY_PLANES
    assert NetworkConfig.from_stored({"blocks": 1, "input_planes": 32}).input_planes == 32
    assert NetworkConfig.from_dict({"blocks": 1}).input_planes == N_PLANES  # a config: today's networks
    for bad in (23, 33):
        with pytest.raises(NetworkShapeError, match="input_planes"):
            NetworkConfig(input_planes=bad)


def test_a_run_stored_before_the_rule_planes_resumes_with_its_24_plane_network(tmp_path: Path) -> None:
    stored = "model:\n  blocks: 1\n  channels: 8\nrules:\n  repetition: draw\n"
    cfg = resumed_config(stored, tmp_path / "latest.pt", [])
    assert cfg.model.input_planes == LEGACY_PLANES
    stored_new = "model:\n  blocks: 1\n  input_planes: 32\n"
    assert resumed_config(stored_new, tmp_path / "latest.pt", []).model.input_planes == N_PLANES


def test_rule_set_equality_is_input_equality_for_the_network() -> None:
    """Two equal rule sets named two ways give the network the same answer (its input is the same)."""
    net = _rule_aware_network(4)
    ev = make_evaluator(net, "cpu", "fp32")
    answers = []
    for rules in (RuleSet(trapped_attacker="keeps_rank"), load_rules("keeps_rank")):
        board = Board(rules=rules)
        obs = np.zeros((1,) + OBS_SHAPE, np.float32)
        encode_observation(board.state, board.hashes, board.flags, obs[0])
        answers.append(ev(obs, np.ones((1, 252), bool)))
    np.testing.assert_array_equal(answers[0][0], answers[1][0])

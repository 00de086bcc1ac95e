"""A trained network grown into a larger shape (`agents.alphazero.net.grow`, ``train.py init=`` of a smaller net):
it computes what it computed, its new parts learn, and they are drawn from the seed."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from agents.alphazero.net.checkpoint import CheckpointError, grown_network
from agents.alphazero.net.grow import grow_weights, growth_of
from agents.alphazero.net.network import JungleNet, NetworkConfig, build_network
from envs.encoding import LEGACY_PLANES
from tests.agents.alphazero.test_rule_inputs import with_random_rule_planes
from tests.support.positions import position_batch
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread)

SMALL = NetworkConfig(blocks=2, channels=8, value_hidden=8, policy_channels=2)

GROWTHS = {
    "channels": (SMALL, replace(SMALL, channels=12)),
    "blocks": (SMALL, replace(SMALL, blocks=4)),
    "both": (SMALL, replace(SMALL, blocks=3, channels=16)),
    "a pool added": (SMALL, replace(SMALL, channels=12, blocks=3, global_pool=True)),
    "a pool kept": (replace(SMALL, global_pool=True), replace(SMALL, channels=12, blocks=3, global_pool=True)),
    "the rule planes": (replace(SMALL, input_planes=LEGACY_PLANES), replace(SMALL, channels=12)),
    "a survival head added": (SMALL, replace(SMALL, channels=12, survival_head=True)),
    "a survival head kept": (replace(SMALL, survival_head=True), replace(SMALL, blocks=3, survival_head=True)),
}


def trained_like(config: NetworkConfig, seed: int = 0) -> JungleNet:
    """A network of `config` whose batch norms are not the identity a fresh one starts with (random scales,
    shifts and running statistics), so a slice copied to the wrong place shows."""
    torch.manual_seed(seed)
    net = build_network(config)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.3, 0.3)
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 2.0)
            elif isinstance(module, torch.nn.Linear) and module.bias is not None:
                module.bias.uniform_(-0.2, 0.2)
    return net


def outputs(net: JungleNet, obs: torch.Tensor, train: bool) -> list[torch.Tensor]:
    net.train(train)
    with torch.no_grad():
        if net.config.survival_head:
            return list(net.forward_with_survival(obs))
        return list(net(obs))


@pytest.mark.parametrize("growth", sorted(GROWTHS))
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_a_grown_network_computes_what_the_trained_one_computed(growth: str, train: bool) -> None:
    """In evaluation mode (the search's running statistics) and in training mode (the learner's batch
    statistics), on positions whose rule planes hold anything (a 24-plane network never reads them)."""
    small, large = GROWTHS[growth]
    old = trained_like(small)
    grown = build_network(large)
    grown.load_state_dict(grow_weights(old.state_dict(), small, large, seed=1))
    obs = torch.from_numpy(with_random_rule_planes(position_batch(24)[0]))
    before, after = outputs(old, obs, train), outputs(grown, obs, train)
    if small.survival_head or not large.survival_head:
        assert len(before) == len(after)
    for a, b in zip(after, before):  # a survival head added is new: its logits have no old ones to match
        torch.testing.assert_close(a, b)
    assert any(not torch.equal(v, grown.state_dict()[k]) for k, v in build_network(large).state_dict().items())


def test_the_new_parts_learn_from_the_first_step_and_change_the_outputs() -> None:
    """The zero weights through which the old channels read the new ones, and a new block's zero batch-norm
    scale, get gradients: growth is not a dead appendix that stays zero."""
    small, large = SMALL, replace(SMALL, blocks=3, channels=12)
    grown = build_network(large)
    grown.load_state_dict(grow_weights(trained_like(small).state_dict(), small, large, seed=1))
    obs = torch.from_numpy(position_batch(24)[0])
    logits, value = grown(obs)
    (logits.logsumexp(1).mean() + value.square().mean()).backward()
    block1, new_block = grown.tower[1], grown.tower[2]
    reads_new = block1.conv2.weight.grad[: small.channels, small.channels :]
    assert not block1.conv2.weight[: small.channels, small.channels :].any() and reads_new.abs().sum() > 0
    assert not new_block.bn2.weight.any() and new_block.bn2.weight.grad.abs().sum() > 0
    assert grown.policy_conv[0].weight.grad[:, small.channels :].abs().sum() > 0
    before = [t.detach().clone() for t in grown(obs)]
    with torch.no_grad():
        for p in grown.parameters():
            p -= 0.1 * p.grad
    assert not all(torch.allclose(a, b) for a, b in zip(grown(obs), before))


def test_the_new_parts_are_drawn_from_the_seed_and_the_old_ones_are_copied() -> None:
    small, large = SMALL, replace(SMALL, blocks=3, channels=12)
    weights = trained_like(small).state_dict()
    one, again, other = (grow_weights(weights, small, large, seed=s) for s in (1, 1, 2))
    assert all(torch.equal(one[k], again[k]) for k in one)
    assert any(not torch.equal(one[k], other[k]) for k in one)
    for key, old in weights.items():
        head = tuple(slice(0, n) for n in old.shape)
        assert torch.equal(one[key][head], old) and torch.equal(other[key][head], old), key


def test_growth_names_the_fields_that_grow_and_refuses_a_shrink_or_another_head() -> None:
    assert growth_of(SMALL, SMALL) == []
    assert growth_of(SMALL, replace(SMALL, blocks=3, channels=12, global_pool=True)) == [
        "blocks",
        "channels",
        "global_pool",
    ]
    with pytest.raises(ValueError, match=r"^channels: 8 cannot shrink to 4$"):
        growth_of(SMALL, replace(SMALL, channels=4))
    with pytest.raises(ValueError, match=r"^global_pool: True cannot shrink to False$"):
        growth_of(replace(SMALL, global_pool=True), SMALL)
    with pytest.raises(ValueError, match=r"^value_head: 'scalar' cannot become 'wdl' \(a network grows only in "):
        growth_of(SMALL, replace(SMALL, value_head="wdl", blocks=3))


def test_a_checkpoint_that_cannot_grow_into_the_run_is_refused_naming_why() -> None:
    state = {"model": trained_like(SMALL).state_dict(), "network": SMALL.to_dict()}
    with pytest.raises(CheckpointError) as caught:
        grown_network(state, "small.pt", replace(SMALL, blocks=1, channels=12), seed=0)
    assert str(caught.value) == (
        "checkpoint 'small.pt' holds another network shape (blocks: checkpoint 2 vs wanted 1, channels: checkpoint 8 "
        "vs wanted 12), which cannot start a run of this one: blocks: 2 cannot shrink to 1"
    )
    same, grown = grown_network(state, "small.pt", SMALL, seed=0)
    assert same["network"] == SMALL.to_dict() and same["model"] is state["model"]

"""Small checkpoints for tests: a tiny network trained on nothing, stored as a run with a rule mix stores it."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from agents.alphazero.net.checkpoint import save_checkpoint
from agents.alphazero.net.network import NetworkConfig, build_network
from envs.rules import load_rules

TINY_NET = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)


def mixed_checkpoint(path: Path, names: Sequence[str], seed: int = 0) -> Path:
    """A tiny network's checkpoint at `path` recording the rule sets `names` (of `configs/rules/`) as a run with
    ``train.rules_mix`` writes them: ``rules_mix`` entries of name, weight and rules, ``rules`` the first."""
    torch.manual_seed(seed)
    mix = [{"name": name, "weight": 1.0, "rules": load_rules(name).to_dict()} for name in names]
    return save_checkpoint(
        path,
        {
            "model": build_network(TINY_NET).state_dict(),
            "network": TINY_NET.to_dict(),
            "rules": mix[0]["rules"],
            "rules_mix": mix,
            "config": "",
        },
    )


def randomise_norms(model: torch.nn.Module) -> None:
    """Give every batch norm of `model` running statistics far from their fresh 0 and 1, the same for a seed, so
    that folding them into the convolutions (or not) shows in a network's outputs."""
    gen = torch.Generator().manual_seed(7)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.3)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)

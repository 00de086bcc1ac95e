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

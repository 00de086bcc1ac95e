"""A trained network grown into a larger shape that computes what it computed (``train.py init=`` of a smaller net).

The larger network may have more residual blocks, more channels, more input planes, a global pool or a survival
head where the trained one had none; every other field of the shape must be equal (`growth_of`). The grown
network's outputs equal the trained one's on every observation, in training mode as in evaluation mode:

- the trained weights fill the leading slice of each of the larger tensors (the first `channels` channels, the
  first `input_planes` planes, the first `blocks` blocks), batch-norm statistics included;
- a new channel is drawn as a fresh network of that shape draws it, but every old channel reads it with weight 0
  (the convolutions of the tower and of the heads), so it changes nothing until training moves those weights;
- a new residual block is drawn fresh except its last batch norm's scale and shift, set to 0: the block adds
  nothing to its input (non-negative, the output of a ReLU), so it passes it on unchanged;
- a global pool added to a trained block gives its old channels a bias of 0 (their rows of the linear layer 0);
- new input planes (the rule planes of a 24-plane network) read 0, as in a fresh network.

The new weights get gradients from the first learner step (a zero weight read from a live channel has one; a
new block's batch-norm scale has one), so the larger network starts where the trained one stands and grows from
there (Net2Net, Chen et al. 2016, with zero-initialised outgoing weights instead of copied channels). The fresh
parts are drawn from `seed` alone, so a run's seed fixes them.
"""

from __future__ import annotations

import re
from typing import Mapping

import torch

from agents.alphazero.net.network import NetworkConfig, build_network

GROWABLE = ("blocks", "channels", "input_planes", "global_pool", "survival_head")
"""The shape fields a trained network can grow in (the others must be equal)."""

_BLOCK_KEY = re.compile(r"^tower\.(\d+)\.")
_READS_THE_TOWER = ("policy_conv.0.weight", "value_conv.0.weight", "survival_conv.0.weight")
"""The heads' 1x1 convolutions over the tower's channels [out, C, 1, 1]."""


def growth_of(stored: NetworkConfig, network: NetworkConfig) -> list[str]:
    """The fields in which `network` is larger than `stored` ([] when they are equal), or ValueError naming the
    first field that keeps `stored` from growing into `network` (smaller, or another value of a fixed field)."""
    grown = []
    for key, old in stored.to_dict().items():
        new = getattr(network, key)
        if new == old:
            continue
        if key not in GROWABLE:
            raise ValueError(f"{key}: {old!r} cannot become {new!r} (a network grows only in {', '.join(GROWABLE)})")
        if new < old:
            raise ValueError(f"{key}: {old!r} cannot shrink to {new!r}")
        grown.append(key)
    return grown


def grow_weights(
    weights: Mapping[str, torch.Tensor], stored: NetworkConfig, network: NetworkConfig, seed: int
) -> dict[str, torch.Tensor]:
    """The state_dict of a `network`-shaped net that computes what the `stored`-shaped net of `weights` computes
    (the module docstring says how); its new parts drawn from `seed`. ValueError when `stored` cannot grow into
    `network` (`growth_of`)."""
    growth_of(stored, network)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fresh = build_network(network).state_dict()
    c = stored.channels
    grown: dict[str, torch.Tensor] = {}
    for key, new in fresh.items():
        new = new.clone()
        block = _BLOCK_KEY.match(key)
        new_block = block is not None and int(block.group(1)) >= stored.blocks
        if new_block:
            if key.endswith(".bn2.weight") or key.endswith(".bn2.bias"):
                new.zero_()  # the block adds y = 0 to its non-negative input: relu(x + 0) = x
        elif key.endswith(".pool_fc.weight"):
            if stored.global_pool:
                old = weights[key].to(new.dtype)  # [c, 2c]: the means of the c channels, then their maxes
                new[:c] = 0
                new[:c, :c] = old[:, :c]
                new[:c, network.channels : network.channels + c] = old[:, c:]
            else:
                new[:c] = 0  # a pool added to a trained block: no bias for its old channels
        elif key.endswith(".pool_fc.bias") and not stored.global_pool:
            new[:c] = 0
        elif key in weights:
            old = weights[key].to(new.dtype)
            if old.dim() == 0:  # a batch norm's num_batches_tracked
                new = old.clone()
            else:
                new[tuple(slice(0, n) for n in old.shape)] = old
                if block is not None and (key.endswith(".conv1.weight") or key.endswith(".conv2.weight")):
                    new[:c, c:] = 0  # an old channel does not read the new ones
                elif key in _READS_THE_TOWER:
                    new[:, c:] = 0
        grown[key] = new
    return grown

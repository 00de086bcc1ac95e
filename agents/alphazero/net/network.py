"""The policy/value network: a residual tower over the canonical observation.

Input ``obs [B, 32, 9, 7]`` float32 (`envs.encoding`, side to move's frame).
The rules reach the network as the observation's constant rule planes 24-31,
through the stem convolution like every other plane (docs/performance.md
has the measured choice against a linear layer from the rule vector). A
network reads the first `NetworkConfig.input_planes` planes: 32 for a new
one; 24 (`envs.encoding.LEGACY_PLANES`) for one stored before the rule planes,
which plays exactly as it did (`NetworkConfig.from_stored`).
Output ``(logits [B, 252], value)`` where ``value`` is ``[B]`` in [-1, 1]
(``value_head="scalar"``, tanh) or ``[B, 3]`` win/draw/loss logits
(``value_head="wdl"``). Values are always from the side to move.

With ``survival_head`` on, an auxiliary head (KataGo-style) also predicts,
for each of the 16 pieces in the order of observation planes 0-15 (the
mover's Rat .. Elephant, then the opponent's), whether it is still on the
board when the game ends: `JungleNet.forward_with_survival` gives its 16
logits to the learner; `forward` and the search never see it.

With ``global_pool`` on (KataGo-style global pooling), each residual block takes the mean and the max over
the 63 squares of its first convolution's output, per channel, and adds a linear map of them to every square
as a per-channel bias before its second convolution (`pooled_bias`): every square sees the whole board in
one block, where a block's two 3x3 convolutions alone reach two squares further.

Illegal actions are masked with the dtype's most negative finite number
(`mask_logits`), never ``-inf``: a softmax over a row stays finite, and a row
with every action masked becomes the uniform distribution over all 252
actions (every entry is equal), so no NaN can appear downstream.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from envs.config import ConfigError, check_choice, check_range, config_kwargs, shown
from envs.encoding import LEGACY_PLANES, N_ACTIONS, N_PLANES, OBS_SHAPE

VALUE_HEADS = ("scalar", "wdl")


class NetworkShapeError(ConfigError):
    """A network configuration that cannot be built (names the bad field)."""


SHAPE_BOUNDS = {
    "blocks": (0, 64),
    "channels": (1, 512),
    "value_hidden": (1, 4096),
    "policy_channels": (1, 256),
    "input_planes": (LEGACY_PLANES, N_PLANES),
}
"""The sizes a network may have (`NetworkConfig`'s docstrings): the largest is about 1.2 GB of float32
weights, so a checkpoint's stated shape is checked against them before anything is built."""


@dataclass
class NetworkConfig:
    """Shape of the residual network; stored in every checkpoint. The defaults are the `small` shape of
    the default training run (configs/model/small.yaml)."""

    blocks: int = 3
    """Residual blocks in the tower; 0 to 64."""
    channels: int = 32
    """Convolution channels in the tower; 1 to 512."""
    value_head: str = "scalar"
    """`scalar` (tanh value in [-1, 1]) or `wdl` (win/draw/loss logits)."""
    value_hidden: int = 64
    """Width of the value head's hidden layer; 1 to 4096."""
    policy_channels: int = 4
    """1x1 convolution channels feeding the policy head; 1 to 256."""
    survival_head: bool = False
    """An auxiliary head predicting which of the 16 pieces survive to the game's end (trained by the
    learner, unused by the search); off: the network is exactly the plain policy/value one."""
    input_planes: int = N_PLANES
    """Observation planes the network reads, the first ones (`envs.encoding`): 32, the rule planes
    included, or 24, without them (a network stored before the rule planes); 24 to 32."""
    global_pool: bool = False
    """Global pooling in every residual block (KataGo-style): the mean and the max of the first convolution's
    output over the board, per channel, mapped by a linear layer to a bias per channel added before the second
    convolution, so every square sees the whole board in one block; off: the plain residual tower."""

    def __post_init__(self) -> None:
        for key in SHAPE_BOUNDS:
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise NetworkShapeError(f"model.{key}={shown(v)} must be an integer")
        check_range(self, "model", NetworkShapeError, **SHAPE_BOUNDS)
        check_choice(self, "model", NetworkShapeError, value_head=VALUE_HEADS)
        for key in ("survival_head", "global_pool"):
            if not isinstance(getattr(self, key), bool):
                raise NetworkShapeError(f"network {key}={getattr(self, key)!r} must be true or false")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "NetworkConfig":
        """Build from a mapping (a Hydra node or a checkpoint); unknown keys are errors, missing ones take
        their defaults (a checkpoint older than `survival_head` or `global_pool` has none: off)."""
        return cls(**config_kwargs(cls, values, "network", NetworkShapeError))

    @classmethod
    def from_stored(cls, values: Mapping[str, Any]) -> "NetworkConfig":
        """`from_dict` of a checkpoint's stored shape: one stored before `input_planes` existed reads the 24
        planes of its time (`envs.encoding.LEGACY_PLANES`), so it loads and plays as it did."""
        values = dict(values)
        values.setdefault("input_planes", LEGACY_PLANES)
        return cls.from_dict(values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ResidualBlock(nn.Module):
    """conv-bn-relu-conv-bn plus the input, then relu; with a global pool (`add_global_pool`), the board's
    pooled bias (`pooled_bias`) added after the first relu."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.pool_fc: nn.Linear | None = None
        """The global pool's linear layer, [B, 2C] -> [B, C]; None without one (`NetworkConfig.global_pool`)."""

    def add_global_pool(self) -> None:
        """Give the block its global pool's linear layer, drawing its initial weights now (`JungleNet` draws
        them after every other layer's)."""
        channels = self.conv1.out_channels
        self.pool_fc = nn.Linear(2 * channels, channels, device=self.conv1.weight.device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        if self.pool_fc is not None:
            y = y + pooled_bias(y, self.pool_fc.weight, self.pool_fc.bias)
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


def pooled_bias(y: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The global pool's bias of activations y [B, C, 9, 7]: the linear layer (`weight` [C, 2C], `bias` [C]) of
    their mean and max over the board per channel ([B, 2C], the means first), as [B, C, 1, 1] to add to y."""
    pooled = torch.cat([y.mean(dim=(2, 3)), y.amax(dim=(2, 3))], dim=1)
    return F.linear(pooled, weight, bias)[:, :, None, None]


SURVIVAL_PIECES = 16
"""Outputs of the survival head: the mover's 8 animals, then the opponent's (observation planes 0-15)."""


class JungleNet(nn.Module):
    """Residual tower with a 252-logit policy head, a value head and, when configured, a survival head."""

    def __init__(self, config: Optional[NetworkConfig] = None) -> None:
        super().__init__()
        config = NetworkConfig() if config is None else config
        self.config = config
        c = config.channels
        squares = OBS_SHAPE[1] * OBS_SHAPE[2]
        self.stem = nn.Sequential(_stem_conv(config.input_planes, c), nn.BatchNorm2d(c), nn.ReLU())
        self.tower = nn.Sequential(*[ResidualBlock(c) for _ in range(config.blocks)])
        pc = config.policy_channels
        self.policy_conv = nn.Sequential(nn.Conv2d(c, pc, 1, bias=False), nn.BatchNorm2d(pc), nn.ReLU())
        self.policy_fc = nn.Linear(pc * squares, N_ACTIONS)
        self.value_conv = nn.Sequential(nn.Conv2d(c, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU())
        out = 3 if config.value_head == "wdl" else 1
        self.value_fc = nn.Sequential(
            nn.Linear(2 * squares, config.value_hidden), nn.ReLU(), nn.Linear(config.value_hidden, out)
        )
        # Built last: the other layers draw the same initial weights with the head on or off.
        self.survival_conv: nn.Sequential | None = None
        self.survival_fc: nn.Linear | None = None
        if config.survival_head:
            self.survival_conv = nn.Sequential(nn.Conv2d(c, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU())
            self.survival_fc = nn.Linear(2 * squares, SURVIVAL_PIECES)
        # Last of all: the pools leave every other layer the weights a seed gives the plain network.
        if config.global_pool:
            for block in cast(list[ResidualBlock], list(self.tower)):
                block.add_global_pool()

    def _heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.policy_fc(self.policy_conv(x).flatten(1))
        v = self.value_fc(self.value_conv(x).flatten(1))
        if self.config.value_head == "wdl":
            return logits, v
        return logits, torch.tanh(v.squeeze(-1))

    def _stem(self, obs: torch.Tensor) -> torch.Tensor:
        """The stem of the planes this network reads (the first `NetworkConfig.input_planes`)."""
        planes = self.config.input_planes
        return self.stem(obs if obs.shape[1] == planes else obs[:, :planes])

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """obs [B, 32, 9, 7] -> (logits [B, 252], value [B] tanh or WDL logits [B, 3])."""
        return self._heads(self.tower(self._stem(obs)))

    def forward_with_survival(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """obs [B, 32, 9, 7] -> (logits [B, 252], value as `forward`, survival logits [B, 16]): piece k
        (observation plane k, the mover's first) is still on the board at the game's end.

        NetworkShapeError when the network was built without `NetworkConfig.survival_head`."""
        if self.survival_conv is None or self.survival_fc is None:
            raise NetworkShapeError("this network has no survival head (NetworkConfig.survival_head is false)")
        x = self.tower(self._stem(obs))
        logits, v = self._heads(x)
        return logits, v, self.survival_fc(self.survival_conv(x).flatten(1))


def _stem_conv(planes: int, channels: int) -> nn.Conv2d:
    """The stem's 3x3 convolution of `planes` observation planes: the first 24 drawn as a 24-plane convolution
    draws them, the rule planes' weights 0. So a fresh network of a seed is the one that seed gave before the
    rule planes (the same games), and the rule planes' weights grow only where the rules vary in training."""
    legacy = nn.Conv2d(LEGACY_PLANES, channels, 3, padding=1, bias=False)
    if planes == LEGACY_PLANES:
        return legacy
    device = legacy.weight.device  # the meta device where a checkpoint's shape is checked (allocates nothing)
    conv = nn.utils.skip_init(nn.Conv2d, planes, channels, 3, padding=1, bias=False, device=device)
    with torch.no_grad():
        conv.weight.zero_()
        conv.weight[:, :LEGACY_PLANES] = legacy.weight
    return conv


def build_network(config: NetworkConfig | Mapping[str, Any]) -> JungleNet:
    """A fresh network of the given shape."""
    if not isinstance(config, NetworkConfig):
        config = NetworkConfig.from_dict(config)
    return JungleNet(config)


def mask_logits(logits: torch.Tensor, mask: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """Illegal entries of logits [B, 252] set to the dtype's minimum (finite, never -inf); `inplace`:
    in `logits` itself.

    A row whose mask is all False becomes constant, i.e. the uniform
    distribution over all 252 actions after a softmax: defined and NaN-free.
    """
    if inplace:
        return logits.masked_fill_(~mask, torch.finfo(logits.dtype).min)
    return logits.masked_fill(~mask, torch.finfo(logits.dtype).min)


def scalar_value(value_out: torch.Tensor) -> torch.Tensor:
    """Network value output -> [B] expected score in [-1, 1] for the side to move.

    A WDL output [B, 3] gives P(win) - P(loss); a scalar output passes through.
    """
    if value_out.dim() == 2:
        p = torch.softmax(value_out.float(), dim=-1)
        return p[:, 0] - p[:, 2]
    return value_out


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())

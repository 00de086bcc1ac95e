"""The policy/value network: a residual tower over the canonical observation.

Input ``obs [B, 24, 9, 7]`` float32 (`envs.encoding`, side to move's frame).
Output ``(logits [B, 252], value)`` where ``value`` is ``[B]`` in [-1, 1]
(``value_head="scalar"``, tanh) or ``[B, 3]`` win/draw/loss logits
(``value_head="wdl"``). Values are always from the side to move.

With ``survival_head`` on, an auxiliary head (KataGo-style) also predicts,
for each of the 16 pieces in the order of observation planes 0-15 (the
mover's Rat .. Elephant, then the opponent's), whether it is still on the
board when the game ends: `JungleNet.forward_with_survival` gives its 16
logits to the learner; `forward` and the search never see it.

Illegal actions are masked with the dtype's most negative finite number
(`mask_logits`), never ``-inf``: a softmax over a row stays finite, and a row
with every action masked becomes the uniform distribution over all 252
actions (every entry is equal), so no NaN can appear downstream.
"""

from __future__ import annotations

import copy
import functools
import operator
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from agents.alphazero.planestem import PlaneStem
from envs.config import ConfigError, check_choice, check_range, config_kwargs, shown
from envs.encoding import N_ACTIONS, N_PLANES, OBS_SHAPE

VALUE_HEADS = ("scalar", "wdl")

# An evaluator maps (obs float32 [n, 24, 9, 7], legal mask bool [n, 252]) to
# (logits float32 [n, 252], value float32 [n] in [-1, 1], side to move's view).
Evaluator = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


class NetworkShapeError(ConfigError):
    """A network configuration that cannot be built (names the bad field)."""


class NonFiniteOutputError(ValueError):
    """The network gave a NaN or infinite logit or value: its weights have diverged or are damaged, and a
    search on such outputs would play garbage."""


SHAPE_BOUNDS = {"blocks": (0, 64), "channels": (1, 512), "value_hidden": (1, 4096), "policy_channels": (1, 256)}
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

    def __post_init__(self) -> None:
        for key in SHAPE_BOUNDS:
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise NetworkShapeError(f"model.{key}={shown(v)} must be an integer")
        check_range(self, "model", NetworkShapeError, **SHAPE_BOUNDS)
        check_choice(self, "model", NetworkShapeError, value_head=VALUE_HEADS)
        if not isinstance(self.survival_head, bool):
            raise NetworkShapeError(f"network survival_head={self.survival_head!r} must be true or false")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "NetworkConfig":
        """Build from a mapping (a Hydra node or a checkpoint); unknown keys are errors, missing ones take
        their defaults (a checkpoint older than `survival_head` has none)."""
        return cls(**config_kwargs(cls, values, "network", NetworkShapeError))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ResidualBlock(nn.Module):
    """conv-bn-relu-conv-bn plus the input, then relu."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


SURVIVAL_PIECES = 16
"""Outputs of the survival head: the mover's 8 animals, then the opponent's (observation planes 0-15)."""


class JungleNet(nn.Module):
    """Residual tower with a 252-logit policy head, a value head and, when configured, a survival head."""

    def __init__(self, config: NetworkConfig = NetworkConfig()) -> None:
        super().__init__()
        self.config = config
        c = config.channels
        squares = OBS_SHAPE[1] * OBS_SHAPE[2]
        self.stem = nn.Sequential(nn.Conv2d(N_PLANES, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
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

    def _heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.policy_fc(self.policy_conv(x).flatten(1))
        v = self.value_fc(self.value_conv(x).flatten(1))
        if self.config.value_head == "wdl":
            return logits, v
        return logits, torch.tanh(v.squeeze(-1))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """obs [B, 24, 9, 7] -> (logits [B, 252], value [B] tanh or WDL logits [B, 3])."""
        return self._heads(self.tower(self.stem(obs)))

    def forward_with_survival(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """obs [B, 24, 9, 7] -> (logits [B, 252], value as `forward`, survival logits [B, 16]): piece k
        (observation plane k, the mover's first) is still on the board at the game's end.

        NetworkShapeError when the network was built without `NetworkConfig.survival_head`."""
        if self.survival_conv is None or self.survival_fc is None:
            raise NetworkShapeError("this network has no survival head (NetworkConfig.survival_head is false)")
        x = self.tower(self.stem(obs))
        logits, v = self._heads(x)
        return logits, v, self.survival_fc(self.survival_conv(x).flatten(1))


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


MAX_THREADS = 1024
"""The most torch CPU threads a run or a player asks for (far more makes torch's thread pool abort)."""


def resolve_device(device: str) -> torch.device:
    """`auto` -> CUDA when present, else CPU; `cpu`, `cuda`, `cuda:N` or `mps` when this machine has it.

    ValueError naming the device and why it cannot be used (checked before any work: torch itself
    would fail at the first tensor moved there)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"unknown device {shown(device)}: use auto, cpu, cuda, cuda:N or mps") from None
    if d.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA device is visible"
            raise ValueError(f"device={device!r} is not available: {why}")
        if d.index is not None and d.index >= torch.cuda.device_count():
            raise ValueError(f"device={device!r} is not available: this machine has "
                             f"{torch.cuda.device_count()} CUDA device(s), cuda:0 to cuda:{torch.cuda.device_count() - 1}")
    elif d.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"device={device!r} is not available: this machine has no MPS device")
    elif d.type != "cpu":
        raise ValueError(f"unknown device {shown(device)}: use auto, cpu, cuda, cuda:N or mps")
    return d




PRECISIONS = ("fp32", "bf16", "auto")
"""Inference precisions of `make_evaluator`."""
BF16_MIN_BATCH = 16
"""Smallest batch at which bf16 pays on a CPU with native bf16 (the checkpoint player's default
precision follows it through its leaf batch): below it bf16 is slower than fp32
(bench/bench_network.py; docs/performance.md)."""


def native_bf16(device: torch.device) -> bool:
    """Whether `device` computes bf16 natively (CUDA with bf16, CPUs with AVX512-BF16 or AMX)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        return _cpu_native_bf16()
    return False


@functools.cache
def _cpu_native_bf16() -> bool:
    """Whether this CPU has AVX512-BF16 or AMX (asked once: every evaluator call wants to know)."""
    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in checks)


def autocast_dtype(device: torch.device, amp: bool) -> torch.dtype | None:
    """The learner's mixed-precision dtype on `device`, or None for float32.

    CUDA: bf16 where supported, else fp16 (with a grad scaler). CPU: bf16 where
    the CPU computes it natively (faster than fp32 there: docs/performance.md),
    else float32. Master weights stay float32 either way.
    """
    if not amp:
        return None
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "cpu" and native_bf16(device):
        return torch.bfloat16
    return None


def inference_dtype(device: torch.device, precision: str, batch: int) -> torch.dtype:
    """The dtype a batch of `batch` positions is evaluated in on `device` under `precision`.

    ``fp32`` always float32; ``bf16`` always bfloat16 (float16 on a GPU without
    bf16); ``auto``: bf16 where the device computes it natively (fp16 on a GPU
    without bf16), else fp32. The choice does not depend on `batch`, so a game's
    moves do not depend on how many games share its network calls (self-play
    splits its games over any number of workers and gets the same games).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"inference precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    if precision == "fp32" or (precision == "auto" and device.type not in ("cuda", "cpu")):
        return torch.float32
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if precision == "bf16" or native_bf16(device):
        return torch.bfloat16
    return torch.float32


def fuse_for_inference(model: "JungleNet") -> "JungleNet":
    """An eval-mode copy of `model` with every batch norm folded into the convolution before it.

    The copy computes the same function as ``model.eval()`` (to float rounding)
    with fewer kernels; it is independent of `model` (train the original, fuse again).
    """
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    fused = copy.deepcopy(model).eval()

    def fold(seq: nn.Sequential) -> None:
        seq[0] = fuse_conv_bn_eval(cast(nn.Conv2d, seq[0]), cast(nn.BatchNorm2d, seq[1]))
        seq[1] = nn.Identity()

    fold(fused.stem)
    fold(fused.policy_conv)
    fold(fused.value_conv)
    if fused.survival_conv is not None:
        fold(fused.survival_conv)
    for block in fused.tower:
        for conv, bn in (("conv1", "bn1"), ("conv2", "bn2")):  # by name: a block's typed fields change type
            setattr(block, conv, fuse_conv_bn_eval(getattr(block, conv), getattr(block, bn)))
            setattr(block, bn, nn.Identity())
    return fused


def _conv_pointwise_ops() -> Any:
    """torch's oneDNN convolutions with fused element-wise work (``torch.ops.mkldnn._convolution_pointwise``,
    what torch.compile's CPU backend emits), or None where this build of torch lacks them."""
    try:
        ops = torch.ops.mkldnn
        ops._convolution_pointwise.default, ops._convolution_pointwise.binary  # noqa: B018 - raise if missing
    except (AttributeError, RuntimeError):
        return None
    return ops if torch.backends.mkldnn.is_available() else None


_SAME = [1, 1]
_ONE = [1, 1]
_NONE = [0, 0]


class FusedCPUForward:
    """`JungleNet.forward` of a batch-norm-folded copy (`fuse_for_inference`) on a CPU, each convolution one
    oneDNN kernel with its ReLU, and a residual block's second one with the skip addition and ReLU too.

    Eager PyTorch runs the ReLUs and additions as separate passes over the activations; fused, the
    forward pass saves them, as torch.compile does, without a compile per set of weights
    (docs/performance.md). The same function as the module to the dtype's rounding (tested).
    The fused ops are torch's own (`_conv_pointwise_ops`); `for_inference` falls back to the module
    where they are missing. `from_planes` takes the float32 observations themselves and builds the
    stem's output from their nonzero entries (`PlaneStem`): the evaluator's path, without the dense
    first convolution and the input copies."""

    def __init__(self, net: "JungleNet", ops: Any) -> None:
        self.net = net
        self.conv = ops._convolution_pointwise.default
        self.conv_add = ops._convolution_pointwise.binary
        # Every tensor the pass reads, looked up once: module attribute lookups are a measurable share of a call.
        self.stem_conv = self._weights(net.stem[0])
        self.blocks = [self._weights(block.conv1) + self._weights(block.conv2)
                       for block in cast(list[ResidualBlock], list(net.tower))]
        self.policy_conv = self._weights(net.policy_conv[0])
        self.value_conv = self._weights(net.value_conv[0])
        # The heads' first linear layers with their inputs in channels-last order, so a head's 1x1
        # convolution output (channels-last, as oneDNN writes it) feeds them without a copy.
        self.policy_fc = (self._channels_last_inputs(net.policy_fc.weight, net.config.policy_channels),
                          net.policy_fc.bias)
        value_fc1, value_fc2 = cast(nn.Linear, net.value_fc[0]), cast(nn.Linear, net.value_fc[2])
        self.value_fc1 = (self._channels_last_inputs(value_fc1.weight, 2), value_fc1.bias)
        self.value_fc2 = (value_fc2.weight, value_fc2.bias)
        self.wdl = net.config.value_head == "wdl"
        self.stem = PlaneStem(cast(nn.Conv2d, net.stem[0]))

    @staticmethod
    def _weights(conv: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
        return cast(torch.Tensor, conv.weight), cast(torch.Tensor, conv.bias)

    @staticmethod
    def _channels_last_inputs(weight: torch.Tensor, channels: int) -> torch.Tensor:
        """`weight` [out, C*H*W] of a layer that reads an NCHW-flattened input, reordered to read (H, W, C)."""
        h, w = OBS_SHAPE[1], OBS_SHAPE[2]
        return weight.reshape(-1, channels, h, w).permute(0, 2, 3, 1).reshape(weight.shape[0], -1).contiguous()

    @staticmethod
    def _flat(x: torch.Tensor) -> torch.Tensor:
        """[B, C, H, W] -> [B, H*W*C] (a view of a channels-last tensor)."""
        return x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Observations as a bf16 channels-last tensor [n, 24, 9, 7] -> (logits [n, 252], value)."""
        w, b = self.stem_conv
        return self._tower_and_heads(self.conv(x, w, b, _SAME, _ONE, _ONE, 1, "relu", [], ""))

    def from_planes(self, obs: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """`__call__` of float32 observations [n, 24, 9, 7] (a numpy array): the stem from the planes'
        nonzero entries (`PlaneStem`), with no input copies."""
        return self._tower_and_heads(self.stem(obs))

    def _tower_and_heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        conv, conv_add = self.conv, self.conv_add
        for w1, b1, w2, b2 in self.blocks:
            y = conv(x, w1, b1, _SAME, _ONE, _ONE, 1, "relu", [], "")
            x = conv_add(y, x, w2, b2, _SAME, _ONE, _ONE, 1, "add", 1.0, "relu", [], "")
        w, b = self.policy_conv
        logits = F.linear(self._flat(conv(x, w, b, _NONE, _ONE, _ONE, 1, "relu", [], "")), *self.policy_fc)
        w, b = self.value_conv
        v = self._flat(conv(x, w, b, _NONE, _ONE, _ONE, 1, "relu", [], ""))
        v = F.linear(F.relu(F.linear(v, *self.value_fc1)), *self.value_fc2)
        if self.wdl:
            return logits, v
        return logits, torch.tanh(v.squeeze(-1))


def for_inference(fused: nn.Module, device: torch.device, dtype: torch.dtype) -> Callable[..., Any]:
    """What runs a folded copy (`fuse_for_inference`) in `dtype` on `device`: `FusedCPUForward` for a
    `JungleNet` in bf16 on a CPU (channels-last, `channels_last`) where torch has the fused ops, else
    the module itself."""
    ops = _conv_pointwise_ops() if isinstance(fused, JungleNet) and channels_last(device, dtype) else None
    return fused if ops is None else FusedCPUForward(cast(JungleNet, fused), ops)


_VERSION = operator.attrgetter("_version")


class _InferenceCopies:
    """Fused copies of a live model per dtype, made again whenever its weights change.

    Staleness is read from the parameters' and buffers' in-place version
    counters, which every optimizer step, running-statistics update and
    `load_state_dict` advances; so an evaluator built once keeps serving the
    network the learner is training. The tensors are listed once (listing
    them walks the module tree, a few percent of a self-play call): a
    parameter replaced by another tensor object is not seen, so build a new
    evaluator after such surgery.
    """

    def __init__(self, model: nn.Module, device: torch.device) -> None:
        self.model = model
        self.device = device
        self._tensors = [*model.parameters(), *model.buffers()]
        self._key: tuple[int, ...] = ()
        self._copies: dict[torch.dtype, Callable[..., Any]] = {}

    def _version(self) -> tuple[int, ...]:
        return (*map(_VERSION, self._tensors), *map(torch.Tensor.data_ptr, self._tensors))

    def get(self, dtype: torch.dtype) -> Callable[..., Any]:
        """The forward pass of the current weights' fused copy in `dtype` (`for_inference`)."""
        key = self._version()
        if key != self._key:
            self._copies.clear()
            self._key = key
        if dtype not in self._copies:
            if isinstance(self.model, JungleNet):
                fused: nn.Module = fuse_for_inference(self.model)
            else:
                fused = copy.deepcopy(self.model).eval()
            fused = fused.to(self.device, dtype=dtype)
            if channels_last(self.device, dtype):
                for module in fused.modules():
                    if isinstance(module, nn.Conv2d):
                        module.weight.data = module.weight.data.contiguous(memory_format=torch.channels_last)
            self._copies[dtype] = for_inference(fused, self.device, dtype)
        return self._copies[dtype]


CPU_CHUNK = 128
"""Most positions one forward pass takes on a CPU: a larger call runs as equal parts of at most this.

Past a few hundred positions the activations leave the core's cache; 128 was the fastest part
inside self-play, where the search's own arrays share the cache (docs/performance.md)."""


def channels_last(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether inference in `dtype` on `device` runs in channels-last layout: bf16 on a CPU, oneDNN's
    native layout for its bf16 convolutions; fp32 on a CPU was slower with it (docs/performance.md)."""
    return device.type == "cpu" and dtype == torch.bfloat16


def make_evaluator(model: nn.Module, device: torch.device | str = "cpu", precision: str = "fp32") -> Evaluator:
    """Wrap `model` as an `Evaluator` for the search: batched, no grad, inference mode.

    Returns ``fn(obs [n, 24, 9, 7] float32, mask [n, 252] bool) ->
    (masked logits [n, 252] float32, value [n] float32 in [-1, 1])``, values
    from the side to move; NonFiniteOutputError when the network gives a NaN or infinite output (diverged
    weights never play garbage silently). The network runs as a batch-norm-fused copy in the
    dtype `inference_dtype` picks (`precision`: ``fp32``, ``bf16`` or ``auto``); the copy follows the model's weights as they are
    trained. Outputs are always float32.
    """
    dev = torch.device(device) if isinstance(device, str) else device
    inference_dtype(dev, precision, 1)  # reject an unknown precision now, not at the first call
    copies = _InferenceCopies(model, dev)
    chunk = CPU_CHUNK if dev.type == "cpu" else None

    def run(net: Callable[..., Any], dtype: torch.dtype, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = torch.from_numpy(np.ascontiguousarray(mask, dtype=np.bool_)).to(dev, non_blocking=True)
        if isinstance(net, FusedCPUForward):  # the stem from the planes' nonzero entries, no input copies
            logits, v = net.from_planes(obs)
        else:
            x = torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)).to(dev, non_blocking=True)
            x = x.to(dtype)  # then the layout: two copies, faster here than one that converts and reorders at once
            if channels_last(dev, dtype):
                x = x.contiguous(memory_format=torch.channels_last)
            logits, v = net(x)
        logits = mask_logits(logits.float(), m, inplace=True)  # the float copy (or the pass's own output)
        value = scalar_value(v.float())
        if not (torch.isfinite(value).all() and torch.isfinite(logits).all()):  # clamp would hide a NaN value
            raise NonFiniteOutputError(
                f"the network's outputs are not finite (NaN or infinity) for {len(obs)} positions: its weights "
                "have diverged or are damaged")
        return logits.cpu().numpy(), value.clamp(-1.0, 1.0).cpu().numpy()

    def evaluate(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(obs)
        if n == 0:
            return np.zeros((0, N_ACTIONS), np.float32), np.zeros(0, np.float32)
        dtype = inference_dtype(dev, precision, n)
        net = copies.get(dtype)
        with torch.inference_mode():
            if chunk is None or n <= chunk:
                return run(net, dtype, obs, mask)
            parts = -(-n // chunk)
            size = -(-n // parts)  # equal parts: 300 rows run as 150 + 150, not 256 + 44
            logits = np.empty((n, N_ACTIONS), np.float32)
            value = np.empty(n, np.float32)
            for start in range(0, n, size):
                logits[start:start + size], value[start:start + size] = run(
                    net, dtype, obs[start:start + size], mask[start:start + size])
            return logits, value

    return evaluate


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())

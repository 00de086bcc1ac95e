"""The network at inference time: fused copies that follow the trained weights, the CPU forward pass,
`make_evaluator`."""

from __future__ import annotations

import bisect
import copy
import operator
from typing import Any, Callable, Optional, Sequence, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from agents.alphazero.net.device import channels_last, cuda_defaults, inference_dtype, native_bf16
from agents.alphazero.net.network import JungleNet, ResidualBlock, mask_logits, pooled_bias, scalar_value
from agents.alphazero.net.packing import BINARY_PLANES, unpack_masks, unpack_observations
from agents.alphazero.net.planestem import PlaneStem
from agents.alphazero.search import Evaluator
from envs.encoding import N_ACTIONS, OBS_SHAPE


class NonFiniteOutputError(ValueError):
    """The network gave a NaN or infinite logit or value: its weights have diverged or are damaged, and a
    search on such outputs would play garbage."""


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
    oneDNN kernel with its ReLU, and a residual block's second one with the skip addition and ReLU too (a
    block's global pool, where it has one, adds its bias between the two).

    Eager PyTorch runs the ReLUs and additions as separate passes over the activations; fused, the
    forward pass saves them, as torch.compile does, without a compile per set of weights
    (docs/performance.md). The same function as the module to the dtype's rounding (tested).
    The fused ops are torch's own (`_conv_pointwise_ops`); `for_inference` falls back to the module
    where they are missing. `from_planes` takes the float32 observations themselves and builds the
    stem's output from their nonzero entries (`PlaneStem`): the evaluator's path, without the dense
    first convolution and the input copies."""

    def __init__(self, net: "JungleNet", ops: Any, small: Optional[nn.Module] = None) -> None:
        self.net = net
        self.small = small
        """The module that runs calls of fewer than `FUSED_FP32_MIN_BATCH` positions (None: the kernels run all)."""
        self.conv = ops._convolution_pointwise.default
        self.conv_add = ops._convolution_pointwise.binary
        # Every tensor the pass reads, looked up once: module attribute lookups are a measurable share of a call.
        self.stem_conv = self._weights(net.stem[0])
        blocks = cast(list[ResidualBlock], list(net.tower))
        self.blocks = [self._weights(block.conv1) + self._weights(block.conv2) for block in blocks]
        self.pools = [None if block.pool_fc is None else self._weights(block.pool_fc) for block in blocks]
        """Each block's global pool's linear layer (weight, bias) (`NetworkConfig.global_pool`), or None."""
        self.policy_conv = self._weights(net.policy_conv[0])
        self.value_conv = self._weights(net.value_conv[0])
        # The heads' first linear layers with their inputs in channels-last order, so a head's 1x1
        # convolution output (channels-last, as oneDNN writes it) feeds them without a copy.
        self.policy_fc = (
            self._channels_last_inputs(net.policy_fc.weight, net.config.policy_channels),
            net.policy_fc.bias,
        )
        value_fc1, value_fc2 = cast(nn.Linear, net.value_fc[0]), cast(nn.Linear, net.value_fc[2])
        self.value_fc1 = (self._channels_last_inputs(value_fc1.weight, 2), value_fc1.bias)
        self.value_fc2 = (value_fc2.weight, value_fc2.bias)
        self.wdl = net.config.value_head == "wdl"
        stem = cast(nn.Conv2d, net.stem[0])
        self.stem = PlaneStem(stem) if stem.weight.dtype == torch.bfloat16 else None
        """The bf16 stem from the planes' nonzero entries (`PlaneStem`); None in float32, whose stem is the
        dense fused convolution."""

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
        """Observations as a tensor [n, 32, 9, 7] in the copy's dtype (channels-last saves a copy) ->
        (logits [n, 252], value)."""
        if self.small is not None and len(x) < FUSED_FP32_MIN_BATCH:
            return cast(tuple[torch.Tensor, torch.Tensor], self.small(x))
        w, b = self.stem_conv
        if x.shape[1] != w.shape[1]:  # a network of the planes before the rule planes reads those only
            x = x[:, : w.shape[1]]
        x = x.contiguous(memory_format=torch.channels_last)
        return self._tower_and_heads(self.conv(x, w, b, _SAME, _ONE, _ONE, 1, "relu", [], ""))

    def from_planes(self, obs: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """`__call__` of float32 observations [n, 32, 9, 7] (a numpy array): in bf16 the stem from the
        planes' nonzero entries (`PlaneStem`), with no input copies; in float32 the planes as they are."""
        if self.stem is None:
            return self(torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)))
        return self._tower_and_heads(self.stem(obs))

    def _tower_and_heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        conv, conv_add = self.conv, self.conv_add
        for (w1, b1, w2, b2), pool in zip(self.blocks, self.pools):
            y = conv(x, w1, b1, _SAME, _ONE, _ONE, 1, "relu", [], "")
            if pool is not None:  # after the relu, as in `ResidualBlock.forward`
                y = y + pooled_bias(y, *pool)
            x = conv_add(y, x, w2, b2, _SAME, _ONE, _ONE, 1, "add", 1.0, "relu", [], "")
        w, b = self.policy_conv
        logits = F.linear(self._flat(conv(x, w, b, _NONE, _ONE, _ONE, 1, "relu", [], "")), *self.policy_fc)
        w, b = self.value_conv
        v = self._flat(conv(x, w, b, _NONE, _ONE, _ONE, 1, "relu", [], ""))
        v = F.linear(F.relu(F.linear(v, *self.value_fc1)), *self.value_fc2)
        if self.wdl:
            return logits, v
        return logits, torch.tanh(v.squeeze(-1))


FUSED_FP32_MIN_BATCH = 4
"""Fewest positions a float32 call runs through `FusedCPUForward`'s kernels; a smaller call runs the
module, which is faster there (bench/bench_network.py, the ``fast`` column; docs/performance.md)."""


def for_inference(
    fused: nn.Module, device: torch.device, dtype: torch.dtype, fast_fp32: bool = False
) -> Callable[..., Any]:
    """What runs a folded copy (`fuse_for_inference`) in `dtype` on `device`, a `JungleNet` on a CPU where
    torch has the fused ops: `FusedCPUForward` in bf16 where the CPU runs oneDNN's bf16 convolutions
    (`onednn_bf16`; the copy channels-last, `channels_last`), and with `fast_fp32` in float32 too (a
    channels-last copy of the weights for the kernels, the module itself for calls of fewer than
    `FUSED_FP32_MIN_BATCH` positions); else the module itself. The kernels compute the module's
    function to float rounding, but not bit for bit: float32 without `fast_fp32` is the reference."""
    if not isinstance(fused, JungleNet) or device.type != "cpu":
        return fused
    ops = _conv_pointwise_ops()
    if ops is None:
        return fused
    if dtype == torch.bfloat16 and onednn_bf16():
        return FusedCPUForward(fused, ops)
    if dtype == torch.float32 and fast_fp32:
        kernels = copy.deepcopy(fused)
        for module in kernels.modules():
            if isinstance(module, nn.Conv2d):
                module.weight.data = module.weight.data.contiguous(memory_format=torch.channels_last)
        return FusedCPUForward(kernels, ops, small=fused)
    return fused


def onednn_bf16() -> bool:
    """Whether this CPU runs oneDNN's bf16 convolutions, which need AVX-512 (BW, VL and DQ) or AVX-NE-CONVERT;
    on others oneDNN refuses them and bf16 runs the module's own, slower kernels. (AVX-NE-CONVERT alone
    is not asked for: such a CPU runs the module.)"""
    cpu = getattr(torch, "cpu", None)
    return bool(getattr(cpu, "_is_avx512_supported", lambda: False)()) or native_bf16(torch.device("cpu"))


_VERSION = operator.attrgetter("_version")


def _allow_graphs(count: int) -> None:
    """Let torch.compile keep at least `count` graphs of one function: its recompile limit (8 by default)
    counts the graphs of every module of a class together, and past it the calls run uncompiled."""
    import torch._dynamo

    config: Any = torch._dynamo.config
    config.recompile_limit = max(int(config.recompile_limit), count)


class _InferenceCopies:
    """Fused copies of a live model per dtype, made again whenever its weights change.

    Staleness is read from the parameters' and buffers' in-place version
    counters, which every optimizer step, running-statistics update and
    `load_state_dict` advances; so an evaluator built once keeps serving the
    network the learner is training. The tensors are listed once (listing
    them walks the module tree, a few percent of a self-play call): a
    parameter replaced by another tensor object is not seen, so build a new
    evaluator after such surgery.

    With `compile`, each dtype's copy is made once and run through `torch.compile`; new weights are
    folded into a fresh copy whose tensors are then copied into the compiled one's in place, so the
    compiled graphs (one a batch shape) stay valid and nothing compiles again.
    """

    def __init__(self, model: nn.Module, device: torch.device, compile: bool = False, fast_fp32: bool = False) -> None:
        self.model = model
        self.device = device
        self.compile = compile
        self.fast_fp32 = fast_fp32
        self._tensors = [*model.parameters(), *model.buffers()]
        self._key: tuple[int, ...] = ()
        self._copies: dict[torch.dtype, Callable[..., Any]] = {}
        self._modules: dict[torch.dtype, nn.Module] = {}
        """With `compile`: the module under each dtype's compiled copy, whose tensors take new weights."""

    def _version(self) -> tuple[int, ...]:
        return (*map(_VERSION, self._tensors), *map(torch.Tensor.data_ptr, self._tensors))

    def get(self, dtype: torch.dtype) -> Callable[..., Any]:
        """The forward pass of the current weights' fused copy in `dtype` (`for_inference`, or compiled)."""
        key = self._version()
        if key != self._key:
            self._key = key
            if self.compile:
                for held, module in self._modules.items():
                    module.load_state_dict(self._folded(held).state_dict())  # in place: keeps the tensors' layout
            else:
                self._copies.clear()
        if dtype not in self._copies:
            fused = self._folded(dtype)
            if self.compile:
                self._modules[dtype] = fused
                self._copies[dtype] = torch.compile(fused, dynamic=False)
            else:
                self._copies[dtype] = for_inference(fused, self.device, dtype, fast_fp32=self.fast_fp32)
        return self._copies[dtype]

    def _folded(self, dtype: torch.dtype) -> nn.Module:
        """A copy of the model's current weights in `dtype` on the device, batch norm folded (a `JungleNet`),
        its convolution weights channels-last where the device runs `dtype` so."""
        if isinstance(self.model, JungleNet):
            fused: nn.Module = fuse_for_inference(self.model)
        else:
            fused = copy.deepcopy(self.model).eval()
        fused = fused.to(self.device, dtype=dtype)
        if channels_last(self.device, dtype):
            for module in fused.modules():
                if isinstance(module, nn.Conv2d):
                    module.weight.data = module.weight.data.contiguous(memory_format=torch.channels_last)
        return fused


CPU_CHUNK = 128
"""Most positions one forward pass takes on a CPU: a larger call runs as equal parts of at most this.

Past a few hundred positions the activations leave the core's cache; 128 was the fastest part
inside self-play, where the search's own arrays share the cache (docs/performance.md)."""


CUDA_BUCKETS = (256, 512, 1024, 2048, 4096, 8192, 16384)
"""The batch sizes a compiled evaluator pads its calls up to on a GPU (`bucket_parts`): each is one
compiled graph, so torch.compile never compiles a new shape past these; a larger call runs in parts."""
CPU_BUCKETS = (16, 32, 64, 128)
"""`CUDA_BUCKETS` on a CPU, up to `CPU_CHUNK`."""


class BucketError(ValueError):
    """Bad batch buckets: they must be increasing positive integers."""


def check_buckets(buckets: Sequence[int]) -> tuple[int, ...]:
    """`buckets` as a tuple; BucketError unless they are one or more increasing positive integers."""
    sizes = tuple(buckets)
    if (
        not sizes
        or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in sizes)
        or list(sizes) != sorted(set(sizes))
    ):
        raise BucketError(f"batch buckets {list(sizes)!r} must be increasing positive integers")
    return sizes


def bucket_for(n: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds `n` rows (1 <= n <= the largest bucket)."""
    i = bisect.bisect_left(buckets, n)
    if n < 1 or i == len(buckets):
        raise BucketError(f"a batch of {n} rows has no bucket among {list(buckets)!r}")
    return buckets[i]


def bucket_parts(n: int, buckets: Sequence[int]) -> list[tuple[int, int]]:
    """`n` rows as consecutive parts (rows, padded rows): parts of the largest bucket while more than it
    is left, then the rest padded to its bucket (`bucket_for`). Each part is one network call of a
    bucket's shape, so the padding is less than the smallest bucket or the rest's own rows."""
    largest = buckets[-1]
    parts = [(largest, largest)] * ((n - 1) // largest) if n > 0 else []
    rest = n - largest * len(parts)
    return parts + ([(rest, bucket_for(rest, buckets))] if rest > 0 else [])


def unpack_on_device(bits: torch.Tensor, scalars: torch.Tensor) -> torch.Tensor:
    """Packed observations (`packing.pack_observations`: bits uint8 [n, 166], scalars float32 [n, 11]) on a
    device -> float32 [n, 32, 9, 7] on that device, the numbers of `packing.unpack_observations`."""
    n = bits.shape[0]
    out = torch.empty((n, *OBS_SHAPE), dtype=torch.float32, device=bits.device)
    out[:, :BINARY_PLANES] = _unpack_bits(bits, BINARY_PLANES * OBS_SHAPE[1] * OBS_SHAPE[2]).view(
        n, BINARY_PLANES, *OBS_SHAPE[1:]
    )
    out[:, BINARY_PLANES:] = scalars[:, :, None, None]
    return out


def unpack_masks_on_device(bits: torch.Tensor) -> torch.Tensor:
    """Packed legal masks (`packing.pack_masks`: uint8 [n, 32]) on a device -> bool [n, 252] there."""
    return _unpack_bits(bits, N_ACTIONS).bool()


def _unpack_bits(bits: torch.Tensor, count: int) -> torch.Tensor:
    """uint8 [n, k] -> uint8 0/1 [n, count], numpy's bit order (`np.unpackbits`: the high bit first)."""
    shifts = torch.arange(7, -1, -1, dtype=torch.uint8, device=bits.device)
    return ((bits.unsqueeze(-1) >> shifts) & 1).view(bits.shape[0], -1)[:, :count]


class _Evaluation:
    """The work of `make_evaluator` and `make_packed_evaluator`: a model's fused copies on a device, fed
    float32 planes or their packed form."""

    def __init__(
        self,
        model: nn.Module,
        device: torch.device | str,
        precision: str,
        compile: bool = False,
        buckets: Optional[Sequence[int]] = None,
    ) -> None:
        self.device = torch.device(device) if isinstance(device, str) else device
        self.precision = precision
        inference_dtype(self.device, precision, 1)  # reject an unknown precision now, not at the first call
        cuda_defaults(self.device)
        if buckets is None and compile:
            buckets = CPU_BUCKETS if self.device.type == "cpu" else CUDA_BUCKETS
        self.buckets = check_buckets(buckets) if buckets is not None else ()
        """The batch sizes each network call is padded up to (none: each call runs at its own size)."""
        if compile:
            _allow_graphs(2 * 2 * len(self.buckets))  # a graph a bucket, for two dtypes of two networks
        self.copies = _InferenceCopies(model, self.device, compile, fast_fp32=precision == "auto")
        self.chunk = CPU_CHUNK if self.device.type == "cpu" else None

    def planes(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(masked logits [n, 252], value [n]) of float32 observations [n, 32, 9, 7] and masks [n, 252]."""
        return self._chunks(self._planes, obs, mask)

    def packed(self, bits: np.ndarray, scalars: np.ndarray, mask_bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`planes` of packed observations (`packing.pack_observations`) and masks (`packing.pack_masks`): the
        packed arrays go to the device and are unpacked there (a few percent of the planes' bytes)."""
        return self._chunks(self._packed, bits, scalars, mask_bits)

    def _chunks(self, run: Callable[..., tuple[np.ndarray, np.ndarray]], *arrays: np.ndarray) -> Any:
        n = len(arrays[0])
        if n == 0:
            return np.zeros((0, N_ACTIONS), np.float32), np.zeros(0, np.float32)
        dtype = inference_dtype(self.device, self.precision, n)
        net = self.copies.get(dtype)
        if self.buckets:
            sizes = [rows for rows, _ in bucket_parts(n, self.buckets)]  # each padded to its bucket (`_forward`)
        elif self.chunk is None or n <= self.chunk:
            sizes = [n]
        else:
            parts = -(-n // self.chunk)
            size = -(-n // parts)  # equal parts: 300 rows run as 150 + 150, not 256 + 44
            sizes = [size] * (n // size) + ([n % size] if n % size else [])
        with torch.inference_mode():
            if len(sizes) == 1:
                return run(net, dtype, *arrays)
            logits = np.empty((n, N_ACTIONS), np.float32)
            value = np.empty(n, np.float32)
            start = 0
            for size in sizes:
                logits[start : start + size], value[start : start + size] = run(
                    net, dtype, *(a[start : start + size] for a in arrays)
                )
                start += size
            return logits, value

    def _to_device(self, a: np.ndarray, dtype: Any) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(a, dtype=dtype)).to(self.device, non_blocking=True)

    def _planes(
        self, net: Callable[..., Any], dtype: torch.dtype, obs: np.ndarray, mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        m = self._to_device(mask, np.bool_)
        if isinstance(net, FusedCPUForward) and not self.buckets:  # the stem from the planes' nonzero entries
            logits, v = net.from_planes(obs)
        else:
            logits, v = self._forward(net, dtype, self._to_device(obs, np.float32))
        return self._outputs(logits, v, m)

    def _packed(
        self, net: Callable[..., Any], dtype: torch.dtype, bits: np.ndarray, scalars: np.ndarray, mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(net, FusedCPUForward) and not self.buckets:  # it reads numpy planes: unpacked here
            return self._planes(net, dtype, unpack_observations(bits, scalars), unpack_masks(mask))
        x = unpack_on_device(self._to_device(bits, np.uint8), self._to_device(scalars, np.float32))
        logits, v = self._forward(net, dtype, x)
        return self._outputs(logits, v, unpack_masks_on_device(self._to_device(mask, np.uint8)))

    def _forward(
        self, net: Callable[..., Any], dtype: torch.dtype, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`net` of float32 observations `x` on the device, in `dtype` and its layout; with `buckets`, run
        on `x` padded with rows of zeros up to its bucket, those rows' outputs dropped."""
        n = len(x)
        x = x.to(dtype)  # then the layout: two copies, faster here than one that converts and reorders at once
        if self.buckets and bucket_for(n, self.buckets) > n:
            x = F.pad(x, (0, 0, 0, 0, 0, 0, 0, bucket_for(n, self.buckets) - n))
        if channels_last(self.device, dtype):
            x = x.contiguous(memory_format=torch.channels_last)
        logits, v = cast(tuple[torch.Tensor, torch.Tensor], net(x))
        return (logits[:n], v[:n]) if len(logits) > n else (logits, v)

    def _outputs(self, logits: torch.Tensor, v: torch.Tensor, m: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """The masked float32 logits and the value in [-1, 1] on the host; NonFiniteOutputError for a NaN or
        infinite output. Off the CPU the two come back in one copy and are checked there (one sync a call)."""
        logits = mask_logits(logits.float(), m, inplace=True)  # the float copy (or the pass's own output)
        value = scalar_value(v.float())
        if self.device.type == "cpu":
            finite = bool(torch.isfinite(value).all() and torch.isfinite(logits).all())  # clamp would hide a NaN
            host_logits, host_value = logits.numpy(), value.clamp(-1.0, 1.0).numpy()
        else:
            both = torch.cat([logits, value[:, None]], dim=1).cpu().numpy()
            host_logits, host_value = both[:, :N_ACTIONS], both[:, N_ACTIONS]
            finite = bool(np.isfinite(both).all())
            host_value = np.clip(host_value, -1.0, 1.0)
        if not finite:
            raise NonFiniteOutputError(
                f"the network's outputs are not finite (NaN or infinity) for {len(logits)} positions: its weights "
                "have diverged or are damaged"
            )
        return host_logits, host_value


def make_evaluator(
    model: nn.Module,
    device: torch.device | str = "cpu",
    precision: str = "fp32",
    *,
    compile: bool = False,
    buckets: Optional[Sequence[int]] = None,
) -> Evaluator:
    """Wrap `model` as an `Evaluator` for the search: batched, no grad, inference mode.

    Returns ``fn(obs [n, 32, 9, 7] float32, mask [n, 252] bool) ->
    (masked logits [n, 252] float32, value [n] float32 in [-1, 1])``, values
    from the side to move; NonFiniteOutputError when the network gives a NaN or infinite output (diverged
    weights never play garbage silently). The network runs as a batch-norm-fused copy in the
    dtype `inference_dtype` picks (`precision`: ``fp32``, ``bf16`` or ``auto``); the copy follows the model's
    weights as they are trained. Outputs are always float32. ``auto`` also runs float32 on a CPU through
    oneDNN's fused kernels (`for_inference`'s `fast_fp32`), the module's function to float rounding;
    ``fp32`` runs the module itself, the reference that fixed-seed games are recorded with.

    `compile`: the copy runs through `torch.compile`, each call padded up to one of `buckets` (by default
    `CUDA_BUCKETS`, or `CPU_BUCKETS` on a CPU) so that every call is one of a few compiled shapes, and new
    weights are copied into the compiled copy without compiling again. `buckets` without `compile`: the
    same padding, uncompiled (the same outputs as without it).
    """
    return _Evaluation(model, device, precision, compile, buckets).planes


PackedEvaluator = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``fn(bits uint8 [n, 166], scalars float32 [n, 11], mask bits uint8 [n, 32]) -> (logits [n, 252], value [n])``."""


def make_packed_evaluator(
    model: nn.Module,
    device: torch.device | str = "cpu",
    precision: str = "fp32",
    *,
    compile: bool = False,
    buckets: Optional[Sequence[int]] = None,
) -> PackedEvaluator:
    """`make_evaluator` fed packed observations (`packing.pack_observations`) and masks (`packing.pack_masks`),
    unpacked on `device`: the inference server's, whose batches would otherwise cross to the device as
    float32 planes. The same outputs as `make_evaluator` of the unpacked arrays, bit for bit (`compile` and
    `buckets` as there)."""
    return _Evaluation(model, device, precision, compile, buckets).packed

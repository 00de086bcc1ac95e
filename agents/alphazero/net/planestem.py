"""The network's first convolution for bf16 CPU inference, computed from the observation's few nonzero entries.

An observation (`envs.encoding`) is mostly zeros and constants: sixteen
one-hot piece planes, five terrain planes that are the same in every
position (the canonical frame maps the terrain onto itself), and eleven
planes that hold one value everywhere (the counters, the colour, the rule
set). A dense 3x3 convolution over its 32
planes costs 32 x 9 multiply-adds per output channel and square, about a
tenth of the ``small`` network's work, and the dense input needs two copies
first (float32 to bf16, then to channels-last). Here the same sum is built
from what the planes hold, in float32, by a numba kernel:

* the bias, plus the terrain planes' whole contribution (computed once from
  `TERRAIN_PLANES`) when a position's terrain planes are exactly those;
* a constant plane of value v adds v times the convolution of a plane of
  ones (computed once per plane: the zero padding at the board's edges
  included);
* any other plane adds, for each nonzero entry, the 3x3 kernel around its
  square (three rows of three taps, each row one contiguous run of the
  accumulator: the accumulator is the board with a one-square border).

Then ReLU and rounding to bf16 (to nearest even, as oneDNN rounds), written
channels-last: the layout the next convolution reads, with no copy. Inputs
are rounded to bf16 first and the weights are the bf16 copy's, so the sum is
the dense bf16 convolution's up to the order of float32 additions (tested).
It replaces the two input copies and the dense convolution, which cost more
(docs/performance.md); any plane content is handled (a plane that is neither
constant nor the terrain is summed entry by entry).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from numba import njit
from torch import nn

from envs.encoding import N_PLANES, OBS_SHAPE, TERRAIN_FIRST_PLANE, TERRAIN_PLANES

RANKS, FILES = OBS_SHAPE[1], OBS_SHAPE[2]
SQUARES = RANKS * FILES
PAD_FILES = FILES + 2
PAD_SQUARES = (RANKS + 2) * PAD_FILES
"""The accumulator's board: the 9x7 board with a one-square border, where the kernel's taps that fall
off the board land (and are dropped)."""


@njit(cache=True, inline="always")
def _bf16_bits(u: np.uint32) -> np.uint32:
    """The bf16 nearest (ties to even) the float32 whose bits are `u`, as its 16 bits."""
    return (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)


@njit(cache=True, inline="always")
def _round_bf16(x: np.ndarray, xu: np.ndarray, v: float) -> float:
    """v rounded to the nearest bf16, through the one-element float32 array `x` and its uint32 view `xu`."""
    x[0] = v
    xu[0] = _bf16_bits(xu[0]) << np.uint32(16)
    return x[0]


@njit(cache=True)
def stem_relu_bf16(
    obs: np.ndarray,
    rows: np.ndarray,
    init_static: np.ndarray,
    init_plain: np.ndarray,
    ones: np.ndarray,
    static_ref: np.ndarray,
    static_first: int,
    out: np.ndarray,
) -> None:
    """ReLU(conv3x3(obs) + bias) of every position, rounded to bf16 bits, channels-last.

    obs [n, >= P, 63] float32 (planes from P on are not read); rows [P, 3, 3C]: kernel row kr's taps of
    plane p in the order they meet a contiguous run of output squares (kf = 2, 1, 0); init_static /
    init_plain [PAD_SQUARES * C]: the bias with and without the static planes' contribution, bordered
    layout; ones [P, PAD_SQUARES * C]: each plane's contribution when it is all ones; static_ref [S, 63]:
    the static planes static_first .. static_first + S - 1 that init_static holds; out [n, 63 * C] uint16 (bf16 bits).
    """
    n, planes = obs.shape[0], rows.shape[0]  # a network of fewer planes reads the first ones
    span = rows.shape[2]
    length = init_plain.shape[0]
    c = length // PAD_SQUARES
    n_static = static_ref.shape[0]
    acc = np.empty(length, np.float32)
    accu = acc.view(np.uint32)
    scratch = np.empty(1, np.float32)
    scratch_u = scratch.view(np.uint32)
    for b in range(n):
        static = True
        for k in range(n_static):
            plane = obs[b, static_first + k]
            ref = static_ref[k]
            for s in range(SQUARES):
                if plane[s] != ref[s]:
                    static = False
        init = init_static if static else init_plain
        for i in range(length):
            acc[i] = init[i]
        for p in range(planes):
            if static and static_first <= p < static_first + n_static:
                continue
            plane = obs[b, p]
            v0 = plane[0]
            constant = True
            for s in range(1, SQUARES):
                if plane[s] != v0:
                    constant = False
                    break
            if constant:
                if v0 != 0.0:
                    v0 = _round_bf16(scratch, scratch_u, v0)
                    contribution = ones[p]
                    for i in range(length):
                        acc[i] += v0 * contribution[i]
                continue
            for s in range(SQUARES):
                v = plane[s]
                if v != 0.0:
                    v = _round_bf16(scratch, scratch_u, v)
                    r = s // FILES
                    f = s - FILES * r
                    for kr in range(3):
                        start = ((r + 2 - kr) * PAD_FILES + f) * c
                        run = acc[start : start + span]  # a slice, so the loop below vectorizes
                        taps = rows[p, kr]
                        for i in range(span):
                            run[i] += v * taps[i]
        for r in range(RANKS):
            src = accu[((r + 1) * PAD_FILES + 1) * c : ((r + 1) * PAD_FILES + 1 + FILES) * c]
            dst = out[b, r * FILES * c : (r + 1) * FILES * c]
            for i in range(FILES * c):
                u = src[i]
                q = _bf16_bits(u)
                if u >= np.uint32(0x80000000):  # negative (or -0.0): ReLU
                    q = np.uint32(0)
                dst[i] = np.uint16(q)


class PlaneStem:
    """The stem convolution `conv` (3x3, padding 1, with bias; a batch-norm-folded bf16 copy's) plus its
    ReLU, from float32 observations [n, 32, 9, 7] to a bf16 channels-last tensor [n, C, 9, 7]; a convolution
    of the first P < 32 planes (a network stored before the rule planes) reads those only."""

    def __init__(self, conv: nn.Conv2d) -> None:
        weight = conv.weight.detach().float().cpu()
        planes = weight.shape[1]
        if (
            not TERRAIN_FIRST_PLANE + len(TERRAIN_PLANES) <= planes <= N_PLANES
            or weight.shape[2:] != (3, 3)
            or conv.padding != (1, 1)
            or conv.bias is None
        ):
            raise ValueError(
                f"PlaneStem takes a 3x3 convolution of at most the {N_PLANES} planes with padding 1 and a bias"
            )
        c = weight.shape[0]
        self.channels = c
        rows = np.zeros((planes, 3, 3 * c), np.float32)
        for kr in range(3):
            for j, kf in enumerate((2, 1, 0)):
                rows[:, kr, j * c : (j + 1) * c] = weight[:, :, kr, kf].T.numpy()
        self.rows = rows
        bias = conv.bias.detach().float().cpu()[:, None, None].expand(c, RANKS, FILES)
        n_static = len(TERRAIN_PLANES)
        terrain = torch.zeros(1, planes, RANKS, FILES)
        terrain[0, TERRAIN_FIRST_PLANE : TERRAIN_FIRST_PLANE + n_static] = torch.from_numpy(TERRAIN_PLANES)
        with torch.no_grad():
            terrain_map = F.conv2d(terrain, weight, padding=1)[0]
            ones = F.conv2d(torch.eye(planes)[:, :, None, None].expand(planes, planes, RANKS, FILES), weight, padding=1)
        self.init_plain = self._bordered(bias)
        self.init_static = self._bordered(bias + terrain_map)
        self.ones = np.stack([self._bordered(m) for m in ones])
        self.static_ref = np.ascontiguousarray(TERRAIN_PLANES.reshape(n_static, SQUARES), np.float32)

    @staticmethod
    def _bordered(m: torch.Tensor) -> np.ndarray:
        """[C, 9, 7] -> the accumulator's layout, [(9 + 2) * (7 + 2) * C] float32 with a zero border."""
        c = m.shape[0]
        z = np.zeros((RANKS + 2, PAD_FILES, c), np.float32)
        z[1:-1, 1:-1] = m.permute(1, 2, 0).numpy()
        return z.reshape(-1)

    def __call__(self, obs: np.ndarray) -> torch.Tensor:
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        if obs.shape[1:] != OBS_SHAPE:
            raise ValueError(f"observations of shape {obs.shape} are not [n, {', '.join(map(str, OBS_SHAPE))}]")
        n = len(obs)
        out = np.empty((n, SQUARES * self.channels), np.uint16)
        stem_relu_bf16(
            obs.reshape(n, N_PLANES, SQUARES),
            self.rows,
            self.init_static,
            self.init_plain,
            self.ones,
            self.static_ref,
            TERRAIN_FIRST_PLANE,
            out,
        )
        x = torch.from_numpy(out).view(torch.bfloat16)
        return x.view(n, RANKS, FILES, self.channels).permute(0, 3, 1, 2)

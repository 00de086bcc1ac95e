"""Replay buffer: a numpy ring of self-play positions with mirror augmentation.

Each position holds the observation (side to move's frame), the legal mask,
the search policy target, the final outcome from the mover's view and
whether the policy target came from a full search (playout-cap
randomisation marks cheap searches, which train the value only), and which
of the 16 pieces (observation planes 0-15: the mover's, then the
opponent's) survive to the game's end, the survival head's target, and
whether the value target trains (positions of left-out draws kept for their
policy alone, `SelfPlayConfig.draw_policy`, do not).

Observations are stored compactly: planes 0-20 are 0/1 and packed to bits,
planes 21-31 (the counters, the colour and the rule set) are constant per
position (see `envs.encoding`) and stored as eleven floats; policies are
stored as float16. A position costs about 0.9 KB,
so a 100 000-position buffer is ~90 MB and fits in a checkpoint.

A replay state saved before survival targets existed loads with each
position's survival taken from its own observation (the pieces on the board
there): an over-estimate, since pieces captured later in the game count as
surviving, which the newer positions added after the resume soon outweigh.
One saved before the rule planes (three constant planes a position) loads
with the rule planes at 0, the default rules' values: the run it resumes
trains a network that reads planes 0-23 only (`envs.encoding.LEGACY_PLANES`).

Sampling mirrors each position left-right with probability 1/2 (a symmetry
of the rules): planes flip files, and the policy and mask are permuted by
`envs.encoding.MIRROR_ACTION` (an involution, so it is its own inverse); the
survival targets name pieces, not squares, and stay as they are.

A replay state saved before the value flag existed loads with every
position's value target in training, as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agents.alphazero.net.packing import (
    BINARY_PLANES,
    PACKED_OBS_BYTES,
    PIECE_PLANES,
    pack_observations,
    pieces_on_board,
    unpack_observations,
)
from envs.encoding import MIRROR_ACTION, N_ACTIONS, OBS_SHAPE

POSITION_BYTES = PACKED_OBS_BYTES + (OBS_SHAPE[0] - BINARY_PLANES) * 4 + N_ACTIONS * (1 + 2) + 4 + 1 + PIECE_PLANES + 1
"""Bytes one position takes in the buffer (its arrays are allocated whole when the buffer is made)."""


class ReplayError(ValueError):
    """Bad data offered to the buffer or a state dict that does not fit it."""


@dataclass
class Batch:
    """A training batch (numpy): obs [B,32,9,7] f32, mask [B,252] bool, policy [B,252] f32,
    value [B] f32 (outcome, mover's view), full_search [B] bool, survival [B,16] f32 (1: piece k of
    observation plane k is on the board at the game's end), trains_value [B] bool (False: the value
    target is not trained on)."""

    obs: np.ndarray
    mask: np.ndarray
    policy: np.ndarray
    value: np.ndarray
    full_search: np.ndarray
    survival: np.ndarray
    trains_value: np.ndarray

    def __len__(self) -> int:
        return len(self.value)


class ReplayBuffer:
    """Ring buffer of the last `capacity` positions.

    `add_count` counts every position ever added (the write head is
    ``add_count % capacity``); it survives a checkpoint even when contents
    are not saved.
    """

    def __init__(self, capacity: int, *, mirror: bool = True, seed: int | None = None) -> None:
        if capacity < 1:
            raise ReplayError(f"replay capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self.mirror = mirror
        self.rng = np.random.default_rng(seed)
        self.bits = np.zeros((capacity, PACKED_OBS_BYTES), np.uint8)
        self.scalars = np.zeros((capacity, OBS_SHAPE[0] - BINARY_PLANES), np.float32)
        self.mask = np.zeros((capacity, N_ACTIONS), np.bool_)
        self.policy = np.zeros((capacity, N_ACTIONS), np.float16)
        self.value = np.zeros(capacity, np.float32)
        self.full_search = np.zeros(capacity, np.bool_)
        self.survival = np.zeros((capacity, PIECE_PLANES), np.bool_)
        self.trains_value = np.zeros(capacity, np.bool_)
        self.add_count = 0

    def __len__(self) -> int:
        return min(self.add_count, self.capacity)

    def add(
        self,
        obs: np.ndarray,
        mask: np.ndarray,
        policy: np.ndarray,
        value: np.ndarray,
        full_search: np.ndarray | None = None,
        survival: np.ndarray | None = None,
        trains_value: np.ndarray | None = None,
    ) -> None:
        """Append n positions: obs [n,32,9,7], mask [n,252], policy [n,252], value [n], full_search [n]
        (default all True), survival [n,16] (nonzero: the piece survives the game; default the pieces on
        the board in `obs`), trains_value [n] (default all True). ReplayError, adding nothing, for a wrong
        shape or a non-finite entry."""
        n = len(obs)
        if full_search is None:
            full_search = np.ones(n, np.bool_)
        if trains_value is None:
            trains_value = np.ones(n, np.bool_)
        if obs.shape[1:] != OBS_SHAPE:
            raise ReplayError(f"observations must be [n, {', '.join(map(str, OBS_SHAPE))}], got {list(obs.shape)}")
        bits, scalars = pack_observations(obs)
        if survival is None:
            survival = pieces_on_board(bits)
        for name, arr, shape in (
            ("mask", mask, (n, N_ACTIONS)),
            ("policy", policy, (n, N_ACTIONS)),
            ("value", value, (n,)),
            ("full_search", full_search, (n,)),
            ("survival", survival, (n, PIECE_PLANES)),
            ("trains_value", trains_value, (n,)),
        ):
            if arr.shape != shape:
                raise ReplayError(f"replay {name} must have shape {list(shape)}, got {list(arr.shape)}")
        for name, arr in (("observations", obs), ("policy targets", policy), ("value targets", value)):
            if not np.isfinite(arr).all():
                raise ReplayError(
                    f"replay {name} hold NaN or infinity ({int((~np.isfinite(arr)).sum())} entries): "
                    "the search that made them saw a diverged network; nothing was added"
                )
        if n == 0:
            return
        if n > self.capacity:  # only the newest fit
            bits, scalars, mask, policy, value, full_search, survival, trains_value = (
                a[-self.capacity :] for a in (bits, scalars, mask, policy, value, full_search, survival, trains_value)
            )
            self.add_count += n - self.capacity
            n = self.capacity
        idx = (self.add_count + np.arange(n)) % self.capacity
        self.bits[idx] = bits
        self.scalars[idx] = scalars
        self.mask[idx] = mask
        self.policy[idx] = policy
        self.value[idx] = value
        self.full_search[idx] = full_search
        self.survival[idx] = survival != 0
        self.trains_value[idx] = trains_value
        self.add_count += n

    def get(self, idx: np.ndarray, mirror: np.ndarray | None = None) -> Batch:
        """Positions at `idx`, each mirrored where `mirror` [len(idx)] is True."""
        obs = unpack_observations(self.bits[idx], self.scalars[idx])
        mask = self.mask[idx].copy()
        policy = self.policy[idx].astype(np.float32)
        if mirror is not None and mirror.any():
            obs[mirror] = obs[mirror][..., ::-1]
            mask[mirror] = mask[mirror][:, MIRROR_ACTION]
            policy[mirror] = policy[mirror][:, MIRROR_ACTION]
        return Batch(
            obs,
            mask,
            policy,
            self.value[idx].copy(),
            self.full_search[idx].copy(),
            self.survival[idx].astype(np.float32),
            self.trains_value[idx].copy(),
        )

    def sample(self, batch_size: int) -> Batch:
        """A uniform random batch (with replacement), mirrored at random when enabled."""
        if len(self) == 0:
            raise ReplayError("cannot sample from an empty replay buffer")
        idx = self.rng.integers(0, len(self), size=batch_size)
        mirror = self.rng.random(batch_size) < 0.5 if self.mirror else None
        return self.get(idx, mirror)

    # -- checkpoints ---------------------------------------------------------
    def nbytes(self) -> int:
        return len(self) * POSITION_BYTES

    def state_dict(self, contents: bool = True) -> dict[str, Any]:
        """Plain tensors and ints (loads with weights_only=True).

        With ``contents=False`` only the position counters and the sampling
        generator are saved: a resumed run then refills an empty buffer.
        """
        n = len(self)
        state: dict[str, Any] = {
            "capacity": self.capacity,
            "add_count": self.add_count,
            "rng": self.rng.bit_generator.state,
            "has_contents": bool(contents),
        }
        if contents:
            state.update(
                bits=torch.from_numpy(self.bits[:n].copy()),
                scalars=torch.from_numpy(self.scalars[:n].copy()),
                mask=torch.from_numpy(self.mask[:n].copy()),
                policy=torch.from_numpy(self.policy[:n].copy()),
                value=torch.from_numpy(self.value[:n].copy()),
                full_search=torch.from_numpy(self.full_search[:n].copy()),
                survival=torch.from_numpy(self.survival[:n].copy()),
                trains_value=torch.from_numpy(self.trains_value[:n].copy()),
            )
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if int(state["capacity"]) != self.capacity:
            raise ReplayError(
                f"replay buffer capacity {self.capacity} differs from the checkpoint's {state['capacity']}"
            )
        self.rng.bit_generator.state = state["rng"]
        if state.get("has_contents"):
            self.add_count = int(state["add_count"])
            n = len(state["value"])
            if n != len(self):
                raise ReplayError(
                    f"replay state holds {n} positions but counts {self.add_count} added (capacity {self.capacity})"
                )
            for name in ("bits", "mask", "policy", "value", "full_search"):
                getattr(self, name)[:n] = state[name].numpy()
            scalars = state["scalars"].numpy()
            if scalars.ndim != 2 or not 0 < scalars.shape[1] <= self.scalars.shape[1]:
                raise ReplayError(
                    f"replay state's constant planes are {list(scalars.shape)}, not [{n}, {self.scalars.shape[1]}]"
                )
            self.scalars[:n] = 0.0  # saved before the rule planes: those at the default rules' 0 (module doc)
            self.scalars[:n, : scalars.shape[1]] = scalars
            if "survival" in state:
                self.survival[:n] = state["survival"].numpy()
            else:  # saved before survival targets: the pieces on the board at each position (module doc)
                self.survival[:n] = pieces_on_board(self.bits[:n])
            # saved before the value flag: every value target trained (module doc)
            self.trains_value[:n] = state["trains_value"].numpy() if "trains_value" in state else True
        else:
            self.add_count = 0  # contents were not saved: start empty, keep sampling the same way

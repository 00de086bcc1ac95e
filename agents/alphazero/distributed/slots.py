"""Shared memory between the self-play processes and the inference server: a slot per client, and the
client's evaluator that sends its leaves through it.

A client writes a leaf batch (obs and mask, packed to bits: `packing.pack_observations`,
`packing.pack_masks`) into its own `Slot` of the `LeafSlots` and sends its size on
its pipe; the server unpacks them on its device, writes the logits and values back
into the slot and answers with the size (or the text of an error).
"""

from __future__ import annotations

import contextlib
import os
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from typing import Any, NamedTuple, Optional

import numpy as np

from agents.alphazero.net.packing import (
    BINARY_PLANES,
    PACKED_MASK_BYTES,
    PACKED_OBS_BYTES,
    pack_masks,
    pack_observations,
)
from agents.alphazero.search import MCTSConfig, leaves_per_call
from envs.config import ConfigError
from envs.encoding import N_ACTIONS, OBS_SHAPE

IDLE = 0
"""What a client sends on its pipe instead of a batch size when its call is over (the server stops waiting
for it)."""
SCALAR_PLANES = OBS_SHAPE[0] - BINARY_PLANES


class SharedMemoryError(ConfigError):
    """The shared-memory filesystem has less room than the leaf slots need (names both and the fix)."""


class InferenceServiceError(RuntimeError):
    """The inference server failed (to start, or on a batch) or went away; raised where it is noticed."""


class Slot(NamedTuple):
    """One client's part of `LeafSlots`: at most `capacity` positions a request."""

    bits: np.ndarray
    """uint8 [capacity, 166], the observations' 0/1 planes (`packing.pack_observations`), written by the client."""
    scalars: np.ndarray
    """float32 [capacity, 11], the observations' constant planes, written by the client."""
    mask: np.ndarray
    """uint8 [capacity, 32], the legal masks as bits (`packing.pack_masks`), written by the client."""
    logits: np.ndarray
    """float32 [capacity, 252], written by the server."""
    value: np.ndarray
    """float32 [capacity], written by the server."""


MAX_SLOT_ROWS = 4096
"""Most positions a self-play process's slot holds (about 5 MB); a larger leaf batch goes in pieces."""


def slot_capacity(games: int, mcts: MCTSConfig) -> int:
    """Positions a slot holds for a self-play process playing `games` games at once under the search settings
    `mcts`: a search step of every game, at most `MAX_SLOT_ROWS` (but never fewer than one leaf a game)."""
    return min(games * leaves_per_call(mcts), max(games, MAX_SLOT_ROWS))


ROW_BYTES = 4 * N_ACTIONS + 4 + 4 * SCALAR_PLANES + PACKED_OBS_BYTES + PACKED_MASK_BYTES
"""Shared-memory bytes of one position of a slot: logits, value and the constant planes (float32), the
observation's and the mask's bits."""
SHM_DIR = "/dev/shm"
"""Where `SharedMemory` keeps its segments on Linux (a tmpfs; containers often get a small one)."""


def check_shared_memory(clients: int, capacity: int, path: str = SHM_DIR) -> None:
    """SharedMemoryError when the shared-memory filesystem at `path` has less free space than `clients` slots
    of `capacity` positions need: past its end a process dies with SIGBUS at its first write instead.
    Nothing is checked where `path` does not exist (a platform that keeps shared memory elsewhere)."""
    try:
        fs = os.statvfs(path)
    except (OSError, AttributeError):  # no such directory, or no statvfs on this platform
        return
    need, free = clients * capacity * ROW_BYTES, fs.f_bavail * fs.f_frsize
    if need > free:
        mb = 1024 * 1024
        raise SharedMemoryError(
            f"the inference server's leaf slots need {need / mb:.1f} MB of shared memory ({clients} self-play "
            f"workers x {capacity} positions) but {path} has {free / mb:.1f} MB free: give the machine a larger "
            f"{path} (a container's --shm-size, e.g. --shm-size={2 * need // mb + 1}m) or lower train.workers or "
            "train.selfplay.parallel"
        )


class LeafSlots:
    """Shared memory holding one `Slot` per client: made by the pool (``name=None``), attached by name in the
    server and the clients. The pool that made it unlinks it."""

    def __init__(self, clients: int, capacity: int, name: Optional[str] = None) -> None:
        if clients < 1 or capacity < 1:
            raise ValueError(f"leaf slots need clients ({clients}) and capacity ({capacity}) >= 1")
        self.clients, self.capacity = clients, capacity
        # Float arrays first, the bytes last: every float array starts 4-byte aligned.
        self.slot_bytes = capacity * ROW_BYTES
        self.shm = SharedMemory(name=name, create=name is None, size=clients * self.slot_bytes)
        self.name = self.shm.name
        if self.shm.size < clients * self.slot_bytes:
            self.shm.close()
            raise ValueError(
                f"shared memory {name!r} holds {self.shm.size} bytes, fewer than {clients} slots of "
                f"{capacity} positions need"
            )

    def slot(self, k: int) -> Slot:
        c, buf, at = self.capacity, self.shm.buf, k * self.slot_bytes

        def take(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
            nonlocal at
            a = np.ndarray(shape, dtype=dtype, buffer=buf, offset=at)
            at += a.nbytes
            return a

        logits = take((c, N_ACTIONS), np.float32)
        value = take((c,), np.float32)
        scalars = take((c, SCALAR_PLANES), np.float32)
        bits = take((c, PACKED_OBS_BYTES), np.uint8)
        mask = take((c, PACKED_MASK_BYTES), np.uint8)
        return Slot(bits=bits, scalars=scalars, mask=mask, logits=logits, value=value)

    def close(self) -> None:
        """Unmap (views from `slot` must be gone)."""
        with contextlib.suppress(BufferError):
            self.shm.close()

    def unlink(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.shm.unlink()


class ServedEvaluator:
    """The `Evaluator` of a self-play process: each leaf batch goes packed through its slot to the inference
    server.

    A batch larger than the slot goes in slot-sized pieces. The returned arrays are this call's own."""

    def __init__(self, slot: Slot, pipe: Connection) -> None:
        self.slot = slot
        self.pipe = pipe

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n, cap = len(obs), len(self.slot.value)
        logits, value = np.empty((n, N_ACTIONS), np.float32), np.empty(n, np.float32)
        for a in range(0, n, cap):
            k = min(n - a, cap)
            self.slot.bits[:k], self.slot.scalars[:k] = pack_observations(obs[a : a + k])
            self.slot.mask[:k] = pack_masks(mask[a : a + k])
            try:
                self.pipe.send(k)
                reply = self.pipe.recv()
            except (EOFError, OSError):
                raise InferenceServiceError("the inference server went away (its pipe is closed)") from None
            if isinstance(reply, str):
                raise InferenceServiceError(f"the inference server failed on a batch: {reply}")
            logits[a : a + k] = self.slot.logits[:k]
            value[a : a + k] = self.slot.value[:k]
        return logits, value

    def idle(self) -> None:
        """Tell the server this process's call is over (and wait until it has taken that in)."""
        with contextlib.suppress(OSError, EOFError):
            self.pipe.send(IDLE)
            self.pipe.recv()

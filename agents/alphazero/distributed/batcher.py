"""The inference server's core: the leaf batches of many clients joined into single network calls.

`LeafBatcher` takes each client's request from the client's own thread and
its device thread runs one evaluator call for the requests of every client
that is ready;
`InferenceServer` is the network on the server's device behind one. Both the
server process and the Ray server actor of `agents.alphazero.distributed.inference` hold one.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, Optional, Sequence

import numpy as np
import torch

from agents.alphazero.distributed.settings import InferenceSettings, WorkerSettings
from agents.alphazero.distributed.workers import load_weights
from agents.alphazero.net.network import build_network
from agents.alphazero.net.packing import unpack_masks
from agents.alphazero.net.runtime import make_packed_evaluator

BatchEvaluator = Callable[..., tuple[np.ndarray, np.ndarray]]
"""An evaluator of n positions given as arrays of n rows each (`search.Evaluator`, or
`runtime.PackedEvaluator`)."""


class _Request:
    __slots__ = ("arrays", "since", "result", "error", "done")

    def __init__(self, arrays: tuple[np.ndarray, ...]) -> None:
        self.arrays = arrays
        self.since = time.monotonic()
        self.result: Optional[tuple[np.ndarray, np.ndarray]] = None
        self.error: Optional[BaseException] = None
        self.done = threading.Event()
        """Set by the device thread when `result` or `error` is in: wakes this request's thread alone."""


def evaluate_together(
    evaluator: BatchEvaluator, requests: Sequence[tuple[np.ndarray, ...]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """One `evaluator` call for several requests, each the evaluator's arguments for n_i positions (obs
    [n_i, 32, 9, 7] and mask [n_i, 252], or their packed forms); each request's (logits [n_i, 252], value
    [n_i]) in order."""
    if len(requests) == 1:
        return [evaluator(*requests[0])]
    logits, value = evaluator(*(np.concatenate(parts) for parts in zip(*requests)))
    sizes = [len(r[0]) for r in requests]
    ends = np.cumsum(sizes)
    return [(logits[e - n : e], value[e - n : e]) for e, n in zip(ends, sizes)]


TAIL_SHARE = 0.1
"""The share of a period's last batches whose mean `tail_mean_batch` reports (how small an iteration's
batches get as its games end)."""


def tail_mean_batch(sizes: Sequence[int], share: float = TAIL_SHARE) -> float:
    """The mean of the last `share` of `sizes` (at least one; 0 for none): the batches of an iteration's end."""
    if not sizes:
        return 0.0
    tail = sizes[-max(1, round(len(sizes) * share)) :]
    return sum(tail) / len(tail)


class LeafBatcher:
    """Joins the leaf batches that clients submit from their own threads into single evaluator calls.

    A batch goes to the network once every active client has a request in
    it, or once its oldest request has waited `max_wait` seconds; a client is
    active from its first request until it `leave`s. The evaluator runs in
    one thread of the batcher's own, the only one that touches the device
    (one set of its library handles), one batch at a time; a request's thread
    sleeps on its own event until its rows are in, so an arrival wakes the
    device thread alone. `take_counts` says how large the batches were and
    how long their requests waited."""

    def __init__(self, evaluator: BatchEvaluator, max_wait: float) -> None:
        self.evaluator = evaluator
        self.max_wait = float(max_wait)
        self._cond = threading.Condition()
        """Guards the queue, the clients, the hold and the counts; the device thread waits on it."""
        self._queue: list[_Request] = []
        self._active: set[Hashable] = set()
        self._held = 0
        self._busy = False
        self._counts = self._zero()
        self._thread = threading.Thread(target=self._run, name="device", daemon=True)
        self._thread.start()

    @staticmethod
    def _zero() -> dict[str, Any]:
        return {"batches": 0, "positions": 0, "max_batch": 0, "wait": 0.0, "seconds": 0.0, "sizes": []}

    def evaluate(self, client: Hashable, *arrays: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`client`'s (logits [n, 252], value [n]) for its leaves: the evaluator's arguments for them (obs
        [n, 32, 9, 7] and mask [n, 252], or their packed forms)."""
        request = _Request(arrays)
        with self._cond:
            self._active.add(client)
            self._queue.append(request)
            self._cond.notify()  # the device thread, the only waiter
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def _next_batch(self) -> list[_Request]:
        """The next batch to run, once one may close (under the lock)."""
        while True:
            if self._queue and not self._held:
                left = self._queue[0].since + self.max_wait - time.monotonic()
                if len(self._queue) >= len(self._active) or left <= 0:
                    batch, self._queue, self._busy = self._queue, [], True
                    return batch
                self._cond.wait(left)
            else:
                self._cond.wait()

    def _run(self) -> None:
        """The device thread: batches, one at a time, until the process ends."""
        while True:
            with self._cond:
                batch = self._next_batch()
            started = time.monotonic()
            try:
                results: Optional[list[tuple[np.ndarray, np.ndarray]]] = evaluate_together(
                    self.evaluator, [r.arrays for r in batch]
                )
                error: Optional[BaseException] = None
            except Exception as e:  # every request of the batch gets the error
                results, error = None, e
            seconds = time.monotonic() - started
            positions = sum(len(r.arrays[0]) for r in batch)
            with self._cond:
                c = self._counts
                c["batches"] += 1
                c["positions"] += positions
                c["max_batch"] = max(c["max_batch"], positions)
                c["sizes"].append(positions)
                c["wait"] += started - batch[0].since
                c["seconds"] += seconds
                self._busy = False
                self._cond.notify_all()  # a `hold` waiting for this batch to end
            for i, r in enumerate(batch):
                r.result, r.error = (results[i] if results is not None else None), error
                r.done.set()

    def expect(self, clients: Iterable[Hashable]) -> None:
        """`clients` are about to send requests: batches wait for them (at most `max_wait`) from now on."""
        with self._cond:
            self._active.update(clients)

    def leave(self, client: Hashable) -> None:
        """`client` sends no more requests for now: batches stop waiting for it."""
        with self._cond:
            self._active.discard(client)
            self._cond.notify_all()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """No batch runs inside this block (e.g. while the weights change)."""
        with self._cond:
            self._held += 1
            while self._busy:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._held -= 1
                self._cond.notify_all()

    def take_counts(self) -> dict[str, float]:
        """Since the last call: the batches and positions evaluated, the mean and largest batch, the mean wait
        of a batch's oldest request before the batch ran and the mean time of a batch on the device (both in
        milliseconds), and the mean batch of the last `TAIL_SHARE` of the batches (`tail_mean_batch`: an
        iteration's end, where its games run out); the counts restart."""
        with self._cond:
            c, self._counts = self._counts, self._zero()
        batches = c["batches"]
        return {
            "batches": batches,
            "positions": c["positions"],
            "mean_batch": c["positions"] / batches if batches else 0.0,
            "max_batch": c["max_batch"],
            "mean_wait_ms": 1000 * c["wait"] / batches if batches else 0.0,
            "mean_batch_ms": 1000 * c["seconds"] / batches if batches else 0.0,
            "tail_mean_batch": tail_mean_batch(c["sizes"]),
        }


BATCH_MEANS = ("mean_wait_ms", "mean_batch_ms", "tail_mean_batch")
"""The counts that are means over a server's batches (`LeafBatcher.take_counts`)."""


def merge_counts(counts: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The counts of several servers over the same call (`LeafBatcher.take_counts` each) as one: sums, the
    largest batch, and the means weighted by each server's batches (the tail's too); empty if all are."""
    counts = [c for c in counts if c]
    if len(counts) <= 1:
        return dict(counts[0]) if counts else {}
    batches = sum(c["batches"] for c in counts)
    positions = sum(c["positions"] for c in counts)
    merged = {
        "batches": batches,
        "positions": positions,
        "mean_batch": positions / batches if batches else 0.0,
        "max_batch": max(c["max_batch"] for c in counts),
    }
    for name in BATCH_MEANS:
        merged[name] = sum(c[name] * c["batches"] for c in counts) / batches if batches else 0.0
    return merged


def free_packed_evaluator(
    bits: np.ndarray, scalars: np.ndarray, mask_bits: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A network that costs nothing, fed packed leaves like `make_packed_evaluator`'s: logits 0 on the legal
    actions and float32's minimum elsewhere [n, 252], value 0 [n] (`InferenceSettings.free_network`)."""
    logits = np.where(unpack_masks(mask_bits), np.float32(0.0), np.finfo(np.float32).min).astype(np.float32)
    return logits, np.zeros(len(bits), np.float32)


class InferenceServer:
    """The network on the server's device behind a `LeafBatcher` (the body of the server process and of the
    Ray actor), fed packed leaves (`packing.pack_observations`, `packing.pack_masks`) that it unpacks there."""

    def __init__(self, settings: WorkerSettings, server: InferenceSettings) -> None:
        if server.threads > 0 and torch.get_num_threads() != server.threads:
            torch.set_num_threads(server.threads)
        self.device = server.device
        self.model = build_network(settings.network).to(self.device).eval()
        evaluator: BatchEvaluator = (
            free_packed_evaluator
            if server.free_network
            else make_packed_evaluator(self.model, self.device, settings.precision, compile=server.compile)
        )
        self.batcher = LeafBatcher(evaluator, server.config.max_wait)

    def load_weights(self, model_state: Mapping[str, Any]) -> None:
        """Take the learner's weights (between calls, or with every batch held back)."""
        with self.batcher.hold():
            load_weights(self.model, model_state)

    def evaluate(
        self, client: int, bits: np.ndarray, scalars: np.ndarray, mask_bits: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """`client`'s (logits, value) of its packed leaves (`make_packed_evaluator`'s arguments)."""
        return self.batcher.evaluate(client, bits, scalars, mask_bits)

    def expect(self, clients: Iterable[int]) -> None:
        self.batcher.expect(clients)

    def leave(self, client: int) -> None:
        self.batcher.leave(client)

    def take_counts(self) -> dict[str, float]:
        return self.batcher.take_counts()

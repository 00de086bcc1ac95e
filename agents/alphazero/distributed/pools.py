"""The self-play pool of a backend: in this process, local processes, Ray actors, with or without an inference
server (see `agents.alphazero.distributed.workers` and `agents.alphazero.distributed.inference`)."""

from __future__ import annotations

import os
import time
from typing import Any, Mapping, Optional, Sequence

from agents.alphazero.distributed import workers as workers_module  # import_ray, looked up at each start
from agents.alphazero.distributed.batcher import InferenceServer
from agents.alphazero.distributed.inference import ServedPool, ServedSelfPlayActor, WorkerDiedError
from agents.alphazero.distributed.settings import BACKENDS, InferenceSettings, WorkerBackendError, WorkerSettings
from agents.alphazero.distributed.workers import (
    InProcessPool,
    ProcessPool,
    SelfPlayPool,
    SelfPlayWorker,
    portable_state,
    split_games,
)
from agents.alphazero.search import Evaluator
from agents.alphazero.selfplay.data import SelfPlayData, merge_selfplay
from envs.config import check_choice, check_range

LOCALHOST = "127.0.0.1"
"""The address a local Ray instance binds to: this machine alone."""


def start_ray(address: str, actors: int) -> tuple[Any, bool]:
    """The `ray` module, initialised (joining `address`, or a local instance bound to `LOCALHOST`, without its
    dashboard, with room for `actors` one-CPU actors) unless it already was, and whether this call
    initialised it (then the caller shuts it down)."""
    ray = workers_module.import_ray()
    if ray.is_initialized():
        return ray, False
    joins = bool(address or os.environ.get("RAY_ADDRESS"))
    # A local instance offers at least one CPU per actor: actors asking for more CPUs than exist would wait
    # forever. A cluster offers what it has, at the addresses it was started with.
    ray.init(
        address=address or None,
        include_dashboard=False,
        **({} if joins else {"num_cpus": max(actors, os.cpu_count() or 1), "_node_ip_address": LOCALHOST}),
    )
    return ray, True


class RayPool(SelfPlayPool):
    """`workers` Ray actors (one CPU each) playing a call's game ranges: each a `SelfPlayWorker` with a CPU copy
    of the network, the weights going to the object store once per call; or, with `inference`, a
    `ServedSelfPlayActor` whose leaves go to one threaded inference server actor (one GPU when its device is
    CUDA) that gets the weights instead. An actor that dies ends the call with `WorkerDiedError` naming it."""

    backend = "ray"

    def __init__(
        self, settings: WorkerSettings, workers: int, inference: Optional[InferenceSettings] = None, address: str = ""
    ) -> None:
        if workers < 1:
            raise ValueError(f"a Ray pool needs at least one self-play worker, got {workers}")
        self._ray, self._owns_ray = start_ray(address, workers + (inference is not None))
        ray = self._ray
        self.workers = workers
        self.server_counts: dict[str, float] = {}
        """The server's `LeafBatcher.take_counts` over the last call (empty without a server)."""
        self._server: Any = None
        self._actors: list[Any] = []
        try:
            if inference is None:
                actor = ray.remote(num_cpus=1)(SelfPlayWorker)
                self._actors = [actor.remote(settings) for _ in range(workers)]
            else:
                gpus = 1 if inference.device.type == "cuda" else 0
                # A thread per client's call, and one for the pool's own calls.
                server = ray.remote(num_cpus=1, num_gpus=gpus, max_concurrency=workers + 2)(InferenceServer)
                self._server = server.remote(settings, inference)
                actor = ray.remote(num_cpus=1)(ServedSelfPlayActor)
                self._actors = [actor.remote(settings, self._server, k) for k in range(workers)]
        except BaseException:
            self.close()
            raise

    def _get(self, ref: Any, who: str) -> Any:
        """`ray.get(ref)` of a call to the actor `who`; WorkerDiedError in one line when that actor died."""
        died = getattr(getattr(self._ray, "exceptions", None), "RayActorError", ())
        try:
            return self._ray.get(ref)
        except died as e:
            cause = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise WorkerDiedError(
                f"{who} (a Ray actor) died: {cause}; the self-play call is abandoned and every worker stopped"
            ) from None

    def play(
        self,
        model_state: Mapping[str, Any],
        *,
        seed: int,
        num_games: int,
        opponent_seeds: Optional[Sequence[int]] = None,
        progress: bool = False,
    ) -> SelfPlayData:
        if not self._actors:
            raise RuntimeError("this self-play pool is closed")
        t0 = time.perf_counter()
        weights = self._ray.put(portable_state(model_state))
        ranges = split_games(num_games, self.workers)
        seeds = list(opponent_seeds) if opponent_seeds is not None else None
        if self._server is not None:
            server = "the inference server"
            self._get(self._server.load_weights.remote(weights), server)
            self._get(self._server.take_counts.remote(), server)  # the counts restart with this call
            self._get(self._server.expect.remote(range(len(ranges))), server)
        held = () if self._server is not None else (weights,)  # a served actor holds no network
        refs = [
            actor.play.remote(*held, seed, first, count, seeds) for actor, (first, count) in zip(self._actors, ranges)
        ]
        parts = [self._get(ref, f"self-play worker {k}") for k, ref in enumerate(refs)]
        if self._server is not None:
            self.server_counts = self._get(self._server.take_counts.remote(), "the inference server")
        return merge_selfplay(parts, seconds=time.perf_counter() - t0)

    def close(self) -> None:
        for actor in [*self._actors, *([self._server] if self._server is not None else [])]:
            self._ray.kill(actor)
        self._actors, self._server = [], None
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns_ray = False


def make_selfplay_pool(
    backend: str,
    workers: int,
    settings: WorkerSettings,
    *,
    evaluator: Optional[Evaluator] = None,
    address: str = "",
    inference: Optional[InferenceSettings] = None,
    first_game: int = 0,
) -> SelfPlayPool:
    """A pool of `workers` self-play workers on `backend` (`BACKENDS`); ``workers=0`` or ``inprocess``
    plays in this process on `evaluator` (default: a CPU copy of the network).

    With `inference` the workers (``process`` or ``ray``, at least one) send their leaves to one inference
    server on ``inference.device`` instead of holding a network (`agents.alphazero.distributed.inference`).
    Checks the backend, the count and the settings (opponent specs included) before any worker starts;
    `address` is the Ray cluster to join (``""``: a local one). ``settings.selfplay.carry_over`` (games kept in
    play from call to call, numbered from `first_game`) is built for this process and the ``process`` backend
    (with or without a server), not for ``ray``."""
    check_choice({"backend": backend}, "self-play ", WorkerBackendError, backend=BACKENDS)
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise WorkerBackendError(f"self-play workers={workers!r} must be an integer")
    check_range({"workers": workers}, "self-play ", WorkerBackendError, workers=(0, None))
    settings.validate()
    if settings.selfplay.carry_over and backend == "ray" and workers > 0:
        raise WorkerBackendError(
            f"carry_over keeps the games in play in this process or local worker processes: it needs workers=0 or "
            f"the inprocess or process backend (got {workers} on 'ray'{' with a server' if inference else ''})"
        )
    if inference is not None and (backend == "inprocess" or workers == 0):
        raise WorkerBackendError(
            f"an inference server serves self-play worker processes or actors: it needs "
            f"workers >= 1 on the process or ray backend (got {workers} on {backend!r})"
        )
    if backend == "inprocess" or workers == 0:
        return InProcessPool(settings, evaluator, first_game)
    if backend == "ray":
        return RayPool(settings, workers, inference, address)
    if inference is not None:
        return ServedPool(settings, workers, inference, first_game)
    return ProcessPool(settings, workers, first_game)

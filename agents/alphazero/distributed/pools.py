"""The self-play pool of a backend: in this process, local processes, Ray actors, with or without an inference
server (see `agents.alphazero.distributed.workers` and `agents.alphazero.distributed.inference`)."""

from __future__ import annotations

from typing import Optional

from agents.alphazero.distributed.inference import RayServedPool, ServedPool
from agents.alphazero.distributed.settings import BACKENDS, InferenceSettings, WorkerBackendError, WorkerSettings
from agents.alphazero.distributed.workers import InProcessPool, ProcessPool, RayPool, SelfPlayPool
from agents.alphazero.search import Evaluator
from envs.config import check_choice, check_range


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
    if inference is not None:
        if backend == "inprocess" or workers == 0:
            raise WorkerBackendError(
                f"an inference server serves self-play worker processes or actors: it needs "
                f"workers >= 1 on the process or ray backend (got {workers} on {backend!r})"
            )
        if backend == "process":
            return ServedPool(settings, workers, inference, first_game)
        return RayServedPool(settings, workers, inference, address)
    if backend == "inprocess" or workers == 0:
        return InProcessPool(settings, evaluator, first_game)
    if backend == "process":
        return ProcessPool(settings, workers, first_game)
    return RayPool(settings, workers, address)

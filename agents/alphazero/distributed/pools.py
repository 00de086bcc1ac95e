"""The self-play pool of a backend: in this process, local processes, Ray actors, with or without an inference
server (see `agents.alphazero.distributed.workers` and `agents.alphazero.distributed.inference`)."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, Sequence

import torch

from agents.alphazero.distributed import workers as workers_module  # import_ray, looked up at each start
from agents.alphazero.distributed.batcher import InferenceServer, merge_counts
from agents.alphazero.distributed.inference import ServedPool, ServedSelfPlayActor, WorkerDiedError
from agents.alphazero.distributed.settings import (
    BACKENDS,
    InferenceSettings,
    WorkerBackendError,
    WorkerSettings,
    check_servers,
)
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


@dataclass(frozen=True)
class RayNode:
    """A live node of the Ray cluster as the pool places its actors: its id and whole CPUs and GPUs."""

    node_id: str
    cpus: int
    gpus: int


def cluster_nodes(ray: Any) -> list[RayNode]:
    """The cluster's live nodes with at least one CPU, in the order of their ids (the same on every call)."""
    nodes = [
        RayNode(n["NodeID"], int(n["Resources"].get("CPU", 0)), int(n["Resources"].get("GPU", 0)))
        for n in ray.nodes()
        if n.get("Alive")
    ]
    return sorted((n for n in nodes if n.cpus >= 1), key=lambda n: n.node_id)


def current_node() -> str:
    """The id of the Ray node this code runs on (inside an actor)."""
    return str(workers_module.import_ray().get_runtime_context().get_node_id())


@dataclass(frozen=True)
class Placement:
    """Where a Ray pool's actors live: the servers (node, and the device inside their actor), and each self-play
    worker's node and server (None: it holds its own CPU network)."""

    servers: tuple[tuple[str, str], ...]
    """(node id, device) of each inference server actor."""
    workers: tuple[tuple[str, Optional[int]], ...]
    """(node id, server index or None) of each self-play worker."""


def place(nodes: Sequence[RayNode], workers: int, inference: Optional[InferenceSettings]) -> Placement:
    """The self-play workers spread over `nodes` by the CPUs each has left after its servers (largest remainder,
    ties to the earlier node), each worker served on its own node: with `inference` on CUDA, by one server a
    GPU of that node (round robin), its CPU-only nodes playing on their own networks; on the CPU, by one CPU
    server a node. One actor a CPU, one server a CPU (and a GPU). WorkerBackendError when they do not fit."""
    if inference is None:
        servers_on = [0 for _ in nodes]
    elif inference.device.type == "cuda":
        servers_on = [n.gpus for n in nodes]
    else:
        servers_on = [1 for _ in nodes]
    room = [max(0, n.cpus - s) for n, s in zip(nodes, servers_on)]
    if sum(room) < workers:
        have = ", ".join(f"{n.cpus} CPU{'s' * (n.cpus != 1)}" for n in nodes) or "no live node with a CPU"
        raise WorkerBackendError(
            f"{workers} self-play actors do not fit the Ray cluster ({have}): each actor takes one CPU"
            + (" and each inference server one CPU on its node" if inference is not None else "")
        )
    total = sum(room)
    exact = [workers * r / total for r in room]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(nodes)), key=lambda k: (-(exact[k] - counts[k]), k))
    for k in by_remainder[: workers - sum(counts)]:
        counts[k] += 1
    servers: list[tuple[str, str]] = []
    placed: list[tuple[str, Optional[int]]] = []
    for node, n_servers, count in zip(nodes, servers_on, counts):
        if count == 0:
            continue
        first = len(servers)
        device = "cuda:0" if inference is not None and inference.device.type == "cuda" else "cpu"
        servers += [(node.node_id, device)] * n_servers  # Ray gives each GPU server actor its own GPU as cuda:0
        placed += [(node.node_id, first + k % n_servers if n_servers else None) for k in range(count)]
    return Placement(tuple(servers), tuple(placed))


class NodeInferenceServer(InferenceServer):
    """The inference server as a Ray actor, able to say which node it runs on."""

    def node(self) -> str:
        return current_node()


class NodeSelfPlayWorker(SelfPlayWorker):
    """A self-play worker holding its own CPU network, as a Ray actor able to say which node it runs on."""

    def node(self) -> str:
        return current_node()


class NodeServedActor(ServedSelfPlayActor):
    """A served self-play actor able to say which node it and its server run on."""

    def __init__(self, settings: WorkerSettings, server: Any, client: int) -> None:
        super().__init__(settings, server, client)
        self.server = server

    def node(self) -> str:
        return current_node()

    def server_node(self) -> str:
        return str(workers_module.import_ray().get(self.server.node.remote()))


class RayPool(SelfPlayPool):
    """`workers` Ray actors (one CPU each) playing a call's game ranges, placed by `place` over the cluster's
    nodes: each a `SelfPlayWorker` with a CPU copy of the network, the weights going to the object store once
    per call; or, with `inference`, served on its own node: its leaves go to a threaded inference server actor
    there (one a GPU of the node, or one CPU server a node), which gets the weights instead, so that no leaf
    crosses nodes. An actor that dies ends the call with `WorkerDiedError` naming it and its node."""

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
        """The servers' `LeafBatcher.take_counts` over the last call, merged (empty without a server)."""
        self._servers: list[Any] = []
        self._actors: list[Any] = []
        try:
            self.placement = place(cluster_nodes(ray), workers, inference)
            self._nodes = {node: k for k, node in enumerate(dict.fromkeys(n for n, _ in self.placement.workers))}
            self._clients: list[Optional[int]] = []
            """Each worker's client index at its server, counted per server (None: it holds its own network)."""
            taken: Counter[int] = Counter()
            for _, s in self.placement.workers:
                self._clients.append(None if s is None else taken[s])
                if s is not None:
                    taken[s] += 1
            for index, (node, device) in enumerate(self.placement.servers):
                server = ray.remote(
                    num_cpus=1,
                    num_gpus=int(device != "cpu"),
                    max_concurrency=taken[index] + 2,  # a thread a client's
                )(NodeInferenceServer)  # call and one for the pool's own calls
                assert inference is not None
                served = replace(inference, device=torch.device(device))
                self._servers.append(server.options(scheduling_strategy=on_node(ray, node)).remote(settings, served))
            for (node, s), client in zip(self.placement.workers, self._clients):
                where = on_node(ray, node)
                if s is None:
                    actor = ray.remote(num_cpus=1)(NodeSelfPlayWorker).options(scheduling_strategy=where)
                    self._actors.append(actor.remote(settings))
                else:
                    actor = ray.remote(num_cpus=1)(NodeServedActor).options(scheduling_strategy=where)
                    self._actors.append(actor.remote(settings, self._servers[s], client))
        except BaseException:
            self.close()
            raise

    def _who(self, k: int) -> str:
        return f"self-play worker {k} on node {self._nodes[self.placement.workers[k][0]]}"

    def _server_name(self, s: int) -> str:
        node, device = self.placement.servers[s]
        return f"inference server {s} ({device}) on node {self._nodes[node]}"

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

    def where(self) -> list[tuple[str, Optional[str]]]:
        """Asked of the actors themselves: each worker's node and its server's node (None: no server)."""
        nodes = [self._get(a.node.remote(), self._who(k)) for k, a in enumerate(self._actors)]
        return [
            (node, None if c is None else self._get(a.server_node.remote(), self._who(k)))
            for k, (node, a, c) in enumerate(zip(nodes, self._actors, self._clients))
        ]

    def play(
        self,
        model_state: Mapping[str, Any],
        *,
        seed: int,
        num_games: int,
        opponent_seeds: Optional[Sequence[int]] = None,
        progress: bool = False,
        root_uniform: Optional[float] = None,
    ) -> SelfPlayData:
        if not self._actors:
            raise RuntimeError("this self-play pool is closed")
        t0 = time.perf_counter()
        weights = self._ray.put(portable_state(model_state))
        ranges = split_games(num_games, self.workers)
        seeds = list(opponent_seeds) if opponent_seeds is not None else None
        for s, server in enumerate(self._servers):
            name = self._server_name(s)
            self._get(server.load_weights.remote(weights), name)
            self._get(server.take_counts.remote(), name)  # the counts restart with this call
            playing = [self._clients[k] for k in range(len(ranges)) if self.placement.workers[k][1] == s]
            self._get(server.expect.remote(playing), name)
        refs = [
            actor.play.remote(  # served: no network
                *(() if c is not None else (weights,)), seed, first, count, seeds, root_uniform=root_uniform
            )
            for actor, c, (first, count) in zip(self._actors, self._clients, ranges)
        ]
        parts = [self._get(ref, self._who(k)) for k, ref in enumerate(refs)]
        self.server_counts = merge_counts(
            [self._get(server.take_counts.remote(), self._server_name(s)) for s, server in enumerate(self._servers)]
        )
        return merge_selfplay(parts, seconds=time.perf_counter() - t0)

    def close(self) -> None:
        for actor in [*self._actors, *self._servers]:
            self._ray.kill(actor)
        self._actors, self._servers = [], []
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns_ray = False


def on_node(ray: Any, node_id: str) -> Any:
    """Ray's scheduling strategy that keeps an actor on the node `node_id` (it fails rather than move)."""
    return ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


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
    server on ``inference.device`` instead of holding a network (`agents.alphazero.distributed.inference`);
    on ``process``, to one server on each of ``inference.devices`` (no more than `workers`) when it names any.
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
    check_servers(len(inference.devices) if inference is not None else 0, workers, backend)
    if backend == "inprocess" or workers == 0:
        return InProcessPool(settings, evaluator, first_game)
    if backend == "ray":
        return RayPool(settings, workers, inference, address)
    if inference is not None:
        return ServedPool(settings, workers, inference, first_game)
    return ProcessPool(settings, workers, first_game)

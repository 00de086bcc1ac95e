"""The part of Ray's API the self-play pools use, run in this process (CI has no Ray).

Actors are objects here; each method call runs in a thread of its own (as Ray's threaded actors and
separate actors do), object refs are futures and ref arguments are resolved before the call. An actor
marked `dead` answers every call with `exceptions.RayActorError`, as Ray does for an actor whose process died.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace
from typing import Any, Callable, Optional

ACTOR_DIED = (
    "The actor died unexpectedly before finishing this task.\n"
    "\tclass_name: SelfPlayWorker\n"
    "\tactor_id: 4f2c\n"
    "The actor is dead because its worker process has died."
)
"""What Ray says of a dead actor: several lines."""


@dataclass(frozen=True)
class NodeAffinitySchedulingStrategy:
    node_id: str
    soft: bool


def node(node_id: str, cpus: int = 16, gpus: int = 0, alive: bool = True) -> dict[str, Any]:
    """A node as `ray.nodes()` describes it."""
    return {
        "NodeID": node_id,
        "Alive": alive,
        "Resources": {"CPU": float(cpus), **({"GPU": float(gpus)} if gpus else {})},
    }


class ThreadedRay:
    """`nodes`: the cluster's nodes (`node`), by default one with 16 CPUs; an actor placed with a
    `NodeAffinitySchedulingStrategy` runs "on" that node (`get_runtime_context().get_node_id()` in its calls),
    one placed without, on the first."""

    class exceptions:
        class RayActorError(Exception):
            pass

    util = SimpleNamespace(
        scheduling_strategies=SimpleNamespace(NodeAffinitySchedulingStrategy=NodeAffinitySchedulingStrategy)
    )

    def __init__(self, nodes: Optional[list[dict[str, Any]]] = None) -> None:
        self._nodes = nodes if nodes is not None else [node("node-0")]
        self._here = threading.local()
        self.placed: list[Optional[str]] = []
        """The node each actor was asked to live on (None: anywhere), in the order they were made."""
        self.initialized = False
        self.init_kwargs: dict[str, Any] = {}
        self.killed = 0
        self.puts = 0
        self.options: list[dict[str, Any]] = []
        self.actors: list[Any] = []
        """Every actor handle, in the order they were made."""
        self._threads = ThreadPoolExecutor(16)

    def nodes(self) -> list[dict[str, Any]]:
        return self._nodes

    def get_runtime_context(self) -> Any:
        here = getattr(self._here, "node", None) or self._nodes[0]["NodeID"]
        return SimpleNamespace(get_node_id=lambda: here)

    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, **kwargs: Any) -> None:
        self.initialized = True
        self.init_kwargs = kwargs

    def shutdown(self) -> None:
        self.initialized = False
        self._threads.shutdown()

    def put(self, value: Any) -> Future:
        self.puts += 1
        f: Future = Future()
        f.set_result(value)
        return f

    def get(self, ref: Any) -> Any:
        return [r.result() for r in ref] if isinstance(ref, list) else ref.result()

    def kill(self, actor: Any) -> None:
        self.killed += 1

    def remote(self, **options: Any) -> Callable[[type], Any]:
        fake = self
        self.options.append(options)

        class Handle:
            def __init__(self, obj: Any, node: Optional[str]) -> None:
                self._obj = obj
                self.node_id = node
                self.dead = False

            def __getattr__(self, method: str) -> Any:
                fn = getattr(self._obj, method)
                handle = self

                class Method:
                    @staticmethod
                    def remote(*args: Any, **kwargs: Any) -> Future:
                        if handle.dead:
                            f: Future = Future()
                            f.set_exception(fake.exceptions.RayActorError(ACTOR_DIED))
                            return f
                        args = tuple(a.result() if isinstance(a, Future) else a for a in args)
                        return fake._threads.submit(fake._on_node, handle.node_id, partial(fn, **kwargs), *args)

                return Method

        def wrap(cls: type) -> Any:
            class ActorClass:
                def __init__(self, node: Optional[str] = None) -> None:
                    self.node = node

                def options(self, scheduling_strategy: Any = None) -> "ActorClass":
                    return ActorClass(getattr(scheduling_strategy, "node_id", None))

                def remote(self, *args: Any) -> Handle:
                    fake.placed.append(self.node)
                    handle = Handle(fake._on_node(self.node, cls, *args), self.node)
                    fake.actors.append(handle)
                    return handle

            return ActorClass()

        return wrap

    def _on_node(self, node: Optional[str], fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` as if it ran on `node`."""
        self._here.node = node
        try:
            return fn(*args)
        finally:
            self._here.node = None

"""The part of Ray's API the self-play pools use, run in this process (CI has no Ray).

Actors are objects here; each method call runs in a thread of its own (as Ray's threaded actors and
separate actors do), object refs are futures and ref arguments are resolved before the call. An actor
marked `dead` answers every call with `exceptions.RayActorError`, as Ray does for an actor whose process died.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

ACTOR_DIED = (
    "The actor died unexpectedly before finishing this task.\n"
    "\tclass_name: SelfPlayWorker\n"
    "\tactor_id: 4f2c\n"
    "The actor is dead because its worker process has died."
)
"""What Ray says of a dead actor: several lines."""


class ThreadedRay:
    class exceptions:
        class RayActorError(Exception):
            pass

    def __init__(self) -> None:
        self.initialized = False
        self.init_kwargs: dict[str, Any] = {}
        self.killed = 0
        self.puts = 0
        self.options: list[dict[str, Any]] = []
        self.actors: list[Any] = []
        """Every actor handle, in the order they were made."""
        self._threads = ThreadPoolExecutor(16)

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
            def __init__(self, obj: Any) -> None:
                self._obj = obj
                self.dead = False

            def __getattr__(self, method: str) -> Any:
                fn = getattr(self._obj, method)
                handle = self

                class Method:
                    @staticmethod
                    def remote(*args: Any) -> Future:
                        if handle.dead:
                            f: Future = Future()
                            f.set_exception(fake.exceptions.RayActorError(ACTOR_DIED))
                            return f
                        args = tuple(a.result() if isinstance(a, Future) else a for a in args)
                        return fake._threads.submit(fn, *args)

                return Method

        def wrap(cls: type) -> Any:
            class ActorClass:
                @staticmethod
                def remote(*args: Any) -> Handle:
                    handle = Handle(cls(*args))
                    fake.actors.append(handle)
                    return handle

            return ActorClass

        return wrap

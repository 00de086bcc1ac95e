"""The inference service: self-play processes send their leaf batches to one process that owns the device.

    settings = WorkerSettings(network=net_cfg.to_dict(), mcts=asdict(mcts_cfg), rules=rules.to_dict(),
                              selfplay=SelfPlayConfig(parallel=128))
    server = InferenceSettings(device="cuda", precision="auto")
    with make_selfplay_pool("process", 15, settings, inference=server) as pool:
        data = pool.play(model.state_dict(), seed=7, num_games=1024)   # the games of one in-process call

Why: on a GPU machine one process running a thousand games cannot feed the
device, because the tree work is single-threaded. So W self-play processes
(numba trees, one a core) each play a contiguous range of a call's game
indices, as the workers of `agents.alphazero.workers` do, but hold no
network. Their evaluator (`ServedEvaluator`) writes each leaf batch into the
process's own slot of shared memory (`LeafSlots`: obs and mask in, logits and
value out) and rings the server through a pipe. The inference server (one
process, the only one that touches the device) answers each client from a
thread of its own and hands the batches to a `LeafBatcher`, which joins the
requests of every client that is ready, waiting at most `max_wait` seconds
for those still busy with their trees, into ONE network call, and scatters
the results back. The learner's weights go to the server once per call; the
self-play processes never see them.

Same games. Game ``k`` draws everything from its own seed, so the games are
those of one in-process call with the same seed, up to the last-bit rounding
of the network's kernels by batch size (the server's batches mix the leaves
of several processes); barring a near-tie that such a bit flips, the moves
are the same and the search policies and values agree to about 1e-6.

Liveness. The parent waits for its workers' results together with every
process's sentinel: a self-play process or the server that dies (killed, out
of memory) ends the call at once with `WorkerDiedError` naming it
(``self-play worker 3 (pid 4711) died: killed by SIGKILL``) and the pool stops
the others. A client whose server died reads end-of-file on its pipe instead
of waiting forever, and the server drops a dead client from the batches it
waits for. Every process ignores Ctrl-C and exits with its parent
(`agents.stopping`), even one killed with ``kill -9``.

Ray (`RayServedPool`, ``backend="ray"``): the server is a threaded Ray actor
(one GPU when its device is CUDA) holding the same `LeafBatcher`; the
self-play actors call it once per simulation step through the object store.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from multiprocessing.shared_memory import SharedMemory
from typing import Any, Hashable, Iterable, Iterator, Mapping, NamedTuple, Optional, Sequence

import numpy as np
import torch
from tqdm import tqdm

from envs.config import ConfigError, check_choice, check_range
from envs.encoding import N_ACTIONS, OBS_SHAPE
from envs.rules import RuleSet

from agents.alphazero.device import PRECISIONS, resolve_device
from agents.alphazero.network import NetworkConfig, build_network
from agents.alphazero.runtime import make_evaluator
from agents.alphazero.search import Evaluator, MCTSConfig, leaves_per_call
from agents.alphazero.selfplay_data import SelfPlayData, merge_selfplay
from agents.alphazero.workers import (
    SelfPlayPool,
    WorkerSettings,
    load_weights,
    play_range,
    portable_state,
    split_games,
    start_ray,
)
from agents.stopping import exit_with_parent, ignore_interrupts

IDLE = 0
"""What a client sends on its pipe instead of a batch size when its call is over (the server stops waiting
for it)."""
OBS_SIZE = int(np.prod(OBS_SHAPE))


class WorkerDiedError(RuntimeError):
    """A self-play worker or the inference server died during a call; the message names it and how it ended."""


class InferenceServiceError(RuntimeError):
    """The inference server failed (to start, or on a batch) or went away; raised where it is noticed."""


class InferenceSettingsError(ConfigError):
    """A bad inference-server setting (names it)."""


@dataclass(frozen=True)
class InferenceSettings:
    """Where and how the inference server evaluates (the self-play settings say what: `WorkerSettings`)."""

    device: str = "cpu"
    """The server's device: `cuda`, `cuda:1`, `cpu` or `auto` (CUDA when present)."""
    precision: str = "auto"
    """`fp32`, `bf16` or `auto` (bf16 on CUDA, and on CPUs with native bf16 for batches of 16 or more; see
    agents.alphazero.device.inference_dtype)."""
    max_wait: float = 0.002
    """Seconds a batch waits, after its first request, for clients still busy with their trees."""
    threads: int = 1
    """torch CPU threads of the server process (0: torch's default); they matter for a CPU server."""

    def __post_init__(self) -> None:
        if isinstance(self.threads, bool) or not isinstance(self.threads, int):
            raise InferenceSettingsError(f"inference.threads={self.threads!r} must be an integer")
        check_range(self, "inference", InferenceSettingsError, max_wait=(0, 10), threads=(0, None))
        check_choice(self, "inference", InferenceSettingsError, precision=PRECISIONS)
        try:
            resolve_device(self.device)
        except ValueError as e:
            raise InferenceSettingsError(f"inference device: {e}") from None


# --------------------------------------------------------------------------------------------
# Joining the clients' requests into one network call
# --------------------------------------------------------------------------------------------
class _Request:
    __slots__ = ("obs", "mask", "since", "result", "error", "done")

    def __init__(self, obs: np.ndarray, mask: np.ndarray) -> None:
        self.obs, self.mask = obs, mask
        self.since = time.monotonic()
        self.result: Optional[tuple[np.ndarray, np.ndarray]] = None
        self.error: Optional[BaseException] = None
        self.done = False


def evaluate_together(evaluator: Evaluator, requests: Sequence[tuple[np.ndarray, np.ndarray]]
                      ) -> list[tuple[np.ndarray, np.ndarray]]:
    """One `evaluator` call for several (obs [n_i, 24, 9, 7], mask [n_i, 252]) requests; each request's
    (logits [n_i, 252], value [n_i]) in order."""
    if len(requests) == 1:
        return [evaluator(*requests[0])]
    logits, value = evaluator(np.concatenate([o for o, _ in requests]), np.concatenate([m for _, m in requests]))
    ends = np.cumsum([len(o) for o, _ in requests])
    return [(logits[e - len(o):e], value[e - len(o):e]) for e, (o, _) in zip(ends, requests)]


class LeafBatcher:
    """Joins the leaf batches that clients submit from their own threads into single evaluator calls.

    A batch goes to the network once every active client has a request in
    it, or once its oldest request has waited `max_wait` seconds; a client is
    active from its first request until it `leave`s. The evaluator runs
    outside the lock, in the thread of the request that closed the batch, one
    batch at a time; the other requests of the batch wait for their rows."""

    def __init__(self, evaluator: Evaluator, max_wait: float) -> None:
        self.evaluator = evaluator
        self.max_wait = float(max_wait)
        self.batches = 0
        """Evaluator calls made (since the last `take_counts`)."""
        self.positions = 0
        """Positions evaluated (since the last `take_counts`)."""
        self._cond = threading.Condition()
        self._queue: list[_Request] = []
        self._active: set[Hashable] = set()
        self._busy = False

    def evaluate(self, client: Hashable, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`client`'s (logits [n, 252], value [n]) for its leaves (obs [n, 24, 9, 7], mask [n, 252])."""
        request = _Request(obs, mask)
        with self._cond:
            self._active.add(client)
            self._queue.append(request)
            self._cond.notify_all()
            while not request.done:
                # Not done and no batch running: the request is still queued, so this thread may close a batch.
                if not self._busy:
                    left = self._queue[0].since + self.max_wait - time.monotonic()
                    if len(self._queue) >= len(self._active) or left <= 0:
                        batch, self._queue, self._busy = self._queue, [], True
                        break
                    self._cond.wait(left)
                else:
                    self._cond.wait()
            else:
                return self._outcome(request)
        try:
            results: Optional[list[tuple[np.ndarray, np.ndarray]]] = evaluate_together(
                self.evaluator, [(r.obs, r.mask) for r in batch])
            error: Optional[BaseException] = None
        except Exception as e:  # every request of the batch gets the error
            results, error = None, e
        with self._cond:
            for i, r in enumerate(batch):
                r.result, r.error, r.done = (results[i] if results is not None else None), error, True
            self.batches += 1
            self.positions += sum(len(r.obs) for r in batch)
            self._busy = False
            self._cond.notify_all()
        return self._outcome(request)

    @staticmethod
    def _outcome(request: _Request) -> tuple[np.ndarray, np.ndarray]:
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

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
            while self._busy:
                self._cond.wait()
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def take_counts(self) -> dict[str, float]:
        """Batches and positions evaluated since the last call, and the mean batch; the counts restart."""
        with self._cond:
            batches, positions, self.batches, self.positions = self.batches, self.positions, 0, 0
        return {"batches": batches, "positions": positions, "mean_batch": positions / batches if batches else 0.0}


class InferenceServer:
    """The network on the server's device behind a `LeafBatcher` (the body of the server process and of the
    Ray actor)."""

    def __init__(self, settings: WorkerSettings, server: InferenceSettings) -> None:
        if server.threads > 0 and torch.get_num_threads() != server.threads:
            torch.set_num_threads(server.threads)
        self.device = resolve_device(server.device)
        self.model = build_network(NetworkConfig.from_dict(settings.network)).to(self.device).eval()
        self.batcher = LeafBatcher(make_evaluator(self.model, self.device, server.precision), server.max_wait)

    def load_weights(self, model_state: Mapping[str, Any]) -> None:
        """Take the learner's weights (between calls, or with every batch held back)."""
        with self.batcher.hold():
            load_weights(self.model, model_state)

    def evaluate(self, client: int, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.batcher.evaluate(client, obs, mask)

    def expect(self, clients: Iterable[int]) -> None:
        self.batcher.expect(clients)

    def leave(self, client: int) -> None:
        self.batcher.leave(client)

    def take_counts(self) -> dict[str, float]:
        return self.batcher.take_counts()


# --------------------------------------------------------------------------------------------
# Shared memory and the two ends of a client's pipe
# --------------------------------------------------------------------------------------------
class Slot(NamedTuple):
    """One client's part of `LeafSlots`: at most `capacity` positions a request."""

    obs: np.ndarray
    """float32 [capacity, 24, 9, 7], written by the client."""
    mask: np.ndarray
    """bool [capacity, 252], written by the client."""
    logits: np.ndarray
    """float32 [capacity, 252], written by the server."""
    value: np.ndarray
    """float32 [capacity], written by the server."""


MAX_SLOT_ROWS = 4096
"""Most positions a self-play process's slot holds (about 27 MB); a larger leaf batch goes in pieces."""


def leaves_per_game(mcts: Mapping[str, Any]) -> int:
    """Most leaves one game's search sends in one evaluator call under the search settings `mcts`
    (`search.leaves_per_call`)."""
    return leaves_per_call(MCTSConfig.from_dict(mcts))


class LeafSlots:
    """Shared memory holding one `Slot` per client: made by the pool (``name=None``), attached by name in the
    server and the clients. The pool that made it unlinks it."""

    def __init__(self, clients: int, capacity: int, name: Optional[str] = None) -> None:
        if clients < 1 or capacity < 1:
            raise ValueError(f"leaf slots need clients ({clients}) and capacity ({capacity}) >= 1")
        self.clients, self.capacity = clients, capacity
        # Float arrays first, the bool mask last: every float array starts 4-byte aligned.
        self.slot_bytes = capacity * (4 * OBS_SIZE + 4 * N_ACTIONS + 4 + N_ACTIONS)
        self.shm = SharedMemory(name=name, create=name is None, size=clients * self.slot_bytes)
        self.name = self.shm.name
        if self.shm.size < clients * self.slot_bytes:
            self.shm.close()
            raise ValueError(f"shared memory {name!r} holds {self.shm.size} bytes, fewer than {clients} slots of "
                             f"{capacity} positions need")

    def slot(self, k: int) -> Slot:
        c, buf, at = self.capacity, self.shm.buf, k * self.slot_bytes

        def take(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
            nonlocal at
            a = np.ndarray(shape, dtype=dtype, buffer=buf, offset=at)
            at += a.nbytes
            return a

        obs = take((c,) + OBS_SHAPE, np.float32)
        logits = take((c, N_ACTIONS), np.float32)
        value = take((c,), np.float32)
        return Slot(obs=obs, mask=take((c, N_ACTIONS), np.bool_), logits=logits, value=value)

    def close(self) -> None:
        """Unmap (views from `slot` must be gone)."""
        with contextlib.suppress(BufferError):
            self.shm.close()

    def unlink(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.shm.unlink()


class ServedEvaluator:
    """The `Evaluator` of a self-play process: each leaf batch goes through its slot to the inference server.

    A batch larger than the slot goes in slot-sized pieces. The returned arrays are this call's own."""

    def __init__(self, slot: Slot, pipe: Connection) -> None:
        self.slot = slot
        self.pipe = pipe

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n, cap = len(obs), len(self.slot.value)
        logits, value = np.empty((n, N_ACTIONS), np.float32), np.empty(n, np.float32)
        for a in range(0, n, cap):
            k = min(n - a, cap)
            self.slot.obs[:k] = obs[a:a + k]
            self.slot.mask[:k] = mask[a:a + k]
            try:
                self.pipe.send(k)
                reply = self.pipe.recv()
            except (EOFError, OSError):
                raise InferenceServiceError("the inference server went away (its pipe is closed)") from None
            if isinstance(reply, str):
                raise InferenceServiceError(f"the inference server failed on a batch: {reply}")
            logits[a:a + k] = self.slot.logits[:k]
            value[a:a + k] = self.slot.value[:k]
        return logits, value

    def idle(self) -> None:
        """Tell the server this process's call is over (and wait until it has taken that in)."""
        with contextlib.suppress(OSError, EOFError):
            self.pipe.send(IDLE)
            self.pipe.recv()


# --------------------------------------------------------------------------------------------
# The processes: the server and the self-play clients
# --------------------------------------------------------------------------------------------
def _answer(k: int, pipe: Connection, server: InferenceServer, slots: list[LeafSlots]) -> None:
    """The server's thread for client `k`: each batch size received is a request in its slot of `slots[0]`."""
    while True:
        try:
            n = pipe.recv()
        except (EOFError, OSError):  # the client is gone
            server.leave(k)
            return
        if n == IDLE:  # answered too: the client then knows this came before the next call's `expect`
            server.leave(k)
            reply: Any = IDLE
        else:
            reply = _evaluate_slot(server, k, slots[0].slot(k), n)
        try:
            pipe.send(reply)
        except OSError:
            server.leave(k)
            return


def _evaluate_slot(server: InferenceServer, k: int, slot: Slot, n: int) -> Any:
    """Evaluate the first `n` leaves of client `k`'s slot into it: `n`, or the text of the error."""
    try:
        logits, value = server.evaluate(k, slot.obs[:n], slot.mask[:n])
        slot.logits[:n] = logits
        slot.value[:n] = value
        return n
    except Exception as e:
        return f"{type(e).__name__}: {e}"


def _serve(settings: WorkerSettings, inference: InferenceSettings, control: Connection, pipes: list[Connection],
           parent_pid: int) -> None:
    """The server process: answers its clients' pipes from threads. On `control` the pool sends (weights or
    None, the slots' name, their capacity, the clients about to play) before and after each call and gets
    the batch counts since the last message back; None ends it."""
    ignore_interrupts()
    exit_with_parent(parent_pid)
    try:
        server = InferenceServer(settings, inference)
    except Exception:
        control.send(("error", traceback.format_exc()))
        return
    slots: list[LeafSlots] = []  # the current shared memory (a list: the threads see a replacement)
    threads: list[threading.Thread] = []
    while True:
        try:
            message = control.recv()
        except EOFError:  # the pool is gone
            return
        if message is None:
            return
        weights, name, capacity, clients = message
        try:
            if weights is not None:
                server.load_weights(weights)
            if not slots or slots[0].name != name:
                with server.batcher.hold():  # no request is in flight between calls; this makes sure
                    old = slots[:]
                    slots[:] = [LeafSlots(len(pipes), capacity, name=name)]
                    for s in old:
                        s.close()
            if not threads:
                threads = [threading.Thread(target=_answer, args=(k, pipe, server, slots), name=f"client-{k}",
                                            daemon=True) for k, pipe in enumerate(pipes)]
                for t in threads:
                    t.start()
            counts = server.take_counts()
            server.expect(clients)
            control.send(("ready", counts))
        except Exception:
            control.send(("error", traceback.format_exc()))


def _play_served(index: int, settings: WorkerSettings, pipe: Connection, commands: Connection,
                 parent_pid: int) -> None:
    """A self-play process: plays the game ranges sent on `commands` (None ends it), its leaves evaluated by
    the server through its slot and `pipe`; each result or exception goes back on `commands`."""
    ignore_interrupts()
    exit_with_parent(parent_pid)
    if settings.threads > 0 and torch.get_num_threads() != settings.threads:
        torch.set_num_threads(settings.threads)  # the opponents' networks, if any
    rules, mcts = RuleSet.from_dict(settings.rules), MCTSConfig.from_dict(settings.mcts)
    slots: Optional[LeafSlots] = None
    while True:
        try:
            call = commands.recv()
        except EOFError:
            return
        if call is None:
            return
        name, capacity, kwargs = call
        if slots is None or slots.name != name:
            evaluator = None
            if slots is not None:
                slots.close()
            slots = LeafSlots(index + 1, capacity, name=name)  # attaches; slots 0 .. index are all it must hold
            evaluator = ServedEvaluator(slots.slot(index), pipe)
        assert evaluator is not None
        try:
            reply: tuple[Any, ...] = ("done", play_range(evaluator, settings, mcts, rules, **kwargs))
        except Exception as e:
            reply = ("error", e, traceback.format_exc())
        finally:
            evaluator.idle()
        try:
            commands.send(reply)
        except Exception as e:  # an exception that does not pickle
            commands.send(("error", RuntimeError(repr(reply[1])), f"{type(e).__name__}: {e}"))


def how_it_ended(process: BaseProcess) -> str:
    """``killed by SIGKILL``, ``exit code 1``, or ``still running``."""
    code = process.exitcode
    if code is None:
        return "still running"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit code {code}"


class ServedPool(SelfPlayPool):
    """`workers` self-play processes without a network and one inference server process, all ``spawn``ed."""

    backend = "process"

    def __init__(self, settings: WorkerSettings, workers: int, inference: InferenceSettings) -> None:
        if workers < 1:
            raise ValueError(f"an inference server needs at least one self-play worker, got {workers}")
        self.settings, self.workers, self.inference = settings, workers, inference
        self.server_counts: dict[str, float] = {}
        """The server's `LeafBatcher.take_counts` over the last call (batches, positions, mean_batch)."""
        self._slots: Optional[LeafSlots] = None
        self._broken = False
        ctx = multiprocessing.get_context("spawn")
        parent = os.getpid()
        self._control, control = ctx.Pipe()
        pipes = [ctx.Pipe() for _ in range(workers)]  # (the client's end, the server's end)
        self._server = ctx.Process(target=_serve, name="inference-server", daemon=True,
                                   args=(settings, inference, control, [s for _, s in pipes], parent))
        self._clients: list[BaseProcess] = []
        self._commands: list[Connection] = []
        try:
            self._server.start()
            # Only the other end's process may hold each end, so that a death reads as end-of-file there.
            control.close()
            for _, s in pipes:
                s.close()
            for k, (c, _) in enumerate(pipes):
                here, there = ctx.Pipe()
                process = ctx.Process(target=_play_served, name=f"selfplay-{k}", daemon=True,
                                      args=(k, settings, c, there, parent))
                process.start()
                there.close()
                c.close()
                self._clients.append(process)
                self._commands.append(here)
        except BaseException:
            self._broken = True
            self.close()
            raise

    @property
    def pids(self) -> dict[str, Optional[int]]:
        """The processes by name: ``inference-server``, ``selfplay-0`` ..."""
        return {p.name: p.pid for p in [self._server, *self._clients]}

    def _named(self, process: BaseProcess) -> str:
        if process is self._server:
            return f"the inference server (pid {process.pid})"
        return f"self-play worker {self._clients.index(process)} (pid {process.pid})"

    def _receive(self, pipes: Sequence[Connection]) -> Iterator[tuple[int, Any]]:
        """``(i, message)`` from each of `pipes` as they come; WorkerDiedError as soon as any process dies."""
        processes = {p.sentinel: p for p in [self._server, *self._clients]}
        waiting = {pipe: i for i, pipe in enumerate(pipes)}
        while waiting:
            ready = wait([*waiting, *processes])
            for pipe in ready:  # messages first: a process may have said why before it ended
                if not isinstance(pipe, Connection):
                    continue
                i = waiting.pop(pipe)
                try:
                    message = pipe.recv()
                except EOFError:  # its process is ending: a wait names it
                    waiting[pipe] = i
                    time.sleep(0.05)
                    continue
                yield i, message
            for process in (processes[r] for r in ready if isinstance(r, int)):
                raise self._death(process)

    def _death(self, process: BaseProcess) -> WorkerDiedError:
        process.join(1.0)  # its sentinel closes a moment before its exit status is there
        return WorkerDiedError(f"{self._named(process)} died: {how_it_ended(process)}; the self-play call is "
                               "abandoned and every worker stopped")

    def play(self, model_state: Mapping[str, Any], *, seed: int, num_games: int,
             opponent_seeds: Optional[Sequence[int]] = None, progress: bool = False) -> SelfPlayData:
        if self._broken or not self._clients:
            raise RuntimeError("this self-play pool is closed (or stopped by an error)")
        t0 = time.perf_counter()
        ranges = split_games(num_games, self.workers)
        try:
            games = min(self.settings.selfplay.parallel, max(count for _, count in ranges))
            capacity = min(games * leaves_per_game(self.settings.mcts), max(games, MAX_SLOT_ROWS))
            old = None
            if self._slots is None or capacity > self._slots.capacity:  # made to measure, kept while big enough
                old, self._slots = self._slots, LeafSlots(self.workers, capacity)
            slots = self._slots
            self._control.send((portable_state(model_state), slots.name, slots.capacity, range(len(ranges))))
            for _, (status, *detail) in self._receive([self._control]):
                if status == "error":
                    raise InferenceServiceError(f"the inference server (pid {self._server.pid}) failed:\n{detail[0]}")
            if old is not None:
                old.unlink()  # the server has let go of it; a client lets go at its next call
            seeds = list(opponent_seeds) if opponent_seeds is not None else None
            for k, (first, count) in enumerate(ranges):
                self._commands[k].send((slots.name, slots.capacity, dict(
                    seed=seed, first_game=first, num_games=count, opponent_seeds=seeds)))
            parts: dict[int, SelfPlayData] = {}
            with tqdm(total=num_games, desc="self-play", unit="game", disable=not progress) as bar:
                for k, (status, *detail) in self._receive(self._commands[:len(ranges)]):
                    if status == "error":
                        error, remote = detail
                        if isinstance(error, InferenceServiceError):  # name the cause, if it is the server's end
                            self._server.join(1.0)
                            if self._server.exitcode is not None:
                                raise self._death(self._server)
                        error.add_note(f"in self-play worker {k} (pid {self._clients[k].pid}):\n{remote}")
                        raise error
                    parts[k] = detail[0]
                    bar.update(len(parts[k].records))
            self._control.send((None, slots.name, slots.capacity, ()))  # asks for the call's batch counts
            for _, (status, *detail) in self._receive([self._control]):
                self.server_counts = detail[0] if status == "ready" else {}
        except BaseException:  # a death, a worker's error, a stop signal: results may still be on the way
            self._broken = True
            raise
        return merge_selfplay([parts[k] for k in range(len(ranges))], seconds=time.perf_counter() - t0)

    def close(self) -> None:
        """Stop the processes: after their calls, or at once when a call was cut short."""
        processes = [p for p in [*self._clients, self._server] if p.pid is not None]
        if not self._broken:
            for pipe in [*self._commands, self._control]:
                with contextlib.suppress(OSError):
                    pipe.send(None)
            deadline = time.monotonic() + 10.0
            for p in processes:
                p.join(max(0.0, deadline - time.monotonic()))
        for p in processes:
            if p.is_alive():
                p.terminate()
            p.join()
        for pipe in [*self._commands, self._control]:
            pipe.close()
        self._commands, self._clients = [], []
        if self._slots is not None:
            self._slots.unlink()
            self._slots = None


# --------------------------------------------------------------------------------------------
# Ray: the server as a threaded actor, the self-play workers as actors calling it
# --------------------------------------------------------------------------------------------
class RayServedEvaluator:
    """The `Evaluator` of a self-play actor: one call of the server actor per leaf batch."""

    def __init__(self, ray: Any, server: Any, client: int) -> None:
        self.ray, self.server, self.client = ray, server, client

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits, value = self.ray.get(self.server.evaluate.remote(self.client, obs, mask))
        return np.array(logits, np.float32), np.array(value, np.float32)  # copies: object-store arrays are read-only

    def idle(self) -> None:
        self.ray.get(self.server.leave.remote(self.client))


class ServedSelfPlayActor:
    """A self-play Ray actor without a network: its leaves go to the server actor."""

    def __init__(self, settings: WorkerSettings, server: Any, client: int) -> None:
        from agents.alphazero.workers import import_ray

        if settings.threads > 0 and torch.get_num_threads() != settings.threads:
            torch.set_num_threads(settings.threads)
        self.settings = settings
        self.rules, self.mcts = RuleSet.from_dict(settings.rules), MCTSConfig.from_dict(settings.mcts)
        self.evaluator = RayServedEvaluator(import_ray(), server, client)

    def play(self, seed: int, first_game: int, num_games: int,
             opponent_seeds: Optional[Sequence[int]] = None) -> SelfPlayData:
        try:
            return play_range(self.evaluator, self.settings, self.mcts, self.rules, seed=seed, first_game=first_game,
                              num_games=num_games, opponent_seeds=opponent_seeds)
        finally:
            self.evaluator.idle()


class RayServedPool(SelfPlayPool):
    """`workers` self-play Ray actors (one CPU each) and one inference server actor (one GPU on CUDA)."""

    backend = "ray"

    def __init__(self, settings: WorkerSettings, workers: int, inference: InferenceSettings,
                 address: str = "") -> None:
        if workers < 1:
            raise ValueError(f"an inference server needs at least one self-play worker, got {workers}")
        self._ray, self._owns_ray = start_ray(address, workers + 1)
        ray = self._ray
        gpus = 1 if resolve_device(inference.device).type == "cuda" else 0
        # A thread per client's call, and one for the pool's own calls.
        server = ray.remote(num_cpus=1, num_gpus=gpus, max_concurrency=workers + 2)(InferenceServer)
        self._server = server.remote(settings, inference)
        actor = ray.remote(num_cpus=1)(ServedSelfPlayActor)
        self.workers = workers
        self._actors: list[Any] = [actor.remote(settings, self._server, k) for k in range(workers)]
        self.server_counts: dict[str, float] = {}

    def play(self, model_state: Mapping[str, Any], *, seed: int, num_games: int,
             opponent_seeds: Optional[Sequence[int]] = None, progress: bool = False) -> SelfPlayData:
        if not self._actors:
            raise RuntimeError("this self-play pool is closed")
        ray = self._ray
        t0 = time.perf_counter()
        ray.get(self._server.load_weights.remote(ray.put(portable_state(model_state))))
        ranges = split_games(num_games, self.workers)
        ray.get(self._server.take_counts.remote())  # the counts restart with this call
        ray.get(self._server.expect.remote(range(len(ranges))))
        seeds = list(opponent_seeds) if opponent_seeds is not None else None
        refs = [actor.play.remote(seed, first, count, seeds) for actor, (first, count) in zip(self._actors, ranges)]
        died = getattr(getattr(ray, "exceptions", None), "RayActorError", ())
        parts = []
        for k, ref in enumerate(refs):
            try:
                parts.append(ray.get(ref))
            except died as e:
                raise WorkerDiedError(f"self-play worker {k} (a Ray actor) died: {e}") from None
        self.server_counts = ray.get(self._server.take_counts.remote())
        return merge_selfplay(parts, seconds=time.perf_counter() - t0)

    def close(self) -> None:
        for actor in [*self._actors, self._server]:
            self._ray.kill(actor)
        self._actors = []
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns_ray = False

"""The inference service: self-play processes send their leaf batches to one process that owns the device.

    settings = WorkerSettings(network=net_cfg, mcts=mcts_cfg, rules=rules, selfplay=SelfPlayConfig(parallel=128),
                              precision="auto")
    server = InferenceSettings(device=resolve_device("cuda"))
    with make_selfplay_pool("process", 15, settings, inference=server) as pool:
        data = pool.play(model.state_dict(), seed=7, num_games=1024)   # the games of one in-process call

Why: on a GPU machine one process running a thousand games cannot feed the
device, because the tree work is single-threaded. So W self-play processes
(numba trees, one a core) each play a contiguous range of a call's game
indices, as the workers of `agents.alphazero.distributed.workers` do, but hold no
network. Their evaluator (`ServedEvaluator`) writes each leaf batch into the
process's own slot of shared memory (`LeafSlots`: obs and mask in, packed to
bits, logits and value out; `agents.alphazero.distributed.slots`) and rings the server
through a pipe; the server unpacks them on its device. The
inference server (one process, the only one that touches the device) answers
each client from a thread of its own and hands the batches to a `LeafBatcher`
(`agents.alphazero.distributed.batcher`), which joins the requests of every client that
is ready, waiting at most `max_wait` seconds for those still busy with their
trees, into ONE network call, and scatters the results back. The learner's weights go to the server once per call; the
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
(`agents.common.child`), even one killed with ``kill -9``.

Ray (`agents.alphazero.distributed.pools.RayPool` with a server): the server is a threaded Ray actor
(one GPU when its device is CUDA) holding the same `LeafBatcher`; the
self-play actors call it once per simulation step through the object store.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from dataclasses import replace
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any, Iterator, Mapping, Optional, Sequence

import numpy as np
import torch
from tqdm import tqdm

from agents.alphazero.distributed import workers as workers_module  # import_ray, looked up when a Ray actor starts
from agents.alphazero.distributed.batcher import InferenceServer, merge_counts
from agents.alphazero.distributed.settings import InferenceSettings, WorkerSettings
from agents.alphazero.distributed.slots import (
    IDLE,
    InferenceServiceError,
    LeafSlots,
    ServedEvaluator,
    Slot,
    check_shared_memory,
    slot_capacity,
)
from agents.alphazero.distributed.workers import (
    CarriedGames,
    SelfPlayPool,
    next_game_after,
    play_range,
    portable_state,
    refuse_carried_floor,
    split_games,
)
from agents.alphazero.net.packing import pack_masks, pack_observations
from agents.alphazero.selfplay.data import SelfPlayData, merge_selfplay
from agents.common.child import Child, ChildDiedError, messages, receive, start_child


class WorkerDiedError(ChildDiedError):
    """A self-play worker or the inference server died during a call; the message names it and how it ended."""


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
        logits, value = server.evaluate(k, slot.bits[:n], slot.scalars[:n], slot.mask[:n])
        slot.logits[:n] = logits
        slot.value[:n] = value
        return n
    except Exception as e:
        return f"{type(e).__name__}: {e}"


def _serve(
    settings: WorkerSettings,
    inference: InferenceSettings,
    control: Connection,
    pipes: list[Connection],
    clients: list[int],
) -> None:
    """The server process: answers its clients' pipes from threads (``pipes[i]`` is client ``clients[i]``'s, on
    its slot of the shared memory). On `control` the pool sends (weights or None, the slots' name, their
    capacity, its clients about to play) before and after each call and gets the batch counts since the last
    message back; None ends it."""
    try:
        if inference.device.type == "cuda" and inference.device.index is not None:
            torch.cuda.set_device(inference.device)  # this process's CUDA handles on its own device
        server = InferenceServer(settings, inference)
    except Exception:
        control.send(("error", traceback.format_exc()))
        return
    slots: list[LeafSlots] = []  # the current shared memory (a list: the threads see a replacement)
    threads: list[threading.Thread] = []
    for weights, name, capacity, clients in messages(control):  # until None, or the pool is gone
        try:
            if weights is not None:
                server.load_weights(weights)
            if not slots or slots[0].name != name:
                with server.batcher.hold():  # no request is in flight between calls; this makes sure
                    old = slots[:]
                    slots[:] = [LeafSlots(max(clients) + 1, capacity, name=name)]  # the slots up to its last
                    for s in old:
                        s.close()
            if not threads:
                threads = [
                    threading.Thread(target=_answer, args=(k, pipe, server, slots), name=f"client-{k}", daemon=True)
                    for k, pipe in zip(clients, pipes)
                ]
                for t in threads:
                    t.start()
            counts = server.take_counts()
            server.expect(clients)
            control.send(("ready", counts))
        except Exception:
            control.send(("error", traceback.format_exc()))


def _play_served(index: int, settings: WorkerSettings, pipes: list[Connection], commands: Connection) -> None:
    """A self-play process: plays the game ranges sent on `commands` (None ends it), its leaves evaluated by
    the server through its slots and `pipes` (one a half of its games: `InferenceConfig.halves`); each
    result or exception goes back on `commands`. With carry_over each half keeps its games in play between
    calls (a `CarriedGames`, searching through whatever slots the process holds at the time)."""
    if settings.threads > 0 and torch.get_num_threads() != settings.threads:
        torch.set_num_threads(settings.threads)  # the opponents' networks, if any
    slots: Optional[LeafSlots] = None
    halves = len(pipes)
    evaluators: list[ServedEvaluator] = []  # replaced in place: the carried games look them up at each batch
    carried: list[Optional[CarriedGames]] = [None] * halves
    for name, capacity, parts in messages(commands):
        if slots is None or slots.name != name:
            evaluators.clear()
            if slots is not None:
                slots.close()
            first = index * halves
            slots = LeafSlots(first + halves, capacity, name=name)  # attaches; the slots up to ours are all it holds
            evaluators.extend(ServedEvaluator(slots.slot(first + j), pipe) for j, pipe in enumerate(pipes))
        try:
            reply: tuple[Any, ...] = ("done", *_play_halves(evaluators, settings, parts, carried))
        except Exception as e:
            reply = ("error", e, traceback.format_exc())
        try:
            commands.send(reply)
        except Exception as e:  # an exception that does not pickle
            commands.send(("error", RuntimeError(repr(reply[1])), f"{type(e).__name__}: {e}"))


def _play_part(
    evaluators: Sequence[ServedEvaluator],
    j: int,
    settings: WorkerSettings,
    part: Mapping[str, Any],
    carried: list[Optional[CarriedGames]],
) -> tuple[SelfPlayData, Optional[int]]:
    """Half `j`'s games `part` on `evaluators[j]`: a range (`play_range`'s keywords), or with carry_over the next
    ``num_games`` to finish of its carried games (numbered from ``first_game`` by ``stride``) and the index of
    the next game they would start."""
    if not settings.selfplay.carry_over:
        return play_range(evaluators[j], settings, **part), None
    games = carried[j]
    if games is None:
        games = carried[j] = CarriedGames(
            settings, lambda obs, mask: evaluators[j](obs, mask), part["first_game"], part["stride"]
        )
    return games.play(part["seed"], part["num_games"], part["opponent_seeds"]), games.next_game


def _play_halves(
    evaluators: Sequence[ServedEvaluator],
    settings: WorkerSettings,
    parts: Sequence[Mapping[str, Any]],
    carried: list[Optional[CarriedGames]],
) -> tuple[SelfPlayData, list[Optional[int]]]:
    """The game ranges `parts` (`_play_part`'s), the j-th on `evaluators[j]`: one in this thread, or each in a
    thread of its own (double buffering: a thread waiting for the server lets the other search); each
    evaluator tells the server when its range is over. The games, and with carry_over each half's next index."""
    # With carry_over a half keeps its share of the games at every call, however many halves the call asks.
    halves = len(evaluators) if settings.selfplay.carry_over else len(parts)
    if halves == 1:
        try:
            data, after = _play_part(evaluators, 0, settings, parts[0], carried)
            return data, [after]
        finally:
            evaluators[0].idle()
    t0 = time.perf_counter()
    share = replace(settings, selfplay=settings.selfplay.changed(parallel=-(-settings.selfplay.parallel // halves)))
    results: list[Optional[tuple[SelfPlayData, Optional[int]]]] = [None] * len(parts)
    errors: list[BaseException] = []

    def half(j: int) -> None:
        try:
            results[j] = _play_part(evaluators, j, share, parts[j], carried)
        except BaseException as e:  # raised in the calling thread below
            errors.append(e)
        finally:
            evaluators[j].idle()

    threads = [threading.Thread(target=half, args=(j,), name=f"half-{j}") for j in range(len(parts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    done = [r for r in results if r is not None]
    return merge_selfplay([d for d, _ in done], seconds=time.perf_counter() - t0), [a for _, a in done]


class ServedPool(SelfPlayPool):
    """`workers` self-play processes without a network and an inference server process on each of the
    inference settings' devices (one by default), all ``spawn``ed: worker k feeds server k mod S, the halves
    of its games with it."""

    backend = "process"

    def __init__(
        self, settings: WorkerSettings, workers: int, inference: InferenceSettings, first_game: int = 0
    ) -> None:
        if workers < 1:
            raise ValueError(f"an inference server needs at least one self-play worker, got {workers}")
        # The largest slots a call can need (every worker at `parallel` games), checked before any process starts.
        self.settings, self.workers, self.inference = settings, workers, inference
        self.halves = inference.config.halves
        self.carry = settings.selfplay.carry_over
        self.first_game = self.next_game = first_game
        """With carry_over: half j of worker w (loop ``l = w * halves + j``) plays the games `first_game + l`,
        ``+ workers * halves`` ... over the calls; `next_game` is above every game started so far."""
        self._started: dict[int, int] = {}
        """With carry_over: each loop's next index, as its last call reported it."""
        check_shared_memory(workers * self.halves, slot_capacity(self._half_games(), settings.mcts))
        self.server_counts: dict[str, float] = {}
        """The servers' `LeafBatcher.take_counts` over the last call, summed (batches, positions, mean_batch)."""
        self.servers_counts: list[dict[str, float]] = []
        """Each server's counts over the last call."""
        self.devices = [s.device for s in inference.servers()]
        """The servers' devices, one a server."""
        self._loops = [
            [k * self.halves + j for k in range(s, workers, len(self.devices)) for j in range(self.halves)]
            for s in range(len(self.devices))
        ]
        """The loops (``w * halves + j``, a pipe and a slot each) each server answers: worker w's go to w mod S."""
        self._slots: Optional[LeafSlots] = None
        self._broken = False
        pipes = [Pipe() for _ in range(workers * self.halves)]  # (the client's end, the server's end); h a worker
        self._controls: list[Connection] = []
        self._servers: list[Child] = []
        self._clients: list[Child] = []
        self._commands: list[Connection] = []
        try:
            # Each end goes to its own process only (start_child closes it here), so that a death reads as
            # end-of-file on the other side.
            for s, (server, loops) in enumerate(zip(inference.servers(), self._loops)):
                here, control = Pipe()
                self._controls.append(here)
                name = "inference-server" if len(self.devices) == 1 else f"inference-server-{s}"
                ends = [pipes[h][1] for h in loops]
                self._servers.append(start_child(_serve, (settings, server, control, ends, loops), name=name))
            for k in range(workers):
                here, there = Pipe()
                self._commands.append(here)
                ends = [c for c, _ in pipes[k * self.halves : (k + 1) * self.halves]]
                self._clients.append(start_child(_play_served, (k, settings, ends, there), name=f"selfplay-{k}"))
        except BaseException:
            for pair in pipes:
                for end in pair:
                    end.close()
            self._broken = True
            self.close()
            raise

    @property
    def pids(self) -> dict[str, Optional[int]]:
        """The processes by name: ``inference-server`` (``inference-server-0`` ... with several), ``selfplay-0`` ..."""
        return {c.name: c.pid for c in [*self._servers, *self._clients]}

    def _receive(self, pipes: Sequence[Connection]) -> Iterator[tuple[int, Any]]:
        """``(i, message)`` from each of `pipes` as they come; WorkerDiedError as soon as any process dies."""
        return receive(pipes, [*self._servers, *self._clients], self._death)

    def _server_name(self, s: int) -> str:
        """``the inference server`` when it is alone, else ``inference server 1 on cuda:1``."""
        return "the inference server" if len(self._servers) == 1 else f"inference server {s} on {self.devices[s]}"

    def _death(self, child: Child) -> WorkerDiedError:
        servers = [s for s, c in enumerate(self._servers) if c is child]
        who = self._server_name(servers[0]) if servers else f"self-play worker {self._clients.index(child)}"
        return WorkerDiedError(f"{child.death(who)}; the self-play call is abandoned and every worker stopped")

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
        if self._broken or not self._clients:
            raise RuntimeError("this self-play pool is closed (or stopped by an error)")
        if self.carry:
            refuse_carried_floor(root_uniform)
        t0 = time.perf_counter()
        ranges = split_games(num_games, self.workers)
        halves = [[(first + a, n) for a, n in split_games(count, self.halves)] for first, count in ranges]
        clients = [k * self.halves + j for k, shares in enumerate(halves) for j in range(len(shares))]
        try:
            games = min(self._half_games(), max(n for shares in halves for _, n in shares))
            if self.carry:  # carried games keep the slots of their first call: made for a full half at once
                games = self._half_games()
            capacity = slot_capacity(games, self.settings.mcts)
            old = None
            if self._slots is None or capacity > self._slots.capacity:  # made to measure, kept while big enough
                old, self._slots = self._slots, LeafSlots(self.workers * self.halves, capacity)
            slots = self._slots
            weights = portable_state(model_state)
            for control, served in zip(self._controls, self._loops):
                control.send((weights, slots.name, slots.capacity, [h for h in clients if h in served]))
            for s, (status, *detail) in self._receive(self._controls):
                if status == "error":
                    who = f"{self._server_name(s)} (pid {self._servers[s].pid})"
                    raise InferenceServiceError(f"{who} failed:\n{detail[0]}")
            if old is not None:
                old.unlink()  # the server has let go of it; a client lets go at its next call
            seeds = list(opponent_seeds) if opponent_seeds is not None else None
            loops = self.workers * self.halves
            for k, shares in enumerate(halves):
                calls: list[dict[str, Any]] = [
                    dict(seed=seed, first_game=first, num_games=n, opponent_seeds=seeds) for first, n in shares
                ]
                if root_uniform is not None:
                    for call in calls:
                        call["root_uniform"] = root_uniform
                if self.carry:  # the count alone: the indices are the loop's own
                    for j, call in enumerate(calls):
                        call.update(first_game=self.first_game + k * self.halves + j, stride=loops)
                self._commands[k].send((slots.name, slots.capacity, calls))
            parts: dict[int, SelfPlayData] = {}
            with tqdm(total=num_games, desc="self-play", unit="game", disable=not progress) as bar:
                for k, (status, *detail) in self._receive(self._commands[: len(ranges)]):
                    if status == "error":
                        error, remote = detail
                        if isinstance(error, InferenceServiceError):  # name the cause, if it is the server's end
                            server = self._servers[k % len(self._servers)]
                            server.process.join(1.0)
                            if server.process.exitcode is not None:
                                raise self._death(server)
                        error.add_note(f"in self-play worker {k} (pid {self._clients[k].pid}):\n{remote}")
                        raise error
                    parts[k] = detail[0]
                    for j, after in enumerate(detail[1]):
                        if after is not None:
                            self._started[k * self.halves + j] = after
                    bar.update(len(parts[k].records))
            for control in self._controls:  # asks for the call's batch counts
                control.send((None, slots.name, slots.capacity, ()))
            counts: list[dict[str, float]] = [{} for _ in self._controls]
            for s, (status, *detail) in self._receive(self._controls):
                counts[s] = detail[0] if status == "ready" else {}
            self.servers_counts, self.server_counts = counts, merge_counts(counts)
        except BaseException:  # a death, a worker's error, a stop signal: results may still be on the way
            self._broken = True
            raise
        if self.carry:
            self.next_game = next_game_after(self.first_game, loops, list(self._started.values()))
        return merge_selfplay([parts[k] for k in range(len(ranges))], seconds=time.perf_counter() - t0)

    def _half_games(self) -> int:
        """The games a half of a worker plays at once (its share of `SelfPlayConfig.parallel`)."""
        return -(-self.settings.selfplay.parallel // self.halves)

    def close(self) -> None:
        """Stop the processes: after their calls, or at once when a call was cut short."""
        processes = [c.process for c in [*self._clients, *self._servers]]
        if not self._broken:
            for pipe in [*self._commands, *self._controls]:
                with contextlib.suppress(OSError):
                    pipe.send(None)
            deadline = time.monotonic() + 10.0
            for p in processes:
                p.join(max(0.0, deadline - time.monotonic()))
        for p in processes:
            if p.is_alive():
                p.terminate()
            p.join()
        for pipe in [*self._commands, *self._controls]:
            pipe.close()
        self._commands, self._clients, self._controls, self._servers = [], [], [], []
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
        bits, scalars = pack_observations(obs)
        logits, value = self.ray.get(self.server.evaluate.remote(self.client, bits, scalars, pack_masks(mask)))
        return np.array(logits, np.float32), np.array(value, np.float32)  # copies: object-store arrays are read-only

    def idle(self) -> None:
        self.ray.get(self.server.leave.remote(self.client))


class ServedSelfPlayActor:
    """A self-play Ray actor without a network: its leaves go to the server actor."""

    def __init__(self, settings: WorkerSettings, server: Any, client: int) -> None:
        if settings.threads > 0 and torch.get_num_threads() != settings.threads:
            torch.set_num_threads(settings.threads)
        self.settings = settings
        self.evaluator = RayServedEvaluator(workers_module.import_ray(), server, client)

    def play(
        self,
        seed: int,
        first_game: int,
        num_games: int,
        opponent_seeds: Optional[Sequence[int]] = None,
        root_uniform: Optional[float] = None,
    ) -> SelfPlayData:
        try:
            return play_range(
                self.evaluator,
                self.settings,
                seed=seed,
                first_game=first_game,
                num_games=num_games,
                opponent_seeds=opponent_seeds,
                root_uniform=root_uniform,
            )
        finally:
            self.evaluator.idle()

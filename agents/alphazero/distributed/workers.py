"""Self-play workers: an iteration's games split over local processes or Ray actors.

    settings = WorkerSettings(network=net_cfg, mcts=mcts_cfg, rules=rules, selfplay=SelfPlayConfig(parallel=64))
    with make_selfplay_pool("process", workers=4, settings=settings) as pool:
        data = pool.play(model.state_dict(), seed=7, num_games=256)

A `SelfPlayWorker` holds a CPU copy of the network (one torch thread) and
plays a range of game indices with `agents.alphazero.selfplay.games.play_games`. A pool
splits a call's games into contiguous index ranges, one per worker, sends the
current weights once per call (as CPU arrays), plays the ranges at once and
puts the parts back together in game-index order (`merge_selfplay`). Game
``k`` draws everything from ``game_seed(seed, k)``, so the games are those of
one in-process call with the same seed (up to the last-bit rounding of the
network's CPU kernels by batch size; see `agents.alphazero.selfplay.games`).

Backends (`agents.alphazero.distributed.settings.BACKENDS`; `agents.alphazero.distributed.pools.make_selfplay_pool`
makes their pools):

``inprocess``  the caller's own evaluator (a GPU one included), no workers: the default.
``process``    persistent local processes (``spawn``), one worker each.
``ray``        Ray actors wrapping the same worker, `pools.RayPool` (``pip install -e '.[distributed]'``);
               ``ray.init(address=...)`` joins a cluster, the default starts a local one.
               Every node needs this package and, for ``checkpoint`` opponents, the files.

With ``inference=InferenceSettings(device=...)`` (`agents.alphazero.distributed.settings`) the ``process`` and ``ray``
workers hold no network: they send their leaf batches to one inference
server that owns the device and evaluates the leaves of all of them in large
batches (`agents.alphazero.distributed.inference`; the pipeline for a GPU machine).

With ``settings.selfplay.carry_over`` (not on ``ray``) each worker keeps its games in
play from call to call (`CarriedGames`; `SelfPlayWorker.play_on`): each call asks
worker ``w`` of ``W`` for its share of the call's games, and it numbers its games
``first_game + w``, ``+ W`` ... over the calls (one loop a half of a served worker:
``W`` counts the halves); the pool's `next_game` lies above every game started.

Opponents are the player specs of the `SelfPlayConfig`, built inside each
worker, seeded by the `opponent_seeds` of the call. A player with its own random generator or
memory (a noisy alpha-beta) is shared by the games of one worker, so its
games depend on the worker count; the games against a player whose move
depends on the position alone, and the pure self-play games, do not.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import torch
from tqdm import tqdm

from agents.alphazero.distributed.settings import DISTRIBUTED_HINT, WorkerBackendError, WorkerSettings
from agents.alphazero.net.network import build_network
from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.search import Evaluator
from agents.alphazero.selfplay.data import SelfPlayData, merge_selfplay
from agents.alphazero.selfplay.games import SelfPlayLoop, build_opponents, play_games
from agents.common.processes import WorkerProcesses


def split_games(num_games: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous ``(first_game, num_games)`` ranges covering ``0 .. num_games - 1``, at most one per worker,
    sizes differing by one at most (the larger first)."""
    if num_games < 1 or workers < 1:
        raise ValueError(f"num_games ({num_games}) and workers ({workers}) must be >= 1")
    base, extra = divmod(num_games, workers)
    ranges, first = [], 0
    for w in range(min(workers, num_games)):
        count = base + (w < extra)
        ranges.append((first, count))
        first += count
    return ranges


def load_weights(model: torch.nn.Module, model_state: Mapping[str, Any]) -> None:
    """Load a state_dict of tensors (on any device) or numpy arrays (e.g. `portable_state`'s) into `model`."""
    # np.array copies: arrays from Ray's object store are read-only.
    model.load_state_dict(
        {k: v if isinstance(v, torch.Tensor) else torch.from_numpy(np.array(v)) for k, v in model_state.items()}
    )


def portable_state(model_state: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """A state_dict as CPU numpy arrays: pickles as plain bytes to any process or node (no shared memory)."""
    return {
        k: (v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else np.asarray(v)) for k, v in model_state.items()
    }


def with_root_floor(settings: WorkerSettings, root_uniform: Optional[float]) -> WorkerSettings:
    """`settings` with the Gumbel search's root floor `root_uniform` (checked as the config checks it); the same
    settings for None."""
    if root_uniform is None or root_uniform == settings.mcts.gumbel.root_uniform:
        return settings
    gumbel = replace(settings.mcts.gumbel, root_uniform=float(root_uniform))
    return replace(settings, mcts=replace(settings.mcts, gumbel=gumbel))


def play_range(
    evaluator: Evaluator,
    settings: WorkerSettings,
    *,
    seed: int,
    first_game: int,
    num_games: int,
    opponent_seeds: Optional[Sequence[int]] = None,
    progress: bool = False,
    root_uniform: Optional[float] = None,
) -> SelfPlayData:
    """Games `first_game` .. `first_game + num_games - 1` of the call seeded `seed` on `evaluator`, opponents
    built from the specs of `settings` (what every worker plays); `root_uniform`, when given, is the call's
    floor under the roots' prior in place of the settings' (``train.draw_control``)."""
    settings = with_root_floor(settings, root_uniform)
    opponents = build_opponents(settings.selfplay, settings.rules, seed, opponent_seeds)
    return play_games(
        evaluator,
        settings.selfplay,
        mcts=settings.mcts,
        rules=settings.rules,
        num_games=num_games,
        seed=seed,
        first_game=first_game,
        opponents=opponents,
        progress=progress,
        rules_mix=settings.rules_mix,
    )


class SelfPlayWorker:
    """A CPU copy of the network that plays ranges of self-play games (in a process, an actor, or here).

    It sets its process's torch threads to ``settings.threads`` unless `own_process` is False."""

    def __init__(self, settings: WorkerSettings, own_process: bool = True) -> None:
        if own_process and settings.threads > 0 and torch.get_num_threads() != settings.threads:
            torch.set_num_threads(settings.threads)
        self.settings = settings
        self.model = build_network(settings.network)
        self.model.eval()
        self.evaluator = make_evaluator(self.model, "cpu", settings.precision)
        self.carried: Optional[CarriedGames] = None
        """With carry_over: this worker's games kept in play between calls (`play_on`)."""

    def load_weights(self, model_state: Mapping[str, Any]) -> None:
        """Take the learner's weights (tensors on any device, or numpy arrays)."""
        load_weights(self.model, model_state)

    def play(
        self,
        model_state: Optional[Mapping[str, Any]],
        seed: int,
        first_game: int,
        num_games: int,
        opponent_seeds: Optional[Sequence[int]] = None,
        progress: bool = False,
        root_uniform: Optional[float] = None,
    ) -> SelfPlayData:
        """Load `model_state` (None: keep the current weights) and play games `first_game` ..
        `first_game + num_games - 1` of the call seeded `seed` (at the root floor `root_uniform`, when given)."""
        if model_state is not None:
            self.load_weights(model_state)
        return play_range(
            self.evaluator,
            self.settings,
            seed=seed,
            first_game=first_game,
            num_games=num_games,
            opponent_seeds=opponent_seeds,
            progress=progress,
            root_uniform=root_uniform,
        )

    def play_on(
        self,
        model_state: Optional[Mapping[str, Any]],
        seed: int,
        first_game: int,
        stride: int,
        count: int,
        opponent_seeds: Optional[Sequence[int]] = None,
    ) -> tuple[SelfPlayData, int]:
        """With carry_over: load `model_state` (None: keep the weights) and return the next `count` games to
        finish of this worker's carried games (indices `first_game`, `first_game + stride`, ... over the
        calls) and the index of the next game it would start."""
        if model_state is not None:
            self.load_weights(model_state)
        if self.carried is None:
            self.carried = CarriedGames(self.settings, self.evaluator, first_game, stride)
        elif self.carried.stride != stride or self.carried.next_game % stride != first_game % stride:
            raise ValueError(
                f"this worker carries the games {self.carried.next_game % stride} mod {self.carried.stride}, "
                f"not {first_game % stride} mod {stride}"
            )
        return self.carried.play(seed, count, opponent_seeds), self.carried.next_game


class SelfPlayPool:
    """Plays a call's games on its workers; subclasses say where. Use as a context manager, or `close()`."""

    backend = "inprocess"
    workers = 0

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
        """Games ``0 .. num_games - 1`` of the call seeded `seed`, with the weights `model_state` (a state_dict),
        in game-index order; stats ``seconds`` and the rates are the call's wall time. `root_uniform`, when given,
        is the call's root floor in place of the settings' (``train.draw_control``; not with carry_over)."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop the workers (idempotent)."""

    def __enter__(self) -> "SelfPlayPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CarriedGames:
    """One `SelfPlayLoop` kept from call to call (``settings.selfplay.carry_over``): each `play` returns the next
    `count` games to finish, the others stay in play. The loop, made at the first call on `evaluator`, numbers
    its games `first_game`, `first_game + stride`, ... over the calls (``stride`` loops of several processes
    interleave their indices), all seeded from the first call's seed. A call cut short (an error, a stop
    signal) drops the games in play: the next call starts new ones, from `next_game`."""

    def __init__(self, settings: WorkerSettings, evaluator: Evaluator, first_game: int = 0, stride: int = 1) -> None:
        self.settings, self.evaluator, self.stride = settings, evaluator, stride
        self.loop: Optional[SelfPlayLoop] = None
        """The games carried over from the last call."""
        self.next_game = first_game
        """The index of the next game to start (after those started so far)."""

    def play(
        self, seed: int, count: int, opponent_seeds: Optional[Sequence[int]] = None, progress: bool = False
    ) -> SelfPlayData:
        """The next `count` games to finish, searched on with whatever the evaluator is now."""
        if self.loop is None:
            self.loop = SelfPlayLoop(
                self.evaluator,
                self.settings.selfplay,
                mcts=self.settings.mcts,
                rules=self.settings.rules,
                num_games=count,
                seed=seed,
                first_game=self.next_game,
                opponents=build_opponents(self.settings.selfplay, self.settings.rules, seed, opponent_seeds),
                progress=progress,
                rules_mix=self.settings.rules_mix,
                stride=self.stride,
            )
        elif seed != self.loop.seed:
            raise ValueError(f"the carried-over games are seeded {self.loop.seed}, not {seed}")
        try:
            data = self.loop.play_next(count, progress)
        except BaseException:  # the loop is halfway through a step: its games in play are dropped
            self.loop = None
            raise
        self.next_game = self.loop.started
        return data


def refuse_carried_floor(root_uniform: Optional[float]) -> None:
    """ValueError for a call's own root floor where the games carry over (their searches keep the first call's)."""
    if root_uniform is not None:
        raise ValueError("a call's root floor (root_uniform) cannot reach games carried over from the last call")


def next_game_after(first_game: int, stride: int, started: Sequence[int]) -> int:
    """The lowest index above every game started by `stride` interleaved loops (the l-th numbering its games
    ``first_game + l``, ``+ stride`` ...) whose next indices are `started`: where a resumed run starts."""
    return max([first_game, *(k - stride + 1 for k in started)])


class InProcessPool(SelfPlayPool):
    """No workers: the games run here, on `evaluator` (the trainer's, on its device) or on a CPU worker.

    With ``settings.selfplay.carry_over`` the pool keeps one `CarriedGames` from call to call: each call
    returns the next `num_games` games to finish, the others stay in play (searched on with the next call's
    weights), the games numbered from `first_game` over the calls, all seeded from the first call's `seed`.
    A call cut short (an error, a stop signal) drops the games in play: the next call starts new ones, from
    `next_game`."""

    def __init__(self, settings: WorkerSettings, evaluator: Optional[Evaluator] = None, first_game: int = 0) -> None:
        self.settings = settings
        self.evaluator = evaluator
        self.worker = SelfPlayWorker(settings, own_process=False) if evaluator is None else None
        games = self.worker.evaluator if self.worker is not None else evaluator  # follows the trainer's model
        assert games is not None
        self.carried = CarriedGames(settings, games, first_game)
        """The games carried over from the last call (carry_over)."""

    @property
    def loop(self) -> Optional[SelfPlayLoop]:
        """The carried-over loop (None before the first call, or after one cut short)."""
        return self.carried.loop

    @property
    def next_game(self) -> int:
        """With carry_over: the index of the next game to start (after those started so far)."""
        return self.carried.next_game

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
        if self.settings.selfplay.carry_over:
            refuse_carried_floor(root_uniform)
            if self.worker is not None:
                self.worker.load_weights(model_state)
            return self.carried.play(seed, num_games, opponent_seeds, progress)
        if self.worker is not None:
            return self.worker.play(model_state, seed, 0, num_games, opponent_seeds, progress, root_uniform)
        assert self.evaluator is not None
        return play_range(
            self.evaluator,
            self.settings,
            seed=seed,
            first_game=0,
            num_games=num_games,
            opponent_seeds=opponent_seeds,
            progress=progress,
            root_uniform=root_uniform,
        )


class ProcessPool(SelfPlayPool):
    """`workers` persistent local processes (``spawn``: safe with torch and numba), each one `SelfPlayWorker`."""

    backend = "process"

    def __init__(self, settings: WorkerSettings, workers: int, first_game: int = 0) -> None:
        self.workers = workers
        self.carry = settings.selfplay.carry_over
        self.first_game = self.next_game = first_game
        """With carry_over: worker w plays the games `first_game + w`, `+ workers` ... over the calls; `next_game`
        is above every game started so far."""
        self._started: dict[int, int] = {}
        """With carry_over: each worker's next index, as its last call reported it."""
        self._pool: Optional[WorkerProcesses] = WorkerProcesses(
            workers, SelfPlayWorker, settings, role="self-play worker"
        )

    @property
    def pids(self) -> list[Optional[int]]:
        """The worker processes' pids, in order (none once closed)."""
        return self._pool.pids if self._pool is not None else []

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
        if self._pool is None:
            raise RuntimeError("this self-play pool is closed")
        if self.carry:
            refuse_carried_floor(root_uniform)
        t0 = time.perf_counter()
        weights = portable_state(model_state)
        seeds = list(opponent_seeds) if opponent_seeds is not None else None
        shares = split_games(num_games, self.workers)
        calls: list[tuple[Any, ...]]
        if self.carry:  # call w goes to worker w: the pool is idle between calls, and closed after one cut short
            calls = [(weights, seed, self.first_game + w, self.workers, n, seeds) for w, (_, n) in enumerate(shares)]
        else:
            calls = [(weights, seed, first, count, seeds, False, root_uniform) for first, count in shares]
        parts: dict[int, SelfPlayData] = {}
        try:
            with tqdm(total=num_games, desc="self-play", unit="game", disable=not progress) as bar:
                for k, part in self._pool.run("play_on" if self.carry else "play", calls):  # a worker's error too
                    if self.carry:
                        part, self._started[k] = part
                    parts[k] = part
                    bar.update(len(part.records))
        except BaseException:
            if self.carry and self._pool is not None:  # the games in play go with the workers (see `next_game`)
                self._pool.close(at_once=True)
                self._pool = None
            raise
        if self.carry:
            self.next_game = next_game_after(self.first_game, self.workers, list(self._started.values()))
        return merge_selfplay([parts[k] for k in range(len(calls))], seconds=time.perf_counter() - t0)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def import_ray() -> Any:
    """The `ray` module, or a WorkerBackendError saying how to install it."""
    try:
        import ray
    except ImportError as e:
        raise WorkerBackendError(
            f"the self-play backend 'ray' needs Ray ({e}); install it with: {DISTRIBUTED_HINT}"
        ) from None
    return ray

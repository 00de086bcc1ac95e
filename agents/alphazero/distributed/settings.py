"""What a self-play pool is asked to do: the workers' settings, the backends, the inference server's settings.

The run's own config objects (`NetworkConfig`, `MCTSConfig`, `RuleSet`, `SelfPlayConfig`, the
``train.inference`` section), checked where the config is checked, pickled as they are to worker processes
and Ray actors; train.py builds them and `agents.alphazero.distributed.pools.make_selfplay_pool` takes them
(see `agents.alphazero.distributed.workers` and `agents.alphazero.distributed.inference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch

from agents.alphazero.net.device import resolve_device
from agents.alphazero.net.network import NetworkConfig
from agents.alphazero.search import MCTSConfig
from agents.alphazero.selfplay.games import SelfPlayConfig, build_opponents
from agents.alphazero.selfplay.rules_mix import MixEntry
from envs.config import ConfigError, check_range
from envs.players import make_player
from envs.rules import RuleSet

BACKENDS = ("inprocess", "process", "ray")
"""Where self-play runs: in the caller, in local processes, in Ray actors."""

DISTRIBUTED_HINT = "pip install -e '.[distributed]'"


class WorkerBackendError(ConfigError):
    """An unknown self-play backend, a bad worker count, or a backend that is not installed."""


@dataclass(frozen=True)
class WorkerSettings:
    """Everything a worker needs besides the weights: the run's config objects, pickled as they are."""

    network: NetworkConfig
    """The shape the weights fit (``model``)."""
    mcts: MCTSConfig
    """The search (``mcts``)."""
    rules: RuleSet
    """The rules every game plays, unless `rules_mix` is given."""
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    """How the games are played (`parallel`: the games each worker plays at once)."""
    threads: int = 1
    """torch CPU threads in each worker process (0: torch's default)."""
    precision: str = "fp32"
    """Inference precision of the workers' network, or of the inference server's when there is one (`fp32`,
    `bf16`, `auto`; see device.inference_dtype)."""
    rules_mix: tuple[MixEntry, ...] = ()
    """The rule sets each game draws its own from (`rules_mix.parse_rules_mix`); empty: every game plays `rules`."""

    def validate(self) -> None:
        """Raise the usual ValueError subclass for a bad opponent spec, before any worker starts (the config
        objects checked themselves when they were made)."""
        if not build_opponents(self.selfplay, self.rules, seed=0):  # builds the opponents when they play
            for spec in self.selfplay.opponents:  # specs that would not play must still be valid
                make_player(spec, rules=self.rules, seed=0)


class InferenceSettingsError(ConfigError):
    """A bad inference-server setting (names it)."""


@dataclass
class InferenceConfig:
    """The inference server of a training run (``train.inference``)."""

    server: bool = False
    """The workers hold no network: they send their leaf batches to one inference process that owns
    `device` and evaluates the leaves of all of them at once (agents.alphazero.distributed.inference), which keeps a
    GPU busy. Needs `train.workers` >= 1 on the `process` or `ray` backend; the games stay the same."""
    max_wait: float = 0.002
    """Seconds a batch of the inference server waits, after its first request, for the workers still busy with
    their trees (0 to 10): longer joins more leaves a call, shorter idles the device less."""
    halves: int = 1
    """With the inference server on the process backend: 1, or 2 to keep two requests in flight per
    self-play process (its games in two halves, one searching while the other's leaves are evaluated: double
    buffering); the games stay the same."""
    devices: Any = field(default_factory=list)
    """One inference server a device, on the process backend: a list (`[cuda:0, cuda:1]`; `[cpu, cpu]` runs
    two CPU servers) or `all` (every CUDA device of this machine); empty: one server on the run's `device`.
    Self-play worker k feeds server k mod S (its halves with it), each server gets the learner's weights once
    per call, and the games stay the same. Needs `server` and at least as many `train.workers` as servers;
    resolved once, with the run's device (`resolve_server_devices`). The learner stays on `device`."""

    def __post_init__(self) -> None:
        if not isinstance(self.server, bool):
            raise InferenceSettingsError(f"train.inference.server={self.server!r} must be true or false")
        if isinstance(self.halves, bool) or not isinstance(self.halves, int):
            raise InferenceSettingsError(f"train.inference.halves={self.halves!r} must be an integer")
        check_range(self, "train.inference", InferenceSettingsError, max_wait=(0, 10), halves=(1, 2))
        self.devices = _device_names(self.devices)
        if self.devices and not self.server:
            raise InferenceSettingsError(
                f"train.inference.devices={self.devices} runs inference servers: it needs train.inference.server=true"
            )


ALL_DEVICES = "all"
"""`InferenceConfig.devices`'s word for every CUDA device of the machine."""


def _device_names(devices: Any) -> list[str]:
    """`InferenceConfig.devices` as a list of names (`all` alone, or torch device names checked when resolved)."""
    if isinstance(devices, str):
        devices = [devices]
    if not isinstance(devices, (list, tuple)):
        raise InferenceSettingsError(
            f"train.inference.devices={devices!r} must be a list of devices ([cuda:0, cuda:1], [cpu, cpu]) or all"
        )
    for name in devices:
        if not isinstance(name, str):
            raise InferenceSettingsError(
                f"train.inference.devices={list(devices)}: entry {name!r} is not a device name (cpu, cuda:N, all)"
            )
    if ALL_DEVICES in devices and len(devices) > 1:
        raise InferenceSettingsError(f"train.inference.devices={list(devices)}: 'all' stands alone")
    return list(devices)


def shown_devices(names: list[str]) -> str:
    """`InferenceConfig.devices` as a message shows it: ``all``, or the list."""
    return ALL_DEVICES if names == [ALL_DEVICES] else str(names)


def resolve_server_devices(config: InferenceConfig) -> tuple[torch.device, ...]:
    """The devices of the run's inference servers, one a server (`InferenceConfig.devices` on this machine;
    ``()``: one server on the run's device), resolved once, where the run's device is. InferenceSettingsError
    in one line naming the key, the value and what this machine has."""
    names = config.devices
    if names == [ALL_DEVICES]:
        if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
            raise InferenceSettingsError(
                "train.inference.devices=all runs a server on every CUDA device: this machine has none"
            )
        return tuple(torch.device("cuda", i) for i in range(torch.cuda.device_count()))
    try:
        return tuple(resolve_device(name) for name in names)
    except ValueError as e:
        raise InferenceSettingsError(f"train.inference.devices={names}: {e}") from None


def check_servers(servers: int, workers: int, backend: str) -> None:
    """WorkerBackendError for more inference servers on given devices than self-play workers (each worker feeds
    one server), or for any on Ray (its pool places a server on each node itself)."""
    if servers and backend == "ray":
        raise WorkerBackendError(
            f"inference servers on given devices ({servers}) run on the process backend: on 'ray' the pool places "
            "its servers on the cluster's nodes itself"
        )
    if servers > workers:
        raise WorkerBackendError(
            f"{servers} inference servers need at least {servers} self-play workers (train.workers), got {workers}"
        )


@dataclass(frozen=True)
class InferenceSettings:
    """Where and how the inference server runs: the ``train.inference`` section and the run's device (resolved
    once, by the caller), torch threads and compile switch. Its precision is the workers'
    (`WorkerSettings.precision`)."""

    config: InferenceConfig = field(default_factory=InferenceConfig)
    """``train.inference``: the batches' wait and the requests in flight per process."""
    device: torch.device = torch.device("cpu")
    """The server's device (`device.resolve_device`'s): the run's."""
    devices: tuple[torch.device, ...] = ()
    """One server a device, on the process backend (`resolve_server_devices`); empty: one server on `device`."""
    threads: int = 1
    """torch CPU threads of the server process (0: torch's default); they matter for a CPU server."""
    compile: bool = False
    """Run the server's network through `torch.compile`, its batches padded up to a few sizes
    (`runtime.CUDA_BUCKETS`) so that it compiles once a size, and not again when the weights change."""
    free_network: bool = False
    """The pipeline bench's (bench/pipeline_ceiling.py): the server answers every leaf with a uniform policy over
    its legal moves and value 0 (`batcher.free_packed_evaluator`) instead of its network, so that what is timed
    is the pipeline around the network. Never set by a training run."""

    def servers(self) -> list[InferenceSettings]:
        """The settings of each server, `devices` resolved: one on `device` when there are none."""
        return [replace(self, device=d, devices=()) for d in self.devices] or [self]

"""What a self-play pool is asked to do: the workers' settings, the backends, the inference server's settings.

The run's own config objects (`NetworkConfig`, `MCTSConfig`, `RuleSet`, `SelfPlayConfig`, the
``train.inference`` section), checked where the config is checked, pickled as they are to worker processes
and Ray actors; train.py builds them and `agents.alphazero.distributed.pools.make_selfplay_pool` takes them
(see `agents.alphazero.distributed.workers` and `agents.alphazero.distributed.inference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

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

    def __post_init__(self) -> None:
        if not isinstance(self.server, bool):
            raise InferenceSettingsError(f"train.inference.server={self.server!r} must be true or false")
        if isinstance(self.halves, bool) or not isinstance(self.halves, int):
            raise InferenceSettingsError(f"train.inference.halves={self.halves!r} must be an integer")
        check_range(self, "train.inference", InferenceSettingsError, max_wait=(0, 10), halves=(1, 2))


@dataclass(frozen=True)
class InferenceSettings:
    """Where and how the inference server runs: the ``train.inference`` section and the run's device (resolved
    once, by the caller), torch threads and compile switch. Its precision is the workers'
    (`WorkerSettings.precision`)."""

    config: InferenceConfig = field(default_factory=InferenceConfig)
    """``train.inference``: the batches' wait and the requests in flight per process."""
    device: torch.device = torch.device("cpu")
    """The server's device (`device.resolve_device`'s)."""
    threads: int = 1
    """torch CPU threads of the server process (0: torch's default); they matter for a CPU server."""
    compile: bool = False
    """Run the server's network through `torch.compile`, its batches padded up to a few sizes
    (`runtime.CUDA_BUCKETS`) so that it compiles once a size, and not again when the weights change."""

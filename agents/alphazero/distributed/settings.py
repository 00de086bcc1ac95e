"""What a self-play pool is asked to do: the workers' settings, the backends, the inference server's settings.

Plain data, so that it travels to worker processes and Ray actors; train.py
builds it from its config and `agents.alphazero.distributed.pools.make_selfplay_pool`
takes it (see `agents.alphazero.distributed.workers` and `agents.alphazero.distributed.inference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from agents.alphazero.net.device import PRECISIONS, resolve_device
from agents.alphazero.net.network import NetworkConfig
from agents.alphazero.search import MCTSConfig
from agents.alphazero.selfplay.games import SelfPlayConfig, build_opponents
from agents.alphazero.selfplay.rules_mix import mix_from_state
from envs.config import ConfigError, check_choice, check_range
from envs.players import make_player
from envs.rules import RuleSet

BACKENDS = ("inprocess", "process", "ray")
"""Where self-play runs: in the caller, in local processes, in Ray actors."""

DISTRIBUTED_HINT = "pip install -e '.[distributed]'"


class WorkerBackendError(ConfigError):
    """An unknown self-play backend, a bad worker count, or a backend that is not installed."""


@dataclass(frozen=True)
class WorkerSettings:
    """Everything a worker needs besides the weights: plain data, so it travels to processes and actors."""

    network: Mapping[str, Any]
    """`NetworkConfig` fields (the shape the weights fit)."""
    mcts: Mapping[str, Any]
    """`MCTSConfig` fields."""
    rules: Mapping[str, Any]
    """`RuleSet` fields."""
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    """How the games are played (`parallel`: the games each worker plays at once)."""
    threads: int = 1
    """torch CPU threads in each worker process (0: torch's default)."""
    precision: str = "fp32"
    """Inference precision of the workers' network (`fp32`, `bf16`, `auto`; see device.inference_dtype)."""
    rules_mix: Sequence[Mapping[str, Any]] = ()
    """The rule sets each game draws its own from (`rules_mix.mix_state`'s form); empty: every game plays `rules`."""

    def validate(self) -> None:
        """Raise the usual ValueError subclass for a bad field or opponent spec, before any worker starts."""
        NetworkConfig.from_dict(self.network)
        MCTSConfig.from_dict(self.mcts)
        mix_from_state(self.rules_mix)
        rules = RuleSet.from_dict(self.rules)
        if not build_opponents(self.selfplay, rules, seed=0):  # builds the opponents when they play
            for spec in self.selfplay.opponents:  # specs that would not play must still be valid
                make_player(spec, rules=rules, seed=0)


class InferenceSettingsError(ConfigError):
    """A bad inference-server setting (names it)."""


@dataclass(frozen=True)
class InferenceSettings:
    """Where and how the inference server evaluates (the self-play settings say what: `WorkerSettings`)."""

    device: str = "cpu"
    """The server's device: `cuda`, `cuda:1`, `cpu` or `auto` (CUDA when present)."""
    precision: str = "auto"
    """`fp32`, `bf16` or `auto` (bf16 on CUDA, and on CPUs with native bf16 for batches of 16 or more; see
    agents.alphazero.net.device.inference_dtype)."""
    max_wait: float = 0.002
    """Seconds a batch waits, after its first request, for clients still busy with their trees."""
    threads: int = 1
    """torch CPU threads of the server process (0: torch's default); they matter for a CPU server."""
    halves: int = 1
    """Requests each self-play process keeps in flight (`process` backend): 1, or 2, its games in two halves,
    each searched by a thread of its own, so that one half's trees grow while the other's leaves are on the
    device (double buffering). The games are the same either way."""
    compile: bool = False
    """Run the server's network through `torch.compile`, its batches padded up to a few sizes
    (`runtime.CUDA_BUCKETS`) so that it compiles once a size, and not again when the weights change."""

    def __post_init__(self) -> None:
        if not isinstance(self.compile, bool):
            raise InferenceSettingsError(f"inference.compile={self.compile!r} must be true or false")
        for name in ("threads", "halves"):
            if isinstance(getattr(self, name), bool) or not isinstance(getattr(self, name), int):
                raise InferenceSettingsError(f"inference.{name}={getattr(self, name)!r} must be an integer")
        check_range(self, "inference", InferenceSettingsError, max_wait=(0, 10), threads=(0, None), halves=(1, 2))
        check_choice(self, "inference", InferenceSettingsError, precision=PRECISIONS)
        try:
            resolve_device(self.device)
        except ValueError as e:
            raise InferenceSettingsError(f"inference device: {e}") from None

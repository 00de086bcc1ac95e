"""The training config: its schema (`Config` and the `train` group's `TrainConfig`, `EvalConfig`), composed
from configs/ and checked here before any work, and a resumed run's stored config with the command line on top."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, get_type_hints

import torch
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from agents.alphazero.distributed.settings import (
    BACKENDS,
    InferenceConfig,
    WorkerBackendError,
    check_servers,
    resolve_server_devices,
    shown_devices,
)
from agents.alphazero.net.checkpoint import CheckpointError, stored_config
from agents.alphazero.net.device import MAX_THREADS, PRECISIONS, resolve_device
from agents.alphazero.net.network import NetworkConfig
from agents.alphazero.search import GumbelConfig, MCTSConfig, migrate_flat_mcts
from agents.alphazero.search.config import MAX_SIMULATIONS
from agents.alphazero.search.tree import NODE_BYTES, default_nodes
from agents.alphazero.selfplay.games import SelfPlayConfig
from agents.alphazero.selfplay.rules_mix import RulesMixError, check_mix_compatible, parse_rules_mix
from agents.alphazero.selfplay.starts import start_rules
from agents.alphazero.training.draws import DrawControlConfig
from agents.alphazero.training.learner import LearnerConfig
from agents.alphazero.training.replay import POSITION_BYTES
from agents.common.rundir import check_run_name
from envs.config import (
    SCHEMA,
    ConfigError,
    check_choice,
    check_range,
    compose,
    config_dir,
    config_kwargs,
    dotted_keys,
    hydra_error_line,
    override_key,
)
from envs.encoding import LEGACY_PLANES
from envs.players import make_player
from envs.rules import COUNTER_LIMIT, DEFAULT_RULES, RulesConfig
from envs.tablebase import TablebaseError, default_tablebase


@dataclass
class EvalConfig:
    """How the network is measured during training."""

    every: int = 60
    """Evaluate every this many iterations (and at the last one); 0 switches evaluation off. >= 0."""
    games: int = 24
    """Games per opponent (colours alternate; pairs share a random opening); 1 to 100000."""
    num_simulations: int = 128
    """Search simulations per move of the network in evaluation games (no exploration noise), in place of
    `mcts.num_simulations`; 1 to `MAX_SIMULATIONS` (100000)."""
    opponents: list[str] = field(
        default_factory=lambda: ["alphabeta:depth=1", "alphabeta:depth=2", "alphabeta:depth=3"]
    )
    """The ladder: player specs (see envs/players.py); each gets eval/score_<spec>. The default is the
    alpha-beta ladder of the strength goal (``random`` is beaten from the first evaluation on)."""
    vs_previous: bool = True
    """Also play the network of the previous evaluation; its score drives the running Elo estimate."""
    opening_plies: int = 2
    """Random plies before the players take over, so deterministic players give varied games; 0 to 30000."""
    max_plies: int = 300
    """An evaluation game longer than this is a draw; 1 to `COUNTER_LIMIT` (30000)."""
    tablebase_positions: int = 1000
    """Random endgame-table positions per piece count on which each evaluation measures the value head
    (``eval/tablebase_*``: `agents.alphazero.selfplay.endgames.value_accuracy`) when the tables of the run's rules
    are built (``python -m envs tablebase build``; without them one log line says so); 0 to 1000000, 0 off."""

    def __post_init__(self) -> None:
        check_range(
            self,
            "train.eval",
            every=(0, None),
            games=(1, 100_000),
            num_simulations=(1, MAX_SIMULATIONS),
            opening_plies=(0, COUNTER_LIMIT),
            max_plies=(1, COUNTER_LIMIT),
            tablebase_positions=(0, 1_000_000),
        )
        if isinstance(self.opponents, str):
            raise ConfigError(f"train.eval.opponents={self.opponents!r} must be a list of player specs")


DRAW_BREAKERS: dict[str, Any] = {"random_plies": 6, "draw_contempt": 0.3, "contempt_sides": "one", "draw_keep": 0.2}
"""What a training run's self-play changes from `SelfPlayConfig`'s plain self-play (`TrainConfig.selfplay`)."""


@dataclass
class TrainConfig:
    """The self-play / learning loop (group `train`)."""

    iterations: int = 180
    """Iterations of {self-play, learn, evaluate, checkpoint}; >= 1.
    A resumed run goes on to a larger value (``python train.py resume=<run> train.iterations=N``) on the same
    learning-rate schedule (`learner`)."""
    games_per_iteration: int = 64
    """Self-play games per iteration; 1 to 1000000 (an iteration's positions are held in memory)."""
    selfplay: SelfPlayConfig = field(default_factory=lambda: SelfPlayConfig(**DRAW_BREAKERS))
    """How the self-play games are played: games at once (`parallel`), `max_plies`, playout caps,
    opponent games (`opponents`, `opponent_fraction`); see agents.alphazero.selfplay.games.SelfPlayConfig.
    Its `player_name` is the run's name. A training run breaks the repetition draws that a young network's
    self-play settles into three ways (`DRAW_BREAKERS`, where `SelfPlayConfig` alone plays plain self-play):
    the first `random_plies` of each game are random, one colour of each game (`contempt_sides`) values a
    draw at -`draw_contempt` in its search, and a game without a winner trains with probability `draw_keep`
    (all its positions or none)."""
    workers: int = 2
    """Self-play worker processes or actors, each with a CPU copy of the network (0: self-play runs in
    this process, on `device`); 0 to 1024. A worker plays its share of the games, `selfplay.parallel` at
    a time; the games are those the in-process loop would play with the same seed. The default run plays
    its self-play on two processes, for a machine of two cores or more."""
    worker_backend: str = "process"
    """Where the workers run when `workers` > 0: `process` (local processes) or `ray` (Ray actors;
    pip install -e '.[distributed]'); `inprocess` ignores `workers`."""
    ray_address: str = ""
    """The Ray cluster to join (`ray.init(address=...)`, e.g. `auto`); empty: start a local one."""
    inference: InferenceConfig = field(default_factory=InferenceConfig)
    """The inference server: `server` (the workers send their leaves to one process that owns `device`; needs
    `workers` >= 1 on the `process` or `ray` backend), its batches' `max_wait` and the requests in flight per
    self-play process (`halves`); see agents.alphazero.distributed.settings.InferenceConfig."""
    replay_capacity: int = 60000
    """Replay buffer size in positions (the newest are kept); 1 to 100000000, and at most what this
    machine's memory holds (about 1 KB a position, allocated at the start)."""
    min_replay: int = 2000
    """No learning before the buffer holds this many positions; 0 to `replay_capacity`."""
    batch_size: int = 256
    """Positions per learner step; 1 to 65536."""
    train_ratio: float = 4.0
    """Positions sampled for learning per new self-play position (sets the learner steps per iteration);
    >= 0."""
    max_steps_per_iteration: int = 400
    """Upper bound on learner steps per iteration; >= 1."""
    mirror: bool = True
    """Left-right mirror augmentation when sampling (a symmetry of the rules)."""
    reanalyse: float = 0.25
    """Reanalysis: each iteration, before learning, the newest network searches this many older replay positions
    per new self-play position again (as self-play searches) and their policy targets become that search's
    (`agents.alphazero.training.reanalyse`); 0 to 100, 0 off. The default run reanalyses a quarter of a
    position per new one. A resumed run whose stored config predates the key plays on without it."""
    draw_control: DrawControlConfig = field(default_factory=DrawControlConfig)
    """A root floor that follows the self-play draw rate: with `target` below 1, the uniform floor under the
    self-play roots' prior (`mcts.gumbel.root_uniform`, where it starts and its lowest) rises by `step` after an
    iteration whose games drew more than `target` of the time and falls by `step` after one that drew less, up to
    `max_floor`; saved with the run's counters (see agents.alphazero.training.draws). Gumbel search only, not with
    `selfplay.carry_over`. Off by default (target 1)."""
    learner: LearnerConfig = field(default_factory=lambda: LearnerConfig(total_steps=80000))
    """Optimizer, schedule and loss weights.
    A training run's cosine schedule runs over more steps (`total_steps`) than the default run takes, so
    that resuming the run to more iterations continues one schedule instead of learning on at its floor."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Evaluation ladder."""
    checkpoint_every: int = 1
    """Write latest.pt (and iter_NNNNNN.pt) every this many iterations (and at the last one); >= 1."""
    replay_in_checkpoint_mb: float = 512.0
    """Save the replay contents in latest.pt when they take at most this many MB; above, only its
    counters. >= 0."""
    write_games: bool = True
    """Append the self-play games to games.jsonl in the run directory."""
    rules_mix: list[str] = field(default_factory=list)
    """Rule sets the self-play games are drawn from, each game by its own seed: names of configs/rules/ or yaml
    paths, each optionally weighted as NAME:WEIGHT, e.g. [default,keeps_rank:2] (keeps_rank twice as often).
    Empty: every game plays the top-level `rules` group, which must stay at its default with a mix. The
    evaluation runs per rule set of the mix (eval/<name>/...; eval/ladder_score and eval/elo are their means);
    no endgame tables (mcts.tablebase, train.selfplay.tablebase_*) and no opponent games with a mix."""

    def __post_init__(self) -> None:
        check_range(
            self,
            "train",
            iterations=(1, None),
            games_per_iteration=(1, 1_000_000),
            workers=(0, 1024),
            replay_capacity=(1, 100_000_000),
            min_replay=(0, None),
            batch_size=(1, 65536),
            train_ratio=(0, None),
            max_steps_per_iteration=(1, None),
            reanalyse=(0, 100),
            checkpoint_every=(1, None),
            replay_in_checkpoint_mb=(0, None),
        )
        if self.selfplay.player_name != SelfPlayConfig.player_name:
            raise ConfigError(
                f"train.selfplay.player_name={self.selfplay.player_name!r}: the run's name is "
                "the network's name in its games (set name=... instead)"
            )
        if self.min_replay > self.replay_capacity:
            raise ConfigError(
                f"train.min_replay={self.min_replay} exceeds train.replay_capacity="
                f"{self.replay_capacity}: learning would never start"
            )
        check_choice(self, "train", WorkerBackendError, worker_backend=BACKENDS)
        parse_rules_mix(self.rules_mix)  # RulesMixError naming a bad entry
        if self.selfplay.carry_over and self.workers > 0 and self.worker_backend == "ray":
            raise ConfigError(
                f"train.selfplay.carry_over=true keeps the games in play in local processes: it needs "
                f"train.workers=0 or train.worker_backend=process (got {self.workers} on 'ray')"
            )
        if self.inference.server and (self.workers < 1 or self.worker_backend == "inprocess"):
            raise ConfigError(
                f"train.inference.server=true serves self-play workers: it needs train.workers >= 1 on "
                f"the process or ray backend (got {self.workers} on {self.worker_backend!r})"
            )


@dataclass
class Config:
    """Top-level training configuration."""

    defaults: list[Any] = field(
        default_factory=lambda: [
            "_self_",
            {"model": "small"},
            {"mcts": "gumbel"},
            {"rules": "default"},
            {"train": "default"},
            {"preset": "cpu"},
            {"override hydra/job_logging": "stdout"},
        ]
    )
    """Hydra's defaults list: one option per group; `preset` comes last and may change the others."""
    name: str = ""
    """Run name: the run directory is `<out_dir>/<name>` (default: az-<date>-<time>). One plain path
    component: no separators, not `.` or `..`, at most 255 bytes."""
    out_dir: str = "checkpoints"
    """Parent directory of the run directories; it must be (or be creatable as) a writable directory."""
    seed: int = 0
    """The one seed: python, numpy, torch, self-play games and evaluation all derive from it; 0 to 2**32 - 1."""
    device: str = "auto"
    """`auto` (CUDA when present), `cpu`, `cuda`, `cuda:1`...: a device this machine has (checked at the start)."""
    amp: bool = True
    """Mixed precision of the learner: bf16 (or fp16 with a grad scaler) on CUDA, bf16 on CPUs that
    compute it natively; float32 elsewhere. Master weights stay float32."""
    precision: str = "auto"
    """Inference precision of the self-play and evaluation searches: `fp32`, `bf16`, or `auto`
    (bf16 where the device computes it natively: CUDA, CPUs with AVX512-BF16 or AMX; see
    agents.alphazero.net.device.inference_dtype). The learner keeps fp32 master weights."""
    compile: bool = False
    """torch.compile the networks where the time goes: the inference server's (or this process's self-play
    and evaluation network), its batches padded up to a few sizes, and the learner's forward pass and loss;
    compiled once a shape, not again at new weights (GPU runs; slow to start: the shapes compile first)."""
    threads: int = 1
    """torch CPU threads (0: torch's default), 0 to `MAX_THREADS` (1024). One is fastest for self-play's
    small batches on a busy CPU."""
    resume: str = ""
    """Continue a run: a run name, a run directory or its latest.pt (a file holding weights only is refused:
    see `init`). Its stored config is used; scalar overrides given on the same command line (e.g.
    train.iterations=80) are applied on top. The run continues in the directory of its latest.pt; with `name`
    (or `out_dir`) given, a copy continues as a new run there instead."""
    init: str = ""
    """Start a new run from the weights of this checkpoint (best.pt, iter_NNNNNN.pt, a shipped network, a run
    name or directory): a fresh optimizer, replay buffer and counters; the network shape and rules must match."""
    model: NetworkConfig = field(default_factory=NetworkConfig)
    """Network shape (group `model`)."""
    mcts: MCTSConfig = field(default_factory=lambda: MCTSConfig(gumbel=GumbelConfig(max_actions=4)))
    """Tree search used by self-play and evaluation (group `mcts`).
    Self-play's Gumbel search samples 4 root actions, where a player's search (`MCTSConfig` alone) considers
    16: each considered move is searched several simulations deep, and the policy and value targets come from
    that deeper look. The `mcts` group's files start from `MCTSConfig`, so preset=cpu states it again."""
    rules: RulesConfig = field(default_factory=RulesConfig)  # type: ignore[valid-type]
    """Rule set (group `rules`; see envs/rules.py)."""
    train: TrainConfig = field(default_factory=TrainConfig)
    """The loop (group `train`)."""
    hydra: Any = field(
        default_factory=lambda: {
            "run": {"dir": "."},
            "output_subdir": None,
            "job": {"chdir": False},
        }
    )
    """Hydra's own settings: no output directory of its own, no change of working directory."""

    def __post_init__(self) -> None:
        check_range(self, "", seed=(0, 2**32 - 1), threads=(0, MAX_THREADS))
        check_choice(self, "", precision=PRECISIONS)  # the one check of the workers' and the server's precision
        if self.mcts.num_simulations < 1:
            raise ConfigError(
                f"mcts.num_simulations={self.mcts.num_simulations!r}: self-play and evaluation "
                "need at least 1 simulation per move"
            )
        if self.name:
            check_run_name(self.name)
        if self.train.draw_control.on:
            if self.mcts.algorithm != "gumbel":
                raise ConfigError(
                    f"train.draw_control moves the Gumbel root floor (mcts.gumbel.root_uniform): it needs "
                    f"mcts.algorithm=gumbel (got {self.mcts.algorithm!r})"
                )
            if self.train.selfplay.carry_over:
                raise ConfigError(
                    "train.draw_control sets each iteration's root floor, which the games carried over from the "
                    "last iteration (train.selfplay.carry_over=true) could not follow"
                )
            self.train.draw_control.check_base(self.mcts.gumbel.root_uniform)
        if self.train.selfplay.start_positions:  # a tag naming rules the run does not play, before any game
            mix = {e.name: e.rules for e in parse_rules_mix(self.train.rules_mix)}
            start_rules(
                self.train.selfplay.start_positions,
                self.rules.rule_set(),
                mix,
                f"train.selfplay.starts ({self.train.selfplay.starts})",
            )
        if self.train.rules_mix:
            check_mix_compatible(self.mcts, self.train.selfplay)
            changed = sorted(k for k, v in self.rules.rule_set().to_dict().items() if v != DEFAULT_RULES.to_dict()[k])
            if changed:
                raise RulesMixError(
                    f"train.rules_mix gives each game its rules: leave the rules group at its default "
                    f"(rules.{changed[0]}={getattr(self.rules, changed[0])!r} is set)"
                )

    def run_device(self) -> torch.device:
        """`device` resolved: the one resolution of a training process (`checked_run_config`), which refuses a
        device this machine lacks in one line."""
        try:
            return resolve_device(self.device)
        except ValueError as e:
            hint = (
                " (preset=gpu asks for device=cuda; the default preset=cpu runs on the CPU)"
                if self.device.startswith("cuda")
                else ""
            )
            raise ConfigError(f"{e}{hint}") from None

    def server_devices(self) -> tuple[torch.device, ...]:
        """`train.inference.devices` resolved, one device a server (``()``: one server on the run's device),
        with the run's device (`checked_run_config`); a device this machine lacks, or more servers than the
        workers feed, refused in one line."""
        tc = self.train
        devices = resolve_server_devices(tc.inference)
        try:
            check_servers(len(devices), tc.workers, tc.worker_backend)
        except WorkerBackendError as e:
            raise WorkerBackendError(f"train.inference.devices={shown_devices(tc.inference.devices)}: {e}") from None
        return devices

    def check_memory(self) -> None:
        """Refuse a replay buffer or self-play trees larger than this machine's memory (both are made whole
        at the start; the network's own memory is bounded by the model's shape)."""
        total = machine_memory()
        tc, sims = self.train, self.mcts.num_simulations
        needs = (
            (f"the replay buffer (train.replay_capacity={tc.replay_capacity})", tc.replay_capacity * POSITION_BYTES),
            (
                f"the self-play trees (train.selfplay.parallel={tc.selfplay.parallel} games x mcts.num_simulations="
                f"{sims})",
                tc.selfplay.parallel * default_nodes(sims) * NODE_BYTES,
            ),
        )
        for what, need in needs:
            if total is not None and need > total:
                raise ConfigError(
                    f"{what} would take {need / 2**30:.1f} GiB, more than this machine's "
                    f"{total / 2**30:.1f} GiB of memory"
                )


def machine_memory() -> Optional[int]:
    """This machine's physical memory in bytes (None where the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


SCHEMAS: dict[str, type] = {"model": NetworkConfig, "mcts": MCTSConfig, "rules": RulesConfig, "train": TrainConfig}
"""The dataclass of each config group; each group's yaml files start from it (``defaults: [schema, _self_]``)."""
GROUPS = (*SCHEMAS, "preset")
"""The config groups; `preset` (configs/preset/) has no node of its own and sets several others."""


def register_configs() -> None:
    """Store `Config` and each group's schema in Hydra's ConfigStore (the yaml files of configs/ start from them)."""
    ConfigStore.instance().store(name="config", node=Config)
    for group, schema in SCHEMAS.items():
        ConfigStore.instance().store(group=group, name=SCHEMA, node=schema)


def refuse_unknown_keys(node: Any, schema: type, where: str) -> None:
    """Raise ConfigError for a key of `node` (and of its sub-nodes) that `schema` does not have (`+train.bogus=1`)."""
    config_kwargs(schema, node, where or "top-level config", ConfigError)
    types = get_type_hints(schema)
    for f in fields(schema):
        if is_dataclass(types[f.name]) and isinstance(node.get(f.name), DictConfig):
            refuse_unknown_keys(node[f.name], types[f.name], f"{where}.{f.name}".lstrip("."))


def checked_config(cfg: DictConfig) -> Config:
    """The composed (or resumed) config as dataclasses with every value checked, before any work
    (`checked_run_config` without the devices it resolves)."""
    return checked_run_config(cfg)[0]


def checked_run_config(cfg: DictConfig) -> tuple[Config, torch.device, tuple[torch.device, ...]]:
    """The composed (or resumed) config as dataclasses with every value checked, before any work, its device
    and its inference servers' devices resolved (once: what runs below takes these torch.devices;
    `Config.server_devices`).

    Raises a ValueError subclass naming the key at fault: an unknown key
    (even one added with `+`), a value out of range (ConfigError,
    NetworkShapeError, MCTSConfigError, LearnerConfigError, RuleSetError,
    SelfPlayConfigError), a bad player spec among the opponents (ConfigError), or endgame tables asked for
    (mcts.tablebase, train.selfplay.tablebase_*) that are not built or are damaged (ConfigError naming the
    command that builds them)."""
    try:  # reading a value resolves its interpolation (`${oc.env:HOME}` for an int), which can fail too
        refuse_unknown_keys(cfg, Config, "")
        conf = OmegaConf.to_object(cfg)  # builds every dataclass, so each checks its own values
    except OmegaConfBaseException as e:
        raise ConfigError(hydra_error_line(e, dotted_keys(Config))) from None
    assert isinstance(conf, Config)
    rules = conf.rules.rule_set()
    for key, specs in (
        ("train.selfplay.opponents", conf.train.selfplay.opponents),
        ("train.eval.opponents", conf.train.eval.opponents),
    ):
        for spec in specs:
            try:
                make_player(spec, rules=rules, seed=0)
            except ValueError as e:  # PlayerSpecError, a missing checkpoint ...
                raise ConfigError(f"{key}: {e}") from None
    sp = conf.train.selfplay
    for key, on in (
        ("mcts.tablebase", conf.mcts.tablebase),
        ("train.selfplay.tablebase_adjudicate", sp.tablebase_adjudicate),
        ("train.selfplay.tablebase_rescore", sp.tablebase_rescore),
    ):
        if on:  # opened (and checked) now, so that missing or damaged tables stop the run before its directory exists
            try:
                default_tablebase(rules)
            except TablebaseError as e:
                raise ConfigError(f"{key}=true: {e}") from None
    if conf.train.selfplay.opponent_fraction > 0 and not conf.train.selfplay.opponents:
        raise ConfigError(
            f"train.selfplay.opponent_fraction={conf.train.selfplay.opponent_fraction} needs "
            "train.selfplay.opponents (player specs)"
        )
    device = conf.run_device()
    servers = conf.server_devices()
    conf.check_memory()
    return conf, device, servers


RENAMED_KEYS: dict[str, str] = {
    "train.inference_server": "train.inference.server",
    "train.inference_max_wait": "train.inference.max_wait",
    "train.inference_halves": "train.inference.halves",
    "train.eval.simulations": "train.eval.num_simulations",
}
"""Keys renamed since a run could store its config (old -> new): a stored config's old key is read under its
new name (`move_renamed_keys`); given on a command line, the old name is refused in one line naming the new one
(`refuse_renamed_keys`)."""


LATER_KEYS: dict[str, Any] = {
    "train.selfplay": SelfPlayConfig(),
    "train.reanalyse": 0.0,
    "model.input_planes": LEGACY_PLANES,
}
"""Keys (or nodes) that came after a run could store its config, each with the value such a run played
with, which is not always today's default: a stored config that lacks one resumes with that value (a
self-play key with plain self-play's, a run before reanalysis without it, a network before the rule planes
with its 24 planes), a stored config that has it keeps its own (`resumed_config`)."""


def refuse_renamed_keys(overrides: Sequence[str]) -> None:
    """ConfigError naming the new key for an override that sets a key by its old name (`RENAMED_KEYS`)."""
    for item in overrides:
        key = override_key(item)
        if key in RENAMED_KEYS:
            raise ConfigError(f"{key} is now {RENAMED_KEYS[key]} ({item})")


def move_renamed_keys(stored: DictConfig) -> None:
    """A stored config's keys of old (`RENAMED_KEYS`) moved, in place, to their new names."""
    for old, new in RENAMED_KEYS.items():
        where, _, name = old.rpartition(".")
        node = OmegaConf.select(stored, where)
        if isinstance(node, DictConfig) and name in node:
            OmegaConf.update(stored, new, node.pop(name), force_add=True)


def compose_config(overrides: Sequence[str] = ()) -> DictConfig:
    """The config that ``python train.py <overrides>`` would run, composed in this process (tests, notebooks).

    ConfigError, in one line, for an override Hydra refuses (an unknown key, a mistyped value...) and for a
    key given by its old name (`RENAMED_KEYS`)."""
    refuse_renamed_keys(overrides)
    register_configs()
    return compose(config_dir(""), "config", overrides, schema=Config, job_name="train")  # type: ignore[no-any-return]


def resumed_config(stored_yaml: str, path: Path, overrides: Sequence[str]) -> DictConfig:
    """The run's stored config (the composed config it started with) with this command line's
    `key=value` overrides, except `resume`, merged on top; a config group cannot change."""
    refuse_renamed_keys(overrides)
    dotlist = []
    for item in overrides:
        key = override_key(item)
        if key == "resume":
            continue
        if key in GROUPS:
            raise ConfigError(
                f"cannot change the config group {key!r} ({item}) of the run in {str(path)!r} "
                "when resuming; start a new run instead"
            )
        if "=" not in item or item.startswith("~"):
            raise ConfigError(f"cannot apply {item!r} when resuming: only key=value overrides are")
        dotlist.append(item.lstrip("+"))
    try:  # the schema refuses unknown keys and mistyped values
        stored = stored_config(stored_yaml, path)
        move_renamed_keys(stored)
        if isinstance(stored.get("mcts"), DictConfig):  # the flat search keys of earlier versions, into their nodes
            stored.mcts = migrate_flat_mcts(stored.mcts)
        base = OmegaConf.structured(Config)
        for key, value in LATER_KEYS.items():
            OmegaConf.update(base, key, value, merge=False)
        stored = OmegaConf.merge(base, stored)
    except OmegaConfBaseException as e:
        raise CheckpointError(
            f"checkpoint {str(path)!r}: its stored config does not fit this version's schema: "
            f"{hydra_error_line(e, dotted_keys(Config))}"
        ) from None
    try:
        cfg = OmegaConf.merge(stored, OmegaConf.from_dotlist(dotlist))
    except OmegaConfBaseException as e:
        raise ConfigError(f"resuming {str(path)!r}: {hydra_error_line(e, dotted_keys(Config))}") from None
    assert isinstance(cfg, DictConfig)
    with open_dict(cfg):  # as Hydra hands a composed config over: without its own nodes
        cfg.pop("defaults")
        cfg.pop("hydra")
    return cfg

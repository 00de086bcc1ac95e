"""AlphaZero self-play training for Jungle.

    python train.py                                  # CPU training on the embedded default config
    python train.py preset=gpu                       # a GPU run (model large, train=gpu, 64 simulations)
    python train.py preset=smoke name=smoke          # a few seconds per iteration
    python train.py name=my-run train.iterations=100 # any field can be overridden
    python train.py resume=my-run                    # continue a run (its name, its directory or its latest.pt)
    python train.py init=shipped:default-180 name=ft  # a new run starting from given weights
    tensorboard --logdir checkpoints                 # watch

The script reads top to bottom: seed -> build -> loop {self-play -> learn ->
evaluate -> checkpoint}; the machinery lives in `agents/`. Everything a run
writes is in ``checkpoints/<name>/``: ``latest.pt`` (resumable), ``best.pt``
and ``iter_NNNNNN.pt`` (weights), ``config.yaml``, the self-play games
(``games.jsonl``), the TensorBoard events and ``run.json`` (the run's id).

Faults. One process at a time writes to a run directory (a lock file; a
second writer is refused, naming the first's pid), and a run touches only
what it wrote: a fresh run refuses a directory holding anything else
(agents.rundir). The first Ctrl-C or SIGTERM abandons self-play or an
evaluation at once, or lets learning and a checkpoint finish, writes
latest.pt when it is behind and prints the resume command; a second one
stops at once. A run stopped before its first checkpoint removes what it
wrote; a Ctrl-C while the script starts prints one line. A resumed run cuts
games.jsonl and the TensorBoard events back to what its checkpoint had seen,
so a killed and resumed run writes the same records as one never stopped.
"""

from __future__ import annotations

import os
import signal
import sys

if __name__ == "__main__":  # the imports below take seconds: a Ctrl-C meanwhile stops with one line
    signal.signal(signal.SIGINT, lambda *_: (sys.stderr.write("\nCtrl-C: stopped while starting; nothing was "
                                                              "written\n"), sys.stderr.flush(), os._exit(130)))

import logging
import math
import random
import time
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, get_type_hints

import hydra
import numpy as np
import torch
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from agents.alphazero.checkpoint import (
    BEST,
    LATEST,
    CheckpointError,
    check_compatible,
    load_checkpoint,
    require_training_state,
    resolve_checkpoint_path,
    resume_dir,
    rng_state,
    save_checkpoint,
    set_rng_state,
    stored_config,
)
from agents.alphazero.evaluation import Searcher, play_match, play_vs_spec, spec_tag
from agents.arena.ratings import elo_from_score, score_interval
from agents.alphazero.learner import LearnMetrics, Learner, LearnerConfig, LearnerDivergedError
from agents.alphazero.search import MCTSConfig, migrate_flat_mcts
from agents.alphazero.device import MAX_THREADS, resolve_device
from agents.alphazero.network import NetworkConfig, build_network, count_parameters
from agents.alphazero.runtime import NonFiniteOutputError, make_evaluator
from agents.alphazero.progress import PhaseClock, evaluation_due
from agents.arena.records import append_jsonl, cut_torn_tail
from agents.cli import hydra_entry
from agents.io import atomic_write_text
from agents.rundir import (
    RUN_FILE,
    RunRecord,
    check_run_name,
    check_writable_dir,
    claim_run_dir,
    fresh_run_leftovers,
    log_sizes,
    new_run_id,
    owned_log,
    read_run_record,
    remove_run_files,
    rewind_logs,
    write_run_record,
)
from agents.stopping import GracefulStop, signal_name
from agents.alphazero.replay import POSITION_BYTES, ReplayBuffer, ReplayError
from agents.alphazero.search.config import MAX_SIMULATIONS
from agents.alphazero.search.tree import NODE_BYTES, default_nodes
from agents.alphazero.selfplay import SelfPlayConfig
from agents.alphazero.selfplay_data import SelfPlayStats
from agents.alphazero.workers import BACKENDS, WorkerBackendError, WorkerSettings, make_selfplay_pool
from agents.alphazero.inference import InferenceSettings
from envs import RuleSet
from envs.players import make_player
from envs.seeding import derive_seed
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
    shown,
)
from envs.rules import COUNTER_LIMIT, RulesConfig

log = logging.getLogger("train")

LOGS = ("games.jsonl", "events.out.tfevents.*")
"""The run's append-only logs: a resumed run cuts them back to what its checkpoint had seen."""
CONFIG_FILE = "config.yaml"
"""The run's config as it runs (rewritten by each sitting)."""


# --------------------------------------------------------------------------------------------
# Configuration (the embedded default config; YAML groups in configs/ override parts of it)
# --------------------------------------------------------------------------------------------
@dataclass
class EvalConfig:
    """How the network is measured during training."""

    every: int = 6
    """Evaluate every this many iterations (and at the last one); 0 switches evaluation off. >= 0."""
    games: int = 24
    """Games per opponent (colours alternate; pairs share a random opening); 1 to 100000."""
    simulations: int = 128
    """Search simulations per move of the network in evaluation games (no exploration noise); 1 to
    `MAX_SIMULATIONS` (100000)."""
    opponents: list[str] = field(default_factory=lambda: ["alphabeta:depth=1", "alphabeta:depth=2",
                                                          "alphabeta:depth=3"])
    """The ladder: player specs (see envs/players.py); each gets eval/score_<spec>. The default is the
    alpha-beta ladder of the strength goal (``random`` is beaten from the first evaluation on)."""
    vs_previous: bool = True
    """Also play the network of the previous evaluation; its score drives the running Elo estimate."""
    opening_plies: int = 2
    """Random plies before the players take over, so deterministic players give varied games; 0 to 30000."""
    max_plies: int = 300
    """An evaluation game longer than this is a draw; 1 to `COUNTER_LIMIT` (30000)."""

    def __post_init__(self) -> None:
        check_range(self, "train.eval", every=(0, None), games=(1, 100_000), simulations=(1, MAX_SIMULATIONS),
                    opening_plies=(0, COUNTER_LIMIT), max_plies=(1, COUNTER_LIMIT))
        if isinstance(self.opponents, str):
            raise ConfigError(f"train.eval.opponents={self.opponents!r} must be a list of player specs")


@dataclass
class TrainConfig:
    """The self-play / learning loop (group `train`)."""

    iterations: int = 60
    """Iterations of {self-play, learn, evaluate, checkpoint}; >= 1."""
    games_per_iteration: int = 64
    """Self-play games per iteration; 1 to 1000000 (an iteration's positions are held in memory)."""
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    """How the self-play games are played: games at once (`parallel`), `max_plies`, playout caps,
    opponent games (`opponents`, `opponent_fraction`); see agents.alphazero.selfplay.SelfPlayConfig.
    Its `player_name` is the run's name."""
    workers: int = 0
    """Self-play worker processes or actors, each with a CPU copy of the network (0: self-play runs in
    this process, on `device`); 0 to 1024. A worker plays its share of the games, `selfplay.parallel` at
    a time; the games are those the in-process loop would play with the same seed."""
    worker_backend: str = "process"
    """Where the workers run when `workers` > 0: `process` (local processes) or `ray` (Ray actors;
    pip install -e '.[distributed]'); `inprocess` ignores `workers`."""
    ray_address: str = ""
    """The Ray cluster to join (`ray.init(address=...)`, e.g. `auto`); empty: start a local one."""
    inference_server: bool = False
    """The workers hold no network: they send their leaf batches to one inference process that owns
    `device` and evaluates the leaves of all of them at once (agents.alphazero.inference), which keeps a
    GPU busy. Needs `workers` >= 1 on the `process` or `ray` backend; the games stay the same."""
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
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    """Optimizer, schedule and loss weights."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Evaluation ladder."""
    checkpoint_every: int = 1
    """Write latest.pt (and iter_NNNNNN.pt) every this many iterations (and at the last one); >= 1."""
    replay_in_checkpoint_mb: float = 512.0
    """Save the replay contents in latest.pt when they take at most this many MB; above, only its
    counters. >= 0."""
    write_games: bool = True
    """Append the self-play games to games.jsonl in the run directory."""

    def __post_init__(self) -> None:
        check_range(self, "train", iterations=(1, None), games_per_iteration=(1, 1_000_000), workers=(0, 1024),
                    replay_capacity=(1, 100_000_000), min_replay=(0, None), batch_size=(1, 65536),
                    train_ratio=(0, None), max_steps_per_iteration=(1, None), checkpoint_every=(1, None),
                    replay_in_checkpoint_mb=(0, None))
        if self.selfplay.player_name != SelfPlayConfig.player_name:
            raise ConfigError(f"train.selfplay.player_name={self.selfplay.player_name!r}: the run's name is "
                              "the network's name in its games (set name=... instead)")
        if self.min_replay > self.replay_capacity:
            raise ConfigError(f"train.min_replay={self.min_replay} exceeds train.replay_capacity="
                              f"{self.replay_capacity}: learning would never start")
        check_choice(self, "train", WorkerBackendError, worker_backend=BACKENDS)
        if self.inference_server and (self.workers < 1 or self.worker_backend == "inprocess"):
            raise ConfigError(f"train.inference_server=true serves self-play workers: it needs train.workers >= 1 on "
                              f"the process or ray backend (got {self.workers} on {self.worker_backend!r})")


@dataclass
class Config:
    """Top-level training configuration."""

    defaults: list[Any] = field(default_factory=lambda: [
        "_self_", {"model": "small"}, {"mcts": "gumbel"}, {"rules": "default"}, {"train": "default"},
        {"preset": "cpu"}, {"override hydra/job_logging": "stdout"},
    ])
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
    agents.alphazero.device.inference_dtype). The learner keeps fp32 master weights."""
    compile: bool = False
    """torch.compile the network (GPU runs; slow to start)."""
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
    mcts: MCTSConfig = field(default_factory=MCTSConfig)
    """Tree search used by self-play and evaluation (group `mcts`)."""
    rules: RulesConfig = field(default_factory=RulesConfig)  # type: ignore[valid-type]
    """Rule set (group `rules`; see envs/rules.py)."""
    train: TrainConfig = field(default_factory=TrainConfig)
    """The loop (group `train`)."""
    hydra: Any = field(default_factory=lambda: {
        "run": {"dir": "."}, "output_subdir": None, "job": {"chdir": False},
    })
    """Hydra's own settings: no output directory of its own, no change of working directory."""

    def __post_init__(self) -> None:
        check_range(self, "", seed=(0, 2**32 - 1), threads=(0, MAX_THREADS))
        if self.mcts.num_simulations < 1:
            raise ConfigError(f"mcts.num_simulations={self.mcts.num_simulations!r}: self-play and evaluation "
                              "need at least 1 simulation per move")
        if self.name:
            check_run_name(self.name)
        try:
            device = resolve_device(self.device)
        except ValueError as e:
            hint = " (preset=gpu asks for device=cuda; the default preset=cpu runs on the CPU)" \
                if self.device.startswith("cuda") else ""
            raise ConfigError(f"{e}{hint}") from None
        self._check_memory(device)

    def _check_memory(self, device: torch.device) -> None:
        """Refuse a replay buffer or self-play trees larger than this machine's memory (both are made whole
        at the start; the network's own memory is bounded by the model's shape)."""
        total = machine_memory()
        tc, sims = self.train, self.mcts.num_simulations
        needs = (
            (f"the replay buffer (train.replay_capacity={tc.replay_capacity})", tc.replay_capacity * POSITION_BYTES),
            (f"the self-play trees (train.selfplay.parallel={tc.selfplay.parallel} games x mcts.num_simulations="
             f"{sims})", tc.selfplay.parallel * default_nodes(sims) * NODE_BYTES),
        )
        for what, need in needs:
            if total is not None and need > total:
                raise ConfigError(f"{what} would take {need / 2**30:.1f} GiB, more than this machine's "
                                  f"{total / 2**30:.1f} GiB of memory")


SCHEMAS: dict[str, type] = {"model": NetworkConfig, "mcts": MCTSConfig, "rules": RulesConfig, "train": TrainConfig}
"""The dataclass of each config group; each group's yaml files start from it (``defaults: [schema, _self_]``)."""
GROUPS = (*SCHEMAS, "preset")
"""The config groups; `preset` (configs/preset/) has no node of its own and sets several others."""
ConfigStore.instance().store(name="config", node=Config)
for _group, _schema in SCHEMAS.items():
    ConfigStore.instance().store(group=_group, name=SCHEMA, node=_schema)


def refuse_unknown_keys(node: Any, schema: type, where: str) -> None:
    """Raise ConfigError for a key of `node` (and of its sub-nodes) that `schema` does not have (`+train.bogus=1`)."""
    config_kwargs(schema, node, where or "top-level config", ConfigError)
    types = get_type_hints(schema)
    for f in fields(schema):
        if is_dataclass(types[f.name]) and isinstance(node.get(f.name), DictConfig):
            refuse_unknown_keys(node[f.name], types[f.name], f"{where}.{f.name}".lstrip("."))


def checked_config(cfg: DictConfig) -> Config:
    """The composed (or resumed) config as dataclasses with every value checked, before any work.

    Raises a ValueError subclass naming the key at fault: an unknown key
    (even one added with `+`), a value out of range (ConfigError,
    NetworkShapeError, MCTSConfigError, LearnerConfigError, RuleSetError,
    SelfPlayConfigError) or a bad player spec among the opponents (ConfigError)."""
    try:  # reading a value resolves its interpolation (`${oc.env:HOME}` for an int), which can fail too
        refuse_unknown_keys(cfg, Config, "")
        conf = OmegaConf.to_object(cfg)  # builds every dataclass, so each checks its own values
    except OmegaConfBaseException as e:
        raise ConfigError(hydra_error_line(e, dotted_keys(Config))) from None
    assert isinstance(conf, Config)
    rules = conf.rules.rule_set()
    for key, specs in (("train.selfplay.opponents", conf.train.selfplay.opponents),
                       ("train.eval.opponents", conf.train.eval.opponents)):
        for spec in specs:
            try:
                make_player(spec, rules=rules, seed=0)
            except ValueError as e:  # PlayerSpecError, a missing checkpoint ...
                raise ConfigError(f"{key}: {e}") from None
    if conf.train.selfplay.opponent_fraction > 0 and not conf.train.selfplay.opponents:
        raise ConfigError(f"train.selfplay.opponent_fraction={conf.train.selfplay.opponent_fraction} needs "
                          "train.selfplay.opponents (player specs)")
    return conf


def compose_config(overrides: Sequence[str] = ()) -> DictConfig:
    """The config that ``python train.py <overrides>`` would run, composed in this process (tests, notebooks).

    ConfigError, in one line, for an override Hydra refuses (an unknown key, a mistyped value...)."""
    return compose(config_dir(""), "config", overrides, schema=Config, job_name="train")  # type: ignore[no-any-return]


def main(cfg: Optional[DictConfig] = None) -> None:
    """``python train.py <overrides>``: `run` as Hydra's entry point, after the command line's overrides
    have composed in this process (agents.cli.hydra_entry: an override Hydra refuses stops with one line,
    exit 2). With `cfg` (a composed config): `run` on it."""
    if cfg is not None:
        return run(cfg)
    hydra_entry("train.py", compose_config, run)


# --------------------------------------------------------------------------------------------
@hydra.main(version_base=None, config_path="configs", config_name="config")
def run(cfg: DictConfig) -> None:
    # -- configuration: a fresh run, or the stored config of the run being resumed; every value is
    #    checked here, before any work and before the run directory exists ------------------------
    resume_from: Optional[dict[str, Any]] = None
    resume_path = Path()
    try:
        if cfg.resume:
            resume_path = resolve_checkpoint_path(cfg.resume, cfg.out_dir)
            resume_from = load_checkpoint(resume_path)
            require_training_state(resume_from, resume_path)  # best.pt, iter_*.pt: weights only (see init=)
            loaded_as = file_identity(resume_path)
            cfg = resumed_config(resume_from["config"], resume_path, HydraConfig.get().overrides.task)
        given = {override_key(o) for o in HydraConfig.get().overrides.task}
        if not cfg.name:
            if "name" in given:
                check_run_name(cfg.name)  # name= given empty
            cfg.name = time.strftime("az-%Y%m%d-%H%M%S")
        conf = checked_config(cfg)
        check_writable_dir(cfg.out_dir)
        init_from: Optional[dict[str, Any]] = None
        if resume_from is not None:
            if "init" in given:
                raise CheckpointError("init= starts a new run from given weights and resume= continues a run: "
                                      "give one of them")
            check_compatible(resume_from, resume_path, network=conf.model, rules=conf.rules.rule_set())
            # In the directory of its latest.pt, never in the run its config names (a copy would rewind it).
            run_dir = resume_dir(resume_path, Path(cfg.out_dir) / cfg.name if given & {"name", "out_dir"} else None)
            cfg.name, cfg.out_dir = run_dir.name, str(run_dir.parent)
            if run_dir.resolve() != resume_path.parent.resolve():
                fresh_run_leftovers(run_dir, LOGS, kept=(CONFIG_FILE,))  # a copy starts in a directory of its own
        else:
            run_dir = Path(cfg.out_dir) / cfg.name
            fresh_run_leftovers(run_dir, LOGS, kept=(CONFIG_FILE,))  # refuses a directory holding what it did not write
            if cfg.init:
                init_path = resolve_checkpoint_path(cfg.init, cfg.out_dir)
                init_from = load_checkpoint(init_path)
                check_compatible(init_from, init_path, network=conf.model, rules=conf.rules.rule_set())
    except ValueError as e:  # ConfigError, CheckpointError, PlayerSpecError, RuleSetError, ...
        print(f"train.py: error: {e}", file=sys.stderr)
        sys.exit(2)
    in_place = resume_from is not None and run_dir.resolve() == resume_path.parent.resolve()
    again = f"python train.py resume={run_dir}"
    # From here on a first Ctrl-C or SIGTERM stops at the next safe point; a second one at once (and after the
    # loop, Python's own Ctrl-C again, not the one line of the start).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    stop = GracefulStop(on_second=f"stopped at once; continue from the last checkpoint: {again}").install()
    stop.waiting_for = "the start"
    rules, net_cfg, mcts_cfg, learner_cfg, tc = conf.rules.rule_set(), conf.model, conf.mcts, conf.train.learner, conf.train

    # -- seed ----------------------------------------------------------------------------------
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)

    # -- build (and restore a resumed run's every part, each checked, before its directory is claimed) ----
    device = resolve_device(cfg.device)
    model = build_network(net_cfg).to(device)
    learner = Learner(model, learner_cfg, device=device, amp=cfg.amp)
    replay = ReplayBuffer(tc.replay_capacity, mirror=tc.mirror, seed=cfg.seed)
    counters: dict[str, Any] = {"iteration": 0, "positions": 0, "games": 0, "simulations": 0, "seconds": 0.0}
    history: dict[str, Any] = {"elo": 0.0, "best_score": -1.0}
    previous = build_network(net_cfg).to(device)  # the network of the previous evaluation
    try:
        if init_from is not None:
            restore(init_path, "model", lambda: model.load_state_dict(init_from["model"]))
        previous.load_state_dict(model.state_dict())
        if resume_from is not None:
            state = resume_from
            restore(resume_path, "model", lambda: model.load_state_dict(state["model"]))
            restore(resume_path, "learner", lambda: learner.load_state_dict(state["learner"]))
            restore(resume_path, "replay", lambda: replay.load_state_dict(state["replay"]))
            restore(resume_path, "counters", lambda: counters.update(checked_counters(state["counters"])))
            restore(resume_path, "extra", lambda: history.update(checked_extra(state["extra"])["history"]))
            restore(resume_path, "extra", lambda: previous.load_state_dict(state["extra"]["previous_model"]))
            restore(resume_path, "rng", lambda: set_rng_state(state["rng"]))
    except CheckpointError as e:
        print(f"train.py: error: {e}", file=sys.stderr)
        sys.exit(2)

    # -- the run directory: this process alone writes to it, only what it wrote is touched, logs cut
    #    back to the checkpoint ----------------------------------------------------------------------
    created = not run_dir.exists()
    stored_id = resume_from.get("run_id") if in_place and resume_from is not None else None
    run_id = stored_id if isinstance(stored_id, str) and stored_id else new_run_id()  # os.urandom: seeds untouched
    leftovers: list[Path] = []

    def check_under_lock() -> None:  # again under the lock: another process may have written meanwhile
        nonlocal leftovers
        if not in_place:
            leftovers = fresh_run_leftovers(run_dir, LOGS, kept=(CONFIG_FILE,))
        elif file_identity(resume_path) != loaded_as:
            raise CheckpointError(f"{str(resume_path)!r} was rewritten while this run started; start it again")

    try:
        lock = claim_run_dir(run_dir, check=check_under_lock)  # refuses a second writer, naming its pid
    except ValueError as e:
        print(f"train.py: error: {e}", file=sys.stderr)
        sys.exit(2)
    if in_place:
        assert resume_from is not None
        record = read_run_record(run_dir)
        logs = resume_from["extra"].get("logs")
        if logs is None:
            log.warning("%s predates log rewinding: games.jsonl and the events may repeat the interrupted iteration",
                        resume_path)
        else:
            if record is None or record.run_id != stored_id:
                log.warning("%s does not name this directory's run (%s): only the logs it lists are cut back",
                            resume_path, RUN_FILE)
            for change in rewind_logs(run_dir, logs, LOGS,
                                      owned=lambda name: owned_log(name, str(stored_id), record, LOGS)):
                log.info("%s", change)
        # The run's games.jsonl (its checkpoint saw it), shorter than it was then and cut inside a line:
        torn = cut_torn_tail(run_dir / "games.jsonl") if "games.jsonl" in (logs or {}) else 0
        if torn:
            log.warning("cut %d bytes of an unfinished last line from games.jsonl (the file lost its end)", torn)
    for leftover in leftovers:  # what an attempt that never wrote a checkpoint left (checked above)
        leftover.unlink(missing_ok=True)
        log.info("removed %s (left by an attempt that wrote no checkpoint)", leftover.name)
    write_run_record(run_dir, RunRecord(run_id, checkpointed=in_place))
    if resume_from is not None:
        log.info("resuming %s at iteration %d%s", resume_path, resume_from["counters"]["iteration"],
                 "" if in_place else f" as the new run {run_dir}")
    elif init_from is not None:
        log.info("new run %s from the weights of %s", run_dir, init_path)
    config_yaml = OmegaConf.to_yaml(cfg)
    atomic_write_text(run_dir / CONFIG_FILE, config_yaml)
    net: Any = torch.compile(model) if cfg.compile else model
    evaluator = make_evaluator(net, device, cfg.precision)
    selfplay = replace(tc.selfplay, player_name=cfg.name)
    selfplay_settings = WorkerSettings(network=net_cfg.to_dict(), mcts=asdict(mcts_cfg), rules=rules.to_dict(),
                                       selfplay=selfplay, precision=cfg.precision)
    # The pool checks the settings (opponent specs included) before any game.
    inference = (InferenceSettings(device=str(device), precision=cfg.precision, threads=cfg.threads)
                 if tc.inference_server else None)
    pool = make_selfplay_pool(tc.worker_backend, tc.workers, selfplay_settings, evaluator=evaluator,
                              address=tc.ray_address, inference=inference)
    writer = SummaryWriter(str(run_dir), purge_step=counters["iteration"] + 1 if in_place else None,
                           filename_suffix=f".{run_id}")  # the run's own event files (agents.rundir.owned_log)
    if not in_place:
        writer.add_text("config", "```\n" + config_yaml + "\n```", 0)
    log.info("run %s: %s, %d parameters, device %s, %s search with %d simulations, self-play %s",
             cfg.name, net_cfg, count_parameters(model), device, mcts_cfg.algorithm, mcts_cfg.num_simulations,
             (f"on {pool.workers} {pool.backend} workers" if pool.workers else "in this process")
             + (f" feeding an inference server on {device}" if tc.inference_server else ""))

    # -- loop: {self-play -> learn -> evaluate -> checkpoint}; a stop signal ends it at a safe point ---
    clock = PhaseClock(history.get("phase_seconds"))  # seconds per phase, for the ETA
    progress = sys.stderr.isatty()
    pending_eval = bool(resume_from and resume_from["extra"].get("pending_eval"))  # stopped before it evaluated
    saved = (counters["iteration"], pending_eval)  # what latest.pt holds: (iteration, its evaluation still to do)
    stopped = ""
    checkpointed = in_place

    def save_latest(pending: bool, rng: Optional[dict[str, Any]] = None) -> None:
        """latest.pt: the weights and all a resume needs, and the sizes of the logs it has seen."""
        nonlocal saved, checkpointed
        writer.flush()
        keep_contents = replay.nbytes() <= tc.replay_in_checkpoint_mb * 2**20
        save_checkpoint(run_dir / LATEST, dict(
            weights_state(model, net_cfg, rules, config_yaml, counters, learner.step_count, run_id),
            learner=learner.state_dict(), replay=replay.state_dict(contents=keep_contents),
            rng=rng if rng is not None else rng_state(),
            extra={"history": dict(history, phase_seconds=clock.state_dict()), "previous_model": previous.state_dict(),
                   "logs": log_sizes(run_dir, LOGS), "pending_eval": pending},
        ))
        saved = (counters["iteration"], pending)
        if not checkpointed:  # from now on a fresh start refuses this directory: it holds a run to resume
            write_run_record(run_dir, RunRecord(run_id, checkpointed=True))
            checkpointed = True

    it = counters["iteration"]
    failure, advice = "", f"continue with: {again}"
    try:
        with pool, stop:
            started = time.time()
            for it in range(counters["iteration"] + (0 if pending_eval else 1), tc.iterations + 1):
                if stop.requested:
                    stopped = f"before iteration {it}"
                    break
                t0 = time.time()
                last = it == tc.iterations
                due = evaluation_due(it, tc.iterations, tc.eval.every)
                s: Optional[SelfPlayStats] = None
                metrics = LearnMetrics()
                steps, selfplay_seconds = 0, 0.0
                if not pending_eval:
                    # self-play (a fraction of the games against the opponents, built from their specs, when there
                    # are any); a stop abandons it at once: nothing has changed yet
                    rng_before = rng_state()
                    opponent_seeds = [derive_seed(cfg.seed, "opponent", k, it) for k in range(len(selfplay.opponents))]
                    data = stop.abandonable(pool.play, model.state_dict(), seed=derive_seed(cfg.seed, "selfplay", it),
                                            num_games=tc.games_per_iteration, opponent_seeds=opponent_seeds,
                                            progress=progress)
                    if data is None:
                        stopped = f"during the self-play of iteration {it} (its games are dropped)"
                        if saved != (it - 1, False):
                            save_latest(pending=False, rng=rng_before)
                        break
                    for record in data.records:
                        record.extra["iteration"] = it
                    replay.add(data.obs, data.mask, data.policy, data.value, data.full_search, data.survival)
                    if tc.write_games:
                        append_jsonl(run_dir / "games.jsonl", data.records)
                    s = data.stats
                    counters["positions"] += int(s.positions)
                    counters["games"] += int(s.games)
                    counters["simulations"] += int(s.simulations)
                    selfplay_seconds = time.time() - t0
                    clock.add("selfplay", selfplay_seconds)
                    log_selfplay(writer, it, s, selfplay_seconds, selfplay.opponent_fraction > 0)

                    # learn; a stop waits for the end of this phase
                    stop.waiting_for = f"the learning of iteration {it}"
                    t1 = time.time()
                    if len(replay) >= tc.min_replay:
                        steps = min(tc.max_steps_per_iteration,
                                    max(1, round(len(data.value) * tc.train_ratio / tc.batch_size)))
                        metrics = learner.learn(replay, steps, tc.batch_size, progress)
                    clock.add("learn", time.time() - t1)
                    for tag, value in metrics.tags().items():  # means over the steps, but the count of the skipped ones
                        writer.add_scalar(tag, value, it)
                    writer.add_scalar("perf/learner_steps", learner.step_count, it)
                    writer.add_scalar("perf/replay_positions", len(replay), it)
                    writer.add_scalar("perf/seconds_learn", time.time() - t1, it)
                    counters["iteration"] = it
                    counters["seconds"] += time.time() - t0
                    if stop.requested and due:
                        save_latest(pending=True)
                        stopped = f"before the evaluation of iteration {it}, which the resumed run plays"
                        break

                # evaluate; a stop abandons it at once and the resumed run plays it again
                t2 = time.time()
                scores: dict[str, float] = {}
                if due:
                    stop.waiting_for = f"the evaluation of iteration {it}"
                    if not progress:
                        log.info("iter %d: evaluation (%d games against each of %s)", it, tc.eval.games,
                                 ", ".join([*tc.eval.opponents, *(["previous"] if tc.eval.vs_previous else [])]))
                    result = stop.abandonable(evaluate, evaluator, previous, tc.eval, mcts_cfg, rules, cfg.seed, it,
                                              device, cfg.precision, float(history["elo"]), progress)
                    if result is None:
                        if saved != (it, True):
                            save_latest(pending=True)
                        stopped = f"during the evaluation of iteration {it}, which the resumed run plays again"
                        break
                    scores = result
                    history["elo"] = scores.get("elo", history["elo"])
                    for k, v in scores.items():
                        writer.add_scalar(f"eval/{k}", v, it)
                    previous.load_state_dict(model.state_dict())
                    clock.add("eval", time.time() - t2)
                    writer.add_scalar("perf/seconds_eval", time.time() - t2, it)
                    counters["seconds"] += time.time() - t2
                pending_eval = False

                # checkpoint; a stop waits for it, and writes one when none is due
                stop.waiting_for = "the checkpoint"
                t3 = time.time()
                if it % tc.checkpoint_every == 0 or last or stop.requested:
                    state = weights_state(model, net_cfg, rules, config_yaml, counters, learner.step_count, run_id)
                    save_checkpoint(run_dir / f"iter_{it:06d}.pt", state)
                    ladder = scores.get("ladder_score")
                    if ladder is not None and ladder >= history["best_score"]:
                        history["best_score"] = ladder
                        save_checkpoint(run_dir / BEST, dict(state, extra={"scores": scores}))
                    save_latest(pending=False)
                clock.add("checkpoint", time.time() - t3)
                counters["seconds"] += time.time() - t3
                # Written after latest.pt: a kill before the next checkpoint drops this one timing.
                writer.add_scalar("perf/seconds_checkpoint", time.time() - t3, it)

                # progress: the ETA prices the phases still to come (evaluations cost more)
                eta, unpriced = clock.eta(it, tc.iterations, tc.eval.every)
                log.info("%s | %.0fs, %s elapsed, ETA %s%s", iteration_line(it, tc.iterations, s, selfplay_seconds,
                         steps, metrics, scores), time.time() - t0, format_seconds(counters["seconds"]),
                         format_seconds(eta), f" + {unpriced} evaluations" if unpriced else "")
                if stop.requested:
                    stopped = f"after iteration {it}"
                    break
    except (LearnerDivergedError, NonFiniteOutputError, ReplayError, CheckpointError) as e:
        failure = f"iteration {it}: {e}"
        if not isinstance(e, CheckpointError):
            advice = f"continue with a lower learning rate: {again} train.learner.lr={learner_cfg.lr / 10:g}"
    except OSError as e:  # a full disk, a file system gone read-only: the last latest.pt is whole
        failure = f"iteration {it}: cannot write {e.filename or 'a file of the run'}: {e.strerror or e}"
    if failure:
        try:
            writer.close()
        except OSError:
            pass
        kept = (f"latest.pt holds iteration {saved[0]}; {advice}" if (run_dir / LATEST).is_file()
                else "no checkpoint was written")
        print(f"train.py: error: {failure}; {kept}", file=sys.stderr)
        sys.exit(1)
    writer.close()
    if stop.requested:
        at = f"iteration {saved[0]}" + (" (its evaluation still to play)" if saved[1] else "")
        if (run_dir / LATEST).is_file():
            then = f"latest.pt holds {at}; continue with: {again}"
        else:  # nothing to resume: nothing is kept, and the same command starts afresh
            remove_run_files(run_dir, run_id, LOGS, kept=(CONFIG_FILE,), created=created)
            lock.release()
            then = "no checkpoint was written yet, so nothing was kept: run the same command again to start afresh"
        print(f"{signal_name(stop.requested)}: stopped {stopped}; {then}", file=sys.stderr)
        sys.exit(stop.exit_code)
    log.info("done: %s (%s)", run_dir, format_seconds(time.time() - started))


# --------------------------------------------------------------------------------------------
# Helpers (kept here because only this script needs them)
# --------------------------------------------------------------------------------------------
def resumed_config(stored_yaml: str, path: Path, overrides: Sequence[str]) -> DictConfig:
    """The run's stored config (the composed config it started with) with this command line's
    `key=value` overrides, except `resume`, merged on top; a config group cannot change."""
    dotlist = []
    for item in overrides:
        key = override_key(item)
        if key == "resume":
            continue
        if key in GROUPS:
            raise ConfigError(f"cannot change the config group {key!r} ({item}) of the run in {str(path)!r} "
                              "when resuming; start a new run instead")
        if "=" not in item or item.startswith("~"):
            raise ConfigError(f"cannot apply {item!r} when resuming: only key=value overrides are")
        dotlist.append(item.lstrip("+"))
    try:  # the schema refuses unknown keys and mistyped values
        stored = stored_config(stored_yaml, path)
        if isinstance(stored.get("mcts"), DictConfig):  # the flat search keys of earlier versions, into their nodes
            stored.mcts = migrate_flat_mcts(stored.mcts)
        stored = OmegaConf.merge(OmegaConf.structured(Config), stored)
    except OmegaConfBaseException as e:
        raise CheckpointError(f"checkpoint {str(path)!r}: its stored config does not fit this version's schema: "
                              f"{hydra_error_line(e, dotted_keys(Config))}") from None
    try:
        cfg = OmegaConf.merge(stored, OmegaConf.from_dotlist(dotlist))
    except OmegaConfBaseException as e:
        raise ConfigError(f"resuming {str(path)!r}: {hydra_error_line(e, dotted_keys(Config))}") from None
    with open_dict(cfg):  # as Hydra hands a composed config over: without its own nodes
        cfg.pop("defaults")
        cfg.pop("hydra")
    return cfg  # type: ignore[return-value]


def log_selfplay(writer: SummaryWriter, it: int, s: SelfPlayStats, seconds: float, opponents: bool) -> None:
    games = max(1, int(s.games))
    writer.add_scalar("perf/seconds_selfplay", seconds, it)
    writer.add_scalar("selfplay/games_per_s", s.games / max(seconds, 1e-9), it)
    writer.add_scalar("selfplay/positions_per_s", s.positions / max(seconds, 1e-9), it)
    writer.add_scalar("selfplay/simulations_per_s", s.simulations / max(seconds, 1e-9), it)
    writer.add_scalar("selfplay/game_length", s.mean_length, it)
    writer.add_scalar("selfplay/red_wins", s.red_wins / games, it)
    writer.add_scalar("selfplay/blue_wins", s.blue_wins / games, it)
    writer.add_scalar("selfplay/draws", s.draws / games, it)
    if opponents:
        writer.add_scalar("selfplay/opponent_games", s.opponent_games, it)
        if s.opponent_games:
            writer.add_scalar("selfplay/opponent_score", s.opponent_score, it)


def weights_state(model: torch.nn.Module, network: NetworkConfig, rules: RuleSet, config_yaml: str,
                  counters: dict[str, Any], learner_steps: int, run_id: str) -> dict[str, Any]:
    """What every checkpoint of the run holds: the weights, their shape, the rules, the config, the counters
    and the run's id."""
    return {"model": model.state_dict(), "network": network.to_dict(), "rules": rules.to_dict(),
            "config": config_yaml, "counters": dict(counters, learner_steps=learner_steps), "run_id": run_id}


def machine_memory() -> Optional[int]:
    """This machine's physical memory in bytes (None where the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def restore(path: Path, part: str, action: Callable[[], Any]) -> None:
    """Run `action`, which loads the `part` entry of the checkpoint at `path` into this run; CheckpointError
    naming the part when that entry is damaged (a wrong type, shape or key), before the run directory is claimed."""
    try:
        action()
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError, OverflowError) as e:
        text = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"checkpoint {str(path)!r}: its {part} entry is damaged ({text})") from None


def checked_counters(counters: Any) -> dict[str, Any]:
    """A checkpoint's counters (iteration, positions, games, simulations: integers >= 0; seconds: a finite
    number); ValueError naming the first that is not."""
    if not isinstance(counters, dict):
        raise TypeError(f"a mapping is expected, got {type(counters).__name__}")
    for key in ("iteration", "positions", "games", "simulations", "learner_steps"):
        value = counters.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{key}={shown(value)} is not an integer >= 0")
    seconds = counters.get("seconds", 0.0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise ValueError(f"seconds={shown(seconds)} is not a finite number")
    return counters


def checked_extra(extra: Any) -> dict[str, Any]:
    """A latest.pt's extra entry: history (numbers), previous_model (a state dict), logs (sizes or None) and
    pending_eval (a bool); ValueError or TypeError naming what is wrong."""
    if not isinstance(extra, dict) or not isinstance(extra.get("history"), dict):
        raise TypeError("a mapping with a history mapping is expected")
    for key in ("elo", "best_score"):
        value = extra["history"].get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"history.{key}={shown(value)} is not a finite number")
    if not isinstance(extra.get("previous_model"), dict):
        raise TypeError("previous_model is not a state dict")
    logs = extra.get("logs")
    if logs is not None and not (isinstance(logs, dict) and all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in logs.items())):
        raise ValueError("logs is not a mapping of file names to sizes")
    if not isinstance(extra.get("pending_eval", False), bool):
        raise TypeError("pending_eval is not true or false")
    return extra


def file_identity(path: Path) -> tuple[int, int, int]:
    """(inode, size, modification time): changes whenever an atomic write replaces the file."""
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def iteration_line(it: int, iterations: int, s: Optional[SelfPlayStats], seconds: float, steps: int,
                   metrics: LearnMetrics, scores: dict[str, float]) -> str:
    """The log line of an iteration: self-play, learning and evaluation figures (`s` None: an iteration
    whose self-play and learning ran before a stop)."""
    parts = [f"iter {it}/{iterations}"]
    if s is not None:
        parts.append(
            f"{s.games} games {s.positions} positions ({s.positions / max(seconds, 1e-9):.0f} pos/s, "
            f"{s.simulations / max(seconds, 1e-9):.0f} sims/s, len {s.mean_length:.0f}, red/blue/draw "
            f"{s.red_wins}/{s.blue_wins}/{s.draws})")
        parts.append(f"{steps} steps loss {or_nan(metrics.total):.3f} (policy "
                     f"{or_nan(metrics.policy):.3f} value {or_nan(metrics.value):.3f})")
    else:
        parts.append("self-play and learning done before the stop")
    shown = []
    for key, score in scores.items():
        if key.startswith("score_"):
            tag = key[len("score_"):]
            low, high = scores.get(f"low_{tag}"), scores.get(f"high_{tag}")
            shown.append(f"{tag} {score:.2f}" + (f" [{low:.2f}-{high:.2f}]" if low is not None and high is not None
                                                 else ""))
    evaluation = " ".join(shown)
    if "elo" in scores:
        evaluation += f" elo {scores['elo']:.0f}"
    if evaluation:
        parts.append(f"eval: {evaluation}")
    return " | ".join(parts)


def evaluate(evaluator: Any, previous: torch.nn.Module, ec: EvalConfig, mcts: MCTSConfig, rules: RuleSet,
             seed: int, it: int, device: torch.device, precision: str, elo: float,
             progress: bool = False) -> dict[str, float]:
    """Scores against the ladder and the previous network, and the running Elo (`elo` before this evaluation).

    Changes nothing outside: a stop may abandon it at any point."""
    me = Searcher(evaluator, mcts, ec.simulations)
    out: dict[str, float] = {}
    ladder = []
    bar = tqdm(total=len(ec.opponents) + int(ec.vs_previous), desc="eval", unit="match", disable=not progress,
               leave=False)
    for spec in ec.opponents:
        bar.set_postfix_str(spec)
        r = play_vs_spec(me, spec, games=ec.games, rules=rules, seed=derive_seed(seed, "eval", spec, it),
                         max_plies=ec.max_plies, opening_plies=ec.opening_plies)
        out[f"score_{spec_tag(spec)}"] = r.score
        # The 95% interval of the score (24 games: about +-0.2), logged beside it and drawn by plot_run.py.
        out[f"low_{spec_tag(spec)}"], out[f"high_{spec_tag(spec)}"] = score_interval(r.wins, r.draws, r.losses)
        ladder.append(r.score)
        bar.update(1)
    if ladder:
        out["ladder_score"] = float(np.mean(ladder))
    if ec.vs_previous:
        bar.set_postfix_str("previous")
        prev = Searcher(make_evaluator(previous, device, precision), mcts, ec.simulations, name="previous")
        r = play_match(me, prev, games=ec.games, rules=rules, seed=derive_seed(seed, "previous", it),
                       max_plies=ec.max_plies, opening_plies=ec.opening_plies)
        out["score_previous"] = r.score
        out["elo"] = elo + elo_from_score(r.score, r.games)
        bar.update(1)
    bar.close()
    return out


def or_nan(value: Optional[float]) -> float:
    return math.nan if value is None else value


def format_seconds(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


if __name__ == "__main__":
    main()

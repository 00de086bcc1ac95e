"""A training run's lifecycle: opened from its config (a fresh run, or the run a checkpoint resumes),
restored, its directory claimed, its checkpoints saved, and ended by a stop or a failure with one line."""

from __future__ import annotations

import logging
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional, Sequence

import torch
from omegaconf import DictConfig, OmegaConf
from torch.utils.tensorboard import SummaryWriter

from agents.alphazero.distributed.pools import make_selfplay_pool
from agents.alphazero.distributed.settings import InferenceSettings, WorkerSettings
from agents.alphazero.distributed.slots import check_shared_memory, slot_capacity
from agents.alphazero.distributed.workers import SelfPlayPool
from agents.alphazero.net.checkpoint import (
    BEST,
    LATEST,
    CheckpointError,
    check_compatible,
    grown_network,
    load_checkpoint,
    require_training_state,
    resolve_checkpoint_path,
    resume_dir,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from agents.alphazero.net.network import count_parameters
from agents.alphazero.search.base import Evaluator
from agents.alphazero.selfplay.data import SelfPlayData, SelfPlayStats
from agents.alphazero.selfplay.rules_mix import mix_state, parse_rules_mix
from agents.alphazero.selfplay.starts import starts_digest
from agents.alphazero.training.config import Config, checked_run_config, resumed_config
from agents.alphazero.training.draws import draw_share, next_root_floor
from agents.alphazero.training.ladder import evaluate_ladder
from agents.alphazero.training.learner import Learner, LearnMetrics
from agents.alphazero.training.progress import (
    PhaseClock,
    format_seconds,
    iteration_line,
    log_selfplay,
    log_server,
    process_tree_cpu_seconds,
)
from agents.alphazero.training.reanalyse import GameStore, Reanalyser, reanalyse_count
from agents.alphazero.training.replay import ReplayBuffer
from agents.arena.records import append_jsonl, is_game_record
from agents.common.child import ChildDiedError
from agents.common.io import atomic_write_text
from agents.common.rundir import (
    RUN_FILE,
    RunDirLock,
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
    rewind_records,
    write_run_record,
)
from agents.common.stopping import GracefulStop, signal_name
from envs.config import override_key, shown
from envs.rules import RuleSet
from envs.seeding import derive_seed

log = logging.getLogger("train")

LOGS = ("games.jsonl", "events.out.tfevents.*")
"""The run's append-only logs: a resumed run cuts them back to what its checkpoint had seen."""
CONFIG_FILE = "config.yaml"
"""The run's config as it runs (rewritten by each sitting)."""


class TrainingRun:
    """One run directory and what its checkpoints hold: `open` resolves the run (checking everything before any
    work), `restore` loads a resumed run's state, `claim` takes the directory, the save methods write the
    checkpoints, and `stopped` / `failed` end the run with one line."""

    def __init__(
        self,
        conf: Config,
        device: torch.device,
        servers: tuple[torch.device, ...],
        config_yaml: str,
        run_dir: Path,
        resume_path: Path,
        resume_from: Optional[dict[str, Any]],
        loaded_as: tuple[int, int, int],
        init_path: Path,
        init_from: Optional[dict[str, Any]],
    ) -> None:
        self.conf, self.config_yaml, self.run_dir = conf, config_yaml, run_dir
        self.device = device
        """The run's device (`Config.device` resolved, once: everything below takes it)."""
        self.servers = servers
        """The inference servers' devices (`train.inference.devices` resolved; ``()``: one on `device`)."""
        self.mix = parse_rules_mix(conf.train.rules_mix)
        """The rule sets the self-play games are drawn from (`train.rules_mix`; empty: `rules` alone)."""
        self.rules = run_rules(conf)
        self.resume_path, self.resume_from, self.loaded_as = resume_path, resume_from, loaded_as
        self.init_path, self.init_from = init_path, init_from
        self.in_place = resume_from is not None and run_dir.resolve() == resume_path.parent.resolve()
        self.again = f"python train.py resume={run_dir}"
        """The command that continues the run."""
        self.run_id = ""
        self.created = False
        self.lock: Optional[RunDirLock] = None
        self.writer: Optional[SummaryWriter] = None
        self.parts: Optional[tuple[torch.nn.Module, Learner, ReplayBuffer, torch.nn.Module]] = None
        """The model, learner, replay buffer and previous network the checkpoints hold (`restore`)."""
        self.counters: dict[str, Any] = {"iteration": 0, "positions": 0, "games": 0, "simulations": 0, "seconds": 0.0}
        self.counters["cpu_seconds"] = 0.0
        self.cpu_mark = process_tree_cpu_seconds()
        """This process tree's CPU seconds when the last iteration's were counted (None: no /proc to read)."""
        self.history: dict[str, Any] = {"elo": 0.0, "best_score": -1.0}
        self.clock = PhaseClock()
        self.pending_eval = False
        """The resumed run stopped before the evaluation of its last iteration."""
        self.server_counts: dict[str, float] = {}
        """The inference server's counts of the last self-play call (`play_iteration`; empty without one)."""
        self.next_game = 0
        """With train.selfplay.carry_over: the index of the next game the pool starts (a resumed run's first)."""
        self.saved = (0, False)
        """What latest.pt holds: (iteration, its evaluation still to do)."""
        self.checkpointed = self.in_place
        self.store = GameStore(conf.train.replay_capacity) if conf.train.reanalyse > 0 else None
        """The games of the replay's positions, for reanalysis (`train.reanalyse`; None when it is off)."""
        self.reanalyser: Optional[Reanalyser] = None

    @classmethod
    def open(cls, cfg: DictConfig, task_overrides: Sequence[str]) -> tuple[TrainingRun, Config]:
        """The run of the composed config `cfg` given with the command line's `task_overrides`: a fresh run, or
        the stored config of the run being resumed, and its config as checked dataclasses. ValueError
        (ConfigError, CheckpointError, PlayerSpecError, RuleSetError, ...) naming what is wrong, before any
        work and before the run directory exists."""
        resume_from: Optional[dict[str, Any]] = None
        resume_path, loaded_as = Path(), (0, 0, 0)
        if cfg.resume:
            resume_path = resolve_checkpoint_path(cfg.resume, cfg.out_dir)
            resume_from = load_checkpoint(resume_path)
            require_training_state(resume_from, resume_path)  # best.pt, iter_*.pt: weights only (see init=)
            loaded_as = file_identity(resume_path)
            cfg = resumed_config(resume_from["config"], resume_path, task_overrides)
        given = {override_key(o) for o in task_overrides}
        if not cfg.name:
            if "name" in given:
                check_run_name(cfg.name)  # name= given empty
            cfg.name = time.strftime("az-%Y%m%d-%H%M%S")
        conf, device, servers = checked_run_config(cfg)
        if resume_from is None:
            check_writable_dir(conf.out_dir)
        tc = conf.train
        if tc.inference.server and tc.worker_backend == "process":  # their leaf slots, in shared memory
            check_shared_memory(tc.workers, slot_capacity(tc.selfplay.parallel, conf.mcts))
        init_from: Optional[dict[str, Any]] = None
        init_path = Path()
        if resume_from is not None:
            if "init" in given:
                raise CheckpointError(
                    "init= starts a new run from given weights and resume= continues a run: give one of them"
                )
            check_compatible(resume_from, resume_path, network=conf.model, rules=run_rules(conf))
            # In the directory of its latest.pt, never in the run its config names (a copy would rewind it).
            run_dir = resume_dir(resume_path, Path(conf.out_dir) / conf.name if given & {"name", "out_dir"} else None)
            cfg.name, cfg.out_dir = run_dir.name, str(run_dir.parent)
            conf.name, conf.out_dir = cfg.name, cfg.out_dir
            check_writable_dir(conf.out_dir)  # where it goes on, not where its stored config says it began
            if run_dir.resolve() != resume_path.parent.resolve():
                fresh_run_leftovers(run_dir, LOGS, kept=(CONFIG_FILE,))  # a copy starts in a directory of its own
        else:
            run_dir = Path(conf.out_dir) / conf.name
            fresh_run_leftovers(run_dir, LOGS, kept=(CONFIG_FILE,))  # refuses a directory holding what it did not write
            if conf.init:
                init_path = resolve_checkpoint_path(conf.init, conf.out_dir)
                seed = derive_seed(conf.seed, "grow")
                init_from, grown = grown_network(load_checkpoint(init_path), init_path, conf.model, seed)
                if grown:
                    log.info(
                        "%s grown in %s into this run's network; its new parts add nothing at first",
                        init_path,
                        ", ".join(grown),
                    )
                check_compatible(init_from, init_path, network=conf.model, rules=run_rules(conf))
        return cls(
            conf,
            device,
            servers,
            OmegaConf.to_yaml(cfg),
            run_dir,
            resume_path,
            resume_from,
            loaded_as,
            init_path,
            init_from,
        ), conf

    def restore(
        self, model: torch.nn.Module, learner: Learner, replay: ReplayBuffer, previous: torch.nn.Module
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Load the given weights (`init`) or every part of the resumed run into the built parts, each checked,
        before the run directory is claimed; the run's (counters, history). CheckpointError naming a damaged part."""
        counters, history = self.counters, self.history
        if self.init_from is not None:
            init_from = self.init_from
            restore_part(self.init_path, "model", lambda: model.load_state_dict(init_from["model"]))
        previous.load_state_dict(model.state_dict())
        if self.resume_from is not None:
            state, path = self.resume_from, self.resume_path
            restore_part(path, "model", lambda: model.load_state_dict(state["model"]))
            restore_part(path, "learner", lambda: learner.load_state_dict(state["learner"]))
            restore_part(path, "replay", lambda: replay.load_state_dict(state["replay"]))
            store = self.store
            if store is not None and "reanalyse" in state and state["replay"].get("has_contents"):
                restore_part(path, "reanalyse", lambda: store.load_state_dict(state["reanalyse"]))
            restore_part(path, "counters", lambda: counters.update(checked_counters(state["counters"])))
            restore_part(path, "extra", lambda: history.update(checked_extra(state["extra"])["history"]))
            restore_part(path, "extra", lambda: previous.load_state_dict(state["extra"]["previous_model"]))
            restore_part(path, "rng", lambda: set_rng_state(state["rng"]))
            self.pending_eval = bool(state["extra"].get("pending_eval"))  # stopped before it evaluated
        control, base = self.conf.train.draw_control, self.conf.mcts.gumbel.root_uniform
        if control.on:  # a run that turns the control on starts at the base; a floor out of today's bounds is clamped
            counters["root_floor"] = min(control.max_floor, max(base, float(counters.get("root_floor", base))))
        self.parts = model, learner, replay, previous
        self.clock = PhaseClock(history.get("phase_seconds"))  # seconds per phase, for the ETA
        self.saved = (counters["iteration"], self.pending_eval)
        return counters, history

    def claim(self) -> None:
        """Take the run directory: this process alone writes to it (a lock; a second writer is refused, naming
        its pid), only what it wrote is touched, the logs are cut back to the checkpoint; then the run record
        and config.yaml. ValueError when another process holds it."""
        run_dir, resume_from, resume_path = self.run_dir, self.resume_from, self.resume_path
        self.created = not run_dir.exists()
        stored_id = resume_from.get("run_id") if self.in_place and resume_from is not None else None
        self.run_id = (
            stored_id if isinstance(stored_id, str) and stored_id else new_run_id()
        )  # os.urandom: seeds untouched
        leftovers: list[Path] = []

        def check_under_lock() -> None:  # again under the lock: another process may have written meanwhile
            nonlocal leftovers
            if not self.in_place:
                leftovers = fresh_run_leftovers(run_dir, LOGS, kept=(CONFIG_FILE,))
            elif file_identity(resume_path) != self.loaded_as:
                raise CheckpointError(f"{str(resume_path)!r} was rewritten while this run started; start it again")

        self.lock = claim_run_dir(run_dir, check=check_under_lock)  # refuses a second writer, naming its pid
        if self.in_place:
            assert resume_from is not None
            record = read_run_record(run_dir)
            logs = resume_from["extra"].get("logs")
            if logs is None:
                log.warning(
                    "%s predates log rewinding: games.jsonl and the events may repeat the interrupted iteration",
                    resume_path,
                )
            else:
                if record is None or record.run_id != stored_id:
                    log.warning(
                        "%s does not name this directory's run (%s): only the logs it lists are cut back",
                        resume_path,
                        RUN_FILE,
                    )
                if "games.jsonl" in logs:  # record by record: a line that is not a game goes, every game seen stays
                    games = rewind_records(run_dir / "games.jsonl", logs["games.jsonl"], is_game_record)
                    if games.not_records or games.late:
                        (log.warning if games.not_records else log.info)("%s", games.describe("games.jsonl"))
                for change in rewind_logs(
                    run_dir, logs, LOGS, owned=lambda name: owned_log(name, str(stored_id), record, LOGS)
                ):
                    log.info("%s", change)
        for leftover in leftovers:  # what an attempt that never wrote a checkpoint left (checked above)
            leftover.unlink(missing_ok=True)
            log.info("removed %s (left by an attempt that wrote no checkpoint)", leftover.name)
        write_run_record(run_dir, RunRecord(self.run_id, checkpointed=self.in_place))
        if resume_from is not None:
            log.info(
                "resuming %s at iteration %d%s",
                resume_path,
                resume_from["counters"]["iteration"],
                "" if self.in_place else f" as the new run {run_dir}",
            )
        elif self.init_from is not None:
            log.info("new run %s from the weights of %s", run_dir, self.init_path)
        atomic_write_text(run_dir / CONFIG_FILE, self.config_yaml)

    def open_writer(self) -> SummaryWriter:
        """The run's TensorBoard writer: its own event files (agents.common.rundir.owned_log), a resumed run's cut
        back to its checkpoint."""
        self.writer = SummaryWriter(
            str(self.run_dir),
            purge_step=self.counters["iteration"] + 1 if self.in_place else None,
            filename_suffix=f".{self.run_id}",
        )
        if not self.in_place:
            self.writer.add_text("config", "```\n" + self.config_yaml + "\n```", 0)
        return self.writer

    def selfplay_pool(self, evaluator: Any) -> SelfPlayPool:
        """The self-play pool of the run (its workers, or this process), which checks the settings (opponent specs
        included) before any game; logs what the run is."""
        conf, tc = self.conf, self.conf.train
        assert self.parts is not None
        settings = WorkerSettings(
            network=conf.model,
            mcts=conf.mcts,
            rules=self.rules,
            selfplay=tc.selfplay.changed(player_name=conf.name),
            precision=conf.precision,
            rules_mix=tuple(self.mix),
        )
        inference = (
            InferenceSettings(
                config=tc.inference,
                device=self.device,
                devices=self.servers,
                threads=conf.threads,
                compile=conf.compile,
            )
            if tc.inference.server
            else None
        )
        pool = make_selfplay_pool(
            tc.worker_backend,
            tc.workers,
            settings,
            evaluator=evaluator,
            address=tc.ray_address,
            inference=inference,
            first_game=int(self.counters.get("next_game", 0)),
        )
        log.info(
            "run %s: %s, %d parameters, device %s, %s search with %d simulations, self-play %s",
            conf.name,
            conf.model,
            count_parameters(self.parts[0]),
            self.device,
            conf.mcts.algorithm,
            conf.mcts.num_simulations,
            (f"on {pool.workers} {pool.backend} workers" if pool.workers else "in this process")
            + (f" feeding {served(self.servers or (self.device,))}" if tc.inference.server else ""),
        )
        if tc.selfplay.starts is not None:
            positions = tc.selfplay.start_positions
            log.info(
                "self-play starts %.0f%% of its games from the %d positions of %s (sha256 %s)",
                100 * tc.selfplay.starts_fraction,
                len(positions),
                tc.selfplay.starts,
                starts_digest(positions),
            )
        return pool

    def play_iteration(self, pool: SelfPlayPool, model: torch.nn.Module, it: int, progress: bool) -> SelfPlayData:
        """Iteration `it`'s self-play games with the weights of `model` (a share against the opponents, each
        seeded from the run's seed and the iteration; with carry_over, the next games to finish of the run's,
        numbered and seeded over the run). Changes nothing of the run's."""
        seed, tc = self.conf.seed, self.conf.train
        carry = tc.selfplay.carry_over
        floor = self.counters["root_floor"] if tc.draw_control.on else None
        data = pool.play(
            model.state_dict(),
            seed=derive_seed(seed, "selfplay") if carry else derive_seed(seed, "selfplay", it),
            num_games=tc.games_per_iteration,
            opponent_seeds=[
                derive_seed(seed, "opponent", k) if carry else derive_seed(seed, "opponent", k, it)
                for k in range(len(tc.selfplay.opponents))
            ],
            progress=progress,
            root_uniform=floor,
        )
        self.server_counts = dict(getattr(pool, "server_counts", {}))  # logged with the games (`played`)
        self.next_game = getattr(pool, "next_game", 0)  # counted with the games (`played`)
        return data

    def evaluate(self, evaluator: Any, previous: torch.nn.Module, it: int, progress: bool) -> dict[str, float]:
        """Iteration `it`'s scores against the ladder and the previous network (`evaluate_ladder`), announced in
        the log. Changes nothing of the run's: a stop may abandon it."""
        conf, ec = self.conf, self.conf.train.eval
        if not progress:
            against = ", ".join([*ec.opponents, *(["previous"] if ec.vs_previous else [])])
            log.info("iter %d: evaluation (%d games against each of %s)", it, ec.games, against)
        elo = float(self.history["elo"])

        def ladder(rules: RuleSet) -> dict[str, float]:
            return evaluate_ladder(
                evaluator,
                previous,
                config=ec,
                mcts=conf.mcts,
                rules=rules,
                seed=conf.seed,
                iteration=it,
                device=self.device,
                precision=conf.precision,
                elo=elo,
                progress=progress,
            )

        if not self.mix:
            return ladder(self.rules)
        return mixed_scores({m.name: ladder(m.rules) for m in self.mix})

    def log_iteration(
        self,
        it: int,
        s: Optional[SelfPlayStats],
        selfplay_seconds: float,
        steps: int,
        metrics: LearnMetrics,
        scores: dict[str, float],
        started: float,
    ) -> None:
        """The iteration's log line; the ETA prices the phases still to come (evaluations cost more)."""
        tc = self.conf.train
        eta, unpriced = self.clock.eta(it, tc.iterations, tc.eval.every)
        log.info(
            "%s | %.0fs, %s elapsed, ETA %s%s",
            iteration_line(it, tc.iterations, s, selfplay_seconds, steps, metrics, scores),
            time.time() - started,
            format_seconds(self.counters["seconds"]),
            format_seconds(eta),
            f" + {unpriced} evaluations" if unpriced else "",
        )

    def played(self, it: int, data: SelfPlayData, started: float) -> float:
        """Iteration `it`'s self-play games into the replay buffer, games.jsonl, the counters and the logs; its
        seconds since `started`."""
        assert self.parts is not None and self.writer is not None
        for record in data.records:
            record.extra["iteration"] = it
        replay = self.parts[2]
        before = replay.add_count
        replay.add(data.obs, data.mask, data.policy, data.value, data.full_search, data.survival, data.trains_value)
        if self.store is not None:
            self.store.add(before, data)
        if self.conf.train.write_games:
            append_jsonl(self.run_dir / "games.jsonl", data.records)
        s = data.stats
        if self.conf.train.selfplay.carry_over:  # a resumed run starts new games after those started so far
            self.counters["next_game"] = int(self.next_game)
        self.counters["positions"] += int(s.positions)
        self.counters["games"] += int(s.games)
        self.counters["simulations"] += int(s.simulations)
        seconds = time.time() - started
        self.clock.add("selfplay", seconds)
        log_selfplay(self.writer, it, s, seconds, self.conf.train.selfplay.opponent_fraction > 0)
        self.follow_draws(it, s)
        if self.server_counts:
            log.info("%s", log_server(self.writer, it, self.server_counts))
        return seconds

    def follow_draws(self, it: int, s: SelfPlayStats) -> None:
        """With `train.draw_control`: the root floor iteration `it` played at into the logs, and the next
        iteration's floor, by the share of its games drawn, into the counters."""
        control = self.conf.train.draw_control
        if not control.on:
            return
        assert self.writer is not None
        floor, share = float(self.counters["root_floor"]), draw_share(s)
        self.writer.add_scalar("selfplay/root_floor", floor, it)
        after = next_root_floor(floor, self.conf.mcts.gumbel.root_uniform, share, control)
        if after != floor:
            log.info(
                "root floor %.2f -> %.2f: %.2f of the games drawn, target %.2f", floor, after, share, control.target
            )
        self.counters["root_floor"] = after

    def reanalysed(self, it: int, evaluator: Evaluator, new_positions: int) -> None:
        """With `train.reanalyse`: iteration `it`'s reanalysis (that many older positions per one of the
        `new_positions` the iteration added), searched by `evaluator`, into the logs."""
        tc = self.conf.train
        if self.store is None:
            return
        assert self.parts is not None and self.writer is not None
        if self.reanalyser is None:
            self.reanalyser = Reanalyser(
                evaluator,
                self.conf.mcts,
                self.rules,
                parallel=tc.selfplay.parallel,
                max_plies=tc.selfplay.max_plies,
                seed=self.conf.seed,
            )
        count = reanalyse_count(tc.reanalyse, new_positions)
        r = self.reanalyser.reanalyse(self.parts[2], self.store, count, newest=new_positions, iteration=it)
        self.writer.add_scalar("reanalyse/positions", r.positions, it)
        if r.positions:
            self.writer.add_scalar("reanalyse/policy_change", r.policy_change, it)
            self.writer.add_scalar("perf/seconds_reanalyse", r.seconds, it)
        self.counters["simulations"] += r.simulations

    def learned(self, it: int, metrics: LearnMetrics, started: float, learning: float) -> None:
        """Iteration `it`'s learning (since `learning`) into the logs; the iteration (since `started`) is done
        but for its evaluation."""
        assert self.parts is not None and self.writer is not None
        _, learner, replay, _ = self.parts
        self.clock.add("learn", time.time() - learning)
        for tag, value in metrics.tags().items():  # means over the steps, but the count of the skipped ones
            self.writer.add_scalar(tag, value, it)
        self.writer.add_scalar("perf/learner_steps", learner.step_count, it)
        self.writer.add_scalar("perf/replay_positions", len(replay), it)
        self.writer.add_scalar("perf/seconds_learn", time.time() - learning, it)
        self.counters["iteration"] = it
        self.counters["seconds"] += time.time() - started
        cpu = process_tree_cpu_seconds()
        if cpu is not None and self.cpu_mark is not None:  # since the last count: the evaluation and checkpoint before
            self.counters["cpu_seconds"] += cpu - self.cpu_mark
            self.writer.add_scalar("perf/cpu_seconds", cpu - self.cpu_mark, it)
        self.cpu_mark = cpu

    def evaluated(self, it: int, scores: dict[str, float], started: float) -> None:
        """Iteration `it`'s evaluation (since `started`): the running Elo, the logs, and the network the next
        evaluation plays."""
        assert self.parts is not None and self.writer is not None
        self.history["elo"] = scores.get("elo", self.history["elo"])
        for k, v in scores.items():
            self.writer.add_scalar(f"eval/{k}", v, it)
        self.parts[3].load_state_dict(self.parts[0].state_dict())
        self.clock.add("eval", time.time() - started)
        self.writer.add_scalar("perf/seconds_eval", time.time() - started, it)
        self.counters["seconds"] += time.time() - started

    def checkpointed_at(self, it: int, started: float) -> None:
        """The seconds of iteration `it`'s checkpoint phase (since `started`) into the clock, counters and logs."""
        assert self.writer is not None
        self.clock.add("checkpoint", time.time() - started)
        self.counters["seconds"] += time.time() - started
        self.writer.add_scalar("perf/seconds_checkpoint", time.time() - started, it)

    def weights_state(self) -> dict[str, Any]:
        """What every checkpoint of the run holds: the weights, their shape, the rules, the config, the counters
        and the run's id."""
        assert self.parts is not None
        model, learner = self.parts[0], self.parts[1]
        return {
            "model": model.state_dict(),
            "network": self.conf.model.to_dict(),
            "rules": self.rules.to_dict(),
            **({"rules_mix": mix_state(self.mix)} if self.mix else {}),
            "config": self.config_yaml,
            "counters": dict(self.counters, learner_steps=learner.step_count),
            "run_id": self.run_id,
        }

    def save_latest(self, pending: bool, rng: Optional[dict[str, Any]] = None) -> None:
        """latest.pt: the weights and all a resume needs, and the sizes of the logs it has seen."""
        assert self.parts is not None and self.writer is not None
        _, learner, replay, previous = self.parts
        self.writer.flush()
        keep_contents = replay.nbytes() <= self.conf.train.replay_in_checkpoint_mb * 2**20
        save_checkpoint(
            self.run_dir / LATEST,
            dict(
                self.weights_state(),
                learner=learner.state_dict(),
                replay=replay.state_dict(contents=keep_contents),
                **({"reanalyse": self.store.state_dict()} if self.store is not None and keep_contents else {}),
                rng=rng if rng is not None else rng_state(),
                extra={
                    "history": dict(self.history, phase_seconds=self.clock.state_dict()),
                    "previous_model": previous.state_dict(),
                    "logs": log_sizes(self.run_dir, LOGS),
                    "pending_eval": pending,
                },
            ),
        )
        self.saved = (self.counters["iteration"], pending)
        if not self.checkpointed:  # from now on a fresh start refuses this directory: it holds a run to resume
            write_run_record(self.run_dir, RunRecord(self.run_id, checkpointed=True))
            self.checkpointed = True

    def keep_latest(self, it: int, pending: bool, rng: Optional[dict[str, Any]] = None) -> None:
        """latest.pt for a stop at iteration `it` (`pending`: its evaluation still to play), unless it holds that."""
        if self.saved != (it, pending):
            self.save_latest(pending=pending, rng=rng)

    def save_iteration(self, it: int, scores: dict[str, float]) -> None:
        """The checkpoints of iteration `it`: iter_NNNNNN.pt, best.pt when its ladder score is the best so far,
        and latest.pt."""
        state = self.weights_state()
        save_checkpoint(self.run_dir / f"iter_{it:06d}.pt", state)
        ladder = scores.get("ladder_score")
        if ladder is not None and ladder >= self.history["best_score"]:
            self.history["best_score"] = ladder
            save_checkpoint(self.run_dir / BEST, dict(state, extra={"scores": scores}))
        self.save_latest(pending=False)

    def failed(self, it: int, error: Exception) -> NoReturn:
        """End the run on `error` in iteration `it` with one line (exit 1): what went wrong, what latest.pt
        holds and how to continue (a diverged learner: with a lower learning rate; a lost self-play worker or
        Ray actor, `ChildDiedError`: as it was, the iteration it was playing played again)."""
        advice = f"continue with: {self.again}"
        if isinstance(error, OSError):  # a full disk, a file system gone read-only: the last latest.pt is whole
            failure = f"iteration {it}: cannot write {error.filename or 'a file of the run'}: {error.strerror or error}"
        else:
            failure = f"iteration {it}: {error}"
            if not isinstance(error, (CheckpointError, ChildDiedError)):
                advice = (
                    f"continue with a lower learning rate: {self.again} "
                    f"train.learner.lr={self.conf.train.learner.lr / 10:g}"
                )
        try:
            if self.writer is not None:
                self.writer.close()
        except OSError:
            pass
        kept = (
            f"latest.pt holds iteration {self.saved[0]}; {advice}"
            if (self.run_dir / LATEST).is_file()
            else "no checkpoint was written"
        )
        print(f"train.py: error: {failure}; {kept}", file=sys.stderr)
        sys.exit(1)

    def close(self, stop: GracefulStop, stopped: str) -> None:
        """Close the run's logs; after a stop signal (`stopped`: when it stopped) end with one line saying what
        latest.pt holds and how to continue."""
        assert self.writer is not None
        self.writer.close()
        if stop.requested:
            self.stopped(stop, stopped)

    def stopped(self, stop: GracefulStop, when: str) -> NoReturn:
        """End a stopped run with one line and the signal's exit status; a run with no checkpoint yet removes
        what it wrote, so the same command starts afresh."""
        assert stop.requested is not None
        at = f"iteration {self.saved[0]}" + (" (its evaluation still to play)" if self.saved[1] else "")
        if (self.run_dir / LATEST).is_file():
            then = f"latest.pt holds {at}; continue with: {self.again}"
        else:  # nothing to resume: nothing is kept, and the same command starts afresh
            remove_run_files(self.run_dir, self.run_id, LOGS, kept=(CONFIG_FILE,), created=self.created)
            assert self.lock is not None
            self.lock.release()
            then = "no checkpoint was written yet, so nothing was kept: run the same command again to start afresh"
        print(f"{signal_name(stop.requested)}: stopped {when}; {then}", file=sys.stderr)
        sys.exit(stop.exit_code)


def served(devices: Sequence[torch.device]) -> str:
    """``an inference server on cuda:0``, ``2 inference servers on cuda:0, cuda:1`` (the run's first log line)."""
    servers = "an inference server" if len(devices) == 1 else f"{len(devices)} inference servers"
    return f"{servers} on {', '.join(str(d) for d in devices)}"


def run_rules(conf: Config) -> RuleSet:
    """The rule set a run's checkpoints name as theirs (``state["rules"]``): the first of its mix, else `rules`."""
    mix = parse_rules_mix(conf.train.rules_mix)
    return mix[0].rules if mix else conf.rules.rule_set()


def mixed_scores(per_rules: dict[str, dict[str, float]]) -> dict[str, float]:
    """A mixed run's evaluation: each rule set's scores as ``<name>/<key>``, with the ladder score and the running
    Elo (what best.pt and the log read) their means over the rule sets."""
    out = {f"{name}/{k}": v for name, scores in per_rules.items() for k, v in scores.items()}
    for key in ("ladder_score", "elo"):
        values = [scores[key] for scores in per_rules.values() if key in scores]
        if values:
            out[key] = float(sum(values) / len(values))
    return out


def restore_part(path: Path, part: str, action: Callable[[], Any]) -> None:
    """Run `action`, which loads the `part` entry of the checkpoint at `path` into this run; CheckpointError
    naming the part when that entry is damaged (a wrong type, shape or key), before the run directory is claimed."""
    try:
        action()
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError, OverflowError) as e:
        text = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"checkpoint {str(path)!r}: its {part} entry is damaged ({text})") from None


def checked_counters(counters: Any) -> dict[str, Any]:
    """A checkpoint's counters (iteration, positions, games, simulations, next_game: integers >= 0; seconds and
    cpu_seconds: finite numbers; root_floor: in [0, 1]); ValueError naming the first that is not."""
    if not isinstance(counters, dict):
        raise TypeError(f"a mapping is expected, got {type(counters).__name__}")
    for key in ("iteration", "positions", "games", "simulations", "learner_steps", "next_game"):
        value = counters.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{key}={shown(value)} is not an integer >= 0")
    for key in ("seconds", "cpu_seconds"):
        seconds = counters.get(key, 0.0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
            raise ValueError(f"{key}={shown(seconds)} is not a finite number")
    floor = counters.get("root_floor", 0.0)
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0.0 <= floor <= 1.0:
        raise ValueError(f"root_floor={shown(floor)} is not a number in [0, 1]")
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
    if logs is not None and not (
        isinstance(logs, dict)
        and all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in logs.items()
        )
    ):
        raise ValueError("logs is not a mapping of file names to sizes")
    if not isinstance(extra.get("pending_eval", False), bool):
        raise TypeError("pending_eval is not true or false")
    return extra


def file_identity(path: Path) -> tuple[int, int, int]:
    """(inode, size, modification time): changes whenever an atomic write replaces the file."""
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns

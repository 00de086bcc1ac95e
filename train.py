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
(agents.common.rundir). The first Ctrl-C or SIGTERM abandons self-play or an
evaluation at once, or lets learning and a checkpoint finish, writes
latest.pt when it is behind and prints the resume command; a second one
stops at once. A run stopped before its first checkpoint removes what it
wrote; a Ctrl-C while the script starts prints one line. A resumed run cuts
games.jsonl and the TensorBoard events back to what its checkpoint had seen,
so a killed and resumed run writes the same records as one never stopped.
A resume with no iteration left (``train.iterations`` at or below the run's
iteration) changes nothing, says so in one line and exits with status 0: the
run already is where it was asked to go.
"""

from __future__ import annotations

import os
import signal
import sys

if __name__ == "__main__":  # the imports below take seconds: a Ctrl-C meanwhile stops with one line
    signal.signal(
        signal.SIGINT,
        lambda *_: (
            sys.stderr.write("\nCtrl-C: stopped while starting; nothing was written\n"),
            sys.stderr.flush(),
            os._exit(130),
        ),
    )

import logging
import random
import time
from typing import Optional

import hydra
import numpy as np
import torch
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from agents.alphazero.net.checkpoint import CheckpointError, rng_state
from agents.alphazero.net.network import build_network
from agents.alphazero.net.runtime import NonFiniteOutputError, make_evaluator
from agents.alphazero.selfplay.data import SelfPlayStats
from agents.alphazero.training.config import Config, compose_config, register_configs
from agents.alphazero.training.learner import Learner, LearnerDivergedError, LearnMetrics
from agents.alphazero.training.progress import evaluation_due, format_seconds
from agents.alphazero.training.replay import ReplayBuffer, ReplayError
from agents.alphazero.training.run import TrainingRun
from agents.common.child import ChildDiedError
from agents.common.cli import hydra_entry, refuse
from agents.common.stopping import GracefulStop

log = logging.getLogger("train")
register_configs()


def main(cfg: Optional[DictConfig] = None) -> None:
    """``python train.py <overrides>``: `run` as Hydra's entry point, after the command line's overrides
    have composed in this process (agents.common.cli.hydra_entry: an override Hydra refuses stops with one line,
    exit 2). With `cfg` (a composed config): `run` on it."""
    if cfg is not None:
        return run(cfg)
    hydra_entry("train.py", compose_config, run, doc=__doc__ or "", schema=Config)


@hydra.main(version_base=None, config_path="configs", config_name="config")
def run(cfg: DictConfig) -> None:
    """The run of the composed config `cfg`: seed -> build -> loop {self-play -> learn -> evaluate -> checkpoint}."""
    # -- configuration: a fresh run, or the stored config of the run being resumed; every value is
    #    checked here, before any work and before the run directory exists ------------------------
    try:
        training, conf = TrainingRun.open(cfg, HydraConfig.get().overrides.task)
    except ValueError as e:  # ConfigError, CheckpointError, PlayerSpecError, RuleSetError, ...
        refuse("train.py", e)
    # From here on a first Ctrl-C or SIGTERM stops at the next safe point; a second one at once (and after the
    # loop, Python's own Ctrl-C again, not the one line of the start).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    stop = GracefulStop(on_second=f"stopped at once; continue from the last checkpoint: {training.again}").install()
    stop.waiting_for = "the start"
    tc = conf.train

    # -- seed ----------------------------------------------------------------------------------
    random.seed(conf.seed)
    np.random.seed(conf.seed)
    torch.manual_seed(conf.seed)
    if conf.threads > 0:
        torch.set_num_threads(conf.threads)

    # -- build (and restore a resumed run's every part, each checked, before its directory is claimed; then
    #    claim it: this process alone writes to it, only what it wrote is touched, logs cut back) --------
    device = training.device  # resolved once, when the config was checked
    model = build_network(conf.model).to(device)
    learner = Learner(model, tc.learner, device=device, amp=conf.amp, compile=conf.compile)
    replay = ReplayBuffer(tc.replay_capacity, mirror=tc.mirror, seed=conf.seed)
    previous = build_network(conf.model).to(device)  # the network of the previous evaluation
    try:
        counters, _ = training.restore(model, learner, replay, previous)
        if (
            training.resume_from is not None
            and counters["iteration"] + (0 if training.pending_eval else 1) > tc.iterations
        ):
            print(
                f"train.py: nothing to do: {training.resume_path} is at iteration {counters['iteration']} and "
                f"train.iterations={tc.iterations}; nothing was changed (give train.iterations above "
                f"{counters['iteration']} to continue it)",
                flush=True,
            )
            return
        training.claim()
    except ValueError as e:  # a damaged part of the checkpoint, a second writer
        refuse("train.py", e)
    evaluator = make_evaluator(model, device, conf.precision, compile=conf.compile)
    pool = training.selfplay_pool(evaluator)  # checks the settings (opponent specs included) before any game
    training.open_writer()

    # -- loop: {self-play -> learn -> evaluate -> checkpoint}; a stop signal ends it at a safe point ---
    progress, pending_eval, stopped = sys.stderr.isatty(), training.pending_eval, ""
    it = counters["iteration"]
    try:
        with pool, stop:
            started = time.time()
            for it in range(counters["iteration"] + (0 if pending_eval else 1), tc.iterations + 1):
                if stop.requested:
                    stopped = f"before iteration {it}"
                    break
                t0 = time.time()
                due = evaluation_due(it, tc.iterations, tc.eval.every)
                s: Optional[SelfPlayStats] = None
                metrics = LearnMetrics()
                steps, selfplay_seconds = 0, 0.0
                if not pending_eval:
                    # self-play (a fraction of the games against the opponents, built from their specs, when there
                    # are any); a stop abandons it at once: nothing has changed yet
                    rng_before = rng_state()
                    data = stop.abandonable(training.play_iteration, pool, model, it, progress)
                    if data is None:
                        stopped = f"during the self-play of iteration {it} (its games are dropped)"
                        training.keep_latest(it - 1, pending=False, rng=rng_before)
                        break
                    s = data.stats
                    selfplay_seconds = training.played(it, data, started=t0)

                    # learn; a stop waits for the end of this phase
                    stop.waiting_for = f"the learning of iteration {it}"
                    t1 = time.time()
                    if len(replay) >= tc.min_replay:
                        training.reanalysed(it, evaluator, len(data.value))
                        steps = min(
                            tc.max_steps_per_iteration, max(1, round(len(data.value) * tc.train_ratio / tc.batch_size))
                        )
                        metrics = learner.learn(replay, steps, tc.batch_size, progress)
                    training.learned(it, metrics, started=t0, learning=t1)
                    if stop.requested and due:
                        training.save_latest(pending=True)
                        stopped = f"before the evaluation of iteration {it}, which the resumed run plays"
                        break

                # evaluate; a stop abandons it at once and the resumed run plays it again
                t2 = time.time()
                scores: dict[str, float] = {}
                if due:
                    stop.waiting_for = f"the evaluation of iteration {it}"
                    result = stop.abandonable(training.evaluate, evaluator, previous, it, progress)
                    if result is None:
                        training.keep_latest(it, pending=True)
                        stopped = f"during the evaluation of iteration {it}, which the resumed run plays again"
                        break
                    scores = result
                    training.evaluated(it, scores, started=t2)
                pending_eval = False

                # checkpoint; a stop waits for it, and writes one when none is due
                stop.waiting_for = "the checkpoint"
                t3 = time.time()
                if it % tc.checkpoint_every == 0 or it == tc.iterations or stop.requested:
                    training.save_iteration(it, scores)
                training.checkpointed_at(it, started=t3)  # after latest.pt: a kill before the next one drops it

                training.log_iteration(it, s, selfplay_seconds, steps, metrics, scores, started=t0)
                if stop.requested:
                    stopped = f"after iteration {it}"
                    break
    except (LearnerDivergedError, NonFiniteOutputError, ReplayError, CheckpointError, ChildDiedError, OSError) as e:
        training.failed(it, e)  # a lost self-play worker or Ray actor (ChildDiedError) included: said, never a hang
    training.close(stop, stopped)
    log.info("done: %s (%s)", training.run_dir, format_seconds(time.time() - started))


if __name__ == "__main__":
    main()

"""Faults as tests: kills, stop signals, second writers, resume traps, leftovers, interrupted tournaments.

The subprocess tests drive train.py and evaluate.py as a user would (the tiny
loop, seconds per run) and compare what an interrupted and resumed run wrote
with what an uninterrupted run writes: the same games, the same curves, no
record twice.
"""

from __future__ import annotations

import collections
import errno
import hashlib
import json
import os
import random
import re
import runpy
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.util import tensor_util

from agents.alphazero.net.checkpoint import (
    CheckpointError,
    load_checkpoint,
    require_training_state,
    resume_dir,
    save_checkpoint,
)
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.training import config as train_config
from agents.alphazero.training.progress import PhaseClock, evaluation_due
from agents.arena.errors import OpeningsError, TournamentError
from agents.arena.openings import read_openings
from agents.arena.records import GameRecord, cut_torn_tail, is_game_record, read_jsonl
from agents.arena.settings import TournamentSettings
from agents.arena.tournament import check_spec, run_tournament
from agents.common.io import atomic_write_bytes, remove_stale_temp_files
from agents.common.rundir import (
    RunDirBusyError,
    RunDirError,
    RunRecord,
    claim_run_dir,
    fresh_run_leftovers,
    log_sizes,
    new_run_id,
    read_run_record,
    rewind_logs,
    rewind_records,
    write_run_record,
)
from agents.common.stopping import GracefulStop
from envs import RuleSet
from tests.support import ROOT
from tests.support.configs import flat_search_layout
from tests.support.processes import alive, children, survivors

TINY = [
    "train=tiny",
    "model=tiny",
    "mcts.num_simulations=4",
    "seed=3",
    "train.iterations=3",
    'train.eval.opponents=["alphabeta:depth=2"]',
    "train.eval.games=8",
    "train.eval.num_simulations=8",
    "train.eval.max_plies=100",
]
"""Three iterations of a few seconds; an evaluation (about a second) after each."""
REPRODUCIBLE = (
    "loss/",
    "eval/",
    "selfplay/game_length",
    "selfplay/red_wins",
    "selfplay/blue_wins",
    "selfplay/draws",
    "perf/learner_steps",
    "perf/replay_positions",
)
"""TensorBoard tags whose values a seed decides (not timings)."""
RESUME_LINE = "continue with: python train.py resume="


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
class Job:
    """A train.py / evaluate.py process whose output (stdout and stderr together) is read as it comes."""

    def __init__(self, script: str, *args: str, cwd: Path = ROOT) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / script), *args],
            cwd=cwd,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for(self, text: str, timeout: float = 600.0) -> bool:
        """Whether a line starting with `text` came before the process ended or `timeout` seconds passed."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(line.startswith(text) for line in list(self.lines)):
                return True
            if self.proc.poll() is not None:
                self._reader.join(5)
                return any(line.startswith(text) for line in self.lines)
            time.sleep(0.02)
        return False

    def finish(self, timeout: float = 300.0) -> int:
        rc = self.proc.wait(timeout)
        self._reader.join(10)
        return rc

    @property
    def output(self) -> str:
        return "".join(self.lines)


def run_train_script() -> None:
    """`python train.py` with this process's `sys.argv`, in this process (what the command line runs, so that a
    test can patch a module the script uses): the script is run, not imported."""
    runpy.run_path(str(ROOT / "train.py"), run_name="__main__")


def train(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def refused(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    """train.py's error for `args`, run in this process (no start-up cost): it must stop with status 2
    before any work."""
    monkeypatch.setattr(sys, "argv", ["train.py", *args])
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        run_train_script()
    err = capsys.readouterr().err
    assert stop.value.code == 2, err
    return err


def tiny_weights(path: Path) -> Path:
    """A weights-only checkpoint of the tiny network (as best.pt, iter_*.pt and shipped networks are)."""
    net = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
    save_checkpoint(
        path, {"model": build_network(net).state_dict(), "network": net.to_dict(), "rules": RuleSet().to_dict()}
    )
    return path


def event_records(run_dir: Path) -> dict[tuple[str, int], list[float]]:
    """Every scalar record of every event file of the run, as written (TensorBoard's purging not applied)."""
    out: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
    for f in sorted(run_dir.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(f)).Load():
            for v in event.summary.value:  # the loader hands scalars over as tensors
                if v.metadata.plugin_data.plugin_name == "scalars":
                    out[(v.tag, event.step)].append(float(tensor_util.make_ndarray(v.tensor)))
    return dict(out)


def games(run_dir: Path) -> list[tuple[Any, ...]]:
    return [
        (g.extra.get("iteration"), g.extra.get("game_index"), g.seed, tuple(g.moves), g.result)
        for g in read_jsonl(run_dir / "games.jsonl")
    ]


def assert_same_run(reference: Path, run_dir: Path) -> None:
    """The same games and curves as `reference`, and no record written twice."""
    records = event_records(run_dir)
    twice = sorted(k for k, values in records.items() if len(values) > 1)
    assert not twice, f"records written twice: {twice[:5]}"
    ref = event_records(reference)
    # Every (tag, step) of the reference is there; only the last checkpoint timing before a kill may be missing.
    missing = set(ref) - set(records)
    assert all(tag == "perf/seconds_checkpoint" for tag, _ in missing), sorted(missing)
    assert set(records) <= set(ref)
    for key, values in ref.items():
        if key[0].startswith(REPRODUCIBLE):
            assert records[key] == pytest.approx(values, rel=1e-6), key
    got, want = games(run_dir), games(reference)
    assert [g[:2] for g in got] == [g[:2] for g in want]  # (iteration, game index): each game once, in order
    assert got == want


def snapshot(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The uninterrupted run every interrupted one must match, and how long its loop took."""
    out = tmp_path_factory.mktemp("reference")
    job = Job("train.py", *TINY, f"out_dir={out}", "name=ref")
    assert job.wait_for("run ref:")
    t0 = time.time()
    assert job.finish() == 0, job.output[-3000:]
    return {"dir": out / "ref", "loop_seconds": time.time() - t0}


# --------------------------------------------------------------------------------------------
# train.py: kills, signals, second writers
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_kill_9_at_random_moments_then_resume_gives_the_run_never_stopped(
    reference: dict[str, Any], tmp_path: Path
) -> None:
    rng = random.Random(2024)
    run_dir = tmp_path / "killed"
    fresh = [*TINY, f"out_dir={tmp_path}", "name=killed"]
    for _ in range(2):
        # Before its first checkpoint a run cannot resume: it starts again, and drops what it had logged.
        job = Job("train.py", *(fresh if not (run_dir / "latest.pt").exists() else [f"resume={run_dir}"]))
        if not job.wait_for("run killed:") and "train.py: nothing to do:" in job.output:
            job.finish()  # the run had ended before its kill: a resume of it changes nothing
            break
        assert "run killed:" in job.output, job.output[-3000:]
        time.sleep(rng.uniform(0.0, reference["loop_seconds"]))
        job.proc.kill()
        job.finish()
    (run_dir / ".latest.pt.k1ll3d0o.tmp").write_bytes(b"what a killed write leaves")
    args = fresh if not (run_dir / "latest.pt").exists() else [f"resume={run_dir}"]
    done = train(*args)
    assert done.returncode == 0, done.stderr[-3000:]
    assert_same_run(reference["dir"], run_dir)
    leftovers = [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")]
    if "train.py: nothing to do:" in done.stdout + done.stderr:
        assert leftovers == [".latest.pt.k1ll3d0o.tmp"]  # a run that had ended is left exactly as it was
    else:
        assert not leftovers  # a resume clears what a killed write left


@pytest.mark.slow
def test_a_latest_pt_stored_in_the_flat_search_layout_resumes_to_the_run_never_stopped(
    reference: dict[str, Any], tmp_path: Path
) -> None:
    """A latest.pt written before the search settings were split by algorithm (its stored search node flat:
    ``mcts.gumbel_max_actions``) resumes, and plays the iterations left as the run never stopped did; the
    resumed run stores the nested layout."""
    run_dir = tmp_path / "flat"
    first = train(*TINY, "train.iterations=1", f"out_dir={tmp_path}", "name=flat")
    assert first.returncode == 0, first.stderr[-3000:]
    state = torch.load(run_dir / "latest.pt", weights_only=True)
    state["config"] = flat_search_layout(state["config"])
    assert "gumbel_max_actions: 4" in state["config"]  # preset=cpu's, not the schema's 16: a lost key would show
    save_checkpoint(run_dir / "latest.pt", state)
    done = train(f"resume={run_dir}", "train.iterations=3")
    assert done.returncode == 0, done.stderr[-3000:]
    assert_same_run(reference["dir"], run_dir)
    stored = load_checkpoint(run_dir / "latest.pt")["config"]
    assert "max_actions: 4" in stored and "gumbel_max_actions" not in stored


@pytest.mark.slow
def test_sigterm_and_ctrl_c_stop_cleanly_and_the_resumed_run_is_the_run_never_stopped(
    reference: dict[str, Any], tmp_path: Path
) -> None:
    run_dir = tmp_path / "stopped"
    # SIGTERM after the first iteration: one line says where it stopped and how to continue.
    job = Job("train.py", *TINY, f"out_dir={tmp_path}", "name=stopped")
    assert job.wait_for("iter 1/3"), job.output[-3000:]
    job.proc.send_signal(signal.SIGTERM)
    assert job.finish(60) == 128 + signal.SIGTERM
    assert "Traceback" not in job.output
    lines = [line for line in job.lines if RESUME_LINE in line]
    assert len(lines) == 1 and lines[0].startswith("SIGTERM: stopped "), job.output[-2000:]
    assert lines[0].rstrip().endswith(f"resume={run_dir}")
    assert load_checkpoint(run_dir / "latest.pt")["counters"]["iteration"] >= 1
    # Ctrl-C during an evaluation abandons it at once; latest.pt keeps the iteration, its evaluation still to play.
    job = Job("train.py", f"resume={run_dir}")
    assert job.wait_for("resuming"), job.output[-3000:]
    start = load_checkpoint(run_dir / "latest.pt")["counters"]["iteration"]
    assert job.wait_for(f"iter {start + 1}: evaluation"), job.output[-3000:]
    time.sleep(0.1)
    job.proc.send_signal(signal.SIGINT)
    assert job.finish(60) == 128 + signal.SIGINT
    assert "Traceback" not in job.output
    lines = [line for line in job.lines if RESUME_LINE in line]
    assert len(lines) == 1 and lines[0].startswith(f"Ctrl-C: stopped during the evaluation of iteration {start + 1}")
    state = load_checkpoint(run_dir / "latest.pt")
    assert state["counters"]["iteration"] == start + 1 and state["extra"]["pending_eval"]
    # The resumed run plays that evaluation, then the rest: the run that was never stopped.
    done = train(f"resume={run_dir}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert_same_run(reference["dir"], run_dir)


@pytest.mark.slow
def test_a_second_writer_is_refused_naming_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "busy"
    first = Job("train.py", *TINY, "train.iterations=200", f"out_dir={tmp_path}", "name=busy")
    try:
        assert first.wait_for("iter 1/"), first.output[-3000:]
        assert f"in use by process {first.proc.pid}" in refused(capsys, monkeypatch, f"resume={run_dir}")
        # a fresh run by the same name
        assert "already holds a run" in refused(capsys, monkeypatch, *TINY, f"out_dir={tmp_path}", "name=busy")
        assert first.proc.poll() is None  # the first writer runs on, untouched
    finally:
        first.proc.send_signal(signal.SIGTERM)
        first.finish(120)
    assert (run_dir / ".lock").read_text().strip() == str(first.proc.pid)


@pytest.mark.slow
def test_resume_traps_are_refused_and_change_nothing(
    reference: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(reference["dir"], run_dir)
    before = snapshot(run_dir)
    # A weights-only file is refused, saying how to start a new run from it.
    err = refused(capsys, monkeypatch, f"resume={run_dir / 'best.pt'}")
    assert "holds network weights only" in err and f"init={run_dir / 'best.pt'}" in err
    # Refused resumes leave the run as it was (config.yaml included).
    assert "cannot change the config group 'model'" in refused(capsys, monkeypatch, f"resume={run_dir}", "model=small")
    assert "give one of them" in refused(capsys, monkeypatch, f"resume={run_dir}", f"init={run_dir / 'best.pt'}")
    assert "already holds a run" in refused(capsys, monkeypatch, *TINY, f"out_dir={tmp_path}", "name=run")
    # A copy kept outside the run: refused in place; a new run when given a name; the original is never touched.
    keep = tmp_path / "keep"
    keep.mkdir()
    shutil.copy(run_dir / "latest.pt", keep / "run-iteration-3.pt")
    err = refused(capsys, monkeypatch, f"resume={keep / 'run-iteration-3.pt'}", "train.iterations=4")
    assert "is not a run directory's latest.pt" in err and "name=<new name>" in err
    assert snapshot(run_dir) == before
    r = train(f"resume={keep / 'run-iteration-3.pt'}", "train.iterations=4", f"out_dir={tmp_path}", "name=branch")
    assert r.returncode == 0, r.stderr[-3000:]
    assert load_checkpoint(tmp_path / "branch" / "latest.pt")["counters"]["iteration"] == 4
    assert {g[0] for g in games(tmp_path / "branch")} == {4}
    assert snapshot(run_dir) == before and [p.name for p in keep.iterdir()] == ["run-iteration-3.pt"]
    # init=: a new run from given weights.
    r = train(f"init={run_dir / 'best.pt'}", *TINY, "train.iterations=1", f"out_dir={tmp_path}", "name=from-best")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "from the weights of" in r.stdout + r.stderr
    assert load_checkpoint(tmp_path / "from-best" / "latest.pt")["counters"]["iteration"] == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["missing init", "init of another shape", "init of other rules", "weights-only resume", "resume and init"]
)
def test_bad_starts_are_refused_before_the_run_directory_exists(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = tiny_weights(tmp_path / "keep" / "tiny.pt")
    new_run = [*TINY, f"out_dir={tmp_path / 'runs'}", "name=new"]
    args, words = {
        "missing init": ([*new_run, f"init={tmp_path / 'nothing.pt'}"], "does not exist"),
        "init of another shape": ([*new_run, "model=small", f"init={weights}"], "another network shape"),
        "init of other rules": ([*new_run, "rules=dog_over_wolf", f"init={weights}"], "another rule set"),
        "weights-only resume": ([f"resume={weights}"], "holds network weights only"),
        "resume and init": ([f"resume={weights}", f"init={weights}"], "weights only"),
    }[case]
    assert words in refused(capsys, monkeypatch, *args)
    assert not (tmp_path / "runs").exists()
    assert [p.name for p in (tmp_path / "keep").iterdir()] == ["tiny.pt"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        "name with ..",
        "nested name",
        "absolute name",
        "empty name",
        "out_dir /proc",
        "out_dir /dev/null",
        "out_dir a file",
        "out_dir below a file",
    ],
)
def test_a_run_stays_inside_out_dir_and_out_dir_must_be_writable(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name is one plain path component (no run escapes or nests into out_dir), and an out_dir that is not a
    writable directory is refused in one line before any work."""
    runs = tmp_path / "runs" / "here"
    runs.mkdir(parents=True)
    (tmp_path / "a-file").write_text("not a directory\n")
    args, words = {
        "name with ..": ([f"out_dir={runs}", "name=../../escaped"], "name='../../escaped' must be one plain"),
        "nested name": ([f"out_dir={runs}", "name=a/b"], "name='a/b' must be one plain"),
        "absolute name": ([f"out_dir={runs}", f"name={tmp_path / 'abs'}"], "must be one plain directory name"),
        "empty name": ([f"out_dir={runs}", "name="], "name='' is empty"),
        "out_dir /proc": (["out_dir=/proc", "name=x"], "out_dir='/proc' cannot be written"),
        "out_dir /dev/null": (["out_dir=/dev/null", "name=x"], "out_dir='/dev/null' is not a directory"),
        "out_dir a file": ([f"out_dir={tmp_path / 'a-file'}", "name=x"], "is not a directory"),
        "out_dir below a file": ([f"out_dir={tmp_path / 'a-file' / 'runs'}", "name=x"], "is not a directory"),
    }[case]
    err = refused(capsys, monkeypatch, *TINY, *args)
    assert words in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a-file", "here", "runs"]  # nothing was written


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        "a tournament",
        "an old run's events",
        "a TensorBoard directory",
        "a config file",
        "a finished run's record without checkpoints",
        "a foreign file beside leftovers",
    ],
)
def test_a_fresh_run_refuses_a_directory_holding_what_it_did_not_write(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh run deletes nothing it did not write: a directory holding anything but the leftovers of an attempt
    that never checkpointed is refused, naming what is there, and left exactly as it was."""
    run_dir = tmp_path / "runs" / "new"
    run_dir.mkdir(parents=True)
    files = {
        "a tournament": {"games.jsonl": '{"moves": []}\n', "tournament.json": "{}\n"},
        "an old run's events": {"events.out.tfevents.1.host.1.0": "x", "config.yaml": "seed: 0\n"},
        "a TensorBoard directory": {"tb/events.out.tfevents.1.host.1.0": "x"},
        "a config file": {"config.yaml": "mine: 1\n"},
        "a finished run's record without checkpoints": {
            "run.json": '{"run_id": "ab", "checkpointed": true}',
            "events.out.tfevents.1.host.1.0.ab": "x",
        },
        "a foreign file beside leftovers": {
            "run.json": '{"run_id": "ab", "checkpointed": false}',
            "events.out.tfevents.1.host.1.0.ab": "x",
            "notes.txt": "mine\n",
        },
    }[case]
    for name, text in files.items():
        (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / name).write_text(text)
    before = {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    err = refused(capsys, monkeypatch, *TINY, f"out_dir={run_dir.parent}", "name=new")
    assert "holds files this run did not write" in err and err.count("\n") == 1
    assert (
        ("notes.txt" in err)
        if case == "a foreign file beside leftovers"
        else all(name.split("/")[0] in err for name in files)
    )
    assert {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before


def test_the_leftovers_of_an_attempt_that_never_checkpointed_are_the_only_files_a_fresh_run_clears(
    tmp_path: Path,
) -> None:
    patterns = ("games.jsonl", "events.out.tfevents.*")
    assert fresh_run_leftovers(tmp_path / "missing", patterns) == []
    (tmp_path / ".lock").write_text("1\n")
    assert fresh_run_leftovers(tmp_path, patterns) == []  # a lock file alone holds nothing
    write_run_record(tmp_path, RunRecord("ab12", checkpointed=False))
    for name in ("games.jsonl", "events.out.tfevents.1.h.2.0.ab12", "config.yaml"):
        (tmp_path / name).write_text("x")
    assert [p.name for p in fresh_run_leftovers(tmp_path, patterns, kept=("config.yaml",))] == [
        "config.yaml",
        "events.out.tfevents.1.h.2.0.ab12",
        "games.jsonl",
        "run.json",
    ]
    (tmp_path / "events.out.tfevents.1.h.2.0.cd34").write_text("another run's")
    with pytest.raises(RunDirError, match=r"did not write \(events.out.tfevents.1.h.2.0.cd34\)"):
        fresh_run_leftovers(tmp_path, patterns, kept=("config.yaml",))


def test_run_ids_come_from_the_operating_system_and_leave_the_seeded_streams_alone() -> None:
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    ids = {new_run_id() for _ in range(100)}
    assert len(ids) == 100 and all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
    got = (random.random(), float(np.random.random()), float(torch.rand(1)))
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    assert got == (random.random(), float(np.random.random()), float(torch.rand(1)))


@pytest.mark.slow
def test_a_run_names_itself_in_its_checkpoints_record_and_event_files(reference: dict[str, Any]) -> None:
    run_dir = reference["dir"]
    record = read_run_record(run_dir)
    assert record is not None and record.checkpointed
    for pt in run_dir.glob("*.pt"):
        assert load_checkpoint(pt)["run_id"] == record.run_id, pt.name
    events = sorted(p.name for p in run_dir.glob("events.out.tfevents.*"))
    assert events and all(name.endswith(f".{record.run_id}") for name in events)


@pytest.mark.slow
def test_a_resumed_run_rewinds_only_its_own_logs(reference: dict[str, Any], tmp_path: Path) -> None:
    """Logs in the run directory that another run wrote (an event file not named with this run's id, a
    games.jsonl when run.json names another run) are never cut or removed by a resume."""
    run_dir = tmp_path / "run"
    shutil.copytree(reference["dir"], run_dir)
    foreign = run_dir / "events.out.tfevents.1.elsewhere.1.0"
    foreign.write_bytes(b"another run's events")
    r = train(f"resume={run_dir}", "train.iterations=4")
    assert r.returncode == 0, r.stderr[-3000:]
    assert foreign.read_bytes() == b"another run's events"
    assert "left events.out.tfevents.1.elsewhere.1.0 as it is" in r.stdout + r.stderr
    # An event file named with the run's id that latest.pt has not seen is the run's own: it is removed. A
    # record naming another run is said, and still only logs named by the checkpoint's run are touched.
    record = read_run_record(run_dir)
    assert record is not None
    write_run_record(run_dir, RunRecord("0123456789abcdef", checkpointed=True))
    extra = run_dir / f"events.out.tfevents.2.h.2.0.{record.run_id}"
    extra.write_bytes(b"x")
    r = train(f"resume={run_dir}", "train.iterations=5")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "does not name this directory's run" in r.stdout + r.stderr
    assert not extra.exists() and foreign.read_bytes() == b"another run's events"
    assert read_run_record(run_dir) == RunRecord(record.run_id, checkpointed=True)


@pytest.mark.slow
def test_a_run_stopped_before_its_first_checkpoint_leaves_nothing_behind(tmp_path: Path) -> None:
    """An unnamed run (a dated name) stopped before it checkpointed removes what it wrote and its directory,
    so no empty run directory is left behind; the line says nothing was kept."""
    job = Job("train.py", *TINY, "train.iterations=200", f"out_dir={tmp_path}")
    assert job.wait_for("run az-"), job.output[-3000:]
    job.proc.send_signal(signal.SIGINT)
    assert job.finish(120) == 130, job.output[-3000:]
    assert "Traceback" not in job.output
    assert any("no checkpoint was written yet, so nothing was kept" in line for line in job.lines), job.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("script", ["train.py", "evaluate.py"])
def test_ctrl_c_while_the_script_starts_prints_one_line(script: str, tmp_path: Path) -> None:
    job = Job(script, f"out_dir={tmp_path / 'out'}", cwd=tmp_path)
    # Once the script has begun its imports (the yaml parser's extension is loaded: Hydra's first imports),
    # its own handler is in place; the imports and checks that follow take seconds more.
    deadline = time.time() + 60
    while "_yaml" not in Path(f"/proc/{job.proc.pid}/maps").read_text() and time.time() < deadline:
        time.sleep(0.01)
    job.proc.send_signal(signal.SIGINT)
    assert job.finish(60) == 130, job.output
    lines = [line for line in job.lines if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Ctrl-C: stopped "), job.output
    assert "nothing was written" in lines[0] and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_run_whose_learning_rate_explodes_stops_with_one_line_and_checkpoints_nothing_non_finite(
    tmp_path: Path,
) -> None:
    """NaN injection: a run continued with train.learner.lr=1e12 diverges in its next iteration. It stops
    with one line naming the iteration and the likely cause, before anything of that iteration is written;
    every .pt in the directory loads (load_checkpoint refuses non-finite weights) and latest.pt still holds
    the last good iteration, from which a resume with a lower rate goes on."""
    run_dir = tmp_path / "nan"
    first = train(*TINY, "train.iterations=1", f"out_dir={tmp_path}", "name=nan")
    assert first.returncode == 0, first.stderr[-3000:]
    assert all(
        v == 0.0
        for _, v in [(k, vals[0]) for k, vals in event_records(run_dir).items() if k[0] == "loss/nonfinite_steps"]
    )
    r = train(f"resume={run_dir}", "train.iterations=3", "train.learner.lr=1e12")
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    line = errors[0]
    assert line.startswith("train.py: error: iteration 2: ") and "has diverged" in line, line
    assert "the learning rate (train.learner.lr=1e+12) is the likely cause" in line
    assert line.endswith(
        f"latest.pt holds iteration 1; continue with a lower learning rate: python train.py "
        f"resume={run_dir} train.learner.lr=1e+11"
    )
    pts = sorted(run_dir.glob("*.pt"))
    assert [p.name for p in pts] == ["best.pt", "iter_000001.pt", "latest.pt"]
    for pt in pts:
        state = load_checkpoint(pt)  # refuses NaN or infinity anywhere
        assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())
    assert load_checkpoint(run_dir / "latest.pt")["counters"]["iteration"] == 1


def test_a_failed_atomic_write_names_its_file_and_leaves_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "latest.pt"
    target.write_bytes(b"the previous checkpoint")

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError) as e:
        atomic_write_bytes(target, b"the next one")
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(target)
    assert target.read_bytes() == b"the previous checkpoint" and [p.name for p in tmp_path.iterdir()] == ["latest.pt"]


@pytest.mark.slow
def test_a_full_disk_stops_the_run_with_one_line_and_the_previous_checkpoint_survives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import agents.alphazero.net.checkpoint as checkpoint_module

    run_dir = tmp_path / "full"
    real = checkpoint_module.atomic_write_bytes
    writes = {"latest.pt": 0}

    def fills_the_disk(path: Any, data: bytes) -> None:  # the second latest.pt finds no room
        name = Path(path).name
        writes[name] = writes.get(name, 0) + 1
        if name == "latest.pt" and writes[name] == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(checkpoint_module, "atomic_write_bytes", fills_the_disk)
    monkeypatch.setattr(sys, "argv", ["train.py", *TINY, "train.eval.every=0", f"out_dir={tmp_path}", "name=full"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        run_train_script()
    err = capsys.readouterr().err
    assert stop.value.code == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [
        f"train.py: error: iteration 2: cannot write {run_dir / 'latest.pt'}: No space left on device; "
        f"latest.pt holds iteration 1; continue with: python train.py resume={run_dir}"
    ]
    assert load_checkpoint(run_dir / "latest.pt")["counters"]["iteration"] == 1
    assert not [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")]


def tiny_latest(run_dir: Path, **damage: Any) -> Path:
    """A run directory holding a consistent latest.pt of the TINY run at iteration 1 (made in this process),
    with the entries in `damage` replaced; returns its path."""
    from omegaconf import OmegaConf

    from agents.alphazero.net.checkpoint import rng_state
    from agents.alphazero.training.learner import Learner
    from agents.alphazero.training.replay import ReplayBuffer

    cfg = train_config.compose_config([*TINY, f"out_dir={run_dir.parent}", f"name={run_dir.name}"])
    conf = train_config.checked_config(cfg)
    model = build_network(conf.model)
    state = {
        "model": model.state_dict(),
        "network": conf.model.to_dict(),
        "rules": RuleSet().to_dict(),
        "config": OmegaConf.to_yaml(cfg),
        "run_id": "00112233aabbccdd",
        "counters": {"iteration": 1, "positions": 0, "games": 0, "simulations": 0, "seconds": 1.0, "learner_steps": 0},
        "learner": Learner(model, conf.train.learner, device=torch.device("cpu")).state_dict(),
        "replay": ReplayBuffer(conf.train.replay_capacity, seed=0).state_dict(),
        "rng": rng_state(),
        "extra": {
            "history": {"elo": 0.0, "best_score": -1.0},
            "previous_model": model.state_dict(),
            "logs": {},
            "pending_eval": False,
        },
    }
    state.update(damage)
    write_run_record(run_dir, RunRecord("00112233aabbccdd", checkpointed=True))
    (run_dir / "config.yaml").write_text(state["config"] if isinstance(state["config"], str) else "")
    return save_checkpoint(run_dir / "latest.pt", state)


@pytest.mark.slow
@pytest.mark.parametrize("part", ["config", "learner", "replay", "rng", "counters", "extra", "model"])
def test_a_latest_pt_with_a_damaged_part_is_refused_before_the_run_directory_is_touched(
    part: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    good = torch.load(tiny_latest(run_dir), weights_only=True)
    damage = {
        "config": "train: {iterations: [unclosed",
        "learner": {"optimizer": {"state": {}, "param_groups": "none"}, "step_count": 0},
        "replay": dict(good["replay"], rng="not a generator state"),
        "rng": {"python": 3},
        "counters": dict(good["counters"], iteration="two"),
        "extra": dict(good["extra"], history=[1, 2]),
        "model": {k: (v[:1] if v.dim() else v) for k, v in good["model"].items()},
    }[part]
    tiny_latest(run_dir, **{part: damage})
    before = snapshot(run_dir)
    err = refused(capsys, monkeypatch, f"resume={run_dir}")
    assert err.count("\n") == 1 and str(run_dir / "latest.pt") in err, err
    assert (
        f"its {part} entry is damaged" in err
        if part not in ("config",)
        else "its stored config is not valid YAML" in err
    ), err
    assert snapshot(run_dir) == before and not (run_dir / ".lock").exists()


@pytest.mark.slow
def test_a_sound_tiny_latest_pt_resumes_past_the_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint the damage test starts from is sound: its resume passes every check (and, asked for no
    further iteration, ends at once)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    tiny_latest(run_dir)
    monkeypatch.setattr(sys, "argv", ["train.py", f"resume={run_dir}", "train.iterations=1"])
    run_train_script()
    assert "train.py: error" not in capsys.readouterr().err


@pytest.mark.slow
def test_kill_9_leaves_no_worker_processes(tmp_path: Path) -> None:
    run_dir = tmp_path / "workers"
    job = Job(
        "train.py",
        *TINY,
        "train.iterations=200",
        "train.workers=2",
        "train.worker_backend=process",
        f"out_dir={tmp_path}",
        "name=workers",
    )
    assert job.wait_for("iter 1/"), job.output[-3000:]  # the workers are up and playing
    kids = children(job.proc.pid)
    assert len(kids) >= 2
    job.proc.kill()
    job.finish()
    deadline = time.time() + 30
    while any(alive(k) for k in kids) and time.time() < deadline:
        time.sleep(0.1)
    assert not [k for k in kids if alive(k)], "worker processes outlived their killed parent"
    assert (run_dir / "latest.pt").is_file()


# --------------------------------------------------------------------------------------------
# evaluate.py: an interrupted tournament continues to the tables of an uninterrupted one
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_stopped_tournament_keeps_its_games_and_resumes_to_the_same_tables(tmp_path: Path) -> None:
    common = [
        'players=[random,"alphabeta:depth=1","alphabeta:depth=2"]',
        "games_per_pair=8",
        "seed=2",
        "workers=2",
        "progress=false",
    ]
    ref = Job("evaluate.py", *common, f"out_dir={tmp_path / 'ref'}")
    assert ref.finish() == 0, ref.output[-3000:]
    cut = tmp_path / "cut"
    job = Job("evaluate.py", *common, f"out_dir={cut}")
    deadline = time.time() + 240
    while time.time() < deadline and job.proc.poll() is None:
        if (cut / "games.jsonl").is_file() and len((cut / "games.jsonl").read_text().splitlines()) >= 2:
            break
        time.sleep(0.02)
    job.proc.send_signal(signal.SIGINT)
    assert job.finish(60) == 128 + signal.SIGINT, job.output[-3000:]
    assert "Traceback" not in job.output
    lines = [line for line in job.lines if "continue with: python evaluate.py resume=" in line]
    assert len(lines) == 1 and lines[0].startswith("Ctrl-C: stopped with "), job.output[-2000:]
    kept = len(list(read_jsonl(cut / "games.jsonl")))
    assert 2 <= kept < 24 and not (cut / "results.json").exists()
    refused = Job("evaluate.py", f"resume={cut}", "seed=3")
    assert refused.finish() == 2 and "seed cannot change" in refused.output
    resumed = Job("evaluate.py", f"resume={cut}", "progress=false")
    assert resumed.finish() == 0, resumed.output[-3000:]
    want, got = (json.loads((d / "results.json").read_text()) for d in (tmp_path / "ref", cut))
    for key in ("players", "ratings", "pairings", "crosstable", "terminations"):
        assert got[key] == want[key], key
    assert [g.moves for g in read_jsonl(cut / "games.jsonl")] == [
        g.moves for g in read_jsonl(tmp_path / "ref" / "games.jsonl")
    ]


# --------------------------------------------------------------------------------------------
# the pieces, in this process
# --------------------------------------------------------------------------------------------
def test_atomic_writes_follow_the_umask_and_stale_temp_files_are_cleared(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write_bytes(tmp_path / "result.json", b"{}")
        save_checkpoint(tmp_path / "latest.pt", {"model": {}, "network": {}, "rules": {}})
    finally:
        os.umask(old)
    assert (tmp_path / "result.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "latest.pt").stat().st_mode & 0o777 == 0o640
    stale = tmp_path / ".latest.pt.q1w2e3r4.tmp"
    fresh = tmp_path / ".last_game.json.a1b2c3d4.tmp"
    for p in (stale, fresh, tmp_path / ".hidden.tmp", tmp_path / "notes.tmp"):
        p.write_bytes(b"x")
    os.utime(stale, (time.time() - 600, time.time() - 600))
    assert remove_stale_temp_files(tmp_path, older_than=60) == [stale]  # a write may still own the fresh one
    assert remove_stale_temp_files(tmp_path) == [fresh]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".hidden.tmp", "latest.pt", "notes.tmp", "result.json"]


def test_a_process_refused_while_the_holder_runs_its_check_names_the_holder(tmp_path: Path) -> None:
    d = tmp_path / "out"
    refused: list[str] = []

    def check() -> None:
        with pytest.raises(RunDirBusyError) as e:
            claim_run_dir(d)
        refused.append(str(e.value))

    claim_run_dir(d, check=check).release()
    assert len(refused) == 1 and f"in use by process {os.getpid()}" in refused[0], refused


@pytest.mark.slow
def test_the_run_directory_lock_names_its_holder_and_dies_with_it(tmp_path: Path) -> None:
    d = tmp_path / "run"
    with claim_run_dir(d) as lock:
        assert lock.held
        with pytest.raises(RunDirBusyError, match=rf"in use by process {os.getpid()}\b"):
            claim_run_dir(d)
    claim_run_dir(d).release()  # released: free again
    # A holder killed with -9 leaves the lock file, never the lock.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import time
        from agents.common.rundir import claim_run_dir
        lock = claim_run_dir({str(d)!r})
        print("held", flush=True)
        time.sleep(60)
        """),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirBusyError, match=rf"process {holder.pid}\b"):
            claim_run_dir(d, what="tournament directory")
    finally:
        holder.kill()
        holder.wait()
    claim_run_dir(d).release()


def test_logs_are_cut_back_to_the_sizes_a_checkpoint_saw(tmp_path: Path) -> None:
    patterns = ("games.jsonl", "events.out.tfevents.*")
    (tmp_path / "games.jsonl").write_text('{"a": 1}\n')
    (tmp_path / "events.out.tfevents.1.host.1.0").write_bytes(b"12345")
    (tmp_path / "config.yaml").write_text("seed: 0\n")
    sizes = log_sizes(tmp_path, patterns)
    assert sizes == {"games.jsonl": 9, "events.out.tfevents.1.host.1.0": 5}
    with open(tmp_path / "games.jsonl", "a") as f:
        f.write('{"a": 2}\n{"a": 3, "torn')
    (tmp_path / "events.out.tfevents.1.host.1.0").write_bytes(b"1234567")
    (tmp_path / "events.out.tfevents.2.host.2.0").write_bytes(b"later sitting")
    (tmp_path / "events.out.tfevents.3.host.3.0").write_bytes(b"another run's")

    def owned(name: str) -> bool:
        return name != "events.out.tfevents.3.host.3.0"

    changes = rewind_logs(tmp_path, sizes, patterns, owned=owned)
    assert len(changes) == 4 and "left events.out.tfevents.3.host.3.0 as it is: another run wrote it" in changes
    assert (tmp_path / "games.jsonl").read_text() == '{"a": 1}\n'
    assert (tmp_path / "events.out.tfevents.1.host.1.0").read_bytes() == b"12345"
    assert not (tmp_path / "events.out.tfevents.2.host.2.0").exists()
    assert (tmp_path / "events.out.tfevents.3.host.3.0").read_bytes() == b"another run's"  # not the run's own
    assert (tmp_path / "config.yaml").read_text() == "seed: 0\n"  # not a log
    assert rewind_logs(tmp_path, sizes, patterns, owned=owned) == [
        "left events.out.tfevents.3.host.3.0 as it is: another run wrote it"
    ]


def test_a_stop_abandons_an_abandonable_phase_at_once_and_is_remembered() -> None:
    def phase() -> str:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
        return "finished"

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)  # SIGINT is ignored in a background job
    with GracefulStop() as stop:
        assert signal.getsignal(signal.SIGINT) not in before  # its own handler while it runs
        assert stop.abandonable(lambda: "finished") == "finished"
        t0 = time.time()
        assert stop.abandonable(phase) is None
        assert time.time() - t0 < 5
        assert stop.requested == signal.SIGTERM and stop.exit_code == 143
        assert stop.abandonable(lambda: "finished") is None  # a stop asked before a phase abandons it too
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # the handlers are given back


@pytest.mark.slow
def test_the_first_ctrl_c_lets_a_phase_finish_and_the_second_stops_at_once() -> None:
    script = textwrap.dedent("""
        import time
        from agents.common.stopping import GracefulStop
        with GracefulStop(on_second="stopped at once; continue with: resume=here") as stop:
            stop.waiting_for = "the long phase"
            print("ready", flush=True)
            t0 = time.time()
            while time.time() - t0 < 30:
                time.sleep(0.01)
        print("the phase ended", flush=True)
        """)
    job = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert job.stdout is not None and job.stdout.readline().strip() == "ready"
    job.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert job.poll() is None  # still finishing its phase
    job.send_signal(signal.SIGINT)
    out, err = job.communicate(timeout=10)
    assert job.returncode == 130
    assert "Ctrl-C: stopping after the long phase (press Ctrl-C again to stop at once)" in err
    assert "Ctrl-C again: stopped at once; continue with: resume=here" in err
    assert "the phase ended" not in out and "Traceback" not in err


def test_the_eta_prices_the_phases_still_to_come() -> None:
    assert [i for i in range(1, 11) if evaluation_due(i, 10, 4)] == [4, 8, 10]
    assert not any(evaluation_due(i, 10, 0) for i in range(1, 11))
    clock = PhaseClock()
    for phase, seconds in (("selfplay", 10.0), ("learn", 5.0), ("checkpoint", 1.0)):
        clock.add(phase, seconds)
    assert clock.eta(1, 10, 4) == (9 * 16.0, 3)  # no evaluation measured yet: 3 left unpriced
    clock.add("eval", 100.0)
    assert clock.eta(1, 10, 4) == (9 * 16.0 + 3 * 100.0, 0)
    assert clock.eta(8, 10, 4) == (2 * 16.0 + 100.0, 0)  # after the evaluation of 8, only 10's is left
    assert clock.eta(8, 10, 4, pending_eval=True)[0] == 2 * 16.0 + 200.0
    again = PhaseClock(clock.state_dict())  # kept in the checkpoint across sittings
    assert again.eta(5, 10, 4) == clock.eta(5, 10, 4)
    with pytest.raises(ValueError, match="unknown phase"):
        clock.add("lunch", 1.0)


def test_resume_takes_a_run_latest_pt_only_and_writes_beside_it(tmp_path: Path) -> None:
    net = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
    weights = {"model": build_network(net).state_dict(), "network": net.to_dict(), "rules": RuleSet().to_dict()}
    with pytest.raises(CheckpointError, match="holds network weights only.*init="):
        require_training_state(weights, tmp_path / "best.pt")
    full = dict(weights, learner={}, replay={}, rng={}, counters={}, extra={})
    require_training_state(full, tmp_path / "latest.pt")
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    assert resume_dir(run / "latest.pt") == run
    with pytest.raises(CheckpointError, match="name=<new name>"):
        resume_dir(tmp_path / "keep" / "a-copy.pt")
    assert resume_dir(tmp_path / "keep" / "a-copy.pt", tmp_path / "runs" / "b") == tmp_path / "runs" / "b"
    assert resume_dir(run / "latest.pt", run) == run  # naming the run itself continues it in place
    save_checkpoint(tmp_path / "runs" / "c" / "iter_000001.pt", weights)
    with pytest.raises(CheckpointError, match="already holds checkpoints"):
        resume_dir(run / "latest.pt", tmp_path / "runs" / "c")


def test_a_torn_last_line_is_cut_from_a_jsonl_log(tmp_path: Path) -> None:
    log = tmp_path / "games.jsonl"
    assert cut_torn_tail(log) == 0
    log.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": 3, "mo')
    assert cut_torn_tail(log) == len(b'{"a": 3, "mo')
    assert log.read_bytes() == b'{"a": 1}\n{"a": 2}\n'
    assert cut_torn_tail(log) == 0
    log.write_bytes(b"no newline at all")
    assert cut_torn_tail(log) == len(b"no newline at all") and log.read_bytes() == b""


def test_a_tournament_continues_from_its_games_already_played() -> None:
    players = ["random", "alphabeta:depth=1", "alphabeta:depth=2"]
    whole = run_tournament(players, TournamentSettings(games_per_pair=4, seed=1), progress=False)
    seen: list[Any] = []
    rest = run_tournament(
        players,
        TournamentSettings(games_per_pair=4, seed=1),
        progress=False,
        played=whole.games[::3],
        on_game=seen.append,
    )
    assert len(seen) == len(whole.games) - len(whole.games[::3])  # only the missing games are played
    assert [g.moves for g in rest.games] == [g.moves for g in whole.games]
    assert rest.table().splitlines()[:-1] == whole.table().splitlines()[:-1]  # all but the timing line
    with pytest.raises(TournamentError, match="is not game 0 of this tournament"):
        run_tournament(players, TournamentSettings(games_per_pair=4, seed=2), progress=False, played=whole.games[:1])
    with pytest.raises(TournamentError, match="given twice"):
        run_tournament(
            players, TournamentSettings(games_per_pair=4, seed=1), progress=False, played=whole.games[:1] * 2
        )


def test_checkpoint_specs_take_run_names_and_openings_files_must_be_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    net = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
    save_checkpoint(
        tmp_path / "checkpoints" / "myrun" / "latest.pt",
        {"model": build_network(net).state_dict(), "network": net.to_dict(), "rules": RuleSet().to_dict()},
    )
    monkeypatch.chdir(tmp_path)
    assert check_spec("checkpoint:path=myrun,sims=2", RuleSet()) is not None  # a run name, as the README says
    bad = tmp_path / "openings.txt"
    bad.write_bytes("a3a4 g7g6  # Éléphant\n".encode("latin-1"))
    with pytest.raises(OpeningsError, match=r"openings.txt' is not UTF-8"):
        read_openings(bad)


@pytest.mark.slow
def test_chromium_setup_waits_for_the_apt_lock_then_gives_up(tmp_path: Path) -> None:
    """.ci/chromium with a stand-in apt-get that finds the dpkg lock held for its first calls."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in ("env", "grep", "sleep"):
        (fake / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    (fake / "id").write_text("#!/bin/bash\necho 0\n")
    (fake / "apt-get").write_text(
        textwrap.dedent("""\
        #!/bin/bash
        n=0; [ -f "$CALLS" ] && read -r n < "$CALLS"; n=$((n + 1)); echo $n > "$CALLS"
        if [ "$n" -le "$LOCKED_CALLS" ]; then
          echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2; exit 100
        fi
        echo "$*" >> "$RAN"
        """)
    )
    for f in ("id", "apt-get"):
        (fake / f).chmod(0o755)

    def setup(locked_calls: int, wait: int) -> subprocess.CompletedProcess:
        for f in ("calls", "ran"):
            (tmp_path / f).unlink(missing_ok=True)
        env = {
            "PATH": str(fake),
            "CALLS": str(tmp_path / "calls"),
            "RAN": str(tmp_path / "ran"),
            "LOCKED_CALLS": str(locked_calls),
            "APT_LOCK_WAIT": str(wait),
            "APT_LOCK_POLL": "0.05",
        }
        return subprocess.run(
            ["/bin/bash", str(ROOT / ".ci" / "chromium")], env=env, capture_output=True, text=True, timeout=60
        )

    r = setup(locked_calls=3, wait=30)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("holds its lock; waiting") == 3
    ran = (tmp_path / "ran").read_text().splitlines()
    assert len(ran) == 2 and "update -qq" in ran[0] and "install -y -qq chromium" in ran[1]
    assert all("DPkg::Lock::Timeout=30" in line for line in ran)  # apt itself also waits for dpkg's lock
    r = setup(locked_calls=10_000, wait=1)
    assert r.returncode != 0 and "still holds its lock after 1s; giving up" in r.stderr


def test_the_play_server_clears_the_temp_files_of_saves_a_kill_cut_short(tmp_path: Path) -> None:
    from agents.play.server import GameStore

    stale = tmp_path / ".last_game.json.0a1b2c3d.tmp"
    fresh = tmp_path / ".last_game.json.4e5f6a7b.tmp"  # perhaps another server's save in progress
    for p in (stale, fresh):
        p.write_text("{")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    store = GameStore(rules=RuleSet(), state_dir=tmp_path, pool=object())  # type: ignore[arg-type]
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [fresh.name]


@pytest.mark.slow
def test_a_resumed_run_cuts_a_games_log_torn_inside_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A games.jsonl shorter than latest.pt saw and cut inside a line (its end was lost) is cut back to its
    last whole line with a warning, so the next record is not glued onto the torn one."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    good = torch.load(tiny_latest(run_dir), weights_only=True)
    tiny_latest(run_dir, extra=dict(good["extra"], logs={"games.jsonl": 10_000}))
    whole = '{"moves": ["a3a4"], "result": "*"}\n'
    torn = '{"moves": ["a3'
    (run_dir / "games.jsonl").write_text(whole + torn)
    monkeypatch.setattr(sys, "argv", ["train.py", f"resume={run_dir}", "train.iterations=2"])
    run_train_script()
    out = capsys.readouterr()
    lines = (run_dir / "games.jsonl").read_text().splitlines(keepends=True)
    assert lines[0] == whole and all(is_game_record(line.encode()) for line in lines)  # then iteration 2's games
    assert f"dropped 1 line that is not one ({len(torn)} bytes)" in out.out + out.err


@pytest.mark.slow
@pytest.mark.parametrize("how", ["resume", "init"])
def test_a_checkpoint_with_nan_weights_cannot_start_or_continue_a_run(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    state = torch.load(tiny_latest(run_dir), weights_only=True)
    state["model"] = {
        k: (torch.full_like(v, float("nan")) if v.is_floating_point() else v) for k, v in state["model"].items()
    }
    torch.save(state, run_dir / "latest.pt")  # written some other way than save_checkpoint, which refuses it
    before = snapshot(run_dir)
    args = (
        [f"resume={run_dir}"]
        if how == "resume"
        else [*TINY, f"init={run_dir / 'latest.pt'}", f"out_dir={tmp_path}", "name=new"]
    )
    err = refused(capsys, monkeypatch, *args)
    assert "holds NaN or infinity in model." in err and err.count("\n") == 1
    assert snapshot(run_dir) == before and not (tmp_path / "new").exists()


def _game_line(*moves: str) -> bytes:
    return (GameRecord(moves=list(moves), result="*").to_json() + "\n").encode()


def test_a_games_log_is_rewound_record_by_record(tmp_path: Path) -> None:
    """What is not a record goes wherever it is, and no record the checkpoint saw is cut for it."""
    log = tmp_path / "games.jsonl"
    seen = [_game_line("a3a4"), _game_line("a3a4", "a7a6"), _game_line("g3g4")]
    late = [_game_line("c3c4"), _game_line("e3e4")]
    garbage = [b"\x00\x17 not a record\n", b'{"moves": 5}\n', b"\n"]
    log.write_bytes(seen[0] + garbage[0] + seen[1] + garbage[1] + seen[2] + late[0] + garbage[2] + late[1] + b'{"mo')
    done = rewind_records(log, sum(map(len, seen)), is_game_record)
    assert log.read_bytes() == b"".join(seen)
    assert (done.kept, done.not_records, done.late) == (3, 4, 2)
    assert done.not_record_bytes == sum(map(len, garbage)) + 4
    line = done.describe("games.jsonl")
    assert "\n" not in line and "kept 3 game records" in line and "4 lines that are not one" in line
    assert "2 records written after the checkpoint" in line
    # Only records written after the checkpoint: cut at the end, nothing else said to be wrong.
    log.write_bytes(b"".join(seen + late))
    done = rewind_records(log, sum(map(len, seen)), is_game_record)
    assert log.read_bytes() == b"".join(seen) and (done.kept, done.not_records, done.late) == (3, 0, 2)
    # Nothing to drop: the file is left alone (same inode, same bytes).
    inode = log.stat().st_ino
    assert rewind_records(log, sum(map(len, seen)), is_game_record) == (3, 0, 0, 0) and log.stat().st_ino == inode


@pytest.mark.slow
def test_a_resumed_run_drops_a_garbage_line_and_keeps_every_game_its_checkpoint_saw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    seen = [_game_line("a3a4"), _game_line("g3g4")]
    good = torch.load(tiny_latest(run_dir), weights_only=True)
    tiny_latest(run_dir, extra=dict(good["extra"], logs={"games.jsonl": sum(map(len, seen))}))
    (run_dir / "games.jsonl").write_bytes(seen[0] + b"garbage\n" + seen[1] + _game_line("c3c4"))
    monkeypatch.setattr(sys, "argv", ["train.py", f"resume={run_dir}", "train.iterations=2", "train.eval.every=10"])
    run_train_script()
    out = capsys.readouterr()
    text = (run_dir / "games.jsonl").read_bytes()
    assert text.startswith(b"".join(seen)) and b"garbage" not in text and _game_line("c3c4") not in text
    assert all(is_game_record(line) for line in text.splitlines(keepends=True))  # then iteration 2's games
    said = [line for line in (out.out + out.err).splitlines() if "games.jsonl: kept" in line]
    assert len(said) == 1 and "kept 2 game records" in said[0] and "1 line that is not one" in said[0], said


@pytest.mark.slow
def test_a_resume_with_no_iteration_left_changes_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """train.iterations at or below the run's iteration: the directory stays byte for byte, one line, status 0."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    good = torch.load(tiny_latest(run_dir), weights_only=True)
    tiny_latest(run_dir, extra=dict(good["extra"], logs={"games.jsonl": len(_game_line("a3a4"))}))
    (run_dir / "games.jsonl").write_bytes(_game_line("a3a4") + b"garbage\n" + _game_line("g3g4"))
    (run_dir / "events.out.tfevents.1.host.00112233aabbccdd").write_bytes(b"written after the checkpoint")
    before = snapshot(run_dir)
    monkeypatch.setattr(sys, "argv", ["train.py", f"resume={run_dir}", "train.iterations=1"])
    capsys.readouterr()
    run_train_script()  # returns: exit status 0
    out = capsys.readouterr()
    assert snapshot(run_dir) == before and sorted(p.name for p in run_dir.iterdir()) == sorted(before)
    said = (out.out + out.err).strip().splitlines()
    assert len(said) == 1 and "nothing to do" in said[0] and "iteration 1" in said[0], said
    assert "train.iterations=1" in said[0] and "nothing was changed" in said[0]


@pytest.mark.slow
def test_ctrl_c_during_self_play_says_at_once_that_it_stops_and_ends_the_workers(tmp_path: Path) -> None:
    """The first line after the signal says the run is stopping; the workers' games are dropped, not waited for."""
    job = Job(
        "train.py",
        *TINY,
        "train.iterations=200",
        "train.games_per_iteration=64",
        "train.workers=2",
        "train.worker_backend=process",
        f"out_dir={tmp_path}",
        "name=run",
    )
    assert job.wait_for("iter 1/"), job.output[-3000:]  # iteration 2's self-play follows at once
    kids = children(job.proc.pid)
    seen = len(job.lines)
    job.proc.send_signal(signal.SIGINT)
    assert job.finish(60) == 128 + signal.SIGINT, job.output[-3000:]
    after = [line for line in job.lines[seen:] if line.strip()]
    assert after and after[0].startswith("Ctrl-C: stopping now"), after
    resume = [line for line in after if RESUME_LINE in line]
    assert len(resume) == 1 and resume[0].startswith("Ctrl-C: stopped during the self-play of iteration 2"), after
    # The workers are joined before the run exits; multiprocessing's resource tracker ends after it, which on a
    # loaded machine takes a moment: wait for it, then read what it may have said (a leak warning) to the end.
    assert not survivors(kids, 30)
    job.finish(60)
    assert "Traceback" not in job.output and "leaked" not in job.output
    assert len(after) == 2 and load_checkpoint(tmp_path / "run" / "latest.pt")["counters"]["iteration"] == 1


@pytest.mark.slow
def test_a_self_play_worker_lost_mid_run_stops_the_run_naming_it_at_its_last_checkpoint(tmp_path: Path) -> None:
    """A self-play process killed during an iteration (a lost node's actors end the same way on Ray) ends the
    run at once with one line: which worker died and how, what latest.pt holds and the resume command; the
    resumed run goes on."""
    run_dir = tmp_path / "lost"
    job = Job(
        "train.py",
        *TINY,
        "train.iterations=200",
        "train.workers=2",
        "train.worker_backend=process",
        f"out_dir={tmp_path}",
        "name=lost",
    )
    assert job.wait_for("iter 1/"), job.output[-3000:]
    kids = children(job.proc.pid)
    assert len(kids) >= 2
    os.kill(kids[-1], signal.SIGKILL)
    assert job.finish(120) == 1, job.output[-3000:]
    assert "Traceback" not in job.output
    errors = [line.rstrip() for line in job.lines if line.startswith("train.py: error: ")]
    assert len(errors) == 1, job.output[-3000:]
    assert re.search(r"self-play worker \d \(pid \d+\) died: killed by SIGKILL", errors[0]), errors[0]
    assert "latest.pt holds iteration " in errors[0]
    assert errors[0].endswith(f"continue with: python train.py resume={run_dir}"), errors[0]
    assert not survivors(kids, 30)  # the resource tracker ends just after the run
    resumed = Job("train.py", f"resume={run_dir}", "train.iterations=3")
    assert resumed.finish() == 0, resumed.output[-3000:]

"""Smoke runs of train.py in a subprocess: events, checkpoints, resume, clear errors."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.alphazero.checkpoint import load_checkpoint
from agents.arena.records import read_jsonl

ROOT = Path(__file__).resolve().parents[1]
TINY = ["train=tiny", "model=tiny", "mcts.num_simulations=4", "seed=3"]


def run_train(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    r = run_train(*TINY, f"out_dir={out}", "name=smoke", "train.opponents=[random]", "train.opponent_fraction=0.5")
    assert r.returncode == 0, r.stderr[-3000:]
    return out / "smoke"


def test_a_tiny_run_writes_events_checkpoints_and_games(run_dir: Path) -> None:
    for name in ("latest.pt", "best.pt", "iter_000001.pt", "iter_000002.pt", "config.yaml", "games.jsonl"):
        assert (run_dir / name).is_file(), name
    tags = scalars(run_dir)
    for tag in ("loss/total", "loss/policy", "loss/value", "loss/policy_entropy", "loss/lr",
                "selfplay/positions_per_s", "selfplay/game_length", "selfplay/draws", "selfplay/opponent_games",
                "eval/score_random", "eval/elo", "perf/seconds_selfplay"):
        assert [s for s, _ in tags[tag]] == [1, 2], tag
    state = load_checkpoint(run_dir / "latest.pt")
    assert state["counters"]["iteration"] == 2
    assert state["counters"]["learner_steps"] == 4
    assert state["replay"]["has_contents"] and len(state["replay"]["value"]) == state["counters"]["positions"]
    assert "model:" in state["config"] and "blocks: 1" in state["config"]
    torch.load(run_dir / "latest.pt", weights_only=True)


def test_resume_continues_the_step_counter(run_dir: Path) -> None:
    r = run_train(f"resume={run_dir}", "train.iterations=3")
    assert r.returncode == 0, r.stderr[-3000:]
    state = load_checkpoint(run_dir / "latest.pt")
    assert state["counters"]["iteration"] == 3
    assert state["counters"]["learner_steps"] == 6
    tags = scalars(run_dir)
    assert [s for s, _ in tags["loss/total"]] == [1, 2, 3]
    assert [s for s, _ in tags["eval/score_random"]] == [1, 2, 3]


def test_self_play_workers_play_the_games_of_the_in_process_loop(run_dir: Path) -> None:
    """train.workers=2: the same run as the fixture's (in-process), its self-play in two worker processes."""
    out = run_dir.parent
    r = run_train(*TINY, f"out_dir={out}", "name=smoke-workers", "train.opponents=[random]",
                  "train.opponent_fraction=0.5", "train.workers=2", "train.worker_backend=process")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "self-play on 2 process workers" in r.stdout + r.stderr
    here = list(read_jsonl(run_dir / "games.jsonl"))[:4]  # iteration 1: the same initial network
    there = list(read_jsonl(out / "smoke-workers" / "games.jsonl"))
    assert len(there) == 8 and [g.extra["game_index"] for g in there] == [0, 1, 2, 3] * 2
    assert [g.seed for g in there[:4]] == [g.seed for g in here]
    # Opponent and colour come from each game's seed; the network's own games are move for move the same.
    assert [("random" in (g.red, g.blue)) for g in there[:4]] == [("random" in (g.red, g.blue)) for g in here]
    selfplay = [k for k, g in enumerate(here) if "random" not in (g.red, g.blue)]
    assert selfplay and all(here[k].moves == there[k].moves for k in selfplay)


def test_a_corrupted_checkpoint_is_refused_with_a_clear_message(run_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "latest.pt"
    data = (run_dir / "iter_000001.pt").read_bytes()
    bad.write_bytes(data[: len(data) // 3])
    r = run_train(f"resume={bad}")
    assert r.returncode != 0
    assert "corrupt or truncated" in r.stderr and str(bad) in r.stderr


def test_an_unknown_config_key_is_an_error() -> None:
    r = run_train("train.bogus_key=1")
    assert r.returncode != 0
    assert "bogus_key" in r.stderr
    r = run_train('train.opponents=["alphabeta:depth=-1"]')  # a bad opponent spec fails before any game
    assert r.returncode != 0
    assert "depth='-1' must be in" in r.stderr and "iter 1" not in r.stdout
    r = run_train("train.worker_backend=threads", "train.workers=2")  # refused before any game
    assert r.returncode != 0
    assert "worker_backend='threads'" in r.stderr and "iter 1" not in r.stdout
    r = run_train("model=huge")
    assert r.returncode != 0 and "huge" in r.stderr


@pytest.mark.parametrize("group", ["default", "gpu", "tiny", "opponents"])
def test_every_train_group_composes(group: str) -> None:
    """Each configs/train/*.yaml composes into the structured config (no unknown or mistyped keys)."""
    r = run_train(f"train={group}", "--cfg", "job")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "iterations:" in r.stdout
    if group == "opponents":
        assert "- alphabeta:depth=2,noise=50" in r.stdout and "opponent_fraction: 0.3" in r.stdout
        assert "simulations: 128" in r.stdout  # the default group's evaluation is kept

"""Fingerprints: digests of the games that fixed seeds give, so a change meant to keep behaviour can show it does.

Each test plays seeded games through one public entry point (self-play,
searches with subtree reuse, evaluation matches, the checkpoint player, the
vector env, a tournament, a tiny training run) and compares a digest of what
came out with the golden one recorded before. A digest is the first 16 hex
digits of a SHA-256 over the JSON of the ints and strings (floats rounded to 5
decimals) and over the bytes of the arrays (float arrays rounded likewise).
A test that digests observations keeps a second golden, recorded before the
rule planes (`envs.encoding` planes 24-31) were appended, of its observations
cut to planes 0-23: that those stay equal shows the games and the older planes
did not change.

The networks run in float32 on one torch thread, so no bf16 or thread-count
choice enters. The goldens are those of the machine they were recorded on: a
CPU with other vector units may round a network's floats otherwise and choose
another move. A mismatch means the games changed: find the change that did it,
never re-record a golden to make the test pass.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.search import BatchedMCTS, GumbelConfig, MCTSConfig, make_policy
from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
from agents.alphazero.training.ladder import Searcher, play_match, play_vs_spec
from agents.arena.records import GameRecord
from agents.arena.settings import TournamentSettings
from agents.arena.tournament import run_tournament
from envs import Board, RuleSet
from envs.batch import GameBatch
from envs.encoding import LEGACY_PLANES, OBS_SHAPE
from envs.players import make_player
from envs.vector import JungleVectorEnv
from tests.support import ROOT
from tests.support.evaluators import linear_evaluator
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread)

DECIMALS = 5
"""Floats are rounded to this many decimals before they are digested."""
TINY_NET = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)


class Digest:
    """A SHA-256 fed JSON values and arrays (each with its dtype and shape); floats rounded to `DECIMALS`.
    `legacy`: observations (arrays ending in the observation's shape) cut to planes 0-23 first."""

    def __init__(self, legacy: bool = False) -> None:
        self._hash = hashlib.sha256()
        self.legacy = legacy

    def add(self, *values: Any) -> "Digest":
        for value in values:
            if isinstance(value, (np.ndarray, torch.Tensor)):
                self._array(np.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value))
            else:
                self._hash.update(json.dumps(_plain(value), sort_keys=True).encode())
        return self

    def _array(self, a: np.ndarray) -> None:
        if self.legacy and a.shape[-3:] == OBS_SHAPE:
            a = a[..., :LEGACY_PLANES, :, :]
        self._hash.update(f"{a.dtype.str}{a.shape}".encode())
        if a.dtype.kind == "f":
            a = np.round(a.astype(np.float64), DECIMALS) + 0.0  # + 0.0: -0.0 reads as 0.0
        self._hash.update(np.ascontiguousarray(a).tobytes())

    def hex(self) -> str:
        return self._hash.hexdigest()[:16]


class Digests:
    """A `Digest` of everything and one of the same with the observations cut to planes 0-23 (module doc)."""

    def __init__(self) -> None:
        self.full, self.legacy = Digest(), Digest(legacy=True)

    def add(self, *values: Any) -> "Digests":
        self.full.add(*values)
        self.legacy.add(*values)
        return self

    def hex(self) -> tuple[str, str]:
        return self.full.hex(), self.legacy.hex()


def _plain(value: Any) -> Any:
    """`value` as JSON: floats rounded, numpy scalars and tuples made plain."""
    if isinstance(value, (float, np.floating)):
        return round(float(value), DECIMALS) + 0.0
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def record_fields(rec: GameRecord) -> dict[str, Any]:
    """A game record's fields without its timing (``extra["seconds"]`` and ``extra["think"]``)."""
    fields = dataclasses.asdict(rec)
    fields["extra"] = {k: v for k, v in rec.extra.items() if k not in ("seconds", "think")}
    return fields


def seeded_evaluator(seed: int) -> Any:
    """A fresh tiny network of `seed`'s weights, evaluated in float32 on the CPU."""
    torch.manual_seed(seed)
    return make_evaluator(build_network(TINY_NET), "cpu", "fp32")


class Recorded:
    """An evaluator that digests every call it gets and answers (the positions a match's searches saw)."""

    def __init__(self, evaluator: Any, digest: Digests) -> None:
        self.evaluator = evaluator
        self.digest = digest

    def __call__(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits, value = self.evaluator(obs, mask)
        self.digest.add(obs, mask, value)
        return logits, value


# --------------------------------------------------------------------------------------------
# self-play
# --------------------------------------------------------------------------------------------
SELFPLAY_GOLDEN = {"puct": "42fa46fd4e3c8cb1", "gumbel": "076f339e9a4542db"}


@pytest.mark.parametrize("algorithm", sorted(SELFPLAY_GOLDEN))
def test_selfplay_games(algorithm: str) -> None:
    """A network's self-play with playout caps and an alpha-beta opponent: moves, results, targets."""
    settings = SelfPlayConfig(
        parallel=3,
        max_plies=60,
        playout_cap_fraction=0.3,
        cheap_simulations=2,
        opponents=["alphabeta:depth=1"],
        opponent_fraction=0.3,
    )
    data = play_games(
        seeded_evaluator(0),
        settings,
        mcts=MCTSConfig(algorithm=algorithm, num_simulations=8),
        rules=RuleSet(),
        num_games=6,
        seed=5,
    )
    digest = Digest().add([[r.moves, r.result, r.termination, r.red, r.blue, r.extra] for r in data.records])
    digest.add(data.full_search, data.value, data.policy)
    assert digest.hex() == SELFPLAY_GOLDEN[algorithm]


# --------------------------------------------------------------------------------------------
# searches with subtree reuse
# --------------------------------------------------------------------------------------------
SEARCH_GOLDEN = {
    "puct": "18c5766ae24c4a36",
    "gumbel": "b6ddee84a1d744de",
    "gumbel_leaf_batch_8": "7f64d0982607e59e",
    "puct_leaf_batch_4": "1232f261ab573c26",
    "draw_value": "52747178f30014b1",
}
SEARCHES = {
    "puct": MCTSConfig(algorithm="puct", num_simulations=16),
    "gumbel": MCTSConfig(algorithm="gumbel", num_simulations=16, gumbel=GumbelConfig(max_actions=4)),
    "gumbel_leaf_batch_8": MCTSConfig(
        algorithm="gumbel", num_simulations=16, gumbel=GumbelConfig(max_actions=4), leaf_batch=8
    ),
    "puct_leaf_batch_4": MCTSConfig(algorithm="puct", num_simulations=16, leaf_batch=4),
    "draw_value": MCTSConfig(
        algorithm="gumbel", num_simulations=16, gumbel=GumbelConfig(max_actions=4), draw_value=-0.1
    ),
}
"""Gumbel considers 4 root actions, so the move played has a subtree to keep (with 16 each gets one visit)."""
SEARCH_RULES = RuleSet(no_capture_draw=16)
"""A short no-capture limit: the last searches meet drawn ends, which `draw_value` values."""


@pytest.mark.parametrize("name", sorted(SEARCH_GOLDEN))
def test_searches_with_reuse(name: str) -> None:
    """12 plies of noisy searches of 4 games, each move played and its subtree kept: actions, visits, values."""
    games = GameBatch(4, SEARCH_RULES)
    mcts = BatchedMCTS(linear_evaluator(3), make_policy(SEARCHES[name]), games.flags, seed=9)
    digest = Digest()
    for _ in range(12):
        out = mcts.search(games)
        digest.add(out.action, out.visits, out.root_value)
        live = np.flatnonzero(~games.done)
        games.play_many(out.action)
        mcts.advance_many(live, out.action)
    assert digest.hex() == SEARCH_GOLDEN[name]


# --------------------------------------------------------------------------------------------
# evaluation matches
# --------------------------------------------------------------------------------------------
MATCH_GOLDEN = {
    "network": ("c4b248cbe0e443c3", "98cc929f52f7bef4"),
    "alphabeta": ("69518a6511002079", "f0aea37b099c3b4e"),
}
"""(the digest, the digest with the observations cut to planes 0-23: recorded before the rule planes)."""


@pytest.mark.slow
def test_match_of_two_networks() -> None:
    """Two seeded networks' searches in a match from random openings: every position searched, and the score."""
    digest = Digests()
    a = Searcher(Recorded(seeded_evaluator(1), digest), MCTSConfig(algorithm="gumbel"), 8, name="a")
    b = Searcher(Recorded(seeded_evaluator(2), digest), MCTSConfig(algorithm="puct"), 8, name="b")
    result = play_match(a, b, games=4, rules=RuleSet(), seed=4, max_plies=80, opening_plies=2)
    digest.add(dataclasses.asdict(result))
    assert digest.hex() == MATCH_GOLDEN["network"]


def test_match_against_alphabeta() -> None:
    digest = Digests()
    searcher = Searcher(Recorded(seeded_evaluator(1), digest), MCTSConfig(algorithm="gumbel"), 8)
    result = play_vs_spec(
        searcher, "alphabeta:depth=1", games=4, rules=RuleSet(), seed=6, max_plies=80, opening_plies=2
    )
    digest.add(dataclasses.asdict(result))
    assert digest.hex() == MATCH_GOLDEN["alphabeta"]


# --------------------------------------------------------------------------------------------
# the checkpoint player (shipped networks)
# --------------------------------------------------------------------------------------------
PLAYER_GOLDEN = {
    ("results-only-60", "sims=16,algorithm=puct"): "a7c093d40e992e5b",
    ("results-only-60", "sims=16,algorithm=gumbel,leaf_batch=8"): "cadabaf7eab8949b",
    ("results-only-60", "sims=32,max_actions=4"): "46732dfe18d8dd14",
    ("default-60", "sims=16,algorithm=puct"): "d74f3ebbe3cd97ac",
    ("default-60", "sims=16,algorithm=gumbel,leaf_batch=8"): "887fce6a8e7d4f83",
    ("default-60", "sims=32,max_actions=4"): "5f929d9f17014a2c",
}


@pytest.mark.parametrize("network,options", sorted(PLAYER_GOLDEN))
def test_checkpoint_player_moves(network: str, options: str) -> None:
    """20 plies of a shipped network playing both sides from the start."""
    path = ROOT / "checkpoints" / "shipped" / f"{network}.pt"
    player = make_player(f"checkpoint:path={path},{options},device=cpu,precision=fp32,threads=1", seed=0)
    board = Board()
    for _ in range(20):
        if board.outcome() is not None:
            break
        board.push(player.select_move(board.copy()))
    assert Digest().add([str(m) for m in board.move_stack]).hex() == PLAYER_GOLDEN[(network, options)]


# --------------------------------------------------------------------------------------------
# the vector env
# --------------------------------------------------------------------------------------------
def first_legal(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A batched policy: the first legal action of each game."""
    return np.argmax(mask != 0, axis=1)


VECTOR_GOLDEN = {
    "self_play": ("0d0f2d35eea363fd", "307c4796fb7dd479"),
    "random": ("0808d2161b482b3a", "293428722d126ff8"),
    "policy": ("7b84b79d6a246795", "e6af492e88f4d1de"),
}
"""As `MATCH_GOLDEN`: (the digest, the one of planes 0-23 recorded before the rule planes)."""
OPPONENTS: dict[str, dict[str, Any]] = {
    "self_play": {"opponent": None},
    "random": {"opponent": "random", "agent_side": "random"},
    "policy": {"opponent": first_legal, "agent_side": "random"},
}


@pytest.mark.parametrize("name", sorted(VECTOR_GOLDEN))
def test_vector_env_steps(name: str) -> None:
    """200 steps of 32 games (autoresets included): observations, rewards, ends and every info array."""
    venv = JungleVectorEnv(num_envs=32, max_plies=60, **OPPONENTS[name])
    obs, info = venv.reset(seed=7)
    venv.action_space.seed(7)
    digest = Digests().add(obs, *(info[k] for k in sorted(info)), sorted(info))
    for _ in range(200):
        obs, rewards, terminated, truncated, info = venv.step(venv.action_space.sample())
        digest.add(obs, rewards, terminated, truncated, *(info[k] for k in sorted(info)), sorted(info))
    venv.close()
    assert digest.hex() == VECTOR_GOLDEN[name]


# --------------------------------------------------------------------------------------------
# a tournament
# --------------------------------------------------------------------------------------------
TOURNAMENT_GOLDEN = "c9fabfd886a623a6"


def test_tournament() -> None:
    """A round robin of three players in this process: the records (no timings) and the Elo ratings."""
    result = run_tournament(
        ["random", "alphabeta:depth=1", "alphabeta:depth=2,noise=20"],
        TournamentSettings(games_per_pair=2, seed=3, max_plies=100),
        workers=0,
        progress=False,
    )
    digest = Digest().add([record_fields(r) for r in result.games])
    digest.add(
        [
            (r.name, round(r.elo, 3), round(r.ci_low, 3), round(r.ci_high, 3), r.games, r.score)
            for r in result.ratings.ratings
        ]
    )
    assert digest.hex() == TOURNAMENT_GOLDEN


# --------------------------------------------------------------------------------------------
# a tiny training run
# --------------------------------------------------------------------------------------------
TRAIN_GOLDEN = ("ca854c565cfed718", "f91df2475c974410")
"""(the digest, the one with the stem's weights cut to planes 0-23). Convolutions round their last bits by the
vector unit they run on, and a run's games and weights follow, so the run is pinned to AVX2 kernels (torch's
`ATEN_CPU_CAPABILITY` and oneDNN's `ONEDNN_MAX_CPU_ISA`): one digest on every x86-64 CPU, AVX-512 or not."""
CLOCK_COUNTERS = ("seconds", "cpu_seconds")
"""Counters that measure the machine's clocks, not the run: left out of the digest."""


@pytest.mark.slow
def test_tiny_training_run(tmp_path: Path) -> None:
    """train.py's smoke preset, two iterations in a subprocess: the games it wrote, its counters and weights."""
    r = subprocess.run(
        [
            sys.executable,
            "train.py",
            "preset=smoke",
            "train.iterations=2",
            "seed=1",
            "device=cpu",
            "precision=fp32",
            "amp=false",
            "threads=1",
            f"out_dir={tmp_path}",
            "name=fingerprint",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    run = tmp_path / "fingerprint"
    games = [json.loads(line) for line in (run / "games.jsonl").read_text().splitlines()]
    digest, legacy = Digest(), Digest()
    for d in (digest, legacy):
        d.add([[g["moves"], g["result"], g["termination"], g["extra"]] for g in games])
    state = torch.load(run / "latest.pt", map_location="cpu", weights_only=True)
    for d in (digest, legacy):
        d.add({k: v for k, v in state["counters"].items() if k not in CLOCK_COUNTERS})
    stem = state["model"]["stem.0.weight"]
    assert not stem[:, LEGACY_PLANES:].any()
    for key in sorted(state["model"]):
        digest.add(key, state["model"][key])
        legacy.add(key, stem[:, :LEGACY_PLANES] if key == "stem.0.weight" else state["model"][key])
    assert (digest.hex(), legacy.hex()) == TRAIN_GOLDEN

"""Reanalysis (`train.reanalyse`, a quarter by default): self-play rows that name their game and ply, a GameBatch that
loads a recorded game's position in one call, the store of the replay's games beside the buffer, the search that
replaces the policy targets, and the switch in train.py (logged, saved with the replay, restored on resume)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.alphazero.net.checkpoint import load_checkpoint
from agents.alphazero.search import MCTSConfig, uniform_evaluator
from agents.alphazero.selfplay.data import SelfPlayData, merge_selfplay
from agents.alphazero.selfplay.games import SelfPlayConfig, play_games
from agents.alphazero.training import config as train_config
from agents.alphazero.training.reanalyse import NO_GAME, GameStore, Reanalyser, reanalyse_count
from agents.alphazero.training.replay import ReplayBuffer, ReplayError
from envs import RuleSet
from envs.batch import GameBatch
from envs.board import IllegalMoveError
from envs.config import ConfigError
from envs.encoding import N_ACTIONS
from envs.notation import Move
from tests.support import ROOT

RULES = RuleSet()
MCTS = MCTSConfig(num_simulations=4)
# Drawn games (most of these, cut at 40 plies) leave only some of their positions, by coin: rows whose plies skip.
SETTINGS = SelfPlayConfig(parallel=3, max_plies=40, draw_keep=0.5, draw_policy=0.5)


def _play(num_games: int, first_game: int = 0, seed: int = 5) -> SelfPlayData:
    return play_games(
        uniform_evaluator, SETTINGS, mcts=MCTS, rules=RULES, num_games=num_games, first_game=first_game, seed=seed
    )


@pytest.fixture(scope="module")
def data() -> SelfPlayData:
    return merge_selfplay([_play(4), _play(4, first_game=4)])


def _kernel_moves(moves: list[str]) -> np.ndarray:
    return np.array([Move.from_str(m).to_int() for m in moves], np.int64)


def _observation(start: str, moves: list[str], rules: RuleSet) -> np.ndarray:
    games = GameBatch(1, rules, max_plies=SETTINGS.max_plies)
    games.load_moves(0, start, _kernel_moves(moves), rules)
    return games.observations([0])[0]


def test_load_moves_gives_the_position_the_moves_play_to() -> None:
    games = GameBatch(2, RULES, max_plies=100)
    rng = np.random.default_rng(0)
    for _ in range(60):
        if games.done[0]:
            break
        games.play(0, int(rng.choice(np.flatnonzero(games.masks([0])[0]))))
    ply = games.plies(0)
    assert ply > 20
    games.load_moves(1, games.start[0], _kernel_moves(games.moves(0)))
    np.testing.assert_array_equal(games.state[1], games.state[0])
    np.testing.assert_array_equal(games.hist[1, :ply], games.hist[0, :ply])
    np.testing.assert_array_equal(games.hashes[1, : ply + 1], games.hashes[0, : ply + 1])
    np.testing.assert_array_equal(games.observations([1]), games.observations([0]))
    assert games.done[1] == games.done[0]


def test_load_moves_names_the_first_illegal_move() -> None:
    games = GameBatch(1, RULES, max_plies=100)
    with pytest.raises(IllegalMoveError, match=r"move 2 \(a1a2\)"):
        games.load_moves(0, games.start[0], _kernel_moves(["a3a4", "a1a2"]))  # Blue to move: a1 holds Red's Tiger
    assert games.plies(0) == 1  # the game stands before the bad move


def test_each_row_replays_from_its_game_and_ply(data: SelfPlayData) -> None:
    assert data.ply.shape == data.game.shape == (len(data),)
    assert set(data.game.tolist()) <= set(range(len(data.records)))
    assert data.game.max() >= 4  # the second part's games are offset past the first's
    skipped = [g for g in set(data.game.tolist()) if len(data.ply[data.game == g]) < data.records[g].extra["plies"]]
    assert skipped, "no game left some of its positions out: the test would not see a ply that skips"
    for row in range(len(data)):
        rec = data.records[int(data.game[row])]
        ply = int(data.ply[row])
        obs = _observation(rec.start, rec.moves[:ply], RuleSet.from_dict(rec.rules))
        np.testing.assert_array_equal(obs, data.obs[row], err_msg=f"row {row}")


def _filled(data: SelfPlayData, capacity: int, times: int = 1) -> tuple[ReplayBuffer, GameStore]:
    replay, store = ReplayBuffer(capacity, mirror=False, seed=0), GameStore(capacity)
    for _ in range(times):
        before = replay.add_count
        replay.add(data.obs, data.mask, data.policy, data.value, data.full_search, data.survival, data.trains_value)
        store.add(before, data)
    return replay, store


def _check_store(replay: ReplayBuffer, store: GameStore) -> None:
    held = np.flatnonzero(store.key[: len(replay)] != NO_GAME)
    assert len(held) == len(replay)
    assert set(store.games) == set(np.unique(store.key[held]).tolist())  # no game kept without a position
    obs = replay.get(held).obs
    for i, slot in enumerate(held.tolist()):
        game = store.games[int(store.key[slot])]
        games = GameBatch(1, game.rules, max_plies=SETTINGS.max_plies)
        games.load_moves(0, game.start, game.moves[: store.ply[slot]], game.rules)
        np.testing.assert_array_equal(games.observations([0])[0], obs[i], err_msg=f"slot {slot}")


def test_the_store_follows_the_buffer_around_its_ring(data: SelfPlayData) -> None:
    capacity = len(data) * 2 // 3  # the second add wraps around, the third too
    replay, store = _filled(data, capacity, times=3)
    assert replay.add_count == 3 * len(data)
    _check_store(replay, store)
    assert store.next_key == 3 * len(data.records)


def test_the_store_saves_and_loads_and_refuses_a_damaged_state(data: SelfPlayData, tmp_path: Path) -> None:
    replay, store = _filled(data, 300)
    torch.save(store.state_dict(), tmp_path / "store.pt")
    state = torch.load(tmp_path / "store.pt", weights_only=True)
    again = GameStore(300)
    again.load_state_dict(state)
    np.testing.assert_array_equal(again.key, store.key)
    np.testing.assert_array_equal(again.ply, store.ply)
    assert again.next_key == store.next_key and set(again.games) == set(store.games)
    _check_store(replay, again)
    k = state["game_keys"].index(int(store.key[0]))
    for name in ("game_keys", "starts", "moves", "rules"):
        del state[name][k]
    with pytest.raises(ReplayError, match="does not hold"):
        GameStore(300).load_state_dict(state)
    with pytest.raises(ReplayError, match="capacity"):
        GameStore(200).load_state_dict(store.state_dict())


def _first_legal(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A network that wants the legal action of the lowest index above all and values every position at 0."""
    logits = np.broadcast_to(-10.0 * np.arange(N_ACTIONS, dtype=np.float32), mask.shape).copy()
    return logits, np.zeros(len(obs), np.float32)


def test_reanalysis_replaces_the_policy_targets_of_older_positions_by_the_new_networks(data: SelfPlayData) -> None:
    replay, store = _filled(data, 1000)
    old = replay.policy.copy()
    newest = len(data) // 4
    reanalyser = Reanalyser(_first_legal, MCTS, RULES, parallel=8, max_plies=SETTINGS.max_plies, seed=1)
    stats = reanalyser.reanalyse(replay, store, count=30, newest=newest, iteration=7)
    assert stats.positions == 30 and stats.simulations == 30 * MCTS.num_simulations
    changed = np.flatnonzero((replay.policy != old).any(axis=1))
    assert len(changed) == 30
    assert not set(changed.tolist()) & set(range(len(data) - newest, len(data)))  # the newest are left alone
    assert replay.full_search[changed].all()
    new = replay.policy[changed].astype(np.float32)
    np.testing.assert_allclose(new.sum(axis=1), 1.0, atol=1e-2)
    assert not (new[~replay.mask[changed]]).any()
    first = np.array([np.flatnonzero(m)[0] for m in replay.mask[changed]])
    # the new targets follow the new network (its favourite move), the uniform search's did not
    assert (new.argmax(axis=1) == first).all()
    assert (old[changed].astype(np.float32).max(axis=1) < 0.9).all() and (new.max(axis=1) > 0.9).all()
    assert stats.policy_change > 0.3

    # the same draw and the same searches from the same seed and iteration
    again, again_store = _filled(data, 1000)
    Reanalyser(_first_legal, MCTS, RULES, parallel=5, max_plies=SETTINGS.max_plies, seed=1).reanalyse(
        again, again_store, count=30, newest=newest, iteration=7
    )
    np.testing.assert_array_equal(again.policy, replay.policy)


def test_reanalysis_takes_no_more_than_it_may(data: SelfPlayData) -> None:
    replay, store = _filled(data, 1000)
    reanalyser = Reanalyser(uniform_evaluator, MCTS, RULES, parallel=4, max_plies=SETTINGS.max_plies, seed=0)
    allowed = reanalyser.candidates(replay, store, newest=10)
    assert len(allowed) == int(replay.full_search[: len(data) - 10].sum())
    assert reanalyser.reanalyse(replay, store, count=10_000, newest=10, iteration=0).positions == len(allowed)
    assert reanalyser.reanalyse(replay, store, count=0, newest=10, iteration=0).positions == 0
    store.clear()
    assert reanalyser.reanalyse(replay, store, count=10, newest=0, iteration=0).positions == 0
    assert reanalyse_count(0.5, 101) == 50 and reanalyse_count(0.0, 1000) == 0


def test_a_store_that_does_not_match_its_buffer_stops_reanalysis(data: SelfPlayData) -> None:
    replay, store = _filled(data, 1000)
    slot = int(np.flatnonzero(replay.full_search & (store.ply > 3))[0])
    store.ply[:] = np.where(np.arange(1000) == slot, store.ply - 1, store.ply)  # one slot points at another ply
    before = replay.policy.copy()
    reanalyser = Reanalyser(uniform_evaluator, MCTS, RULES, parallel=1000, max_plies=SETTINGS.max_plies, seed=0)
    with pytest.raises(ReplayError, match=f"replay slot {slot}: the position its game replays to"):
        reanalyser.reanalyse(replay, store, count=len(data), newest=0, iteration=0)
    np.testing.assert_array_equal(replay.policy, before)  # nothing of the batch was written


def test_the_switch_is_checked_and_a_run_stored_before_it_resumes_without_it(tmp_path: Path) -> None:
    assert train_config.TrainConfig().reanalyse == 0.25
    with pytest.raises(ConfigError, match="train.reanalyse"):
        train_config.checked_config(train_config.compose_config(["train.reanalyse=-0.5"]))
    stored = OmegaConf.to_container(train_config.compose_config(["name=old"]))
    assert isinstance(stored, dict)
    del stored["train"]["reanalyse"]  # the config of a run started before the key
    old = train_config.resumed_config(OmegaConf.to_yaml(stored), tmp_path / "latest.pt", [])
    assert old.train.reanalyse == 0.0
    on = train_config.resumed_config(OmegaConf.to_yaml(stored), tmp_path / "latest.pt", ["train.reanalyse=0.5"])
    assert on.train.reanalyse == 0.5
    stored["train"]["reanalyse"] = 0.25
    assert train_config.resumed_config(OmegaConf.to_yaml(stored), tmp_path / "latest.pt", []).train.reanalyse == 0.25


def _scalars(run_dir: Path) -> dict[str, dict[int, float]]:
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


@pytest.mark.slow
def test_a_run_reanalyses_saves_its_store_and_resumes_with_it(tmp_path: Path) -> None:
    common = ["train=tiny", "model=tiny", "mcts.num_simulations=4", "seed=3", "train.eval.every=0"]

    def train(*args: str) -> None:
        r = subprocess.run([sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]

    train(*common, f"out_dir={tmp_path}", "name=ra", "train.reanalyse=1.0", "train.iterations=2")
    run = tmp_path / "ra"
    latest = load_checkpoint(run / "latest.pt")
    assert (latest["reanalyse"]["key"] != NO_GAME).sum() == len(latest["replay"]["value"])
    train(f"resume={run}", "train.iterations=3")
    tags = _scalars(run)
    # iteration 1's positions are all the newest; from 2 on, one older position per new one (tiny: 4 x 30)
    assert tags["reanalyse/positions"] == {1: 0.0, 2: 120.0, 3: 120.0}  # 3: the restored store's positions
    assert 0.0 < tags["reanalyse/policy_change"][3] <= 1.0

"""train.draw_control: the self-play root floor follows the draw rate (the controller, every pool taking a call's
floor, and a run that moves its floor, logs it and resumes from it)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from agents.alphazero.distributed.inference import WorkerDiedError  # noqa: F401 (the served pool's module loads)
from agents.alphazero.distributed.pools import make_selfplay_pool
from agents.alphazero.distributed.settings import InferenceSettings, WorkerSettings
from agents.alphazero.distributed.workers import with_root_floor
from agents.alphazero.net.checkpoint import load_checkpoint
from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.search import GumbelConfig, MCTSConfig
from agents.alphazero.selfplay.data import SelfPlayData, SelfPlayStats
from agents.alphazero.selfplay.games import SelfPlayConfig
from agents.alphazero.training import config as train_config
from agents.alphazero.training.draws import DrawControlConfig, draw_share, next_root_floor
from agents.alphazero.training.run import checked_counters
from envs import RuleSet
from envs.config import ConfigError
from tests.scripts.test_train import TINY as TINY_RUN
from tests.scripts.test_train import run_train, scalars
from tests.support.fake_ray import ThreadedRay
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread, as in the workers)

RULES = RuleSet(no_capture_draw=40)
TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)
FLOOR = 0.9
"""A call's floor, far from the settings' 0: most root choices of a tiny random network change."""


def settings(root_uniform: float = 0.0) -> WorkerSettings:
    return WorkerSettings(
        network=TINY,
        mcts=MCTSConfig(algorithm="gumbel", num_simulations=4, gumbel=GumbelConfig(root_uniform=root_uniform)),
        rules=RULES,
        selfplay=SelfPlayConfig(parallel=4, max_plies=24),
    )


def moves(data: SelfPlayData) -> list[list[str]]:
    return [[str(m) for m in r.moves] for r in data.records]


# -- the controller ---------------------------------------------------------------------------------------------


def test_the_floor_steps_up_above_the_target_and_down_below_it_within_its_bounds() -> None:
    c = DrawControlConfig(target=0.4, step=0.1, max_floor=0.5)
    assert next_root_floor(0.2, 0.2, 0.6, c) == pytest.approx(0.3)
    assert next_root_floor(0.3, 0.2, 0.1, c) == pytest.approx(0.2)
    assert next_root_floor(0.2, 0.2, 0.0, c) == 0.2  # never below the base
    assert next_root_floor(0.45, 0.2, 1.0, c) == 0.5  # nor above max_floor
    assert next_root_floor(0.3, 0.2, 0.4, c) == 0.3  # level: unchanged
    off = DrawControlConfig()
    assert not off.on and next_root_floor(0.2, 0.2, 1.0, off) == 0.2
    floor = 0.0  # a long climb and fall lands on the bounds exactly, without float drift
    for share in [1.0] * 50 + [0.0] * 50:
        floor = next_root_floor(floor, 0.0, share, DrawControlConfig(target=0.5, step=0.05, max_floor=0.75))
        assert 0.0 <= floor <= 0.75
    assert floor == 0.0


def test_the_draw_share_counts_the_games_without_a_winner() -> None:
    assert draw_share(SelfPlayStats(games=8, draws=6, red_wins=1, blue_wins=1)) == 0.75
    assert draw_share(SelfPlayStats()) == 0.0


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["train.draw_control.target=0"], "train.draw_control.target=0.0 must be above 0"),
        (["train.draw_control.step=0"], "train.draw_control.step=0.0 must be above 0"),
        (["train.draw_control.target=1.5"], "train.draw_control.target=1.5 must lie in [0, 1]"),
        (
            ["train.draw_control.target=0.3", "mcts.gumbel.root_uniform=0.5", "train.draw_control.max_floor=0.4"],
            "max_floor=0.4 is below mcts.gumbel.root_uniform=0.5",
        ),
        (["train.draw_control.target=0.3", "mcts=puct"], "needs mcts.algorithm=gumbel"),
        (["train.draw_control.target=0.3", "train.selfplay.carry_over=true"], "carry_over=true"),
    ],
)
def test_bad_draw_control_settings_are_refused_naming_them(overrides: list[str], words: str) -> None:
    with pytest.raises(ConfigError) as e:
        train_config.checked_config(train_config.compose_config(overrides))
    assert words in str(e.value)


def test_a_stored_floor_out_of_bounds_is_a_damaged_counter() -> None:
    assert checked_counters({"root_floor": 0.35})["root_floor"] == 0.35
    for bad in (1.5, -0.1, float("nan"), True, "0.3"):
        with pytest.raises(ValueError, match="root_floor"):
            checked_counters({"root_floor": bad})


# -- a call's floor reaches the games on every pool -------------------------------------------------------------


def test_a_calls_floor_plays_the_games_of_settings_with_that_floor_in_process() -> None:
    torch.manual_seed(7)
    weights = build_network(TINY).state_dict()
    with make_selfplay_pool("inprocess", 0, settings(FLOOR)) as pool:
        floored = pool.play(weights, seed=5, num_games=4)
    with make_selfplay_pool("inprocess", 0, settings()) as pool:
        plain = pool.play(weights, seed=5, num_games=4)
        called = pool.play(weights, seed=5, num_games=4, root_uniform=FLOOR)
        again = pool.play(weights, seed=5, num_games=4)  # the call's floor was the call's alone
    assert moves(called) == moves(floored)
    assert moves(again) == moves(plain)
    assert moves(called) != moves(plain)
    assert with_root_floor(settings(), None) == settings() == with_root_floor(settings(), 0.0)
    with pytest.raises(ConfigError, match="root_uniform"):
        with_root_floor(settings(), 1.5)


def test_ray_actors_take_the_calls_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.alphazero.distributed.workers as workers

    monkeypatch.setattr(workers, "import_ray", lambda: ThreadedRay())
    torch.manual_seed(8)
    weights = build_network(TINY).state_dict()
    with make_selfplay_pool("inprocess", 0, settings(FLOOR)) as pool:
        here = pool.play(weights, seed=3, num_games=4)
    for inference in (None, InferenceSettings()):  # actors with a network, and served actors
        s = replace(settings(), threads=0)  # the actors share this process's torch threads
        with make_selfplay_pool("ray", 2, s, inference=inference) as pool:
            assert moves(pool.play(weights, seed=3, num_games=4, root_uniform=FLOOR)) == moves(here)


@pytest.mark.slow
@pytest.mark.parametrize("served", [False, True], ids=["workers", "served"])
def test_worker_processes_take_the_calls_floor(served: bool) -> None:
    torch.manual_seed(9)
    weights = build_network(TINY).state_dict()
    with make_selfplay_pool("inprocess", 0, settings(FLOOR)) as pool:
        here = pool.play(weights, seed=4, num_games=6)
    inference = InferenceSettings() if served else None
    with make_selfplay_pool("process", 2, settings(), inference=inference) as pool:
        assert moves(pool.play(weights, seed=4, num_games=6, root_uniform=FLOOR)) == moves(here)


def test_games_carried_over_refuse_a_calls_floor() -> None:
    s = replace(settings(), selfplay=replace(settings().selfplay, carry_over=True))
    with make_selfplay_pool("inprocess", 0, s) as pool:
        with pytest.raises(ValueError, match="carried over"):
            pool.play(build_network(TINY).state_dict(), seed=1, num_games=1, root_uniform=0.5)


# -- a run ------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_run_raises_its_floor_while_its_games_draw_logs_it_and_resumes_from_it(tmp_path: Path) -> None:
    # The tiny loop's games are cut at 30 plies, so every iteration draws all of its games: above any target, the
    # floor climbs a step an iteration from mcts.gumbel.root_uniform to max_floor and stays there.
    control = [
        "mcts.gumbel.root_uniform=0.1",
        "train.draw_control.target=0.5",
        "train.draw_control.step=0.2",
        "train.draw_control.max_floor=0.45",
    ]
    r = run_train(*TINY_RUN, *control, f"out_dir={tmp_path}", "name=floor", "train.eval.every=100")
    assert r.returncode == 0, r.stderr[-3000:]
    run = tmp_path / "floor"
    state: dict[str, Any] = load_checkpoint(run / "latest.pt")
    assert state["counters"]["root_floor"] == pytest.approx(0.45)
    assert load_checkpoint(run / "iter_000001.pt")["counters"]["root_floor"] == pytest.approx(0.3)
    assert "root floor 0.10 -> 0.30: 1.00 of the games drawn, target 0.50" in r.stdout + r.stderr
    r = run_train(f"resume={run}", "train.iterations=3")
    assert r.returncode == 0, r.stderr[-3000:]
    logged = scalars(run)["selfplay/root_floor"]
    assert [s for s, _ in logged] == [1, 2, 3]
    assert [v for _, v in logged] == pytest.approx([0.1, 0.3, 0.45])
    assert load_checkpoint(run / "latest.pt")["counters"]["root_floor"] == pytest.approx(0.45)
    # A lower max_floor given at a resume clamps the stored floor into it.
    r = run_train(f"resume={run}", "train.iterations=4", "train.draw_control.max_floor=0.35")
    assert r.returncode == 0, r.stderr[-3000:]
    assert [v for _, v in scalars(run)["selfplay/root_floor"]] == pytest.approx([0.1, 0.3, 0.45, 0.35])

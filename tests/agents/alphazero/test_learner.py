"""The learner lowers the loss; the replay buffer's mirror augmentation agrees with the rules."""

from typing import Any

import numpy as np
import pytest
import torch

from agents.alphazero.net.network import NetworkConfig, build_network
from agents.alphazero.net.packing import pack_observations, unpack_observations
from agents.alphazero.training.learner import (
    Learner,
    LearnerConfig,
    LearnerConfigError,
    LearnerDivergedError,
    LearnMetrics,
    StepMetrics,
    lr_at,
)
from agents.alphazero.training.replay import Batch, ReplayBuffer, ReplayError
from envs import Board, Move
from envs.encoding import (
    MIRROR_ACTION,
    N_ACTIONS,
    OBS_SHAPE,
    action_to_move,
    encode_observation,
    legal_action_mask,
    move_to_action,
)

TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)


def _random_positions(n: int, seed: int = 0) -> list[Board]:
    """Positions from random games (several games, so both colours and captures appear)."""
    rng = np.random.default_rng(seed)
    boards: list[Board] = []
    board = Board()
    while len(boards) < n:
        if board.is_game_over() or board.ply > 60:
            board = Board()
        boards.append(board.copy())
        moves = board.legal_move_ints()
        board.push(Move.from_int(int(moves[rng.integers(len(moves))])))
    return boards


def _encode(board: Board) -> tuple[np.ndarray, np.ndarray]:
    obs = np.zeros(OBS_SHAPE, np.float32)
    mask = np.zeros(N_ACTIONS, np.bool_)
    encode_observation(board.state, board.hashes, board.flags, obs)
    legal_action_mask(board.state, board.hist, board.flags, mask)
    return obs, mask


def _fill(buffer: ReplayBuffer, boards: list[Board], seed: int = 0) -> list[int]:
    """Add each board with a one-hot policy on a random legal move; return those moves (ints)."""
    rng = np.random.default_rng(seed)
    chosen = []
    for b in boards:
        obs, mask = _encode(b)
        moves = b.legal_move_ints()
        m = int(moves[rng.integers(len(moves))])
        policy = np.zeros(N_ACTIONS, np.float32)
        policy[move_to_action(m, int(b.side_to_move))] = 1.0
        buffer.add(obs[None], mask[None], policy[None], np.array([1.0], np.float32))
        chosen.append(m)
    return chosen


def test_mirror_augmentation_matches_the_rules() -> None:
    boards = _random_positions(60)
    buf = ReplayBuffer(100, seed=0)
    chosen = _fill(buf, boards)
    idx = np.arange(len(boards))
    mirrored = buf.get(idx, mirror=np.ones(len(boards), np.bool_))
    for i, b in enumerate(boards):
        mb = b.mirror()
        obs, mask = _encode(mb)
        # the mirrored board's legal actions are exactly the mirrored actions
        np.testing.assert_array_equal(mirrored.mask[i], mask, err_msg=b.jfen())
        # the observation of the mirrored board (repetition plane 22 aside: mirror() drops history)
        keep = [p for p in range(OBS_SHAPE[0]) if p != 22]
        np.testing.assert_array_equal(mirrored.obs[i][keep], obs[keep], err_msg=b.jfen())
        # the policy target points at the mirrored move, as the rules decode it on the mirrored board
        a = int(np.argmax(mirrored.policy[i]))
        assert mirrored.policy[i, a] == 1.0
        assert action_to_move(mb.state, a) == Move.from_int(chosen[i]).mirror().to_int(), b.jfen()
        assert mb.is_legal(Move.from_int(action_to_move(mb.state, a)))


def test_unmirrored_get_round_trips_and_sampling_mirrors_about_half() -> None:
    boards = _random_positions(30, seed=1)
    buf = ReplayBuffer(30, seed=0)
    _fill(buf, boards)
    plain = buf.get(np.arange(30))
    for i, b in enumerate(boards):
        obs, mask = _encode(b)
        np.testing.assert_array_equal(plain.obs[i], obs)
        np.testing.assert_array_equal(plain.mask[i], mask)
    bits, scalars = pack_observations(plain.obs)
    np.testing.assert_array_equal(unpack_observations(bits, scalars), plain.obs)
    s = buf.sample(400)
    assert len(s) == 400
    mirrored_masks = plain.mask[:, MIRROR_ACTION]
    flipped = sum(
        any(np.array_equal(m, x) for x in mirrored_masks) and not any(np.array_equal(m, x) for x in plain.mask)
        for m in s.mask
    )
    assert 100 < flipped < 300  # mirrored at random, about half the time (asymmetric positions only count)
    # every sampled target is legal under its own (possibly mirrored) mask
    assert np.all(s.policy[~s.mask] == 0)


def test_ring_overwrites_oldest_and_state_dict_round_trips() -> None:
    boards = _random_positions(12, seed=2)
    buf = ReplayBuffer(8, seed=3)
    _fill(buf, boards)
    assert len(buf) == 8 and buf.add_count == 12
    other = ReplayBuffer(8, seed=99)
    other.load_state_dict(buf.state_dict())
    np.testing.assert_array_equal(other.sample(16).obs, buf.sample(16).obs)
    counters_only = ReplayBuffer(8)
    counters_only.load_state_dict(buf.state_dict(contents=False))
    assert len(counters_only) == 0
    with pytest.raises(ReplayError, match="capacity"):
        ReplayBuffer(9).load_state_dict(buf.state_dict())
    with pytest.raises(ReplayError, match="mask"):
        buf.add(np.zeros((1,) + OBS_SHAPE, np.float32), np.zeros((1, 3), bool), np.zeros((1, N_ACTIONS)), np.zeros(1))


@pytest.mark.parametrize("amp", [False, True], ids=["fp32", "amp"])
@pytest.mark.parametrize("head", ["scalar", "wdl"])
def test_one_learner_step_lowers_the_loss_on_a_fixed_batch(head: str, amp: bool) -> None:
    """Also under AMP (bf16 autocast on a CPU with native bf16), whose weights stay float32."""
    torch.manual_seed(0)
    boards = _random_positions(64, seed=4)
    buf = ReplayBuffer(64, mirror=False, seed=0)
    _fill(buf, boards)
    buf.value[:] = np.where(np.arange(64) % 3 == 0, -1.0, 1.0)
    buf.full_search[::4] = False  # playout-cap positions: value target only
    batch = buf.get(np.arange(64))
    model = build_network(NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2, value_head=head))
    learner = Learner(
        model,
        LearnerConfig(optimizer="sgd", lr=0.05, warmup_steps=0, schedule="constant"),
        device=torch.device("cpu"),
        amp=amp,
    )
    before = learner.evaluate_loss(batch)
    metrics = learner.step(batch)
    after = learner.evaluate_loss(batch)
    assert after.total < before.total
    assert set(metrics.tags()) >= {"loss/policy", "loss/value", "loss/total", "loss/policy_entropy", "lr"}
    assert learner.step_count == 1
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_policy_loss_ignores_cheap_searches() -> None:
    boards = _random_positions(8, seed=5)
    buf = ReplayBuffer(8, mirror=False)
    _fill(buf, boards)
    buf.full_search[:] = False
    model = build_network(TINY)
    learner = Learner(model, LearnerConfig(), device=torch.device("cpu"))
    assert learner.evaluate_loss(buf.get(np.arange(8))).policy == 0.0


def test_lr_schedule_and_config_errors() -> None:
    cfg = LearnerConfig(lr=1.0, warmup_steps=10, total_steps=110, schedule="cosine", final_lr_fraction=0.0)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(60, cfg) == pytest.approx(0.5)
    assert lr_at(500, cfg) == pytest.approx(0.0)
    with pytest.raises(LearnerConfigError, match="adam"):
        LearnerConfig(optimizer="adam")


def _fixed_batch(seed: int = 6) -> tuple[ReplayBuffer, Batch]:
    boards = _random_positions(32, seed=seed)
    buf = ReplayBuffer(32, mirror=False, seed=0)
    _fill(buf, boards)
    return buf, buf.get(np.arange(32))


def _seeded_learner(survival_head: bool, **learner_options: Any) -> tuple[ReplayBuffer, torch.nn.Module, Learner]:
    """The same small setting for runs that must learn alike: a buffer of 48 seeded positions, a fresh 1-block
    network and its learner, all from fixed seeds (each call builds them anew, equal to the last)."""
    config = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2, survival_head=survival_head)
    torch.manual_seed(0)
    buf = ReplayBuffer(64, seed=11)
    _fill(buf, _random_positions(48, seed=7))
    model = build_network(config)
    return (
        buf,
        model,
        Learner(model, LearnerConfig(lr=0.01, warmup_steps=2), device=torch.device("cpu"), **learner_options),
    )


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_a_step_with_a_non_finite_loss_is_skipped_and_counted_then_the_run_stops() -> None:
    """A NaN loss changes nothing (weights, optimizer state, batch-norm statistics, the step counter); it is
    counted; `max_nonfinite_steps` of them in a row raise, naming the learning rate; a finite step resets
    the count."""
    torch.manual_seed(0)
    _, batch = _fixed_batch()
    model = build_network(TINY)
    learner = Learner(model, LearnerConfig(max_nonfinite_steps=3), device=torch.device("cpu"))
    learner.step(batch)
    before, optimizer = _snapshot(model), repr(learner.optimizer.state_dict()["state"])
    poisoned = Batch(
        batch.obs,
        batch.mask,
        np.full_like(batch.policy, np.nan),
        batch.value,
        batch.full_search,
        batch.survival,
        batch.trains_value,
    )
    for k in (1, 2):
        assert learner.step(poisoned).tags() == {"loss/nonfinite_steps": 1.0, "lr": lr_at(1, learner.config)}
        assert learner.nonfinite_in_a_row == k and learner.step_count == 1
    after = _snapshot(model)
    assert all(torch.equal(before[k], after[k]) for k in before)  # running statistics included
    assert repr(learner.optimizer.state_dict()["state"]) == optimizer
    assert learner.step(batch).tags()["loss/nonfinite_steps"] == 0.0 and learner.nonfinite_in_a_row == 0
    learner.step(poisoned)
    learner.step(poisoned)
    with pytest.raises(
        LearnerDivergedError,
        match=r"3 learner steps in a row had a non-finite loss .*"
        r"the learning rate \(train.learner.lr=0.002\) is the likely cause",
    ):
        learner.step(poisoned)


def test_a_learning_phase_sums_up_its_steps_as_the_tensorboard_scalars() -> None:
    """Means over the steps taken (a skipped step has no loss), the learning rate over all steps as loss/lr,
    the skipped steps counted; a phase of no steps writes nothing."""
    taken = [
        StepMetrics(policy=p, value=0.5, total=p + 0.5, policy_entropy=1.0, grad_norm=2.0 * p, lr=0.1)
        for p in (1.0, 3.0)
    ]
    summary = LearnMetrics.of([taken[0], StepMetrics.skipped(0.4), taken[1]])
    assert summary.tags() == {
        "loss/policy": 2.0,
        "loss/value": 0.5,
        "loss/total": 2.5,
        "loss/policy_entropy": 1.0,
        "loss/grad_norm": 4.0,
        "loss/nonfinite_steps": 1.0,
        "loss/lr": pytest.approx(0.2),
    }
    assert (summary.steps, summary.nonfinite_steps, summary.survival) == (3, 1, None)
    assert LearnMetrics.of([StepMetrics.skipped(0.4)]).tags() == {"loss/nonfinite_steps": 1.0, "loss/lr": 0.4}
    assert LearnMetrics.of([]).tags() == {} and LearnMetrics.of([]).total is None
    torch.manual_seed(0)
    buf, _ = _fixed_batch()
    learner = Learner(build_network(TINY), LearnerConfig(), device=torch.device("cpu"))
    phase = learner.learn(buf, 3, 8)
    assert learner.step_count == phase.steps == 3 and phase.nonfinite_steps == 0
    assert set(phase.tags()) == {
        "loss/policy",
        "loss/value",
        "loss/total",
        "loss/policy_entropy",
        "loss/grad_norm",
        "loss/nonfinite_steps",
        "loss/lr",
    }


def test_an_exploding_learning_rate_stops_before_a_weight_turns_non_finite() -> None:
    torch.manual_seed(0)
    _, batch = _fixed_batch()
    model = build_network(TINY)
    learner = Learner(model, LearnerConfig(lr=1e12, warmup_steps=0, schedule="constant"), device=torch.device("cpu"))
    with pytest.raises(LearnerDivergedError, match="train.learner.lr=1e[+]12"):
        for _ in range(20):
            learner.step(batch)


def test_the_replay_buffer_refuses_non_finite_targets() -> None:
    buf, batch = _fixed_batch()
    before = buf.add_count
    for policy, value in (
        (np.full_like(batch.policy, np.nan), batch.value),
        (batch.policy, np.full_like(batch.value, np.inf)),
    ):
        with pytest.raises(ReplayError, match="NaN or infinity"):
            buf.add(batch.obs, batch.mask, policy, value)
    assert buf.add_count == before


@pytest.mark.parametrize("survival_head", [False, True], ids=["plain", "survival"])
def test_a_prefetched_learning_phase_trains_on_the_batches_a_sampling_loop_draws(survival_head: bool) -> None:
    """`learn` prefetches each sample while the step before runs: its batches are those of a loop drawing
    one sample a step (in that order, and no more: the replay's generator ends in the same state), and
    the weights, optimizer state and figures after the phase equal the loop's exactly."""
    runs = []
    for prefetch in (False, True):
        buf, model, learner = _seeded_learner(survival_head)
        drawn: list[Batch] = []
        sample = buf.sample

        def recording(batch_size: int, sample=sample, drawn=drawn) -> Batch:  # type: ignore[no-untyped-def]
            drawn.append(sample(batch_size))
            return drawn[-1]

        buf.sample = recording  # type: ignore[method-assign]
        if prefetch:
            summary = learner.learn(buf, 5, 16)
        else:
            summary = LearnMetrics.of([learner.step(buf.sample(16)) for _ in range(5)])
        runs.append((drawn, summary, _snapshot(model), learner.optimizer.state_dict(), buf.rng.random()))
    (loop_batches, loop_summary, loop_weights, loop_opt, loop_next), (batches, summary, weights, opt, nxt) = runs
    assert len(batches) == len(loop_batches) == 5 and nxt == loop_next
    for ours, theirs in zip(batches, loop_batches):
        for name in ("obs", "mask", "policy", "value", "full_search", "survival"):
            np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))
    assert summary == loop_summary and summary.steps == 5 and (summary.survival is not None) == survival_head
    assert all(torch.equal(weights[k], loop_weights[k]) for k in loop_weights)
    assert repr(opt["state"]) == repr(loop_opt["state"])

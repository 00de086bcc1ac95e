"""Network shapes, safe masking (dtype minimum, all-masked rows) and the evaluator."""

import numpy as np
import pytest
import torch

from agents.alphazero.network import (
    NetworkConfig,
    NetworkShapeError,
    build_network,
    make_evaluator,
    mask_logits,
    scalar_value,
)
from envs import Board
from envs.encoding import N_ACTIONS, OBS_SHAPE, encode_observation, legal_action_mask

TINY = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2)


def _position_batch(n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    board = Board()
    rng = np.random.default_rng(0)
    obs = np.zeros((n,) + OBS_SHAPE, np.float32)
    mask = np.zeros((n, N_ACTIONS), np.bool_)
    for i in range(n):
        encode_observation(board.state, board.hashes, board.flags, obs[i])
        legal_action_mask(board.state, board.hist, board.flags, mask[i])
        moves = board.legal_move_ints()
        board.push(str(__import__("envs").Move.from_int(int(moves[rng.integers(len(moves))]))))
    return obs, mask


@pytest.mark.parametrize("head", ["scalar", "wdl"])
def test_output_shapes(head: str) -> None:
    net = build_network(NetworkConfig(blocks=2, channels=8, value_head=head))
    logits, v = net(torch.zeros((3,) + OBS_SHAPE))
    assert logits.shape == (3, N_ACTIONS)
    assert v.shape == ((3,) if head == "scalar" else (3, 3))
    s = scalar_value(v)
    assert s.shape == (3,) and bool((s.abs() <= 1).all())


def test_masking_uses_dtype_minimum_not_inf() -> None:
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        logits = torch.randn(2, N_ACTIONS).to(dtype)
        mask = torch.zeros(2, N_ACTIONS, dtype=torch.bool)
        mask[0, [3, 7]] = True
        mask[1, 0] = True
        out = mask_logits(logits, mask)
        assert torch.isfinite(out).all()
        assert out[0, 0].item() == torch.finfo(dtype).min
        p = torch.softmax(out.float(), -1)
        assert p[0, [3, 7]].sum().item() == pytest.approx(1.0)
        assert p[1, 0].item() == pytest.approx(1.0)


def test_all_masked_row_is_uniform_and_finite() -> None:
    logits = torch.randn(1, N_ACTIONS)
    out = mask_logits(logits, torch.zeros(1, N_ACTIONS, dtype=torch.bool))
    p = torch.softmax(out, -1)
    assert not torch.isnan(p).any()
    assert torch.allclose(p, torch.full_like(p, 1.0 / N_ACTIONS))
    logp = torch.log_softmax(out, -1)
    assert torch.isfinite(logp).all()


def test_evaluator_masks_and_bounds_values() -> None:
    torch.manual_seed(0)
    obs, mask = _position_batch(6)
    ev = make_evaluator(build_network(TINY), "cpu", amp=True)  # amp is ignored on CPU
    logits, value = ev(obs, mask)
    assert logits.dtype == np.float32 and value.dtype == np.float32
    assert logits.shape == (6, N_ACTIONS) and value.shape == (6,)
    assert np.all(logits[~mask] == np.finfo(np.float32).min)
    assert np.all(np.abs(value) <= 1.0)
    # batched == one by one (eval-mode batch norm, no cross-talk)
    l1, v1 = ev(obs[2:3], mask[2:3])
    np.testing.assert_allclose(l1[0][mask[2]], logits[2][mask[2]], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(v1, value[2:3], rtol=1e-4, atol=1e-5)
    empty_l, empty_v = ev(obs[:0], mask[:0])
    assert empty_l.shape == (0, N_ACTIONS) and empty_v.shape == (0,)


def test_bad_shape_is_refused_with_the_field_name() -> None:
    with pytest.raises(NetworkShapeError, match="channels"):
        NetworkConfig(channels=0)
    with pytest.raises(NetworkShapeError, match="value_head"):
        NetworkConfig(value_head="gaussian")
    with pytest.raises(NetworkShapeError, match="widht"):
        NetworkConfig.from_dict({"widht": 3})

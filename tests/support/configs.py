"""Stored configs as earlier versions wrote them, for the tests that check they still load."""

from __future__ import annotations

from omegaconf import OmegaConf

ADDED_SINCE = ("tablebase",)
"""Search keys that configs in the flat layout never held (a resumed one takes their defaults)."""

GUMBEL_ADDED_SINCE = ("root_uniform",)
"""Gumbel keys (``mcts.gumbel.*``) added after the split by algorithm: no flat config held them."""


def flat_search_layout(config_yaml: str) -> str:
    """A stored training config with its search node in the flat layout that versions before the split by
    algorithm wrote (``mcts.c_puct``, ``mcts.gumbel_max_actions``: the layout of the shipped networks' configs),
    without the keys added since (`ADDED_SINCE`)."""
    cfg = OmegaConf.create(config_yaml)
    mcts = OmegaConf.to_container(cfg.mcts)
    assert isinstance(mcts, dict)
    for key in ADDED_SINCE:
        mcts.pop(key)
    mcts.update(mcts.pop("puct"))
    gumbel = mcts.pop("gumbel")
    mcts.update({f"gumbel_{key}": value for key, value in gumbel.items() if key not in GUMBEL_ADDED_SINCE})
    cfg.mcts = mcts
    return OmegaConf.to_yaml(cfg)

"""Stored configs as earlier versions wrote them, for the tests that check they still load."""

from __future__ import annotations

from omegaconf import OmegaConf


def flat_search_layout(config_yaml: str) -> str:
    """A stored training config with its search node in the flat layout that versions before the split by
    algorithm wrote (``mcts.c_puct``, ``mcts.gumbel_max_actions``: the layout of the shipped networks' configs)."""
    cfg = OmegaConf.create(config_yaml)
    mcts = OmegaConf.to_container(cfg.mcts)
    assert isinstance(mcts, dict)
    mcts.update(mcts.pop("puct"))
    mcts.update({f"gumbel_{key}": value for key, value in mcts.pop("gumbel").items()})
    cfg.mcts = mcts
    return OmegaConf.to_yaml(cfg)

"""Jungle for PettingZoo (optional extra ``pettingzoo``): the classic-game AEC environment.

    >>> from envs.pettingzoo import jungle_v0
    >>> env = jungle_v0.env()

See `envs.pettingzoo.jungle_v0`.
"""

from envs.pettingzoo import jungle_v0

__all__ = ["jungle_v0"]

"""Agents for Jungle, one folder a purpose: alphazero/ (self-play learning), alphabeta/ (the baseline), arena/
(tournaments, ratings, records), play/ (playing against them)."""

from pathlib import Path as _Path

import envs as _envs
from envs import numba_cache as _numba_cache

# The compiled search and alpha-beta kernels hold code of envs' rules kernels: both packages count.
_numba_cache.guard(_Path(__file__).parent, [_Path(_envs.__file__).parent, _Path(__file__).parent])

"""Tests of envs/pettingzoo/."""

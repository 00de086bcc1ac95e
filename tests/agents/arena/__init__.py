"""Tests of agents/arena/."""

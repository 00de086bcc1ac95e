"""Tests of agents/engine/."""

"""Tests of agents/alphabeta/."""

"""Tests of agents/."""

"""Tests of envs/tablebase/."""

"""Tests of envs/: the rules engine, the board, the Gymnasium and vector envs, the command line."""

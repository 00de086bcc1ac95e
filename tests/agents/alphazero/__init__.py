"""Tests of agents/alphazero/: network, learner, self-play, workers, checkpoints, players."""

"""AlphaZero for Jungle: network, batched tree search, self-play, replay, learner, checkpoints and workers."""

"""The training loop.

Its config, the run's lifecycle, the replay buffer, the learner, progress and the evaluation ladder played
between iterations.
"""

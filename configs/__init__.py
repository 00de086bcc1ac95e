"""The Hydra config groups (rules/, model/, mcts/, train/, preset/): yaml files only.

This file makes the folder the package `jungle_zero.configs` when installed (pyproject.toml maps the
repository root onto `jungle_zero`), so `envs.config.config_dir` finds the groups through
importlib.resources in a wheel install as in a checkout."""

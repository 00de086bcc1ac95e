"""Agents for Jungle: players, alpha-beta baseline, AlphaZero (network, MCTS, self-play), tournaments."""

"""Self-play: many games at once under one batched search.

The games, the training positions they leave, the endgame tables' adjudication and the per-game rule sets of a mix.
"""

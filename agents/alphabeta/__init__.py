"""The scripted baseline: numba alpha-beta search and its player (`alphabeta:` specs)."""

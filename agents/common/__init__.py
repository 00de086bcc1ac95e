"""What every entry point shares.

Child processes and their pools, run directories, atomic writes, graceful stops and the start of the Hydra scripts.
"""

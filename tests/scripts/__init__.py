"""Tests of the entry scripts train.py, evaluate.py and play.py's packaging: smoke runs, faults, fuzzing, wheels."""

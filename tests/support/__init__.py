"""Helpers shared by the tests: the repository root, reference rules, evaluators, positions, play-page clients."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (the checkout the tests run from)."""

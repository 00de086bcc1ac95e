"""Hostile inputs shared by the tests of every reader they are thrown at."""

from __future__ import annotations

import pytest

HOSTILE_RULE_FILES = pytest.mark.parametrize(
    "text, words",
    [
        ("rank_order: " + "[" * 20_000 + "]" * 20_000 + "\n", "nested deeper than 32 levels"),
        ("? [a, b]\n: 1\n", "the key [a, b] is not a string"),
        ("no_capture_draw: true\n", "rule no_capture_draw=True must be an integer"),
    ],
    ids=["nested-20000-deep", "complex-key", "bool-for-a-number"],
)
"""Rule files each reader must refuse in one line (argument `text`, the file; `words`, what the line says)."""

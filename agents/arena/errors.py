"""The arena's refusals: every one a ValueError naming the bad setting, file or line."""

from __future__ import annotations


class TournamentError(ValueError):
    """A tournament that cannot be run as asked (names the bad setting)."""


class OpeningsError(TournamentError):
    """A malformed openings file (names the file and line)."""

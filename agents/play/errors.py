"""The play page's refusals: a request the game refuses, and a game that is not there."""

from __future__ import annotations


class PlayError(ValueError):
    """A request the game refuses (bad input, illegal move, not your turn...); the game is unchanged."""

    status = 400


class UnknownGameError(PlayError):
    """No game with that id."""

    status = 404

"""The tablebases' errors: one ValueError family, each naming what was wrong."""

from __future__ import annotations


class TablebaseError(ValueError):
    """A probe or build the tables cannot answer (a position with too many pieces, other rules, ...)."""


class TablebaseMissingError(TablebaseError):
    """No table is built for what was asked; the message says how to build it."""


class TablebaseRulesError(TablebaseError):
    """A rule set whose legal moves depend on the game's history: no table can hold its values."""


class TablebaseFileError(TablebaseError):
    """A tablebase file that is not one, is damaged, or was built for other rules."""

"""Endgame tablebases: every position of up to three pieces solved by retrograde analysis.

Build them once (``python -m envs tablebase build --pieces 3``), then probe
from Python (`Board.probe`, `Tablebase.probe`) or from numba kernels over the
state array (`probe_state`, `probe_states` with `Tablebase.arrays`). See
`probe` for the values, `index` for the materials and the position index,
`solver` for the algorithm and `store` for the files and where they live.
"""

from envs.tablebase.errors import TablebaseError, TablebaseFileError, TablebaseMissingError, TablebaseRulesError
from envs.tablebase.index import MAX_PIECES, Material, materials
from envs.tablebase.probe import (
    DRAW,
    LOSS,
    UNKNOWN,
    WIN,
    TablebaseArrays,
    clock_wdl,
    empty_arrays,
    probe_clock,
    probe_state,
    probe_states,
)
from envs.tablebase.store import ROOT_ENV, rules_key, table_path, tablebase_root
from envs.tablebase.table import MoveValue, Tablebase, TablebaseProbe, default_tablebase

__all__ = [
    "DRAW",
    "LOSS",
    "MAX_PIECES",
    "ROOT_ENV",
    "UNKNOWN",
    "WIN",
    "Material",
    "MoveValue",
    "Tablebase",
    "TablebaseArrays",
    "TablebaseError",
    "TablebaseFileError",
    "TablebaseMissingError",
    "TablebaseProbe",
    "TablebaseRulesError",
    "clock_wdl",
    "default_tablebase",
    "empty_arrays",
    "materials",
    "probe_clock",
    "probe_state",
    "probe_states",
    "rules_key",
    "table_path",
    "tablebase_root",
]

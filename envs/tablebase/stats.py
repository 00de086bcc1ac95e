"""Statistics of the tables: per material, its positions, the share of each result and its longest win."""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from envs import kernels as K
from envs.notation import state_to_jfen
from envs.tablebase.index import HALF_SQUARE, MIRROR_FILES, N_FULL, Material, set_position
from envs.tablebase.probe import DRAW_CODE, NOT_A_POSITION
from envs.tablebase.table import Tablebase


class MaterialStats(NamedTuple):
    """One table's figures; positions count a position and its mirror image apart, as on the board."""

    material: Material
    positions: int
    wins: int
    draws: int
    losses: int
    longest_win: Optional[int]
    """The longest dtm of a won position (None when the mover never wins)."""
    longest_win_jfen: Optional[str]
    """One position that reaches it (the one of lowest index; the mover is Red)."""


def material_stats(tb: Tablebase, material: Material) -> MaterialStats:
    """The figures of one table of `tb`."""
    t = int(tb.arrays.table_of[material.key])
    size = material.size()
    codes = np.asarray(tb.arrays.dtm[tb.arrays.offset[t] : tb.arrays.offset[t] + size])
    pieces = material.pieces()
    rest = 1  # positions per square of the first piece
    for _, a in pieces[1:]:
        rest *= int(N_FULL[0 if a == K.RAT else 1])
    first = HALF_SQUARE[0 if pieces[0, 1] == K.RAT else 1, np.arange(size) // rest]
    # A stored position whose first piece stands on files a-c stands for itself and its mirror image; on
    # file d the mirror image is stored apart.
    weight = np.where(first % K.N_FILES < MIRROR_FILES - 1, 2, 1)
    real = codes != NOT_A_POSITION
    draw = codes == DRAW_CODE
    win = real & ~draw & (codes % 2 == 0)
    loss = real & ~draw & (codes % 2 == 1)
    longest, jfen = None, None
    if win.any():
        longest = int(codes[win].max()) - 1
        idx = int(np.flatnonzero(win & (codes == longest + 1))[0])
        st = np.zeros(K.STATE_LEN, dtype=np.int16)
        st[K.S_PIECES : K.S_PIECES + 16] = -1
        st[K.S_MOVENO] = 1
        set_position(st, pieces, len(pieces), idx)
        jfen = state_to_jfen(st)
    return MaterialStats(
        material,
        int(weight[real].sum()),
        int(weight[win].sum()),
        int(weight[draw].sum()),
        int(weight[loss].sum()),
        longest,
        jfen,
    )


def stats_markdown(rows: list[MaterialStats]) -> str:
    """A markdown table of `rows`: material, positions, win / draw / loss shares for the side to move,
    longest win in plies and a position that reaches it."""
    lines = [
        "| material | positions | win | draw | loss | longest win | position |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        n = max(r.positions, 1)
        longest = "-" if r.longest_win is None else str(r.longest_win)
        jfen = "" if r.longest_win_jfen is None else f"`{r.longest_win_jfen}`"
        lines.append(
            f"| {r.material} | {r.positions} | {100 * r.wins / n:.1f}% | {100 * r.draws / n:.1f}% | "
            f"{100 * r.losses / n:.1f}% | {longest} | {jfen} |"
        )
    return "\n".join(lines) + "\n"

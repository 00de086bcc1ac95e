"""Pictures of a position: the one text board (`render_ansi`) and an RGB image (`render_rgb`).

Both draw the board as Red sees it (rank 9 at the top), whatever the side
to move, so that consecutive frames of a game line up (the text board turns
around on request, for a person playing Blue in the terminal). The image is drawn
with numpy alone (a built-in 5x7 bitmap font), so rendering needs no extra
dependency; its height and width are even, as video encoders want.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from envs import kernels as K
from envs.notation import FILE_NAMES, Move, square_symbol

# --- text --------------------------------------------------------------------------------


_ANSI_SIDE = ("\x1b[1;31m", "\x1b[1;34m")  # bold red, bold blue
_ANSI_RESET = "\x1b[0m"


def render_ansi(
    st: np.ndarray, last_move: Optional[Move] = None, status: str = "", *, flip: bool = False, colour: bool = False
) -> str:
    """The text board of the project (the env's ``ansi`` mode, `str(Board)`, the terminal game).

    File letters and rank numbers on all sides; pieces are their JFEN letters
    (upper case Red, lower case Blue); `~` is water, `#` a trap, `*` a den.
    The last move's destination is shown in square brackets and its origin in
    parentheses. `status` (who is to move, the result) is printed under the
    board. `flip` turns the board around (Blue at the bottom, as Blue sees
    it); `colour` paints the pieces with ANSI colours for a terminal."""
    frm = last_move.from_square if last_move is not None else -1
    to = last_move.to_square if last_move is not None else -1
    file_order = range(K.N_FILES - 1, -1, -1) if flip else range(K.N_FILES)
    rank_order = range(K.N_RANKS) if flip else range(K.N_RANKS - 1, -1, -1)
    files = "    " + "  ".join(FILE_NAMES[f] for f in file_order)
    lines = [files]
    for rank in rank_order:
        cells = []
        for f in file_order:
            sq = K.square_index(f, rank)
            ch = square_symbol(st, sq)
            if colour and st[sq] != 0:
                ch = _ANSI_SIDE[K.RED if st[sq] > 0 else K.BLUE] + ch + _ANSI_RESET
            if sq == to:
                cells.append(f"[{ch}]")
            elif sq == frm:
                cells.append(f"({ch})")
            else:
                cells.append(f" {ch} ")
        lines.append(f"{rank + 1:>2} " + "".join(cells) + f" {rank + 1}")
    lines.append(files)
    if status:
        lines.append(status)
    return "\n".join(lines)


# --- image -------------------------------------------------------------------------------

CELL = 40
"""Side of one square in pixels."""
MARGIN = 24
"""Border around the board that holds the coordinates, in pixels."""
IMAGE_SHAPE = (K.N_RANKS * CELL + 2 * MARGIN, K.N_FILES * CELL + 2 * MARGIN, 3)
"""(height, width, 3) of `render_rgb`'s picture: (408, 328, 3)."""

_BACKGROUND = (236, 226, 200)
_GRID = (70, 70, 60)
_INK = (40, 40, 40)
_LAND = (168, 204, 116)
_WATER = (72, 132, 204)
_TRAP = (206, 172, 104)
_DEN = (150, 100, 52)
_SIDE_COLOURS = ((200, 40, 40), (36, 72, 200))  # Red, Blue
_PIECE_RIM = (25, 25, 25)
_LETTER = (255, 255, 255)
_HIGHLIGHT = (250, 220, 40)

# 5x7 glyphs: the piece letters, the file letters and the rank digits.
_FONT_ROWS = {
    "C": (" ### ", "#   #", "#    ", "#    ", "#    ", "#   #", " ### "),
    "D": ("#### ", "#   #", "#   #", "#   #", "#   #", "#   #", "#### "),
    "E": ("#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#####"),
    "L": ("#    ", "#    ", "#    ", "#    ", "#    ", "#    ", "#####"),
    "P": ("#### ", "#   #", "#   #", "#### ", "#    ", "#    ", "#    "),
    "R": ("#### ", "#   #", "#   #", "#### ", "# #  ", "#  # ", "#   #"),
    "T": ("#####", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  "),
    "W": ("#   #", "#   #", "#   #", "# # #", "# # #", "## ##", "#   #"),
    "a": ("     ", "     ", " ### ", "    #", " ####", "#   #", " ####"),
    "b": ("#    ", "#    ", "# ## ", "##  #", "#   #", "#   #", "#### "),
    "c": ("     ", "     ", " ### ", "#    ", "#    ", "#   #", " ### "),
    "d": ("    #", "    #", " ## #", "#  ##", "#   #", "#   #", " ####"),
    "e": ("     ", "     ", " ### ", "#   #", "#####", "#    ", " ### "),
    "f": ("  ## ", " #  #", " #   ", "###  ", " #   ", " #   ", " #   "),
    "g": ("     ", " ####", "#   #", "#   #", " ####", "    #", " ### "),
    "1": ("  #  ", " ##  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "),
    "2": (" ### ", "#   #", "    #", "   # ", "  #  ", " #   ", "#####"),
    "3": ("#####", "   # ", "  #  ", "   # ", "    #", "#   #", " ### "),
    "4": ("   # ", "  ## ", " # # ", "#  # ", "#####", "   # ", "   # "),
    "5": ("#####", "#    ", "#### ", "    #", "    #", "#   #", " ### "),
    "6": ("  ## ", " #   ", "#    ", "#### ", "#   #", "#   #", " ### "),
    "7": ("#####", "    #", "   # ", "  #  ", " #   ", " #   ", " #   "),
    "8": (" ### ", "#   #", "#   #", " ### ", "#   #", "#   #", " ### "),
    "9": (" ### ", "#   #", "#   #", " ####", "    #", "   # ", " ##  "),
}
FONT = {ch: np.array([[c == "#" for c in row] for row in rows], dtype=bool) for ch, rows in _FONT_ROWS.items()}
"""Character -> bool[7, 5] bitmap."""


def _glyph(ch: str, scale: int) -> np.ndarray:
    return np.kron(FONT[ch], np.ones((scale, scale), dtype=bool)).astype(bool)


def _stamp(img: np.ndarray, bitmap: np.ndarray, cy: int, cx: int, colour: tuple[int, int, int]) -> None:
    """Paint `bitmap`'s set pixels in `colour`, centred on (cy, cx)."""
    h, w = bitmap.shape
    y0, x0 = cy - h // 2, cx - w // 2
    img[y0 : y0 + h, x0 : x0 + w][bitmap] = colour


def _disc(radius: float) -> np.ndarray:
    yy, xx = np.mgrid[0:CELL, 0:CELL]
    c = (CELL - 1) / 2.0
    return (yy - c) ** 2 + (xx - c) ** 2 <= radius**2


_DISC = _disc(CELL * 0.42)
_DISC_INNER = _disc(CELL * 0.42 - 2)
_GLYPH_PIECE = {ch: _glyph(ch, 3) for ch in K.ANIMAL_LETTERS[1:]}
_GLYPH_COORD = {ch: _glyph(ch, 2) for ch in FILE_NAMES + "123456789"}


def _cell_origin(sq: int) -> tuple[int, int]:
    """Top-left pixel of square `sq` (Red at the bottom)."""
    f, r = sq % K.N_FILES, sq // K.N_FILES
    return MARGIN + (K.N_RANKS - 1 - r) * CELL, MARGIN + f * CELL


def _board_background() -> np.ndarray:
    img = np.empty(IMAGE_SHAPE, dtype=np.uint8)
    img[:] = _BACKGROUND
    for sq in range(K.N_SQUARES):
        y, x = _cell_origin(sq)
        if K.WATER[sq]:
            colour = _WATER
        elif sq == int(K.DEN[K.RED]) or sq == int(K.DEN[K.BLUE]):
            colour = _DEN
        elif K.TRAP_OWNER[sq] >= 0:
            colour = _TRAP
        else:
            colour = _LAND
        img[y : y + CELL, x : x + CELL] = colour
        if K.TRAP_OWNER[sq] >= 0:  # cross-hatch the traps so they read without colour
            for k in range(4, CELL - 4, 6):
                img[y + k, x + 4 : x + CELL - 4] = _DEN
        if sq == int(K.DEN[K.RED]) or sq == int(K.DEN[K.BLUE]):
            owner = K.RED if sq == int(K.DEN[K.RED]) else K.BLUE
            img[y : y + CELL, x : x + CELL][_disc(CELL * 0.2)] = _SIDE_COLOURS[owner]
    top, left = MARGIN, MARGIN
    bottom, right = MARGIN + K.N_RANKS * CELL, MARGIN + K.N_FILES * CELL
    for i in range(K.N_RANKS + 1):
        img[top + i * CELL - (1 if i == K.N_RANKS else 0), left:right] = _GRID
    for j in range(K.N_FILES + 1):
        img[top:bottom, left + j * CELL - (1 if j == K.N_FILES else 0)] = _GRID
    for f, name in enumerate(FILE_NAMES):
        cx = left + f * CELL + CELL // 2
        _stamp(img, _GLYPH_COORD[name], MARGIN // 2, cx, _INK)
        _stamp(img, _GLYPH_COORD[name], bottom + MARGIN // 2, cx, _INK)
    for r in range(K.N_RANKS):
        cy = top + (K.N_RANKS - 1 - r) * CELL + CELL // 2
        _stamp(img, _GLYPH_COORD[str(r + 1)], cy, MARGIN // 2, _INK)
        _stamp(img, _GLYPH_COORD[str(r + 1)], cy, right + MARGIN // 2, _INK)
    return img


_BACKGROUND_IMAGE = _board_background()


def render_rgb(st: np.ndarray, last_move: Optional[Move] = None) -> np.ndarray:
    """The position as a uint8 picture `IMAGE_SHAPE` = [408, 328, 3].

    Terrain: green land, blue water, hatched ochre traps, brown dens with the
    owner's colour at the centre. Pieces: discs in their side's colour
    (red, blue) with the animal's letter in white. The last move's origin
    and destination squares are framed in yellow; a bar in the mover's
    colour runs along its own edge of the board (bottom Red, top Blue)."""
    img = _BACKGROUND_IMAGE.copy()
    bar = slice(IMAGE_SHAPE[0] - 5, IMAGE_SHAPE[0] - 1) if st[K.S_SIDE] == K.RED else slice(1, 5)
    img[bar, MARGIN : IMAGE_SHAPE[1] - MARGIN] = _SIDE_COLOURS[int(st[K.S_SIDE])]
    if last_move is not None:
        for sq in (last_move.from_square, last_move.to_square):
            y, x = _cell_origin(sq)
            frame = np.ones((CELL, CELL), dtype=bool)
            frame[3:-3, 3:-3] = False
            img[y : y + CELL, x : x + CELL][frame] = _HIGHLIGHT
    for sq in range(K.N_SQUARES):
        c = int(st[sq])
        if c == 0:
            continue
        y, x = _cell_origin(sq)
        cell = img[y : y + CELL, x : x + CELL]
        cell[_DISC] = _PIECE_RIM
        cell[_DISC_INNER] = _SIDE_COLOURS[K.RED if c > 0 else K.BLUE]
        _stamp(cell, _GLYPH_PIECE[K.ANIMAL_LETTERS[abs(c)]], CELL // 2, CELL // 2, _LETTER)
    return img

"""The tablebase files: where they live, how they are laid out, and reading them back memory-mapped.

One file holds every table of one rule set up to a number of pieces,
``<root>/<rules key>/up-to-<n>-pieces.jtb``. The root is
``$JUNGLE_ZERO_TABLEBASES`` when set, else ``~/.cache/jungle-zero/tablebases``;
the rules key names the four position-only rules (`TABLE_RULES`), e.g.
``standard.strict.any_rat.powerless`` for the default rules. Layout:

==============  ==========================================================
bytes 0-7       ``JUNGLETB``
bytes 8-15      header length H, little-endian uint64
bytes 16-16+H   header: JSON, keys sorted (format version, pieces, rules,
                the tables with their offsets and sizes, sha256 of the data)
padding         zeros up to the next multiple of 4096
data            every table's dtm bytes, then every table's dtz bytes, in
                header order (`probe`'s byte codes)
==============  ==========================================================

Nothing in a file depends on when or where it was built, so a build is
reproducible byte for byte; the checksum covers the data.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any, NamedTuple, Optional, Union

import numpy as np

from envs.rules import RuleSet
from envs.tablebase.errors import TablebaseError, TablebaseFileError
from envs.tablebase.index import MAX_PIECES, Material, materials
from envs.tablebase.probe import MAX_DISTANCE, TablebaseArrays, assemble

FORMAT_VERSION = 1
MAGIC = b"JUNGLETB"
ALIGN = 4096
ROOT_ENV = "JUNGLE_ZERO_TABLEBASES"
"""Environment variable naming the tables' root directory."""
DEFAULT_ROOT = Path("~/.cache/jungle-zero/tablebases")
TABLE_RULES = ("rank_order", "river_rats", "jump_blocking", "trapped_attacker")
"""The RuleSet fields a table depends on; the others (repetition, no_capture_draw) only add draws that
depend on the history, and anti_chase is refused (`solver.check_rules`)."""


def table_rules(rules: RuleSet) -> dict[str, str]:
    """The position-only rules of `rules`, by field name (what a table depends on)."""
    return {k: str(getattr(rules, k)) for k in TABLE_RULES}


def rules_key(rules: RuleSet) -> str:
    """The directory name of `rules`' tables: the values of `TABLE_RULES` joined by dots."""
    return ".".join(table_rules(rules).values())


def tablebase_root(root: Union[str, Path, None] = None) -> Path:
    """`root`, else ``$JUNGLE_ZERO_TABLEBASES``, else ``~/.cache/jungle-zero/tablebases``."""
    if root is None:
        root = os.environ.get(ROOT_ENV) or DEFAULT_ROOT
    return Path(root).expanduser()


def table_path(rules: RuleSet, pieces: int, root: Union[str, Path, None] = None) -> Path:
    """Where the tables of `rules` up to `pieces` pieces are written and looked for."""
    return tablebase_root(root) / rules_key(rules) / f"up-to-{pieces}-pieces.jtb"


def write_tables(path: Path, rules: RuleSet, pieces: int, order: list[Material], tb: TablebaseArrays) -> str:
    """Write the tables `tb` (materials `order`) to `path` atomically; returns the data's sha256."""
    sizes = [m.size() for m in order]
    total = int(sum(sizes))
    dtm = np.ascontiguousarray(tb.dtm[:total])
    dtz = np.ascontiguousarray(tb.dtz[:total])
    digest = hashlib.sha256()
    digest.update(dtm.data)
    digest.update(dtz.data)
    tables = [[str(m), int(tb.offset[i]), sizes[i], int(tb.clock_exact_from[i])] for i, m in enumerate(order)]
    header = {
        "format": FORMAT_VERSION,
        "pieces": pieces,
        "rules": table_rules(rules),
        "positions": total,
        "tables": tables,
        "sha256": digest.hexdigest(),
    }
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    start = -(-(16 + len(head)) // ALIGN) * ALIGN
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC + len(head).to_bytes(8, "little") + head)
            f.write(bytes(start - 16 - len(head)))
            f.write(dtm.data)
            f.write(dtz.data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return digest.hexdigest()


HEADER_KEYS = ("format", "pieces", "positions", "rules", "sha256", "tables")
"""The keys of a file's header (`write_tables`), no more and no fewer."""
MAX_TABLES = sum(len(materials(n)) for n in range(2, MAX_PIECES + 1))
"""The most tables a file holds: every material of 2..MAX_PIECES pieces, once."""
MAX_HEADER = 1 << 24
"""The longest header read, in bytes (512 tables take about 16 KB)."""
NAME_MAX = 255
"""The longest name of one directory or file, in bytes (Linux, macOS)."""
PATH_MAX = 4096
"""The longest path, in bytes (Linux)."""


def _damaged(path: Path, what: str) -> TablebaseFileError:
    return TablebaseFileError(f"tablebase file {str(path)!r} has a damaged header: {what}")


def _shown(value: Any) -> str:
    """`value` as the header holds it, cut short when long (a refusal is one line)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _integer(value: Any, low: int, high: int) -> bool:
    """Whether `value` is an int (not a bool) in low..high."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def read_header(path: Path) -> tuple[dict[str, Any], int]:
    """(header, data offset) of a tablebase file; TablebaseFileError naming the file when it is not one."""
    try:
        with open(path, "rb") as f:
            magic = f.read(8)
            length = int.from_bytes(f.read(8), "little")
            if magic != MAGIC or length > MAX_HEADER:
                raise TablebaseFileError(f"{str(path)!r} is not a tablebase file")
            text = f.read(length)
    except OSError as e:
        raise TablebaseFileError(f"tablebase file {str(path)!r} cannot be read: {e.strerror or e}") from None
    try:
        header = json.loads(text)
    except RecursionError:
        raise _damaged(path, "nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, an int of too many digits
        raise _damaged(path, f"the header is not JSON ({str(e).splitlines()[0][:80]})") from None
    if not isinstance(header, dict):
        raise _damaged(path, f"the header is not a JSON object but {type(header).__name__}")
    if header.get("format") != FORMAT_VERSION or isinstance(header.get("format"), bool):
        raise TablebaseFileError(
            f"tablebase file {str(path)!r} has format {_shown(header.get('format'))}; this version reads "
            f"format {FORMAT_VERSION}"
        )
    return header, -(-(16 + length) // ALIGN) * ALIGN


class Layout(NamedTuple):
    """A file's tables as its header describes them, every field checked (`checked_layout`)."""

    pieces: int
    """The most pieces of a table (the file's name says ``up-to-<pieces>-pieces``)."""
    materials: list[Material]
    sizes: list[int]
    """Index entries of each table: its material's `Material.size`."""
    exact_from: list[int]
    """Each table's `clock_exact_from`, in 0..MAX_DISTANCE."""
    positions: int
    """Index entries of all tables (the bytes of the dtm data, and of the dtz data)."""
    sha256: str


def checked_layout(path: Path, header: dict[str, Any]) -> Layout:
    """The tables the header of `path` lists, each field checked against what the code will index:
    TablebaseFileError naming the file and the field.

    Every key is there and no other; `pieces` in 2..MAX_PIECES; `rules` the `TABLE_RULES` as strings;
    `sha256` 64 hex digits; `tables` 1 to `MAX_TABLES` entries ``[material, offset, size,
    clock_exact_from]``, each material of at most `pieces` pieces and listed once, each size its
    material's index size, each offset the sum of the sizes before it, each clock_exact_from in
    0..MAX_DISTANCE; `positions` the sum of the sizes. Linear in the header's length."""
    missing = [k for k in HEADER_KEYS if k not in header]
    if missing:
        raise _damaged(path, f"missing key(s) {', '.join(missing)}")
    unknown = sorted(str(k) for k in header if k not in HEADER_KEYS)
    if unknown:
        raise _damaged(path, f"unknown key(s) {_shown(', '.join(unknown))[1:-1]}")
    pieces = header["pieces"]
    if not _integer(pieces, 2, MAX_PIECES):
        raise _damaged(path, f"pieces={_shown(pieces)} (an integer in 2..{MAX_PIECES} expected)")
    rules = header["rules"]
    if (
        not isinstance(rules, dict)
        or sorted(rules) != sorted(TABLE_RULES)
        or not all(isinstance(v, str) for v in rules.values())
    ):
        raise _damaged(path, f"rules={_shown(rules)} (the rules {', '.join(TABLE_RULES)} by name expected)")
    digest = header["sha256"]
    if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise _damaged(path, f"sha256={_shown(digest)} (64 hexadecimal digits expected)")
    tables = header["tables"]
    if not isinstance(tables, list) or not tables:
        raise _damaged(path, f"tables={_shown(tables)} (1 to {MAX_TABLES} tables expected)")
    if len(tables) > MAX_TABLES:
        raise _damaged(path, f"it lists {len(tables)} tables (1 to {MAX_TABLES} expected)")
    order: list[Material] = []
    sizes: list[int] = []
    exact: list[int] = []
    seen: set[Material] = set()
    at = 0
    for i, entry in enumerate(tables):
        if not isinstance(entry, list) or len(entry) != 4:
            raise _damaged(path, f"table {i}: {_shown(entry)} is not [material, offset, size, clock_exact_from]")
        text, offset, size, exact_from = entry
        if not isinstance(text, str):
            raise _damaged(path, f"table {i}: material {_shown(text)} is not a material's name like 'LR-E'")
        try:
            material = Material.parse(text)
        except ValueError as e:
            raise _damaged(path, f"table {i}: {e}") from None
        if material.n_pieces > pieces:
            raise _damaged(
                path, f"table {i}: material {material} has {material.n_pieces} pieces; the file holds {pieces}"
            )
        if material in seen:
            raise _damaged(path, f"table {i}: material {material} is listed twice")
        seen.add(material)
        if not _integer(offset, at, at):
            raise _damaged(path, f"table {i} ({material}): offset {_shown(offset)}, not {at} (the sizes before it)")
        if not _integer(size, material.size(), material.size()):
            raise _damaged(
                path, f"table {material} has {_shown(size)} entries; its material's index has {material.size()}"
            )
        if not _integer(exact_from, 0, MAX_DISTANCE):
            raise _damaged(
                path,
                f"table {i} ({material}): clock_exact_from {_shown(exact_from)} (an integer in 0..{MAX_DISTANCE} "
                "expected)",
            )
        order.append(material)
        sizes.append(size)
        exact.append(exact_from)
        at += size
    positions = header["positions"]
    if not _integer(positions, at, at):
        raise _damaged(path, f"positions={_shown(positions)}, not the {at} entries of its tables")
    return Layout(pieces, order, sizes, exact, at, digest)


def read_tables(path: Path, rules: Optional[RuleSet] = None) -> tuple[Layout, TablebaseArrays]:
    """(layout, tables) of a file, the tables memory-mapped read-only, once every header field and the
    data's sha256 are checked (the whole file is read once: see docs/tablebase.md for the cost).

    `rules`: refuse a file built for other position-only rules. TablebaseFileError names the file and
    what is wrong."""
    header, start = read_header(path)
    layout = checked_layout(path, header)
    if rules is not None and header["rules"] != table_rules(rules):
        raise TablebaseFileError(
            f"tablebase file {str(path)!r} holds rules {header['rules']}, not {table_rules(rules)}"
        )
    total = layout.positions
    try:
        if path.stat().st_size != start + 2 * total:
            raise TablebaseFileError(f"tablebase file {str(path)!r} is truncated or too long for its {total} positions")
        data = np.asarray(np.memmap(path, dtype=np.uint8, mode="r", offset=start, shape=(2 * total,)))
    except OSError as e:
        raise TablebaseFileError(f"tablebase file {str(path)!r} cannot be read: {e.strerror or e}") from None
    if hashlib.sha256(data.data).hexdigest() != layout.sha256:
        raise TablebaseFileError(f"tablebase file {str(path)!r} fails its checksum (damaged)")
    dtm, dtz = data[:total], data[total:]
    tb = assemble([m.pieces() for m in layout.materials], layout.sizes, layout.exact_from, dtm, dtz)
    return layout, tb


def check_table_dir(directory: Path, write: bool = False) -> None:
    """Refuse, in one line naming it (TablebaseError), a tables directory that cannot be used: a name too
    long, a file where a directory should be, one that cannot be read (or, with `write`, written or made).

    A directory that does not exist yet is fine to read from (no tables are there) and, when its nearest
    existing parent can be written, to write to."""
    where = f"tablebase directory {str(directory)!r}"
    raw = os.fsencode(str(directory))
    longest = max((len(os.fsencode(p)) for p in directory.parts), default=0)
    if longest > NAME_MAX or len(raw) > PATH_MAX:
        size, limit = (longest, NAME_MAX) if longest > NAME_MAX else (len(raw), PATH_MAX)
        raise TablebaseError(f"{where}: a name of {size} bytes is too long (at most {limit})")
    try:
        here = directory
        while not os.path.lexists(here) and here.parent != here:
            here = here.parent
        if not here.is_dir():
            raise TablebaseError(f"{where}: {str(here)!r} is not a directory")
        if here == directory:
            mode, verb = (os.R_OK | os.X_OK | os.W_OK, "written") if write else (os.R_OK | os.X_OK, "read")
        else:
            mode, verb = (os.W_OK | os.X_OK, "written") if write else (os.X_OK, "read")
        if not os.access(here, mode):
            whose = "" if here == directory else f" ({str(here)!r} does not allow it)"
            raise TablebaseError(f"{where} cannot be {verb}{whose}")
    except OSError as e:
        raise TablebaseError(f"{where} cannot be used: {e.strerror or e}") from None

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
from typing import Any, Optional, Union

import numpy as np

from envs.rules import RuleSet
from envs.tablebase.errors import TablebaseFileError
from envs.tablebase.index import Material
from envs.tablebase.probe import TablebaseArrays, assemble

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


def read_header(path: Path) -> tuple[dict[str, Any], int]:
    """(header, data offset) of a tablebase file; TablebaseFileError naming the file when it is not one."""
    try:
        with open(path, "rb") as f:
            magic = f.read(8)
            length = int.from_bytes(f.read(8), "little")
            if magic != MAGIC or length > 1 << 24:
                raise TablebaseFileError(f"{str(path)!r} is not a tablebase file")
            header = json.loads(f.read(length))
    except (OSError, ValueError, UnicodeDecodeError) as e:
        if isinstance(e, TablebaseFileError):
            raise
        raise TablebaseFileError(f"tablebase file {str(path)!r} cannot be read: {e}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        found = header.get("format") if isinstance(header, dict) else None
        raise TablebaseFileError(
            f"tablebase file {str(path)!r} has format {found!r}; this version reads "
            f"format {FORMAT_VERSION} (build the tables again)"
        )
    return header, -(-(16 + length) // ALIGN) * ALIGN


def read_tables(
    path: Path, rules: Optional[RuleSet] = None, verify: bool = False
) -> tuple[dict[str, Any], list[Material], TablebaseArrays]:
    """(header, materials, tables) of a file, the tables memory-mapped read-only.

    `rules`: refuse a file built for other position-only rules. `verify`: check the data's sha256
    (reads the whole file). TablebaseFileError names the file and what is wrong."""
    header, start = read_header(path)
    if rules is not None and header.get("rules") != table_rules(rules):
        raise TablebaseFileError(
            f"tablebase file {str(path)!r} holds rules {header.get('rules')}, not {table_rules(rules)}"
        )
    try:
        order = [Material.parse(t[0]) for t in header["tables"]]
        total = int(header["positions"])
        if path.stat().st_size != start + 2 * total:
            raise TablebaseFileError(f"tablebase file {str(path)!r} is truncated or too long for its {total} positions")
        data = np.asarray(np.memmap(path, dtype=np.uint8, mode="r", offset=start, shape=(2 * total,)))
    except (KeyError, TypeError, IndexError) as e:
        raise TablebaseFileError(f"tablebase file {str(path)!r} has a damaged header: {e!r}") from None
    except OSError as e:
        raise TablebaseFileError(f"tablebase file {str(path)!r} cannot be read: {e}") from None
    dtm, dtz = data[:total], data[total:]
    if verify:
        digest = hashlib.sha256()
        digest.update(dtm.data)
        digest.update(dtz.data)
        if digest.hexdigest() != header.get("sha256"):
            raise TablebaseFileError(f"tablebase file {str(path)!r} fails its checksum (damaged: build it again)")
    offsets = [int(t[1]) for t in header["tables"]]
    sizes = [int(t[2]) for t in header["tables"]]
    if any(o != sum(sizes[:i]) for i, o in enumerate(offsets)) or sum(sizes) != total:
        raise TablebaseFileError(f"tablebase file {str(path)!r} has a damaged header: table offsets")
    tb = assemble([m.pieces() for m in order], sizes, [int(t[3]) for t in header["tables"]], dtm, dtz)
    return header, order, tb

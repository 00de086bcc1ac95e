"""Atomic file writes: a reader never sees a half-written checkpoint or result file.

A write goes to a temp file beside its target, named ``.<target name>.<8 random
characters>.tmp``, which is fsynced and renamed over the target. A process
killed in the middle leaves that temp file behind and the target as it was;
`remove_stale_temp_files` clears such leftovers. New files get the mode any
new file gets (0666 less the umask), so others on a shared machine can read
results and checkpoints as the umask allows.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any, Union

PathLike = Union[str, "os.PathLike[str]"]

TEMP_PATTERN = re.compile(r"^\.(?P<target>.+)\.[a-z0-9_]{8}\.tmp$")
"""Names of the temp files of `atomic_write_bytes` (and of the ``tempfile.mkstemp`` names it once used)."""


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then rename over `path`.

    On an error (a full disk...) `path` is as it was, the temp file is gone, and the OSError names `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            # Mode 0666: the kernel applies the umask, as for any new file (mkstemp would give 0600).
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and e.errno is not None:  # a full disk: say which file could not be written
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise


def atomic_write_text(path: PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def remove_stale_temp_files(directory: PathLike, *, older_than: float = 0.0) -> list[Path]:
    """Delete the temp files that killed atomic writes left in `directory` (not below it); returns them.

    Only names of our own pattern (``.<name>.<8 characters>.tmp``) are touched. A writer still at work
    may own a fresh one: call with ``older_than=0`` only while no other process writes there (e.g. while
    holding the run directory's lock), else give an age in seconds that no write lasts."""
    d = Path(directory)
    if not d.is_dir():
        return []
    removed = []
    now = time.time()
    for p in d.iterdir():
        if not TEMP_PATTERN.match(p.name):
            continue
        try:
            if not p.is_file() or now - p.stat().st_mtime < older_than:
                continue
            p.unlink()
        except FileNotFoundError:  # its writer renamed or removed it meanwhile
            continue
        removed.append(p)
    return sorted(removed)

"""Keeps numba's on-disk cache honest: drops a package's cached machine code when any source it was built from changed.

numba's ``cache=True`` checks only the source file of the cached function
itself, while the machine code it stores also holds every jitted function it
calls or inlines from other modules. After an edit or an update of, say,
`envs/kernels.py`, the cached search kernels of `agents/` would keep running
the old rules. So each package calls `guard` once on import: a digest of the
sources its compiled code depends on is kept beside the cache, and when it
differs the package's ``*.nbi``/``*.nbc`` files are removed (numba then
compiles afresh and caches again).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

STAMP = "numba-sources.sha1"


def sources_digest(roots: list[Path]) -> str:
    """SHA-1 over the names and contents of every ``.py`` file under `roots` (sorted)."""
    h = hashlib.sha1()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root.parent)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def guard(package: Path, depends_on: list[Path]) -> bool:
    """Drop `package`'s numba cache files when the digest of `depends_on` (package dirs) changed.

    Returns True when files were dropped. Best effort: a read-only install or
    a race with another process leaves the cache as it is."""
    try:
        digest = sources_digest(depends_on)
        stamp_dir = package / "__pycache__"
        stamp = stamp_dir / STAMP
        if stamp.is_file() and stamp.read_text().strip() == digest:
            return False
        for pattern in ("*.nbi", "*.nbc"):
            for cached in package.rglob(f"__pycache__/{pattern}"):
                cached.unlink(missing_ok=True)
        stamp_dir.mkdir(exist_ok=True)
        tmp = stamp.with_suffix(".tmp")
        tmp.write_text(digest + "\n")
        tmp.replace(stamp)
        return True
    except OSError:
        return False

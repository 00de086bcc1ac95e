"""Run directories: one writer at a time, a run touches only what it wrote, and logs rewound to what
the last checkpoint had seen.

A training run or a tournament writes into one directory. `claim_run_dir`
takes an exclusive lock on ``<dir>/.lock`` with ``fcntl.flock`` and writes the
holder's pid into it. The kernel drops the lock when the process ends in any
way, a ``kill -9`` included, so a lock is never stale; a second writer is
refused with `RunDirBusyError` naming the holder's pid. A `check` given to it
runs under the lock, before anything is written. While holding it, the writer
clears the temp files of killed atomic writes.

Ownership. Each training run has an id (`new_run_id`, from the operating
system's randomness, never from the seeded generators) that its checkpoints
hold and that ``run.json`` (`RunRecord`, written before any log) names, with
whether the run has written a checkpoint yet; its TensorBoard event files end
in ``.<run id>``. A fresh run starts only in a directory that holds nothing, or
the leftovers of an attempt of a run that never wrote a checkpoint
(`fresh_run_leftovers`, which it clears); anything else is refused, naming
what is there. The logs of the run in a directory are its fixed-name logs
(``games.jsonl``) while its record names it, and the event files ending in its id
(`owned_log`).

Append-only logs (``games.jsonl``, TensorBoard event files) run ahead of the
last checkpoint when a run is interrupted. A checkpoint stores `log_sizes`
(each log's size in bytes when it was written); `rewind_logs` cuts every log
back to that size and removes the run's own logs begun after it, so a resumed run
appends to exactly what its checkpoint had seen and no record is written twice;
a log that is not the run's is left as it is. A log of one record a line
(``games.jsonl``) is rewound record by record instead (`rewind_records`): a
line that is not a record is dropped wherever it is and never counts against
the size, so it can neither survive nor push out a record the checkpoint saw.
"""

from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import secrets
import tempfile
from itertools import compress
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Optional, Sequence

from agents.common.io import TEMP_PATTERN, PathLike, atomic_write_json, remove_stale_temp_files

LOCK_NAME = ".lock"
RUN_FILE = "run.json"
"""The record of the run that owns a run directory (`RunRecord`)."""


class RunDirError(ValueError):
    """A run directory that cannot be claimed (names it and why)."""


class RunDirBusyError(RunDirError):
    """Another live process writes to this run directory (names the directory and the holder's pid)."""


class RunDirLock:
    """The held lock of one run directory; `release()` (or the end of the process) gives it up."""

    def __init__(self, directory: Path, fd: int) -> None:
        self.directory = directory
        self._fd: Optional[int] = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Unlock and close (idempotent). The lock file stays: removing it could race a new holder."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunDirLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def check_run_name(name: str, key: str = "name") -> None:
    """Raise RunDirError unless `name` is one plain path component, so ``<out_dir>/<name>`` stays inside
    out_dir: not empty, no separator, not ``.`` or ``..``, no NUL, at most 255 bytes (a file name's limit)."""
    where = f"{key}={name!r}"
    if not isinstance(name, str) or not name.strip():
        raise RunDirError(f"{key}={name!r} is empty: give a name, or leave {key} out for a dated one")
    if any(sep and sep in name for sep in ("/", os.sep, os.altsep)) or "\0" in name:
        raise RunDirError(
            f"{where} must be one plain directory name (no path separator): the run directory is "
            f"<out_dir>/<{key}>; to write elsewhere set out_dir"
        )
    if name in (".", ".."):
        raise RunDirError(f"{where} is not a directory name of its own: the run directory is <out_dir>/<{key}>")
    if len(name.encode("utf-8", "surrogateescape")) > 255:
        raise RunDirError(
            f"{key} is {len(name.encode('utf-8', 'surrogateescape'))} bytes long; a directory name holds at most 255"
        )


def check_writable_dir(directory: PathLike, key: str = "out_dir") -> None:
    """Raise RunDirError unless `directory` is a directory this process can write in, or can be made as one
    (its nearest existing ancestor is such a directory). Probes with a temp file it removes at once."""
    d = Path(directory)
    where = f"{key}={str(directory)!r}"
    probe = d
    while not probe.exists():
        if probe.is_symlink():
            raise RunDirError(f"{where}: {str(probe)!r} is a broken symbolic link")
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        what = "it" if probe == d else f"{str(probe)!r}"
        raise RunDirError(f"{where} is not a directory: {what} is a file or a device")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".probe.", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise RunDirError(f"{where} cannot be written: {e.strerror} in {str(probe)!r}") from None


def claim_run_dir(
    directory: PathLike, *, what: str = "run directory", check: Optional[Callable[[], None]] = None
) -> RunDirLock:
    """Create `directory` if needed, lock it for this process and clear stale temp files in it.

    Raises RunDirBusyError naming the holder's pid when another process holds the lock.
    `what` names the directory in the message (``run directory``, ``tournament directory``).
    `check` runs once the lock is held and before anything is written: what it raises releases the
    lock and goes to the caller, so a check there cannot race another writer's."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    fd = os.open(d / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_pid(fd)
        os.close(fd)
        who = f"process {holder}" if holder else "another process"
        raise RunDirBusyError(
            f"the {what} {str(d)!r} is in use by {who} (it holds {str(d / LOCK_NAME)!r}); "
            f"wait for it to finish or stop it first"
        ) from None
    except OSError as e:  # a file system without locks (some network mounts)
        os.close(fd)
        raise RunDirError(
            f"the {what} {str(d)!r} cannot be locked ({e.strerror}); use a directory on a local file system"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    # The pid goes in at once, so a process refused while `check` runs can name the holder.
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    if check is not None:
        try:
            check()
        except BaseException:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise
    remove_stale_temp_files(d)
    return RunDirLock(d, fd)


def _read_pid(fd: int) -> Optional[int]:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


def log_files(directory: PathLike, patterns: Sequence[str]) -> list[Path]:
    """The files directly in `directory` whose names match one of the glob `patterns`, sorted by name."""
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.is_file() and any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns))


def log_sizes(directory: PathLike, patterns: Sequence[str]) -> dict[str, int]:
    """``{file name: size in bytes}`` of the logs in `directory` (what a checkpoint written now has seen)."""
    return {p.name: p.stat().st_size for p in log_files(directory, patterns)}


def rewind_logs(
    directory: PathLike, sizes: Mapping[str, int], patterns: Sequence[str], owned: Callable[[str], bool]
) -> list[str]:
    """Cut each log matching `patterns` back to its size in `sizes`; remove those `sizes` does not list and
    `owned` says are the run's (begun after the checkpoint); leave the others as they are.

    Only the lock holder may call this. A log shorter than its recorded size is left as it is (it was
    replaced or cut by hand; nothing here can restore it). Returns what was done, one line per file."""
    changed = []
    for p in log_files(directory, patterns):
        size = sizes.get(p.name)
        if size is None:
            if owned(p.name):
                p.unlink()
                changed.append(f"removed {p.name} (begun after the checkpoint)")
            else:
                changed.append(f"left {p.name} as it is: another run wrote it")
        elif p.stat().st_size > size:
            extra = p.stat().st_size - size
            os.truncate(p, size)
            changed.append(f"cut {extra} bytes written after the checkpoint from {p.name}")
    return changed


class RecordsRewound(NamedTuple):
    """What `rewind_records` did to a log: records kept, lines dropped for not being one (and their bytes),
    records dropped for being written after the checkpoint."""

    kept: int
    not_records: int
    not_record_bytes: int
    late: int

    def describe(self, name: str) -> str:
        """One line saying what was dropped from log `name`, with counts."""

        def many(n: int, what: str) -> str:
            return f"{n} {what}{'' if n == 1 else 's'}"

        return (
            f"{name}: kept {many(self.kept, 'game record')} the checkpoint saw; dropped "
            f"{many(self.not_records, 'line')} that {'is' if self.not_records == 1 else 'are'} not one "
            f"({self.not_record_bytes} bytes) and {many(self.late, 'record')} written after the checkpoint"
        )


def rewind_records(path: PathLike, seen: int, is_record: Callable[[bytes], bool]) -> RecordsRewound:
    """Rewind a log of one record a line to the `seen` bytes its checkpoint saw, record by record.

    Keeps, in order, the whole lines (ending in a newline) that `is_record` accepts while their sizes add
    up to at most `seen`; drops every other line (garbage, an unfinished last line) wherever it is, and the
    records past `seen` (written after the checkpoint). The checkpoint saw only records the run wrote, so
    a line that is not one never counts against `seen`. The file is cut when what is kept is its
    beginning, rewritten atomically otherwise, and left alone when nothing is dropped. Only the lock
    holder may call this."""
    p = Path(path)
    if not p.is_file():
        return RecordsRewound(0, 0, 0, 0)
    keep: list[bool] = []
    kept = not_records = not_record_bytes = late = used = 0
    with open(p, "rb") as f:
        for line in f:
            whole = line.endswith(b"\n") and is_record(line)
            if whole and not late and used + len(line) <= seen:
                used += len(line)
                kept += 1
            elif whole:
                late += 1
            else:
                not_records += 1
                not_record_bytes += len(line)
            keep.append(whole and not late)
    done = RecordsRewound(kept, not_records, not_record_bytes, late)
    if all(keep):
        return done
    if not any(keep[keep.index(False) :]):  # what is kept is the file's beginning: cut the rest
        os.truncate(p, used)
        return done
    tmp = p.parent / f".{p.name}.{secrets.token_hex(4)}.tmp"  # agents.common.io's temp name: cleared if left
    try:
        with open(p, "rb") as f, open(tmp, "xb") as out:
            out.writelines(compress(f, keep))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return done


# -- ownership ---------------------------------------------------------------------------------------
class RunRecord(NamedTuple):
    """What ``run.json`` says: the id of the run that owns the directory, and whether it has written a
    checkpoint (until it has, a fresh start may clear what it left)."""

    run_id: str
    checkpointed: bool


def new_run_id() -> str:
    """A fresh run id: 16 hex digits from the operating system's randomness (``os.urandom``), so drawing it
    changes none of the seeded random streams."""
    return secrets.token_hex(8)


def read_run_record(directory: PathLike) -> Optional[RunRecord]:
    """The directory's run record, or None when it has none or it cannot be read (then it proves nothing)."""
    try:
        data = json.loads((Path(directory) / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("run_id"), str) or not data["run_id"]:
        return None
    return RunRecord(data["run_id"], data.get("checkpointed") is True)


def write_run_record(directory: PathLike, record: RunRecord) -> None:
    atomic_write_json(Path(directory) / RUN_FILE, record._asdict())


def owned_log(name: str, run_id: str, record: Optional[RunRecord], patterns: Sequence[str]) -> bool:
    """Whether log `name` (matching one of `patterns`) is run `run_id`'s: an event file named with its id,
    or a fixed-name log (a pattern without wildcards) of a directory whose record names the run."""
    if name.endswith(f".{run_id}"):
        return True
    return record is not None and record.run_id == run_id and name in patterns


def fresh_run_leftovers(directory: PathLike, patterns: Sequence[str], kept: Sequence[str] = ()) -> list[Path]:
    """What a fresh run may clear before it starts in `directory`: nothing when it is empty or missing,
    else the leftovers of an attempt that never wrote a checkpoint (its record, its logs, the `kept` files
    such as its config.yaml).

    Raises RunDirError naming what is there when the directory holds a checkpoint (a run to resume) or
    any file that no such attempt wrote: a fresh run deletes nothing it did not write."""
    d = Path(directory)
    if not d.is_dir():
        return []
    present = sorted(p for p in d.iterdir() if p.name != LOCK_NAME and not TEMP_PATTERN.match(p.name))
    if not present:
        return []
    held = [p.name for p in present if p.suffix == ".pt"]
    if held:
        raise RunDirError(
            f"the run directory {str(d)!r} already holds a run ({', '.join(held)}); "
            f"continue it with resume={d}, or choose another name"
        )
    record = read_run_record(d)
    if record is not None and not record.checkpointed:
        foreign = [
            p.name
            for p in present
            if not (p.name in (RUN_FILE, *kept) and p.is_file())
            and not (
                p.is_file()
                and any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns)
                and owned_log(p.name, record.run_id, record, patterns)
            )
        ]
    else:
        foreign = [p.name + ("/" if p.is_dir() else "") for p in present]
    if foreign:
        shown_names = ", ".join(foreign[:6]) + (f" and {len(foreign) - 6} more" if len(foreign) > 6 else "")
        raise RunDirError(
            f"the run directory {str(d)!r} holds files this run did not write ({shown_names}); "
            f"a run writes only into a directory of its own: choose another name or out_dir"
        )
    return present


def remove_run_files(
    directory: PathLike, run_id: str, patterns: Sequence[str], kept: Sequence[str] = (), created: bool = False
) -> None:
    """Remove what run `run_id` wrote in `directory` before its first checkpoint (its record, its logs,
    the `kept` files), the lock file, and the directory itself when the run `created` it and it is now
    empty. For a run stopped before it checkpointed anything: it leaves no trace to refuse a new start."""
    d = Path(directory)
    record = read_run_record(d)
    if record is None or record.run_id != run_id or record.checkpointed:
        return
    for p in log_files(d, patterns):
        if owned_log(p.name, run_id, record, patterns):
            p.unlink(missing_ok=True)
    for name in (*kept, RUN_FILE, LOCK_NAME):
        (d / name).unlink(missing_ok=True)
    if created:
        try:
            d.rmdir()
        except OSError:  # something else is there now: leave it
            pass

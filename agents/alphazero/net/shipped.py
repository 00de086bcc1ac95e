"""The shipped networks: `checkpoints/shipped/manifest.json` read, and a name like ``shipped:default-180`` resolved.

    from agents.alphazero.net import shipped
    [net.name for net in shipped.networks()]          # what ships, strongest first
    shipped.strongest().name                          # the first of them for the default rules
    shipped.resolve("shipped:default-180")            # -> .../checkpoints/shipped/default-180.pt
    make_player("checkpoint:path=shipped:default-180,time=1,leaf_batch=8")

The manifest lists each file with what it is, the commands that trained it
and its rows of the strength table (docs/results.md); checkpoints/shipped/
README.md renders it for people. A spec names a network by its entry, never by
a path in code, so a renamed or retrained file changes one line of the
manifest. Loading a ``shipped:`` name checks the file's bytes against the
manifest's sha256 (`checked_file`); a malformed entry is refused on its own,
in one line, and leaves the others usable (`read_manifest`). The files come
with a checkout of the repository (a wheel has none): without them a
`shipped:` name is refused with a `ShippedError`.
This module imports nothing heavy: the play page's level list reads it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

SHIPPED_DIR = Path(__file__).resolve().parents[3] / "checkpoints" / "shipped"
"""Where the shipped files and their manifest live in a checkout."""
MANIFEST = SHIPPED_DIR / "manifest.json"
PREFIX = "shipped:"
"""How a checkpoint path names a manifest entry: ``shipped:<name>``."""
FORMAT = "jungle-zero-shipped/1"


class ShippedError(ValueError):
    """An unknown shipped network, or a manifest that is missing or malformed (names which)."""


@dataclass(frozen=True)
class ShippedNetwork:
    """One entry of the manifest."""

    name: str
    file: str
    """The file's name inside `SHIPPED_DIR`."""
    sha256: str
    what: str
    commands: tuple[str, ...]
    """The train.py commands that made it, in order (a continued run has several)."""
    strength: tuple[dict[str, Any], ...]
    """Its rows of the strength table: player, opponent, games, wdl, score, elo (and a note)."""
    entry: dict[str, Any]
    """The whole manifest entry (iterations, training, shipped_in, date...)."""

    @property
    def path(self) -> Path:
        return SHIPPED_DIR / self.file

    @property
    def rule_set_names(self) -> tuple[str, ...]:
        """The rule sets (names of `configs/rules/`) it plays: its entry's ``rules``, a name or a list of names
        (default: ``default``)."""
        names = self.entry.get("rules", "default")
        return (names,) if isinstance(names, str) else tuple(names)

    @property
    def spec_path(self) -> str:
        """What a player spec's ``path=`` takes for it."""
        return PREFIX + self.name


MANIFEST_MAX_BYTES = 1 << 20
"""The largest manifest read (it lists a few networks in some 40 KB)."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Manifest:
    """What `read_manifest` found: the well-formed entries, and why each other one is refused."""

    networks: tuple[ShippedNetwork, ...]
    """The well-formed entries in the manifest's order (strongest first)."""
    faults: dict[str, str]
    """Entry name (or ``network <index>`` when it has none) -> the one line that refuses it."""


def read_manifest(manifest: Optional[Path] = None) -> Manifest:
    """The manifest's entries, each checked on its own: a malformed one is kept aside with its reason
    (`Manifest.faults`) and the others stay usable. ShippedError when the file as a whole is missing,
    unreadable, larger than `MANIFEST_MAX_BYTES` or no shipped-networks manifest."""
    path = manifest or MANIFEST
    try:
        with open(path, "rb") as f:
            raw = f.read(MANIFEST_MAX_BYTES + 1)
    except FileNotFoundError:
        raise ShippedError(
            f"no shipped networks here: {str(path)!r} does not exist (they come with a checkout of the repository)"
        ) from None
    except OSError as e:
        raise ShippedError(f"{str(path)!r} cannot be read: {e.strerror or e}") from None
    if len(raw) > MANIFEST_MAX_BYTES:
        raise ShippedError(f"{str(path)!r} is larger than {MANIFEST_MAX_BYTES} bytes, the most a manifest holds")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as e:  # bad UTF-8 or JSON, a huge integer, nesting past the stack
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ShippedError(f"{str(path)!r} cannot be read as JSON: {first}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("networks"), list):
        raise ShippedError(
            f"{str(path)!r} is not a shipped-networks manifest (format {FORMAT!r} with a 'networks' list)"
        )
    nets: dict[str, ShippedNetwork] = {}
    faults: dict[str, str] = {}
    for k, item in enumerate(data["networks"]):
        name = item.get("name") if isinstance(item, dict) else None
        label = name if isinstance(name, str) and _NAME.fullmatch(name) else f"network {k}"
        if label in nets or label in faults:
            faults[f"network {k}"] = f"{str(path)!r}: network {k} is named {label!r} again"
            continue
        try:
            nets[label] = _entry(item)
        except ValueError as e:
            shown = repr(label) if label == name else label
            faults[label] = f"{str(path)!r}: network {shown} is malformed: {e}"
    return Manifest(tuple(nets.values()), faults)


def _entry(item: Any) -> ShippedNetwork:
    """One entry of the manifest as a ShippedNetwork; ValueError saying which field is wrong."""
    if not isinstance(item, dict):
        raise ValueError(f"it is a {type(item).__name__}, not a mapping")

    def field(key: str, kind: type, what: str) -> Any:
        if key not in item:
            raise ValueError(f"it has no {key!r}")
        value = item[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"its {key!r} is {str(value)[:60]!r}, not {what}")
        return value

    name = field("name", str, "a name of letters, digits, '.', '_' and '-'")
    if not _NAME.fullmatch(name):
        raise ValueError(f"its 'name' {name[:60]!r} is not a name of letters, digits, '.', '_' and '-'")
    file = field("file", str, "a file name")
    if Path(file).name != file or not file.endswith(".pt"):
        raise ValueError(f"it names {file[:60]!r}, not a .pt file beside it")
    sha256 = field("sha256", str, "64 hexadecimal digits")
    if not _SHA256.fullmatch(sha256):
        raise ValueError(f"its 'sha256' {sha256[:70]!r} is not 64 lowercase hexadecimal digits")
    commands = field("commands", list, "a list of train.py commands")
    strength = field("strength", list, "a list of strength rows")
    if not all(isinstance(c, str) for c in commands):
        raise ValueError("its 'commands' holds something other than text")
    if not all(isinstance(r, dict) for r in strength):
        raise ValueError("its 'strength' holds something other than rows (mappings)")
    rules = item.get("rules", "default")
    if not (isinstance(rules, str) or (isinstance(rules, list) and rules and all(isinstance(r, str) for r in rules))):
        raise ValueError(f"its 'rules' is {str(rules)[:60]!r}, not a rule set name or a list of them")
    return ShippedNetwork(
        name=name,
        file=file,
        sha256=sha256,
        what=field("what", str, "text"),
        commands=tuple(commands),
        strength=tuple(dict(r) for r in strength),
        entry=dict(item),
    )


def networks(manifest: Optional[Path] = None) -> list[ShippedNetwork]:
    """The manifest's well-formed networks in its order (strongest first); ShippedError if it is missing or
    malformed as a whole (a malformed entry alone is left out: `read_manifest`)."""
    return list(read_manifest(manifest).networks)


def network(name: str, manifest: Optional[Path] = None) -> ShippedNetwork:
    """The entry called `name` (with or without the ``shipped:`` prefix); ShippedError saying what is wrong
    with it when it is malformed, or naming the known ones when there is none."""
    name = name.removeprefix(PREFIX)
    found = read_manifest(manifest)
    nets = found.networks
    for net in nets:
        if net.name == name:
            return net
    if name in found.faults:
        raise ShippedError(found.faults[name])
    close = difflib.get_close_matches(name, [net.name for net in nets], n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ShippedError(f"no shipped network {name!r}; {hint}{_listing(found)}")


def strongest(rules: str = "default", manifest: Optional[Path] = None) -> ShippedNetwork:
    """The first entry of the manifest (strongest first) trained on the rule set `rules` alone; ShippedError if
    the manifest is missing, malformed or has none."""
    found = read_manifest(manifest)
    for net in found.networks:
        if net.rule_set_names == (rules,):
            return net
    raise ShippedError(f"no shipped network plays the rule set {rules!r} alone; {_listing(found)}")


def _listing(found: Manifest) -> str:
    """``shipped: a, b`` (or ``none``), and the entries refused as malformed, for a refusal's line."""
    names = ", ".join(net.name for net in found.networks) or "none"
    return f"shipped: {names}" + (f"; malformed: {', '.join(found.faults)}" if found.faults else "")


def resolve(path: str) -> Path:
    """A checkpoint path as a spec gives it -> a file system path: ``shipped:<name>`` is that entry's file,
    anything else the path itself. The file is not read: `checked_file` is what loading calls."""
    if path.startswith(PREFIX):
        return network(path).path
    return Path(path)


def checked_file(name: str, manifest: Optional[Path] = None) -> Path:
    """The file of the entry `name` (``shipped:<name>`` or the bare name), once its bytes hash to the
    manifest's sha256; ShippedError naming the entry and the file when it is missing or differs (replaced
    by another network's bytes, damaged)."""
    net = network(name, manifest)
    try:
        with open(net.path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
    except FileNotFoundError:
        raise ShippedError(f"shipped network {net.name!r}: its file {str(net.path)!r} does not exist") from None
    except OSError as e:
        raise ShippedError(f"shipped network {net.name!r}: its file {str(net.path)!r} cannot be read: {e}") from None
    if digest != net.sha256:
        raise ShippedError(
            f"shipped network {net.name!r}: {str(net.path)!r} is not the file its manifest entry names (sha256 "
            f"{digest[:16]}..., the manifest says {net.sha256[:16]}...): it was replaced or damaged; restore it "
            f"from the repository"
        )
    return net.path

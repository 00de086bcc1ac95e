"""The shipped networks: `checkpoints/shipped/manifest.json` read, and a name like ``shipped:default-180`` resolved.

    from agents.alphazero import shipped
    [net.name for net in shipped.networks()]          # what ships, strongest first
    shipped.strongest().name                          # the first of them for the default rules
    shipped.resolve("shipped:default-180")            # -> .../checkpoints/shipped/default-180.pt
    make_player("checkpoint:path=shipped:default-180,time=1,leaf_batch=8")

The manifest lists each file with what it is, the commands that trained it
and its rows of the strength table (docs/results.md); checkpoints/shipped/
README.md renders it for people. A spec names a network by its entry, never by
a path in code, so a renamed or retrained file changes one line of the
manifest. The files come with a checkout of the repository (a wheel has none):
without them a `shipped:` name is refused with a `ShippedError`.
This module imports nothing heavy: the play page's level list reads it.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

SHIPPED_DIR = Path(__file__).resolve().parents[2] / "checkpoints" / "shipped"
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


def networks(manifest: Optional[Path] = None) -> list[ShippedNetwork]:
    """The manifest's networks in its order (strongest first); ShippedError if it is missing or malformed."""
    path = manifest or MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShippedError(
            f"no shipped networks here: {str(path)!r} does not exist (they come with a checkout of the repository)"
        ) from None
    except (OSError, ValueError) as e:
        raise ShippedError(f"{str(path)!r} cannot be read: {e}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("networks"), list):
        raise ShippedError(
            f"{str(path)!r} is not a shipped-networks manifest (format {FORMAT!r} with a 'networks' list)"
        )
    out = []
    for k, item in enumerate(data["networks"]):
        try:
            net = ShippedNetwork(
                name=str(item["name"]),
                file=str(item["file"]),
                sha256=str(item["sha256"]),
                what=str(item["what"]),
                commands=tuple(str(c) for c in item["commands"]),
                strength=tuple(dict(r) for r in item["strength"]),
                entry=dict(item),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ShippedError(f"{str(path)!r}: network {k} is malformed ({err!r})") from None
        if Path(net.file).name != net.file or not net.file.endswith(".pt"):
            raise ShippedError(f"{str(path)!r}: network {net.name!r} names {net.file!r}, not a .pt file beside it")
        out.append(net)
    return out


def network(name: str, manifest: Optional[Path] = None) -> ShippedNetwork:
    """The entry called `name` (with or without the ``shipped:`` prefix); ShippedError naming the known ones."""
    name = name.removeprefix(PREFIX)
    nets = networks(manifest)
    for net in nets:
        if net.name == name:
            return net
    known = [net.name for net in nets]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ShippedError(f"no shipped network {name!r}; {hint}shipped: {', '.join(known)}")


def strongest(rules: str = "default", manifest: Optional[Path] = None) -> ShippedNetwork:
    """The first entry of the manifest (strongest first) trained on the rule set `rules` alone; ShippedError if
    the manifest is missing, malformed or has none."""
    nets = networks(manifest)
    for net in nets:
        if net.rule_set_names == (rules,):
            return net
    raise ShippedError(
        f"no shipped network plays the rule set {rules!r} alone; shipped: {', '.join(n.name for n in nets)}"
    )


def resolve(path: str) -> Path:
    """A checkpoint path as a spec gives it -> a file system path: ``shipped:<name>`` is that entry's file,
    anything else the path itself."""
    if path.startswith(PREFIX):
        return network(path).path
    return Path(path)

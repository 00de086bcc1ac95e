"""Config dataclasses built from mappings (Hydra nodes, checkpoint dicts), with unknown keys refused."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Mapping


def config_kwargs(cls: Any, values: Mapping[str, Any], what: str, error: type[Exception]) -> dict[str, Any]:
    """The keyword arguments of dataclass `cls` found in `values`.

    Any other key (except ``name``, which Hydra config groups carry) raises
    `error` naming the unknown key(s) and the known ones, e.g. ``unknown mcts
    key(s) c_puc; known keys: ...``."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known - {"name"})
    if unknown:
        raise error(f"unknown {what} key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(known))}")
    return {k: v for k, v in values.items() if k in known}

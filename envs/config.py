"""Config dataclasses built from mappings (Hydra nodes, checkpoint dicts), with unknown keys refused,
and the shipped Hydra config groups (`configs/`) found wherever the project is installed."""

from __future__ import annotations

from dataclasses import fields
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Mapping, Union

CONFIG_PACKAGE = "jungle_zero.configs"
"""The installed package that holds the config groups: the repository's `configs/` folder
(pyproject.toml maps the repository root onto `jungle_zero`, the entry scripts ship there too)."""

SCHEMA = "schema"
"""The option name under which each config group's dataclass is stored in Hydra's ConfigStore; a
group's yaml files start with ``defaults: [schema, _self_]``."""


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


def config_dir(group: str) -> Traversable:
    """The folder of a config group (`rules`, `model`, `mcts`, `train`, ...).

    The installed package data (`jungle_zero/configs/`, also what an editable
    install points at), or the checkout's `configs/` when the project is
    imported from its source tree without being installed."""
    try:
        root: Traversable = resources.files(CONFIG_PACKAGE)
    except ModuleNotFoundError:
        root = Path(__file__).resolve().parent.parent / "configs"
    return root / group


def group_options(group: str) -> list[str]:
    """The option names of a config group (its yaml file stems), sorted."""
    return sorted(p.name[: -len(".yaml")] for p in config_dir(group).iterdir() if p.name.endswith(".yaml"))


def read_config_file(source: Union[Traversable, Path], what: str, error: type[Exception]) -> dict[str, Any]:
    """The values of a config yaml file (a group option or a user's file) as a plain dict.

    The Hydra defaults list that points at the group's schema is dropped;
    an unreadable file, invalid yaml, anything but a mapping, or another
    defaults list raises `error` naming the file."""
    from omegaconf import OmegaConf  # lazy: only the readers of config files need it

    try:
        node = OmegaConf.create(source.read_text())
    except OSError as e:
        raise error(f"{what} file {str(source)!r} cannot be read: {e}") from None
    except Exception as e:  # the yaml parser's own errors
        raise error(f"{what} file {str(source)!r} is not valid yaml: {e}") from None
    values = OmegaConf.to_container(node, resolve=True)
    if not isinstance(values, dict):
        raise error(f"{what} file {str(source)!r} must hold a mapping of keys, not a list")
    defaults = values.pop("defaults", [SCHEMA])
    if not isinstance(defaults, list) or any(d not in (SCHEMA, "_self_") for d in defaults):
        raise error(f"{what} file {str(source)!r}: its defaults list may only name {SCHEMA!r} and '_self_'")
    return {str(k): v for k, v in values.items()}


def override_key(override: str) -> str:
    """The key or config group that a Hydra command-line override sets, read without Hydra's internal
    parser: ``train.iterations=9`` and ``+train.x=1`` -> ``train.iterations``, ``train.x``; ``~a.b`` -> ``a.b``."""
    return override.split("=", 1)[0].lstrip("+~")

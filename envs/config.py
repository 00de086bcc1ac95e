"""Config dataclasses built from mappings (Hydra nodes, checkpoint dicts), with unknown keys refused
and values range-checked, and the shipped Hydra config groups (`configs/`) found wherever the project
is installed."""

from __future__ import annotations

import difflib
import math
from dataclasses import fields
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union

CONFIG_PACKAGE = "jungle_zero.configs"
"""The installed package that holds the config groups: the repository's `configs/` folder
(pyproject.toml maps the repository root onto `jungle_zero`, the entry scripts ship there too)."""

SCHEMA = "schema"
"""The option name under which each config group's dataclass is stored in Hydra's ConfigStore; a
group's yaml files start with ``defaults: [schema, _self_]``."""


class ConfigError(ValueError):
    """A config value out of range or not among its choices, an unknown key, or a config group changed on
    resume (names the key). The base of every config error class (RuleSetError, NetworkShapeError, ...)."""


Bounds = tuple[Optional[float], Optional[float]]
"""``(lowest, highest)`` allowed value of a field, both inclusive; None: no bound on that side."""


def check_range(node: Any, where: str, error: type[Exception] = ConfigError, **bounds: Bounds) -> None:
    """Raise `error` for the first field of `node` outside its ``(lowest, highest)`` bounds.

    The one range check of every config dataclass (each states its bounds in its field docstrings) and
    of option mappings (`node` an object or a Mapping). A bool, a non-number, NaN and infinity are never
    in range. The message names the key as ``<where>.<field>=<value>`` and the bounds, e.g.
    ``train.batch_size=0 must be >= 1``; a `where` ending in a space is written as it is, e.g.
    ``player 'checkpoint': sims=0 must lie in [1, 100000]``."""
    for name, (low, high) in bounds.items():
        value = _field(node, name)
        number = not isinstance(value, bool) and isinstance(value, (int, float)) or _is_numpy_number(value)
        finite = number and _is_finite(value)
        if finite and (low is None or value >= low) and (high is None or value <= high):
            continue
        if low is not None and high is not None:
            wanted = f"must lie in [{_bound(low)}, {_bound(high)}]"
        elif low is not None:
            wanted = f"must be >= {_bound(low)}"
        elif high is not None:
            wanted = f"must be <= {_bound(high)}"
        else:
            wanted = "must be a finite number"
        if number and not finite and (low is None or high is None):
            wanted += " and finite"
        raise error(f"{_key(where, name)}={shown(value)} {wanted}")


def check_choice(node: Any, where: str, error: type[Exception] = ConfigError, **choices: Iterable[str]) -> None:
    """Raise `error` for the first field of `node` (an object or a Mapping) that is not one of its choices.

    The one choice check of every config dataclass; the key is named as by `check_range`, e.g.
    ``mcts.algorithm='alphabeta' is not one of puct, gumbel``."""
    for name, allowed in choices.items():
        options = tuple(allowed)
        value = _field(node, name)
        if value not in options:
            raise error(f"{_key(where, name)}={shown(value)} is not one of {', '.join(options)}")


def _field(node: Any, name: str) -> Any:
    """Field `name` of an object, or its entry in a Mapping."""
    return node[name] if isinstance(node, Mapping) else getattr(node, name)


def _key(where: str, name: str) -> str:
    """A field's key in a message: ``where.name``; ``where`` as it is when it ends in a space (a prefix)."""
    if not where or where.endswith(" "):
        return f"{where}{name}"
    return f"{where}.{name}"


def _is_finite(number: Any) -> bool:
    """Whether a number is neither NaN nor infinite (an int too large for a float is finite)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return True


def _is_numpy_number(value: Any) -> bool:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency
        return False
    return isinstance(value, (np.integer, np.floating))


def _bound(x: float) -> str:
    """A bound as written in a message: integers without a fraction, powers of two as ``2**k - 1``."""
    if float(x).is_integer():
        x = int(x)
        if x > 10**6 and (x + 1) & x == 0:
            return f"2**{(x + 1).bit_length() - 1} - 1"
    return f"{x}"


def shown(value: Any, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters, for one-line messages about values of any size."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the known word closest to `word`, or '' when none is close."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _key_shown(key: Any) -> str:
    """A key as typed where it is a plain name, else `shown` (quoted: a line break stays on one line)."""
    return str(key) if str(key).isidentifier() else shown(str(key))


def config_kwargs(cls: Any, values: Mapping[str, Any], what: str, error: type[Exception]) -> dict[str, Any]:
    """The keyword arguments of dataclass `cls` found in `values`.

    Any other key (except ``name``, which Hydra config groups carry) raises
    `error` naming the unknown key(s), the closest known key, and the known ones, e.g. ``unknown mcts
    key(s) c_puc (did you mean c_puct?); known keys: ...``."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known - {"name"}, key=str)  # keys of a checkpoint or a record may be of any type
    if unknown:
        hint = did_you_mean(str(unknown[0]), known)
        raise error(
            f"unknown {what} key(s) {', '.join(map(_key_shown, unknown))}{hint}; known keys: {', '.join(sorted(known))}"
        )
    return {k: v for k, v in values.items() if k in known}


def dotted_keys(schema: Any, prefix: str = "") -> list[str]:
    """Every key of a config dataclass as typed on a command line (``train.selfplay.parallel``), nested
    dataclasses walked; Hydra's own nodes (``defaults``, ``hydra``) left out."""
    from typing import get_type_hints

    keys = []
    types = get_type_hints(schema)
    for f in fields(schema):
        if f.name in ("defaults", "hydra"):
            continue
        key = prefix + f.name
        keys.append(key)
        if hasattr(types[f.name], "__dataclass_fields__"):
            keys += dotted_keys(types[f.name], key + ".")
    return keys


def hydra_error_line(error: BaseException, known_keys: Iterable[str] = ()) -> str:
    """One line for an error of Hydra's composition or OmegaConf's checks (both print several, with
    hints about environment variables): the override at fault and why; for an unknown key the closest
    of `known_keys`, e.g. ``unknown config key 'trian.iterations' (did you mean train.iterations?)``."""
    text = str(error).strip()
    cause = error.__cause__
    lines = [line.strip() for line in text.splitlines()]
    if text.startswith("Could not override '") and type(cause).__name__ in ("ConfigKeyError", "ConfigAttributeError"):
        key = text[len("Could not override '") :].split("'", 1)[0]
        known = list(known_keys)
        if key in known:  # a value for a node, with keys the node does not have
            return f"{key}: {_first_lines(str(cause), with_key=False)}"
        return f"unknown config key {key!r}{did_you_mean(key, known)}"
    if text.startswith("Could not append to config. An item is already at '"):
        key = text.split("'")[1]
        return f"+{key}: {key} exists already; set it without the +"
    if text.startswith("Error merging override ") and cause is not None:
        return f"{text[len('Error merging override ') :]}: {_first_lines(str(cause), with_key=False)}"
    if "Could not find '" in text and "Available options in" in text:
        head = lines[0].split(": ", 1)[-1]
        options = []
        for line in lines[lines.index(next(x for x in lines if x.startswith("Available options"))) + 1 :]:
            if not line or line.startswith("Config search path"):
                break
            if line != SCHEMA:
                options.append(line)
        group, _, option = head.partition("'")[2].partition("'")[0].partition("/")
        hint = ""
        if "/" in option or option.endswith((".yaml", ".yml")):  # a file's path, not an option's name
            hint = f" (a file of one's own, DIR/{group}/NAME.yaml: hydra.searchpath=[file://DIR] {group}=NAME)"
        return f"{head[0].lower()}{head[1:]}; the options are {', '.join(options)}{hint}"
    return _first_lines(text)


def _first_lines(text: str, with_key: bool = True) -> str:
    """The lines of an OmegaConf or Hydra message that say what went wrong, joined into one (after the
    key at fault, OmegaConf's ``full_key``, unless `with_key` is false)."""
    noise = ("full_key:", "object_type=", "reference_type=", "Set the environment variable", "See https://")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    kept = [line for line in lines if not line.startswith(noise)]
    keys = [line[len("full_key:") :].strip() for line in lines if line.startswith("full_key:")]
    said = "; ".join(kept) if kept else text.strip()
    return f"{keys[0]}: {said}" if with_key and keys and keys[0] else said


def compose(
    config_path: Union[str, Path, Traversable],
    config_name: str,
    overrides: Iterable[str],
    *,
    schema: Any,
    job_name: str,
) -> Any:
    """The config that Hydra composes from `overrides` (its compose API, in this process).

    Any error of Hydra's (an unknown key, a mistyped value, an unknown group option, an override
    it cannot parse) raises ConfigError in one line naming the override (`hydra_error_line`; an
    unknown key comes with the closest key of dataclass `schema`). A group option that is no file of the group
    (`schema`, what the files start from) or a group that `schema`'s defaults list lacks (train.py's `preset`
    given to evaluate.py) is refused in the same way (`check_group_choices`)."""
    check_group_choices(overrides, config_path, schema, job_name)
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    for group, path in searchpath_choices(overrides):
        _read_yaml_data(path, group, ConfigError)  # Hydra's own reader bounds neither nesting nor aliases
    try:
        with initialize_config_dir(config_dir=str(config_path), version_base=None, job_name=job_name):
            return hydra_compose(config_name=config_name, overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as e:
        raise ConfigError(hydra_error_line(e, dotted_keys(schema))) from None
    except TypeError:  # Hydra itself fails on a group given a list of numbers (`rules=[1,2]`)
        for item in overrides:
            key, _, value = str(item).lstrip("+~").partition("=")
            if value.lstrip().startswith("[") and Path(str(config_path), key).is_dir():
                raise ConfigError(f"{item}: the config group {key!r} takes option names, not {value}") from None
        raise


def searchpath_choices(overrides: Iterable[str]) -> list[tuple[str, Path]]:
    """The files of one's own that `overrides` may choose: ``DIR/GROUP/NAME.yaml`` for each ``file://DIR`` of
    ``hydra.searchpath=[...]`` and each ``GROUP=NAME`` that names an existing file there, as (GROUP, path).

    `compose` reads each of them as `read_config_file` reads a file before Hydra does, so that one of
    20 000 nested lists is one line, not a RecursionError."""
    dirs: list[Path] = []
    choices: list[tuple[str, str]] = []
    for item in overrides:
        key, sep, value = str(item).partition("=")
        key, value = key.lstrip("+~").strip(), value.strip()
        if not sep:
            continue
        if key == "hydra.searchpath":
            for entry in value.strip("[]").split(","):
                entry = entry.strip().strip("'\"")
                if entry.startswith("file://"):
                    dirs.append(Path(entry[len("file://") :]))
        elif key and "." not in key and value and value[0] not in "[{":
            choices.append((key, value))
    found = []
    for root in dirs:
        for group, option in choices:
            path = root / group / f"{option}.yaml"
            try:
                if path.is_file():
                    found.append((group, path))
            except (OSError, ValueError):  # a name the file system refuses is not a file: Hydra says so
                continue
    return found


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


def config_groups(schema: Any) -> dict[str, Optional[str]]:
    """The config groups a primary config reads (those its dataclass `schema`'s Hydra defaults list names), each
    with its default option, in the list's order."""
    defaults = next((f for f in fields(schema) if f.name == "defaults"), None)
    factory = getattr(defaults, "default_factory", None)
    entries = factory() if callable(factory) else []
    return {str(k): v for entry in entries if isinstance(entry, dict) for k, v in entry.items() if " " not in str(k)}


def check_group_choices(
    overrides: Iterable[str], config_path: Union[str, Path, Traversable], schema: Any, job_name: str
) -> None:
    """ConfigError naming the override when it chooses `schema` in a group (the dataclass stored under that name
    is what the group's files start from, not an option), or chooses an option of a group of `config_path` that
    the primary config `schema` does not read."""
    groups = config_groups(schema)
    for item in overrides:
        key, sep, value = str(item).partition("=")
        key, value = key.lstrip("+~").strip(), value.strip()
        if not sep or "." in key or "/" in key or not Path(str(config_path), key).is_dir():
            continue
        if key not in groups:
            raise ConfigError(f"{item}: {job_name}.py has no config group {key!r} (its groups: {', '.join(groups)})")
        if value == SCHEMA:
            options = ", ".join(sorted(p.name[: -len(".yaml")] for p in Path(str(config_path), key).glob("*.yaml")))
            raise ConfigError(
                f"{item}: {SCHEMA!r} is not an option of the config group {key!r}; the options are {options}"
            )


CONFIG_FILE_MAX_BYTES = 64 * 1024
"""The largest config yaml file read (a rule set is a few hundred bytes)."""

CONFIG_FILE_MAX_DEPTH = 32
"""The deepest nesting of lists and mappings a config yaml file may hold (a rule set is one mapping deep, the
deepest shipped group file three)."""


def read_config_file(source: Union[Traversable, Path], what: str, error: type[Exception]) -> dict[str, Any]:
    """The values of a config yaml file (a group option or a user's file) as a plain dict.

    The file is data, never a program: at most `CONFIG_FILE_MAX_BYTES`, read by a safe YAML loader
    (`SafeConfigLoader`: no tags, no anchors or aliases, no duplicate keys) and nothing in it is
    interpolated (``${...}`` stays text). The Hydra defaults list that points at the group's schema
    is dropped; an unreadable file, invalid yaml, anything but a mapping, or another defaults list
    raises `error` naming the file."""
    name = str(source)
    values = _read_yaml_data(source, what, error)
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise error(f"{what} file {name!r} must hold a mapping of keys, not a {type(values).__name__}")
    defaults = values.pop("defaults", [SCHEMA])
    if not isinstance(defaults, list) or any(d not in (SCHEMA, "_self_") for d in defaults):
        raise error(f"{what} file {name!r}: its defaults list may only name {SCHEMA!r} and '_self_'")
    return {str(k): v for k, v in values.items()}


def _read_yaml_data(source: Union[Traversable, Path], what: str, error: type[Exception]) -> Any:
    """What a config yaml file holds, read as data: at most `CONFIG_FILE_MAX_BYTES`, UTF-8, and through
    `SafeConfigLoader` (no tags, anchors, aliases or duplicate keys, keys only strings, nesting at most
    `CONFIG_FILE_MAX_DEPTH` deep); `error` naming the file otherwise."""
    import yaml

    name = str(source)
    try:
        with source.open("rb") as f:
            data = f.read(CONFIG_FILE_MAX_BYTES + 1)  # a larger file is never read whole
    except OSError as e:
        raise error(f"{what} file {name!r} cannot be read: {e.strerror or e}") from None
    if len(data) > CONFIG_FILE_MAX_BYTES:
        raise error(f"{what} file {name!r} is larger than {CONFIG_FILE_MAX_BYTES} bytes, the most a config file holds")
    try:
        values = yaml.load(data.decode("utf-8"), Loader=SafeConfigLoader)  # noqa: S506 - a safe loader
    except UnicodeDecodeError as e:
        raise error(f"{what} file {name!r} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except yaml.YAMLError as e:
        raise error(f"{what} file {name!r} is not valid yaml: {_yaml_problem(e)}") from None
    return values


def _yaml_problem(e: Exception) -> str:
    """One line of what a YAML parser said was wrong, and where."""
    problem = getattr(e, "problem", None) or str(e).strip().splitlines()[0]
    mark = getattr(e, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else str(problem)


def _safe_config_loader() -> type:
    """`SafeConfigLoader`, built on first use (PyYAML comes with Hydra; envs imports it lazily)."""
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        """yaml.SafeLoader for config files: numbers as Hydra reads them (``1e-3`` is a float, no dates),
        and no anchors, aliases or duplicate keys (a few aliases can expand to gigabytes)."""

        depth = 0
        """How many lists and mappings the node being composed sits in (the composer recurses once a level)."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.CollectionStartEvent) and self.depth >= CONFIG_FILE_MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"lists and mappings are nested deeper than {CONFIG_FILE_MAX_DEPTH} levels",
                    event.start_mark,
                )
            self.depth += 1
            try:
                return self._compose_unaliased_node(parent, index)
            finally:
                self.depth -= 1

        def _compose_unaliased_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"aliases (*{event.anchor}) are not allowed", event.start_mark
                )
            event = self.peek_event()
            if getattr(event, "anchor", None) is not None:
                raise yaml.composer.ComposerError(
                    None, None, f"anchors (&{event.anchor}) are not allowed", event.start_mark
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {_node_text(key_node)} is not a string", key_node.start_mark
                    )
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key_node.value!r} is given twice", key_node.start_mark
                    )
                seen.add(key_node.value)
            return super().construct_mapping(node, deep=deep)

    def _node_text(node: Any) -> str:
        """A key node as the file writes it, on one line and cut to 60 characters."""
        start, end = node.start_mark, node.end_mark
        text = " ".join(start.buffer[start.pointer : end.pointer].split()) if start.buffer is not None else ""
        text = text or repr(node.value)
        return text if len(text) <= 60 else text[:57] + "..."

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
    )
    return Loader


class _LazyLoader:
    """Stands for the loader class until first use (so importing envs does not import yaml)."""

    _cls: Optional[type] = None

    def __call__(self, stream: Any) -> Any:
        if _LazyLoader._cls is None:
            _LazyLoader._cls = _safe_config_loader()
        return _LazyLoader._cls(stream)


SafeConfigLoader: Any = _LazyLoader()
"""The loader `read_config_file` gives ``yaml.load``: a yaml.SafeLoader without anchors, aliases,
duplicate keys or dates, reading numbers as Hydra does."""


def override_key(override: str) -> str:
    """The key or config group that a Hydra command-line override sets, read without Hydra's internal
    parser: ``train.iterations=9`` and ``+train.x=1`` -> ``train.iterations``, ``train.x``; ``~a.b`` -> ``a.b``."""
    return override.split("=", 1)[0].lstrip("+~")

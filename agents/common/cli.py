"""The start of the Hydra entry scripts (train.py, evaluate.py): the command line's overrides composed first,
so that one Hydra refuses stops with one line."""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
from dataclasses import fields, is_dataclass
from typing import Any, Callable, NoReturn, Optional, Sequence, get_type_hints

from envs.config import ConfigError

HELP_FLAGS = ("--help", "-h")


def hydra_entry(
    prog: str, compose_config: Callable[[Sequence[str]], Any], run: Callable[[], Any], *, doc: str, schema: type
) -> None:
    """Run `run` (a function decorated with ``hydra.main``) on this process's command line, after its
    overrides have composed here with `compose_config`: an override Hydra refuses stops with one line,
    ``<prog>: error: ...``, and exit status 2, not Hydra's several. ``--help`` prints `script_help` (the
    script's `doc`, the groups of its primary config `schema`, its config); Hydra's other flags (--cfg, -m,
    --hydra-help) go to Hydra as they are."""
    args = sys.argv[1:]
    if any(a in HELP_FLAGS for a in args):
        overrides = [a for a in args if not a.startswith("-")]
        try:
            text = script_help(prog, doc, schema, compose_config(overrides))
        except ConfigError as e:
            refuse(prog, e)
        print(text)
        sys.exit(0)
    if not any(a.startswith("-") for a in args):
        try:
            compose_config(args)
        except ConfigError as e:
            refuse(prog, e)
    run()


def refuse(prog: str, error: Exception) -> NoReturn:
    """Stop an entry script on bad input with one line, ``<prog>: error: ...``, and exit status 2."""
    print(f"{prog}: error: {error}", file=sys.stderr)
    sys.exit(2)


def script_help(prog: str, doc: str, schema: type, cfg: Any) -> str:
    """What ``<prog> --help`` prints: the first two paragraphs of the script's docstring `doc` (what it does,
    its examples), the config groups its primary config `schema` reads with their options (the yaml files
    of each group) and its default, and each key of the config `cfg` composed from the command line's
    overrides as ``key=value``, with the first line of its field's docstring in `schema` (`field_docs`)."""
    from omegaconf import OmegaConf

    from envs.config import config_groups, group_options

    groups = [
        f"  {group}: {', '.join(group_options(group))}" + (f"  (default {default})" if default else "")
        for group, default in config_groups(schema).items()
    ]
    docs = field_docs(schema)
    settings = [(f"{key}={_shown(value)}", docs.get(key, "")) for key, value in _leaves(OmegaConf.to_container(cfg))]
    width = min(KEY_COLUMN, max((len(setting) for setting, _ in settings), default=0))
    config = [f"  {setting:<{width}}  {text}".rstrip() for setting, text in settings]
    return "\n".join(
        [
            "\n\n".join(doc.strip("\n").split("\n\n")[:2]),
            "",
            "Config groups (group=option):",
            *groups,
            "",
            "Config (override any key with key=value; an unknown key is refused):",
            *config,
            "",
            f"python {prog} --cfg job prints the composed config alone; --hydra-help lists Hydra's own flags.",
        ]
    )


KEY_COLUMN = 40
"""The column, after the indent, where `script_help` starts a key's description (a longer ``key=value`` pushes
its own description to the right)."""


def field_docs(schema: type, prefix: str = "") -> dict[str, str]:
    """The first line of the docstring of each field of config dataclass `schema` (the string literal below the
    field), by key as typed on a command line (``train.selfplay.parallel``), nested dataclasses walked; a
    docstring longer than its first line ends in `` ...``. Hydra's own nodes (``defaults``, ``hydra``) and a
    field without a docstring are left out."""
    docs = _own_field_docs(schema)
    types = get_type_hints(schema)
    out: dict[str, str] = {}
    for f in fields(schema):  # type: ignore[arg-type]
        if f.name in ("defaults", "hydra"):
            continue
        key = prefix + f.name
        if f.name in docs:
            out[key] = docs[f.name]
        if is_dataclass(types[f.name]):
            out.update(field_docs(types[f.name], key + "."))
    return out


@functools.cache
def _own_field_docs(cls: type) -> dict[str, str]:
    """Field name -> the first line of its docstring, read from the source of `cls` and of its dataclass bases.

    A dataclass made without a class statement (`dataclasses.make_dataclass`: envs.rules.RulesConfig) has the
    docstrings of the dataclass it copies (`_documented_twin`), when there is one."""
    docs: dict[str, str] = {}
    for base in reversed(cls.__mro__[1:]):
        if is_dataclass(base):
            docs.update(_own_field_docs(base))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        twin = _documented_twin(cls)
        return {**docs, **(_own_field_docs(twin) if twin is not None else {})}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for stmt, after in zip(body, body[1:]):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            lines = inspect.cleandoc(after.value.value).splitlines() or [""]
            docs[stmt.target.id] = lines[0] + (" ..." if len(lines) > 1 else "")
    return docs


def _documented_twin(cls: type) -> Optional[type]:
    """The dataclass whose field docstrings document `cls`, made without a class statement: envs.rules.RuleSet
    for envs.rules.RulesConfig (RuleSet's fields in a dataclass that overrides can change); else None."""
    from envs.rules import RulesConfig, RuleSet

    return RuleSet if cls is RulesConfig else None


def _leaves(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, value)`` of every value of a nested mapping that is not itself a mapping, in order."""
    if not isinstance(node, dict):
        return [(prefix, node)]
    out: list[tuple[str, Any]] = []
    for key, value in node.items():
        out += _leaves(value, f"{prefix}{key}.") if isinstance(value, dict) and value else [(f"{prefix}{key}", value)]
    return out


def _shown(value: Any) -> str:
    """A config value as an override writes it: ``true``, ``null``, ``''``, ``[a, b]``, ``{}``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if value == "":
        return "''"
    if isinstance(value, list):
        return "[" + ", ".join(map(_shown, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_shown(v)}" for k, v in value.items()) + "}"
    return str(value)

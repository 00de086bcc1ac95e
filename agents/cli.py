"""The start of the Hydra entry scripts (train.py, evaluate.py): the command line's overrides composed first,
so that one Hydra refuses stops with one line."""

from __future__ import annotations

import sys
from typing import Any, Callable, NoReturn, Sequence

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
    of each group) and its default, and the config `cfg` composed from the command line's overrides."""
    from omegaconf import OmegaConf

    from envs.config import config_groups, group_options

    groups = [
        f"  {group}: {', '.join(group_options(group))}" + (f"  (default {default})" if default else "")
        for group, default in config_groups(schema).items()
    ]
    config = OmegaConf.to_yaml(cfg).rstrip("\n").splitlines()
    return "\n".join(
        [
            "\n\n".join(doc.strip("\n").split("\n\n")[:2]),
            "",
            "Config groups (group=option):",
            *groups,
            "",
            "Config (override any key with key=value; an unknown key is refused):",
            *(f"  {line}" for line in config),
            "",
            f"python {prog} --cfg job prints the composed config alone; --hydra-help lists Hydra's own flags.",
        ]
    )

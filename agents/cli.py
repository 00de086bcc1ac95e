"""The start of the Hydra entry scripts (train.py, evaluate.py): the command line's overrides composed first,
so that one Hydra refuses stops with one line."""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

from envs.config import ConfigError


def hydra_entry(prog: str, compose_config: Callable[[Sequence[str]], Any], run: Callable[[], Any]) -> None:
    """Run `run` (a function decorated with ``hydra.main``) on this process's command line, after its
    overrides have composed here with `compose_config`: an override Hydra refuses stops with one line,
    ``<prog>: error: ...``, and exit status 2, not Hydra's several. Hydra's own flags (--help, --cfg, -m)
    go to Hydra as they are."""
    args = sys.argv[1:]
    if not any(a.startswith("-") for a in args):
        try:
            compose_config(args)
        except ConfigError as e:
            print(f"{prog}: error: {e}", file=sys.stderr)
            sys.exit(2)
    run()

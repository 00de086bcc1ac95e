"""Commands run in a network namespace of their own whose only interface is the loopback (127.0.0.1).

Ray's processes listen on every interface of the machine whatever node address they are given (its gRPC
servers bind the wildcard address, its runtime-env agent the machine's own address), and a node asked to
use 127.0.0.1 swaps it for the machine's address. The tests and benches that start real Ray nodes on one
machine therefore run them in a new network namespace (`unshare -n`, or `unshare -rn` without root) with
``lo`` up and nothing else: there the machine's only address is 127.0.0.1, so everything the nodes open
listens there and can reach nothing else.
"""

from __future__ import annotations

import os
import shutil
from typing import Mapping, Optional, Sequence

from agents.common.child import ProgramResult, run_program

BRING_UP = 'ip link set lo up && exec "$@"'


def unshare_command() -> list[str]:
    """The command prefix that runs what follows in a new network namespace (root: ``unshare -n``)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        raise RuntimeError("a loopback-only network namespace needs `unshare` (util-linux) and `ip` (iproute2)")
    return ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]


def run_on_loopback(
    argv: Sequence[str], *, timeout: float, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None
) -> ProgramResult[str]:
    """`argv` run in a loopback-only network namespace; its output captured as text."""
    return run_program([*unshare_command(), "sh", "-c", BRING_UP, "sh", *argv], timeout=timeout, env=env, cwd=cwd)


def listening_addresses() -> set[str]:
    """The local addresses of the TCP sockets listening in this network namespace (``ss -ltn``)."""
    out = run_program(["ss", "-ltnH"], timeout=30).stdout
    return {line.split()[3].rpartition(":")[0] for line in out.splitlines() if line.strip()}

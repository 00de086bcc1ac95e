"""The import graph of envs/ and agents/ has no cycle.

The walk reads the sources with `ast` and counts every import: at module level,
deferred inside a function, and under ``if TYPE_CHECKING:`` (a cycle of types
is still a knot to read through). A submodule's implicit import of its own
parent package is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import ROOT

PACKAGES = ("envs", "agents")


def module_files(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of `packages` under `root`."""
    mods = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, dict[str, int]]:
    """Module -> {module of `packages` it imports: the line of the first such import}."""
    mods = module_files(root, packages)

    def resolve(name: str) -> str | None:
        """The longest known prefix: `envs.board.Move` -> `envs.board`."""
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {m: {} for m in mods}
    for m, path in mods.items():
        pkg = m if path.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
                names = submodules + ([base] if len(submodules) < len(node.names) else [])
            else:
                continue
            for target in map(resolve, names):
                if target is not None and target != m:
                    graph[m][target] = min(graph[m].get(target, node.lineno), node.lineno)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> set[frozenset[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def describe(graph: dict[str, dict[str, int]], component: frozenset[str]) -> str:
    """The imports inside one strongly connected set, as `a -> b (line n)`."""
    return "; ".join(
        f"{a} -> {b} (line {line})" for a in sorted(component) for b, line in sorted(graph[a].items()) if b in component
    )


def test_envs_and_agents_import_without_cycles() -> None:
    graph = import_graph(ROOT)
    found = [describe(graph, c) for c in cycles(graph)]
    assert not found, f"import cycle(s): {found}"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_walk_counts_deferred_type_checking_and_relative_imports(tmp_path: Path) -> None:
    """A made-up package: a cycle closed by an import inside a function, one closed by a TYPE_CHECKING
    import through relative ones; outside modules are left out, and the package's own import of a module
    in a cycle does not join it."""
    write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import f\n",
            "pkg/a.py": "import pkg.b\ndef f():\n    from pkg import c\n",
            "pkg/b.py": "import os\nfrom pkg.a import f\n",
            "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub.d import D\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/d.py": "from .. import c\nfrom . import e\n",
            "pkg/sub/e.py": "from .d import x\nfrom ..c import y\n",
        },
    )
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg"] == {"pkg.a": 1}
    assert graph["pkg.a"] == {"pkg.b": 1, "pkg.c": 3}
    assert graph["pkg.b"] == {"pkg.a": 2}
    assert graph["pkg.c"] == {"pkg.sub.d": 3}
    assert graph["pkg.sub.d"] == {"pkg.c": 1, "pkg.sub.e": 2}
    assert graph["pkg.sub.e"] == {"pkg.sub.d": 1, "pkg.c": 2}
    assert cycles(graph) == {frozenset({"pkg.a", "pkg.b"}), frozenset({"pkg.c", "pkg.sub.d", "pkg.sub.e"})}


ROOM_LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"envs"}),
    frozenset({"agents.common", "agents.alphabeta", "agents.alphazero.search"}),
    frozenset({"agents.engine", "agents.alphazero.net"}),
    frozenset({"agents.arena", "agents.alphazero.player"}),
    frozenset({"agents.alphazero.selfplay"}),
    frozenset({"agents.alphazero.distributed"}),
    frozenset({"agents.alphazero.training", "agents.play"}),
    frozenset({"agents", "agents.alphazero"}),
)
"""The rooms of envs/ and agents/, lowest first: a room imports only rooms of the layers below it.

A room is `envs`, a folder of `agents`, or a folder of `agents/alphazero`; the packages `agents` and
`agents.alphazero` themselves (their ``__init__`` and ``__main__``) sit on top."""


def room_of(module: str) -> str:
    """`agents.alphazero.net.device` -> `agents.alphazero.net`; `envs.tablebase.store` -> `envs`."""
    parts = module.split(".")
    if parts[0] == "envs":
        return "envs"
    if parts[:2] == ["agents", "alphazero"]:
        return ".".join(parts[:3]) if len(parts) > 2 and parts[2] != "__main__" else "agents.alphazero"
    return ".".join(parts[:2])


def layer_of(room: str) -> int:
    return next(k for k, rooms in enumerate(ROOM_LAYERS) if room in rooms)


def test_every_module_lives_in_a_declared_room() -> None:
    declared = set().union(*ROOM_LAYERS)
    undeclared = sorted({room_of(m) for m in module_files(ROOT)} - declared)
    assert not undeclared, f"rooms missing from ROOM_LAYERS: {undeclared}"


def test_rooms_import_only_the_rooms_below_them() -> None:
    graph = import_graph(ROOT)
    upward = [
        f"{a} -> {b} (line {line})"
        for a, targets in sorted(graph.items())
        for b, line in sorted(targets.items())
        if room_of(a) != room_of(b) and layer_of(room_of(b)) >= layer_of(room_of(a))
    ]
    assert not upward, f"imports of a room on the same layer or above: {upward}"


def test_room_of_names_the_folder() -> None:
    assert room_of("envs.tablebase.store") == "envs"
    assert room_of("agents.alphazero.net.device") == "agents.alphazero.net"
    assert room_of("agents.alphazero.search") == "agents.alphazero.search"
    assert room_of("agents.alphazero.__main__") == "agents.alphazero"
    assert room_of("agents.alphazero") == "agents.alphazero"
    assert room_of("agents.common.rundir") == "agents.common"
    assert room_of("agents.play") == "agents.play"
    assert room_of("agents") == "agents"

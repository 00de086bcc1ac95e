"""The README and docs/: every Python block runs as written, the README stays short and free of commit hashes,
and its strength table is the manifest's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agents.alphazero import shipped
from tests.support import ROOT

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "checkpoints" / "shipped" / "README.md"]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
HASH = re.compile(r"(?<![0-9a-zA-Z])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![0-9a-zA-Z])")


def python_blocks() -> list[tuple[str, str]]:
    """(file:line, code) of every ```python block of the README and docs."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) == "python":
                out.append((f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", m.group(2)))
    return out


BLOCKS = python_blocks()


def test_the_readme_is_short_and_names_no_commit() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert not HASH.findall(text), HASH.findall(text)
    assert HASH.findall("recorded in 8cce22a, see e902945") == ["8cce22a", "e902945"]  # the pattern finds hashes
    assert not HASH.findall("perft(board, 5) is 5111620; a dead cafe; seed=1234567")


def test_every_block_is_fenced_with_a_language_and_the_python_ones_are_found() -> None:
    """A block not meant to run is ```text, ```bash or ```console, never a bare fence read as code."""
    for page in PAGES:
        for m in FENCE.finditer(page.read_text(encoding="utf-8")):
            assert m.group(1) in ("python", "bash", "console", "text"), (page.name, m.group(0)[:80])
    assert len(BLOCKS) >= 10 and any(where.startswith("README.md") for where, _ in BLOCKS)


@pytest.mark.slow
@pytest.mark.parametrize("where, code", BLOCKS, ids=[where for where, _ in BLOCKS])
def test_each_python_block_runs_as_a_script(where: str, code: str, tmp_path: Path) -> None:
    """Pasted into a file and run from an empty directory (what it writes stays there)."""
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    r = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert r.returncode == 0, f"{where} exits {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"


def test_every_test_file_the_pages_name_exists() -> None:
    """A path ``tests/.../x.py`` in the README or docs/ names a file of the tree (a moved test leaves no stale path)."""
    named = {
        (page, path) for page in PAGES for path in re.findall(r"tests/[\w/]+\.py", page.read_text(encoding="utf-8"))
    }
    assert len(named) > 10
    missing = sorted(f"{page.relative_to(ROOT)}: {path}" for page, path in named if not (ROOT / path).is_file())
    assert not missing, missing


def test_the_readme_strength_table_is_the_manifests() -> None:
    """Each row of the README's strength table names a shipped network of the default rules (one row each; a
    network of several rule sets has its rows per rule set in docs/variants.md, named below the table), and
    every W-D-L in it is one of that network's rows in checkpoints/shipped/manifest.json."""
    text = README.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if re.match(r"\| `[\w-]+` \|", line)]
    nets = {net.name: net for net in shipped.networks() if net.entry.get("rules", "default") == "default"}
    for net in shipped.networks():
        if net.name not in nets:
            assert f"`{net.name}`" in text and "docs/variants.md" in text, net.name
    assert sorted(re.match(r"\| `([\w-]+)`", row).group(1) for row in rows) == sorted(nets)  # type: ignore[union-attr]
    for row in rows:
        name = re.match(r"\| `([\w-]+)`", row).group(1)  # type: ignore[union-attr]
        recorded = {r["wdl"]: r["score"] for r in nets[name].strength}
        cells = re.findall(r"(\d+-\d+-\d+) \((\d\.\d\d)\)", row)
        assert len(cells) >= 5, row
        for wdl, score in cells:
            assert wdl in recorded and abs(recorded[wdl] - float(score)) < 0.006, (name, wdl)

"""The README and docs/: every Python block runs as written, every relative link and `#anchor` resolves, the README
stays short and free of commit hashes, and its strength table is the manifest's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from agents.alphazero.net import shipped
from agents.play.levels import LEVELS
from tests.support import ROOT

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "checkpoints" / "shipped" / "README.md"]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(<?([^()<>\s]+)>?(?:\s+\"[^\"]*\")?\)")  # [text](target) and ![alt](target), a title aside
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*<?([^\s>]+)", re.MULTILINE)  # [label]: target
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
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


def outside_blocks(text: str) -> str:
    """`text` with its fenced blocks blanked out (a `# comment` in a block is no heading), every character
    where it was."""
    return FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def prose(text: str) -> str:
    """`text` with its fenced blocks and code spans blanked out (a link in code is no link)."""
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), outside_blocks(text))


def heading_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading's text: links read as their text, lower case, every character but
    letters, digits, `-`, `_` and spaces dropped, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor on a page, a repeated one suffixed -1, -2... in page order (as GitHub does)."""
    taken: dict[str, int] = {}
    for m in HEADING.finditer(outside_blocks(text)):
        base = anchor = heading_anchor(m.group(1))
        while anchor in taken:
            taken[base] += 1
            anchor = f"{base}-{taken[base]}"
        taken[anchor] = 0
    return set(taken)


def section(text: str, anchor: str) -> str:
    """The part of a page under the heading whose anchor is `anchor`, up to the next heading of its level or
    above (empty when no heading has it; a repeated heading's first)."""
    headings = list(HEADING.finditer(outside_blocks(text)))
    for i, m in enumerate(headings):
        if heading_anchor(m.group(1)) == anchor:
            level = len(m.group(0)) - len(m.group(0).lstrip("#"))
            ends = [h.start() for h in headings[i + 1 :] if len(h.group(0)) - len(h.group(0).lstrip("#")) <= level]
            return text[m.start() : ends[0] if ends else len(text)]
    return ""


def dead_links(page: Path) -> list[str]:
    """`page:line: target (why)` for each relative link of `page` whose file does not exist or whose
    `#anchor` names no heading of the page it points at (its own page for a bare `#anchor`)."""
    text = page.read_text(encoding="utf-8")
    seen = prose(text)
    dead = []
    for m in [*LINK.finditer(seen), *REFERENCE.finditer(seen)]:
        target = m.group(1)
        if SCHEME.match(target):
            continue
        path, _, anchor = target.partition("#")
        where = f"{page.name}:{seen.count(chr(10), 0, m.start()) + 1}: {target}"
        linked = (page.parent / unquote(path)).resolve() if path else page
        if not linked.exists():
            dead.append(f"{where} (no file {linked})")
        elif anchor and linked.suffix == ".md" and unquote(anchor) not in anchors(linked.read_text(encoding="utf-8")):
            dead.append(f"{where} (no heading of {linked.name} has that anchor)")
    return dead


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


def test_a_heading_anchor_is_githubs() -> None:
    assert heading_anchor("2026-12-03: a campaign of the `draw_keep` recipe to 8 CPU-hours (b335ad4)") == (
        "2026-12-03-a-campaign-of-the-draw_keep-recipe-to-8-cpu-hours-b335ad4"
    )
    assert heading_anchor("4. A tournament") == "4-a-tournament"
    assert heading_anchor("The tree between moves, and a draw value at play time") == (
        "the-tree-between-moves-and-a-draw-value-at-play-time"
    )
    assert heading_anchor("Shared calls: Gumbel's order-free runs") == "shared-calls-gumbels-order-free-runs"
    assert heading_anchor("See [the log](results.md) — twice") == "see-the-log--twice"
    page = "# Title\n\n## Notes\n\n```bash\n# Notes\n```\n\n### Notes\n\n## Notes ##\n\n## The `draw_keep` run\n"
    assert anchors(page) == {"title", "notes", "notes-1", "notes-2", "the-draw_keep-run"}


def test_the_link_check_finds_a_missing_file_and_a_dead_anchor(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A part (2026-12-04)\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[ok](other.md#a-part-2026-12-04), [self](#page), [web](https://example.org/x.md#y),\n"
        "![image](other.md), [gone](gone.md), [dead](other.md#a-part), [dead here](#nowhere)\n\n"
        "`[in code](gone.md)`\n\n```text\n[in a block](gone.md)\n```\n\n[label]: other.md#other\n[bad]: gone.md\n",
        encoding="utf-8",
    )
    assert [line.split(" (")[0] for line in dead_links(page)] == [
        "page.md:4: gone.md",
        "page.md:4: other.md#a-part",
        "page.md:4: #nowhere",
        "page.md:13: gone.md",
    ]


def test_every_relative_link_and_anchor_of_the_pages_resolves() -> None:
    """A link of the README or docs/ (or the shipped networks' README) names a file of the tree, and its `#anchor`
    a heading of that page as GitHub writes anchors (a renamed heading or a moved page leaves no dead link)."""
    assert sum(len(LINK.findall(prose(page.read_text(encoding="utf-8")))) for page in PAGES) > 100
    dead = [line for page in PAGES for line in dead_links(page)]
    assert not dead, "\n".join(dead)


def test_the_readmes_watch_section_links_the_commands_that_compare_a_run_on_the_ladder() -> None:
    """The Watch section's "to compare a run with the campaign" sends the reader, by anchor, to the section of
    results.md that holds the gauntlet and `bench/ladder_curve.py` commands (not to an entry a newer one pushes
    down)."""
    watch = section(README.read_text(encoding="utf-8"), "watch")
    targets = [t for t in LINK.findall(prose(watch)) if t.partition("#")[0] == "docs/results.md"]
    assert targets and all("#" in t for t in targets), targets
    for target in targets:
        part = section((ROOT / "docs" / "results.md").read_text(encoding="utf-8"), target.partition("#")[2])
        commands = "".join(m.group(2) for m in FENCE.finditer(part) if m.group(1) == "bash")
        assert "evaluate.py mode=gauntlet" in commands and "bench/ladder_curve.py" in commands, target


def test_every_level_of_the_play_page_is_on_the_pages() -> None:
    """Each level of agents.play.levels.LEVELS is named in the README's Play section, has its row in play.md's
    table of levels and its line in first-hour.md's `play.py --help` transcript."""
    play = section(README.read_text(encoding="utf-8"), "play")
    table = (ROOT / "docs" / "play.md").read_text(encoding="utf-8")
    first_hour = (ROOT / "docs" / "first-hour.md").read_text(encoding="utf-8")
    assert len(LEVELS) >= 5
    for level in LEVELS:
        assert f"`{level.name}`" in play, level.name
        assert f"\n| `{level.name}` | " in table, level.name
        assert f"\n  {level.name:<10} {level.about}\n" in first_hour, level.name


@pytest.mark.slow  # composes the preset with Hydra and builds its network
def test_the_first_hours_smoke_run_prints_the_network_it_builds_today() -> None:
    """The smoke run's first line in first-hour.md is what `train.py preset=smoke name=smoke` prints today: the
    network's config and its number of parameters (a changed model leaves no stale transcript)."""
    from agents.alphazero.net.network import build_network, count_parameters
    from agents.alphazero.training import config as train_config

    conf = train_config.checked_config(train_config.compose_config(["preset=smoke", "name=smoke"]))
    line = f"\nrun smoke: {conf.model}, {count_parameters(build_network(conf.model))} parameters, device cpu, "
    assert line in (ROOT / "docs" / "first-hour.md").read_text(encoding="utf-8"), line


def test_every_test_file_the_pages_name_exists() -> None:
    """A path ``tests/.../x.py`` in the README or docs/ names a file of the tree (a moved test leaves no stale path)."""
    named = {
        (page, path) for page in PAGES for path in re.findall(r"tests/[\w/]+\.py", page.read_text(encoding="utf-8"))
    }
    assert len(named) > 10
    missing = sorted(f"{page.relative_to(ROOT)}: {path}" for page, path in named if not (ROOT / path).is_file())
    assert not missing, missing


TEST_REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?::(\w+)")
"""A test named on a page: ``tests/x/test_y.py::test_z``, or ``::test_z`` of the file named last before it."""


def named_tests(text: str) -> list[tuple[str, str]]:
    """(file, test function) of every test a page names, a ``::name`` read in the file named last before it."""
    out, current = [], None
    for m in TEST_REFERENCE.finditer(text):
        current = m.group(1) or current
        if current is not None:
            out.append((current, m.group(2)))
    return out


def test_the_link_check_of_test_names_reads_a_bare_name_in_the_last_file() -> None:
    text = "`tests/a.py::test_one`, `::test_two[x]` then `tests/b.py::test_three` and `::test_four`"
    assert named_tests(text) == [
        ("tests/a.py", "test_one"),
        ("tests/a.py", "test_two"),
        ("tests/b.py", "test_three"),
        ("tests/b.py", "test_four"),
    ]


def test_every_test_the_pages_name_is_a_test_of_its_file() -> None:
    """A test named on a page (``tests/x.py::test_y``, or ``::test_y`` after such a name) is a function of that
    file: the promises in reliability.md point at tests that exist."""
    named = {(page, *test) for page in PAGES for test in named_tests(page.read_text(encoding="utf-8"))}
    assert len(named) > 50
    missing = sorted(
        f"{page.relative_to(ROOT)}: {path}::{name}"
        for page, path, name in named
        if not (ROOT / path).is_file()
        or not re.search(rf"^\s*(?:async )?def {name}\(", (ROOT / path).read_text(encoding="utf-8"), re.MULTILINE)
    )
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


def test_every_console_script_is_shown_in_the_readmes_commands() -> None:
    """Each console script of pyproject.toml's ``[project.scripts]`` is run in a ```bash block of the README."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert {"jungle-train", "jungle-evaluate", "jungle-play", "jungle-perft"} <= set(scripts)
    commands = [
        line.split("#")[0].split()
        for m in FENCE.finditer(README.read_text(encoding="utf-8"))
        if m.group(1) == "bash"
        for line in m.group(2).splitlines()
    ]
    run = {Path(words[0]).name for words in commands if words}
    assert sorted(set(scripts) - run) == []


@pytest.mark.slow
def test_the_protocol_pages_example_session_is_the_engines() -> None:
    """docs/protocol.md's example, run against ``python -m agents.engine --player alphabeta:depth=2``: the
    lines sent in order, each reply as shown (an info line with figures: its fields and its pv's length)."""
    import queue
    import threading

    from agents.engine.protocol import parse_info

    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    example = section(text, "an-example-session")
    (block,) = [m.group(2) for m in FENCE.finditer(example) if m.group(1) == "text"]
    command = re.search(r"against\s+`jungle-engine (--player \S+)`", example)
    assert command is not None, "the page names the engine's command line before the session"
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        assert line[:2] in ("> ", "< "), line
        if line.startswith("> "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line[2:])
    engine = subprocess.Popen(
        [sys.executable, "-m", "agents.engine", *command.group(1).split()],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert engine.stdin is not None and engine.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in engine.stdout], daemon=True).start()

    def fields(line: str) -> dict[str, object]:
        info = parse_info(line)
        return {k: (len(v) if k == "pv" else None) for k, v in vars(info).items() if v not in (None, ())}

    try:
        for sent, replies in steps:
            engine.stdin.write(sent + "\n")
            engine.stdin.flush()
            for expected in replies:
                got = lines.get(timeout=300)
                if expected.startswith("info ") and not expected.startswith("info string"):
                    assert fields(got) == fields(expected), (sent, got)
                else:
                    assert got == expected, sent
        assert engine.wait(timeout=60) == 0
    finally:
        engine.kill()
    assert lines.empty() and engine.stderr is not None and engine.stderr.read() == ""


RESULT_CELL = re.compile(r"(\d{1,3}-\d{1,3}-\d{1,3}) \((\d\.\d+), Elo ([^)]+)\)")
"""A strength figure as the pages write it: ``34-2-4 (0.875, Elo +338 [+189, +487])``."""


def test_results_opens_with_the_current_best_of_every_shipped_network() -> None:
    """docs/results.md opens, after its title and at most two lines, with "Current best": one screen (at most 40
    lines) with a row per network of checkpoints/shipped/manifest.json, each of whose W-D-L figures is one of
    that network's strength rows in the manifest, with its score and Elo interval."""
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert lines[first] == "## Current best", lines[first]
    assert len([line for line in lines[1:first] if line.strip()]) <= 2
    best = section(text, "current-best")
    assert 0 < len(best.rstrip("\n").splitlines()) <= 40
    rows = {m.group(1): line for line in best.splitlines() if (m := re.match(r"\| \**`([\w-]+)`", line))}
    nets = {net.name: net for net in shipped.networks()}
    assert sorted(rows) == sorted(nets)
    for name, row in rows.items():
        recorded = {(r["wdl"], r["elo"]): r["score"] for r in nets[name].strength}
        cells = RESULT_CELL.findall(row)
        assert cells and len(cells) == len(re.findall(r"(?<![\d-])\d{1,3}-\d{1,3}-\d{1,3}(?![\d-])", row)), row
        for wdl, score, elo in cells:
            assert (wdl, elo) in recorded and abs(recorded[wdl, elo] - float(score)) < 0.006, (name, wdl, elo)


def test_the_tablebase_pages_statistics_are_the_data_files_totals() -> None:
    """docs/tablebase.md's Statistics holds no generated table: it links docs/tablebase-stats.md (the tables as
    `python -m envs tablebase stats` writes them), names that command, and each row of its summary (tables,
    positions, won / drawn / lost, longest win) is the sum of the data file's section it links to."""
    from envs.tablebase.stats import stats_markdown

    page = section((ROOT / "docs" / "tablebase.md").read_text(encoding="utf-8"), "statistics")
    data = (ROOT / "docs" / "tablebase-stats.md").read_text(encoding="utf-8")
    header = stats_markdown([]).splitlines()[0]
    assert header not in page and data.count(header) >= 4
    assert "python -m envs tablebase stats" in page
    summary = re.findall(r"^\| \[[^\]]+\]\(tablebase-stats\.md#([\w-]+)\) \| (.+) \|$", page, re.MULTILINE)
    assert len(summary) >= 2, page
    for anchor, cells in summary:
        tables, positions, shares, longest = [cell.strip() for cell in cells.split(" | ")][:4]
        rows = [
            line.strip("|").split("|")
            for line in section(data, anchor).splitlines()
            if re.match(r"\| [A-Z]+-[A-Z]+ \|", line)
        ]
        n = sum(int(row[1]) for row in rows)
        assert (int(tables), int(positions.replace(",", ""))) == (len(rows), n), anchor
        for column, share in zip((2, 3, 4), re.findall(r"(\d+\.\d)%", shares), strict=True):
            assert abs(sum(int(row[1]) * float(row[column].strip(" %")) for row in rows) / n - float(share)) < 0.1
        wins = [int(row[5]) for row in rows if row[5].strip() != "-"]
        assert int(longest.split()[0]) == max(wins), anchor

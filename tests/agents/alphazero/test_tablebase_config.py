"""The endgame tables in training and tournaments: asked for and missing or damaged, a run is refused in one line
by its config check, before its directory exists; not asked for, a damaged file never stops it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.alphazero.selfplay.endgames import tables_if_built
from agents.alphazero.training import config as train_config
from agents.alphazero.training.run import TrainingRun
from agents.arena.tournament import check_spec
from envs.players import PlayerSpecError
from envs.rules import RuleSet
from envs.tablebase import ROOT_ENV, Material, Tablebase
from envs.tablebase.store import ALIGN, MAGIC, read_header, table_path
from tests.support import ROOT

RULES = RuleSet()
ASKING = ["mcts.tablebase=true", "train.selfplay.tablebase_adjudicate=true", "train.selfplay.tablebase_rescore=true"]
"""The overrides that make a training run read the tables."""


def damage(root: Path) -> Path:
    """Tables of the default rules under `root` whose header gives the last table a clock_exact_from of 1e400
    (the rest as written); their file."""
    path, _ = Tablebase.build(RULES, pieces=2, only=[Material.parse("R-E")]).save(root)
    header, start = read_header(path)
    data = path.read_bytes()[start:]
    text = json.dumps(header, sort_keys=True, separators=(",", ":"))
    assert text.count(",0]]") == 1
    raw = text.replace(",0]]", ",1e400]]").encode()
    pad = -(-(16 + len(raw)) // ALIGN) * ALIGN - 16 - len(raw)
    path.write_bytes(MAGIC + len(raw).to_bytes(8, "little") + raw + bytes(pad) + data)
    return path


def test_a_damaged_file_not_asked_for_does_not_stop_the_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`train.eval.tablebase_positions` (on by default) reads the tables only where they are sound: a damaged
    file is passed over with one warning naming it and the command that builds it again."""
    path = damage(tmp_path)
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    with caplog.at_level(logging.INFO, logger="agents.alphazero.selfplay.endgames"):
        assert tables_if_built(RULES) is None
    said = [r for r in caplog.records if str(path) in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING
    assert (
        "\n" not in said[0].getMessage()
        and "build it again with: python -m envs tablebase build" in said[0].getMessage()
    )


@pytest.mark.slow
def test_a_run_that_does_not_ask_for_tables_never_opens_a_damaged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    damage(tmp_path / "tables")
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "tables"))
    overrides = [f"out_dir={tmp_path / 'runs'}", "name=plain"]
    TrainingRun.open(train_config.compose_config(overrides), overrides)


@pytest.mark.parametrize("asking", ASKING)
@pytest.mark.parametrize("tables", ["missing", "damaged"])
def test_tables_asked_for_are_checked_with_the_config(
    asking: str, tables: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tables"
    if tables == "damaged":
        damage(root)
    monkeypatch.setenv(ROOT_ENV, str(root))
    overrides = [asking, f"out_dir={tmp_path / 'runs'}", "name=asking"]
    words = "no tablebase for rules" if tables == "missing" else "up-to-2-pieces.jtb' has a damaged header"
    with pytest.raises(train_config.ConfigError) as e:
        TrainingRun.open(train_config.compose_config(overrides), overrides)
    text = str(e.value)
    assert text.startswith(f"{asking}: ") and words in text and "\n" not in text, text
    assert "python -m envs tablebase build --pieces" in text
    assert not (tmp_path / "runs").exists()


def test_a_tournament_player_asking_for_damaged_tables_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = damage(tmp_path)
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    with pytest.raises(PlayerSpecError) as e:
        check_spec("alphabeta:depth=1,tablebase=true", RULES)
    text = str(e.value)
    assert str(path) in text and "build it again with: python -m envs tablebase build --pieces 2" in text
    assert "\n" not in text


@pytest.mark.slow
def test_train_with_mcts_tablebase_and_no_tables_exits_2_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, ROOT_ENV: str(tmp_path / "tables")}
    r = subprocess.run(
        [sys.executable, "train.py", "mcts.tablebase=true", f"out_dir={tmp_path / 'runs'}", "name=tables"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("train.py: error: mcts.tablebase=true: no tablebase"), (
        r.stderr
    )
    assert "build it with: python -m envs tablebase build --pieces 3" in r.stderr
    assert not (tmp_path / "runs").exists() and str(table_path(RULES, 3, tmp_path / "tables").parent) in r.stderr

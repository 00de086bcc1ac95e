"""Packaging: every package ships, a wheel installed outside the checkout finds its configs and runs, and
the docs point at tests that exist."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import tomllib

from envs import Board, perft
from envs.config import CONFIG_PACKAGE, config_dir, group_options
from envs.rules import load_rules
from tests.support import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
START = "l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1"


def test_every_package_of_the_tree_is_listed_in_pyproject() -> None:
    """pyproject.toml lists its packages (the repository root ships as `jungle_zero`): a new folder
    with an __init__.py must be added there or a wheel install would lack it."""
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    tree = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("envs", "agents")
        for p in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    missing, stale = sorted(tree - listed), sorted(listed - tree - {"jungle_zero", CONFIG_PACKAGE})
    assert not missing and not stale, f"pyproject.toml [tool.setuptools] packages: add {missing}, remove {stale}"
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"jungle_zero": "."}
    for package in ("envs", "agents"):
        assert (ROOT / package / "py.typed").is_file() and "py.typed" in PYPROJECT["tool"]["setuptools"][
            "package-data"
        ][package]


def test_the_config_groups_are_found_as_package_data() -> None:
    assert Path(str(config_dir("rules"))).resolve() == (ROOT / "configs" / "rules").resolve()
    for group in ("rules", "model", "mcts", "train", "preset"):
        assert group_options(group) == sorted(p.stem for p in (ROOT / "configs" / group).glob("*.yaml")), group
    shipped = PYPROJECT["tool"]["setuptools"]["package-data"][CONFIG_PACKAGE]
    assert shipped == ["*/*.yaml"] and not list((ROOT / "configs").glob("*/*/*.yaml"))  # one level of groups


def run(*cmd: object, cwd: Path, code: int = 0, stdin: str = "", env: dict[str, str] | None = None) -> str:
    r = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=600, env=env
    )
    assert r.returncode == code, f"{cmd}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout + r.stderr


@pytest.mark.slow
def test_a_wheel_installed_outside_the_checkout_runs_its_console_scripts(tmp_path: Path) -> None:
    """Build a wheel from a copy of the sources, install it (no dependencies, no index) into a fresh venv
    that borrows this environment's site-packages, and run every console script from an empty folder."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "train.py", "evaluate.py", "play.py"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("envs", "agents", "configs"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "-w",
        tmp_path / "dist",
        src,
        cwd=tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("jungle_zero-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python, bin_dir = venv / "bin" / "python", venv / "bin"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path).strip())
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # after its own
    run(
        sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp_path
    )

    away = tmp_path / "elsewhere"
    away.mkdir()
    # The installed package's numba cache starts empty: its kernels compile at NUMBA_OPT=1, in less time.
    compile_fast = dict(os.environ, NUMBA_OPT="1")
    where = run(
        python,
        "-c",
        "import envs, jungle_zero.train as t; from envs.rules import load_rules; "
        "print(envs.__file__, t.__file__, load_rules('enemy_rat').jump_blocking)",
        cwd=away,
    )
    assert where.count(str(site)) == 2 and where.split()[-1] == "enemy_rat"
    out = run(bin_dir / "jungle-perft", "perft", START, "2", "--rules", "dog_over_wolf", cwd=away, env=compile_fast)
    assert out.split() == [str(perft(Board(START, rules=load_rules("dog_over_wolf")), 2))]
    out = run(bin_dir / "jungle-train", "preset=smoke", "rules=enemy_rat", "--cfg", "job", cwd=away)
    assert "jump_blocking: enemy_rat" in out and "blocks: 1" in out and "num_simulations: 4" in out
    out = run(bin_dir / "jungle-train", "train.iterations=0", cwd=away, code=2)
    assert "train.iterations=0 must be >= 1" in out and not (away / "checkpoints").exists()
    out = run(
        bin_dir / "jungle-evaluate",
        'players=[random,"alphabeta:depth=1"]',
        "games_per_pair=2",
        "workers=0",
        "max_plies=30",
        "rules=keeps_rank",
        "rules.no_capture_draw=200",
        "progress=false",
        "image=false",
        "out_dir=tour",
        cwd=away,
        env=compile_fast,
    )
    assert (away / "tour" / "results.json").is_file() and "alphabeta:depth=1" in out
    stored = json.loads((away / "tour" / "tournament.json").read_text())["rules"]
    assert stored == load_rules("keeps_rank").with_overrides(["no_capture_draw=200"]).to_dict()
    out = run(
        bin_dir / "jungle-play",
        "--terminal",
        "--two-players",
        "--rules",
        "hundred_rounds",
        cwd=away,
        stdin="a3a4\nquit\n",
        env=compile_fast,
    )
    assert "a3a4" in out
    run(bin_dir / "jungle-play", "--terminal", "--rules", "no_such_rules", cwd=away, code=2)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """.ci/run's command is the README's test command, ruff and mypy included."""
    readme = (ROOT / "README.md").read_text()
    command = next(line.strip() for line in readme.splitlines() if line.startswith("bash .ci/chromium"))
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci[-1] == command
    assert ".venv/bin/ruff format --check . && .venv/bin/ruff check . && .venv/bin/python -m mypy && " in command
    assert command.endswith(".venv/bin/python -m pytest")


def test_the_pettingzoo_env_without_pettingzoo_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import envs.pettingzoo` where PettingZoo is missing says which extra of pyproject.toml to install."""
    import builtins

    real_import = builtins.__import__

    def no_pettingzoo(name: str, *args: object, **kwargs: object) -> object:
        if name == "pettingzoo" or name.startswith("pettingzoo."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    for module in [m for m in sys.modules if m == "envs.pettingzoo" or m.startswith("envs.pettingzoo.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setattr(builtins, "__import__", no_pettingzoo)
    with pytest.raises(ModuleNotFoundError) as info:
        import envs.pettingzoo  # noqa: F401
    assert "pip install -e '.[pettingzoo]'" in str(info.value) and info.value.name == "pettingzoo"
    assert "pettingzoo" in PYPROJECT["project"]["optional-dependencies"]


def test_the_reliability_page_names_only_tests_that_exist() -> None:
    """docs/reliability.md points at the test behind each promise (``tests/dir/x.py::name``, or ``::name`` in the
    file named before): each must be a test of that file, so a renamed or removed test shows here."""
    import re

    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    refs = re.findall(r"(tests/[a-z_/]+\.py)?::(test_[a-z0-9_]+)", text)
    assert len(refs) > 30
    current = ""
    for file, name in refs:
        current = file or current
        assert re.search(rf"^def {name}\(", (ROOT / current).read_text(encoding="utf-8"), re.M), f"{current}::{name}"

"""The numba cache guard drops a package's cached machine code when a source it depends on changes."""

from pathlib import Path

from envs.numba_cache import STAMP, guard


def _package(tmp_path: Path) -> tuple[Path, Path]:
    pkg = tmp_path / "pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "mod.py").write_text("x = 1\n")
    dep = tmp_path / "dep"
    dep.mkdir()
    (dep / "rules.py").write_text("y = 1\n")
    return pkg, dep


def test_cache_files_survive_while_sources_stay_and_go_when_a_dependency_changes(tmp_path: Path) -> None:
    pkg, dep = _package(tmp_path)
    cached = [pkg / "sub" / "__pycache__" / "mod.f-1.py311.nbi", pkg / "sub" / "__pycache__" / "mod.f-1.py311.1.nbc"]
    assert guard(pkg, [dep, pkg])  # first sight: no stamp yet
    assert (pkg / "__pycache__" / STAMP).is_file()
    for f in cached:
        f.write_bytes(b"code")
    other = pkg / "sub" / "__pycache__" / "mod.cpython-311.pyc"
    other.write_bytes(b"pyc")
    assert not guard(pkg, [dep, pkg])
    assert all(f.exists() for f in cached)
    (dep / "rules.py").write_text("y = 2\n")  # a source the package's compiled code holds
    assert guard(pkg, [dep, pkg])
    assert not any(f.exists() for f in cached)
    assert other.exists()  # only numba's files go
    assert not guard(pkg, [dep, pkg])


def test_installed_packages_carry_a_current_stamp() -> None:
    import agents
    import envs

    for package in (envs, agents):
        root = Path(package.__file__).parent
        assert (root / "__pycache__" / STAMP).is_file()
        assert not guard(root, [Path(envs.__file__).parent] + ([root] if package is agents else []))

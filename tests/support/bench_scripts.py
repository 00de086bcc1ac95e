"""A bench script's own command line run in the test process: its refusals without starting anything."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.support import ROOT


def refused(
    script: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[int, str]:
    """The exit status and stderr of ``bench/<script>.py *args`` run in this process, for input it refuses
    (it must exit before any work)."""
    spec = importlib.util.spec_from_file_location(script, ROOT / "bench" / f"{script}.py")
    assert spec is not None and spec.loader is not None
    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # as when run as a script: its sibling modules import
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, script, bench)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *args])
    with pytest.raises(SystemExit) as stopped:
        bench.main()
    return stopped.value.code, capsys.readouterr().err.strip()

"""Exporting a checkpoint's network: the ONNX and TorchScript files compute what PyTorch computes on real positions,
carry their metadata, and bad input is one line with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import tomllib
import torch

from agents.alphazero.__main__ import export_main, main
from agents.alphazero.net import shipped
from agents.alphazero.net.checkpoint import load_model, save_checkpoint
from agents.alphazero.net.export import (
    METADATA_KEY,
    ONNX_OPSET,
    VALUE_OUTPUTS,
    export_checkpoint,
    file_sha256,
    plane_table,
    sidecar_path,
)
from agents.alphazero.net.network import NetworkConfig, build_network
from envs.encoding import N_PLANES, RULE_FIRST_PLANE
from envs.rules import load_rules
from tests.support import ROOT
from tests.support.positions import position_batch

ATOL = 1e-4
"""float32 rounding: the exported graph folds each batch norm into its convolution, PyTorch's does not."""


def random_checkpoint(path: Path, value_head: str, input_planes: int = N_PLANES, global_pool: bool = False) -> Path:
    """A small network whose every weight and batch-norm statistic is drawn at random (so folding the batch norms
    changes numbers), stored as a checkpoint trained on the rule sets default and keeps_rank."""
    torch.manual_seed(1)
    shape = NetworkConfig(
        blocks=2,
        channels=8,
        value_head=value_head,
        value_hidden=8,
        policy_channels=2,
        input_planes=input_planes,
        global_pool=global_pool,
    )
    net = build_network(shape)
    weights = {
        k: (v.uniform_(0.5, 1.5) if k.endswith("running_var") else v.normal_(0.0, 0.3)) if v.is_floating_point() else v
        for k, v in net.state_dict().items()
    }
    mix = [{"name": name, "weight": 1.0, "rules": load_rules(name).to_dict()} for name in ("default", "keeps_rank")]
    state = {"model": weights, "network": shape.to_dict(), "rules": mix[0]["rules"], "rules_mix": mix, "config": ""}
    return save_checkpoint(path, dict(state, counters={"iteration": 7}))


def positions() -> np.ndarray:
    """Observations [24, 32, 9, 7] of legal positions: the first 24 plies of a seeded random game."""
    obs, _ = position_batch(24)
    return obs


def torch_outputs(checkpoint: Path, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    model, _ = load_model(checkpoint)
    with torch.no_grad():
        logits, value = model(torch.from_numpy(planes))
    return logits.numpy(), value.numpy()


def run_onnx(path: Path, planes: np.ndarray) -> dict[str, np.ndarray]:
    import onnxruntime as ort  # the `onnx` extra; the TorchScript tests run without it

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {"planes": planes})))


def run_torchscript(path: Path, planes: np.ndarray) -> dict[str, np.ndarray]:
    with pytest.warns(DeprecationWarning):  # torch.jit.load is marked deprecated; the file still loads
        net = torch.jit.load(str(path))
    with torch.no_grad():
        logits, value = net(torch.from_numpy(planes))
    return {"policy_logits": logits.numpy(), "value_out": value.numpy()}


@pytest.mark.slow
@pytest.mark.parametrize(
    "value_head, global_pool",
    [("scalar", False), ("wdl", False), ("scalar", True)],
    ids=["scalar", "wdl", "global_pool"],
)
@pytest.mark.parametrize("fmt", ["onnx", "torchscript"])
def test_the_exported_network_computes_what_pytorch_computes(
    fmt: str, value_head: str, global_pool: bool, tmp_path: Path
) -> None:
    """On legal positions of a random game, whole and one by one (the batch axis is free), to float32 rounding;
    both value heads, and a network with global pooling."""
    checkpoint = random_checkpoint(tmp_path / "net.pt", value_head, global_pool=global_pool)
    out = tmp_path / f"net.{fmt}"
    export_checkpoint(checkpoint, out, fmt)
    planes = positions()
    want_logits, want_value = torch_outputs(checkpoint, planes)
    assert want_value.shape == ((24,) if value_head == "scalar" else (24, 3))
    for batch in (planes, planes[5:6]):
        got = run_onnx(out, batch) if fmt == "onnx" else run_torchscript(out, batch)
        value = got[VALUE_OUTPUTS[value_head]] if fmt == "onnx" else got["value_out"]
        rows = slice(0, 24) if len(batch) == 24 else slice(5, 6)
        assert got["policy_logits"].shape == (len(batch), 252) and got["policy_logits"].dtype == np.float32
        assert value.shape == want_value[rows].shape and value.dtype == np.float32
        np.testing.assert_allclose(got["policy_logits"], want_logits[rows], rtol=0, atol=ATOL)
        np.testing.assert_allclose(value, want_value[rows], rtol=0, atol=ATOL)
    assert np.abs(want_logits[0] - want_logits[1]).max() > 10 * ATOL  # the positions differ to the network


@pytest.mark.slow
def test_a_shipped_network_of_24_planes_exports_from_the_command_line(tmp_path: Path) -> None:
    """``python -m agents.alphazero export shipped:NAME``: a network stored before the rule planes reads planes 0-23."""
    out = tmp_path / "shipped.onnx"
    r = subprocess.run(
        [sys.executable, "-m", "agents.alphazero", "export", "shipped:default-180", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.strip() == (
        f"wrote {out} (onnx: planes [N, 24, 9, 7] -> policy_logits [N, 252], value [N]) and {out}.json"
    )
    planes = positions()[:, :RULE_FIRST_PLANE]
    got = run_onnx(out, np.ascontiguousarray(planes))
    want_logits, want_value = torch_outputs(shipped.network("default-180").path, positions())
    np.testing.assert_allclose(got["policy_logits"], want_logits, rtol=0, atol=ATOL)
    np.testing.assert_allclose(got["value"], want_value, rtol=0, atol=ATOL)
    meta = json.loads(sidecar_path(out).read_text())
    assert meta["checkpoint"]["sha256"] == shipped.network("default-180").sha256
    assert meta["checkpoint"]["name"] == "shipped:default-180" and meta["input"]["planes"] == 24
    assert [row["planes"] for row in meta["input"]["plane_meanings"]][-1] == "23"


@pytest.mark.slow
def test_the_metadata_is_beside_the_file_and_inside_it(tmp_path: Path) -> None:
    """The sidecar JSON, the ONNX metadata_props entry and the TorchScript extra file say the same: planes and
    their meaning, the action encoding, the rule sets trained on, the value convention, the checkpoint's sha256."""
    import onnx

    checkpoint = random_checkpoint(tmp_path / "net.pt", "wdl")
    export_checkpoint(checkpoint, tmp_path / "net.onnx", "onnx")
    export_checkpoint(checkpoint, tmp_path / "net.ts", "torchscript")
    meta = json.loads((tmp_path / "net.onnx.json").read_text())
    props = {p.key: p.value for p in onnx.load(str(tmp_path / "net.onnx")).metadata_props}
    assert json.loads(props[METADATA_KEY]) == meta
    extra = {f"{METADATA_KEY}.json": ""}
    with pytest.warns(DeprecationWarning):
        torch.jit.load(str(tmp_path / "net.ts"), _extra_files=extra)
    scripted = json.loads(extra[f"{METADATA_KEY}.json"])
    assert scripted == json.loads((tmp_path / "net.ts.json").read_text())
    assert scripted["export"]["format"] == "torchscript" and "onnx_opset" not in scripted["export"]
    assert {k: v for k, v in scripted.items() if k != "export"} == {k: v for k, v in meta.items() if k != "export"}

    assert meta["export"] == {
        "format": "onnx",
        "onnx_opset": ONNX_OPSET,
        "dtype": "float32",
        "batch_norm": "fused into the convolutions",
        "torch": torch.__version__.split("+")[0],
    }
    assert onnx.load(str(tmp_path / "net.onnx")).opset_import[0].version == ONNX_OPSET
    assert meta["input"]["name"] == "planes" and meta["input"]["shape"] == ["N", 32, 9, 7]
    assert [(row["planes"], row["meaning"]) for row in meta["input"]["plane_meanings"]] == plane_table()
    assert [(o["name"], o["shape"]) for o in meta["outputs"]] == [
        ("policy_logits", ["N", 252]),
        ("wdl_logits", ["N", 3]),
    ]
    assert (
        meta["move_encoding"]["action"] == "csq_from * 4 + cdir"
        and "envs/encoding.py" in meta["move_encoding"]["reference"]
    )
    assert "side to move" in meta["value_convention"]
    assert meta["rules"] == [
        {"name": "default", "rules": load_rules("default").to_dict()},
        {"name": "keeps_rank", "rules": load_rules("keeps_rank").to_dict()},
    ]
    assert meta["network"]["value_head"] == "wdl" and meta["network"]["input_planes"] == 32
    sha256 = file_sha256(checkpoint)
    assert meta["checkpoint"] == {"name": str(checkpoint), "file": "net.pt", "sha256": sha256, "iteration": 7}


def test_the_plane_table_is_the_encoding_modules_and_covers_every_plane_once() -> None:
    """`plane_table` reads envs.encoding's docstring; each plane 0-31 has exactly one row of its own (the row
    24-31 only introduces the rule planes listed after it)."""
    rows = plane_table()
    covered: list[int] = []
    for label, meaning in rows:
        first, _, last = label.partition("-")
        if label != "24-31":
            covered += range(int(first), int(last or first) + 1)
        assert meaning and "  " not in meaning
    assert covered == list(range(N_PLANES))
    pieces = "the mover's Rat, Cat, Dog, Wolf, Leopard, Tiger, Lion, Elephant (1 on the square where it stands)"
    assert rows[0] == ("0-7", pieces)


def test_the_docs_page_tables_the_planes_as_the_encoding_module_does() -> None:
    text = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("| ") and line.split("|")[1].strip()[:1].isdigit()]
    assert table == [f"| {label} | {meaning} |" for label, meaning in plane_table()]
    assert f"opset {ONNX_OPSET}" in text


def test_jungle_export_is_the_export_command() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["jungle-export"] == "agents.alphazero.__main__:export_main"


def exit_and_stderr(
    entry: Callable[[list[str]], int], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[object, str]:
    """The exit status and standard error of the command line `entry` given `argv` (argparse's exits caught)."""
    try:
        code = entry(argv)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, said",
    [
        (["{missing}", "--out", "{tmp}/net.onnx"], "no checkpoint"),
        (["shipped:default-6", "--out", "{tmp}/net.onnx"], "no shipped network 'default-6'; did you mean"),
        (
            ["{checkpoint}", "--out", "{tmp}/net.onnx", "--format", "xml"],
            "--format 'xml' is not one of onnx, torchscript",
        ),
        (["{checkpoint}", "--out", "/proc/net.onnx"], "--out '/proc/net.onnx' cannot be written"),
        (["{checkpoint}", "--out", "{checkpoint}/net.onnx"], "is not a directory"),
        (["{checkpoint}", "--out", "{tmp}"], "is a directory; give the file to write"),
        (["{checkpoint}"], "the following arguments are required: --out"),
    ],
    ids=["missing-checkpoint", "unknown-shipped", "bad-format", "proc", "under-a-file", "a-directory", "no-out"],
)
def test_bad_input_is_one_line_and_exit_status_2(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both entry points; nothing is written."""
    checkpoint = random_checkpoint(tmp_path / "net.pt", "scalar")
    names = {"missing": str(tmp_path / "gone.pt"), "tmp": str(tmp_path), "checkpoint": str(checkpoint)}
    argv = [a.format(**names) for a in argv]
    before = sorted(tmp_path.iterdir())
    for entry, prog in ((main, "python -m agents.alphazero export"), (export_main, "jungle-export")):
        code, err = exit_and_stderr(entry, (["export"] if entry is main else []) + argv, capsys)
        assert code == 2, err
        assert len(err.splitlines()) == 1 and err.startswith(f"{prog}: error: ") and said in err, err
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.slow
def test_a_failed_write_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails once checks have passed (a full disk) names the file, and leaves no file behind."""
    import agents.alphazero.net.export as export

    checkpoint = random_checkpoint(tmp_path / "net.pt", "scalar")

    def full_disk(path: object, data: bytes) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(export, "atomic_write_bytes", full_disk)
    argv = ["export", str(checkpoint), "--out", str(tmp_path / "x.pt"), "--format", "torchscript"]
    code, err = exit_and_stderr(main, argv, capsys)
    assert (
        code == 2 and err == f"python -m agents.alphazero export: error: {tmp_path / 'x.pt'}: No space left on device\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.pt"]

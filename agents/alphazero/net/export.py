"""A checkpoint's network exported for programs outside this kit: ONNX (any ONNX runtime) or TorchScript (libtorch).

    python -m agents.alphazero export shipped:default-180 --out default-180.onnx
    python -m agents.alphazero export checkpoints/my-run/best.pt --out best.pt --format torchscript

The exported graph is the network's `JungleNet.forward` in float32, eval mode, with every batch norm folded into
the convolution before it (`agents.alphazero.net.runtime.fuse_for_inference`; the same function to float rounding)::

    planes         [N, C, 9, 7] float32   the first C observation planes (`envs.encoding`), C = input_planes
    policy_logits  [N, 252]     float32   one logit per action (`envs.encoding`'s action encoding), unmasked
    value          [N]          float32   tanh value in [-1, 1]            (value_head "scalar")
    wdl_logits     [N, 3]       float32   win / draw / loss logits          (value_head "wdl")

N is free (a dynamic axis). Values are from the side to move of the input position. The survival head, when a
network has one, is left out (the search never reads it). ONNX files use opset `ONNX_OPSET`.

Beside the file, ``<out>.json`` holds the metadata (`export_metadata`): the input planes and their meaning (the
table of `envs.encoding`'s docstring, `plane_table`), the action encoding, the rule sets trained on, the value
convention, the network's shape and the checkpoint's name and sha256. The same JSON sits inside the file: the ONNX
model's ``metadata_props`` entry ``jungle_zero``; the TorchScript archive's extra file ``jungle_zero.json``.
docs/export.md shows how to run an exported file.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

import envs.encoding
from agents.alphazero.net.checkpoint import load_model, resolve_checkpoint_path, trained_rule_sets
from agents.alphazero.net.network import JungleNet
from agents.alphazero.net.runtime import fuse_for_inference
from agents.common.io import PathLike, atomic_write_bytes, atomic_write_json
from agents.common.rundir import RunDirError, check_writable_dir
from envs.encoding import N_ACTIONS, OBS_SHAPE

FORMATS = ("onnx", "torchscript")
ONNX_OPSET = 17
"""The ONNX operator set of exported files (ONNX Runtime 1.12 and later run it)."""
METADATA_FORMAT = "jungle-zero-export/1"
METADATA_KEY = "jungle_zero"
"""The ONNX ``metadata_props`` key holding the metadata JSON; the TorchScript extra file is this plus ``.json``."""
INPUT = "planes"
POLICY = "policy_logits"
VALUE_OUTPUTS = {"scalar": "value", "wdl": "wdl_logits"}
"""The value output's name for each value head (`NetworkConfig.value_head`)."""
BATCH_AXIS = "N"

VALUE_CONVENTION = (
    "from the side to move in the input position: value +1 (or the win logit) means the player whose turn it is "
    "wins, -1 (the loss logit) that they lose; a value for the other player is its negation"
)
VALUE_MEANINGS = {
    "scalar": "value [N]: the expected score in [-1, 1] (tanh)",
    "wdl": "wdl_logits [N, 3]: logits of win, draw, loss (softmax them; the expected score is P(win) - P(loss))",
}
MOVE_ENCODING = {
    "actions": N_ACTIONS,
    "action": "csq_from * 4 + cdir",
    "squares": (
        "sq = rank * 7 + file with a1 = 0, b1 = 1, ..., g1 = 6, a2 = 7, ..., g9 = 62; "
        "csq = sq when Red is to move, 62 - sq when Blue is (the board as the side to move sees it)"
    ),
    "directions": (
        "cdir 0 forward (towards the enemy den), 1 right, 2 back, 3 left, as the side to move sees it: for Red "
        "north, east, south, west; for Blue the board direction is (cdir + 2) % 4"
    ),
    "destination": (
        "the neighbouring square in that direction; a Lion or Tiger moving into water jumps to the first land "
        "square beyond it (a jump is the direction of the jump)"
    ),
    "legality": "policy_logits rates all 252 actions: mask the illegal ones before a softmax",
    "reference": "envs/encoding.py: move_to_action, action_to_move, legal_action_mask",
}


class ExportError(ValueError):
    """An export that cannot be made: an unknown format, an output path that cannot be written, a missing
    package (names which)."""


def plane_table() -> list[tuple[str, str]]:
    """The observation planes as `envs.encoding`'s docstring tables them: (``"0-7"`` or ``"16"``, meaning), in
    its order (the row ``24-31`` introduces the rule planes listed one by one after it)."""
    doc = envs.encoding.__doc__ or ""
    rule = re.compile(r"^====\s+=+$", re.MULTILINE)
    bounds = [m.end() for m in rule.finditer(doc)]
    if len(bounds) < 2:
        raise AssertionError("envs.encoding's docstring has no plane table")
    rows: list[tuple[str, str]] = []
    for line in doc[bounds[0] : bounds[1]].strip("\n").splitlines()[:-1]:
        label, text = line[:6].strip(), line[6:].strip()
        if label:
            rows.append((label, text))
        else:
            rows[-1] = (rows[-1][0], f"{rows[-1][1]} {text}")
    return [(label, text.replace("``", "`")) for label, text in rows]


def plane_rows(input_planes: int) -> list[dict[str, str]]:
    """`plane_table`'s rows of the planes a network of `input_planes` planes reads, as metadata entries."""
    return [
        {"planes": label, "meaning": text} for label, text in plane_table() if int(label.split("-")[0]) < input_planes
    ]


def file_sha256(path: PathLike) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def export_metadata(
    model: JungleNet, state: dict[str, Any], *, spec: str, path: Path, sha256: str, fmt: str
) -> dict[str, Any]:
    """The metadata of `model` exported from the checkpoint `state` (read from `path`, named `spec`)."""
    shape = model.config
    planes = shape.input_planes
    value = VALUE_OUTPUTS[shape.value_head]
    value_shape = [BATCH_AXIS] if shape.value_head == "scalar" else [BATCH_AXIS, 3]
    counters = state.get("counters")
    return {
        "format": METADATA_FORMAT,
        "export": {
            "format": fmt,
            **({"onnx_opset": ONNX_OPSET} if fmt == "onnx" else {}),
            "dtype": "float32",
            "batch_norm": "fused into the convolutions",
            "torch": torch.__version__.split("+")[0],
        },
        "input": {
            "name": INPUT,
            "shape": [BATCH_AXIS, planes, OBS_SHAPE[1], OBS_SHAPE[2]],
            "dtype": "float32",
            "planes": planes,
            "layout": "[plane, rank, file] in the side to move's frame: row 0 is its back rank (module envs.encoding)",
            "plane_meanings": plane_rows(planes),
            "reference": "envs/encoding.py: encode_observation (its module docstring tables the planes)",
        },
        "outputs": [
            {"name": POLICY, "shape": [BATCH_AXIS, N_ACTIONS], "dtype": "float32", "meaning": "one logit per action"},
            {"name": value, "shape": value_shape, "dtype": "float32", "meaning": VALUE_MEANINGS[shape.value_head]},
        ],
        "move_encoding": MOVE_ENCODING,
        "value_convention": VALUE_CONVENTION,
        "rules": [{"name": name, "rules": rules.to_dict()} for name, rules in trained_rule_sets(state, path)],
        "network": shape.to_dict(),
        "checkpoint": {
            "name": spec,
            "file": path.name,
            "sha256": sha256,
            "iteration": counters.get("iteration") if isinstance(counters, dict) else None,
        },
    }


class _Exported(nn.Module):
    """The network under the exported names: planes [N, C, 9, 7] -> (policy_logits [N, 252], value)."""

    def __init__(self, net: JungleNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net(planes)


def _traceable(model: JungleNet) -> tuple[nn.Module, torch.Tensor]:
    """The fused float32 CPU copy of `model` to export, and an input of two positions to trace it with."""
    fused = fuse_for_inference(model).to("cpu", torch.float32)
    return _Exported(fused).eval(), torch.zeros((2, model.config.input_planes, *OBS_SHAPE[1:]))


def onnx_bytes(model: JungleNet, metadata: dict[str, Any]) -> bytes:
    """`model` as an ONNX file (opset `ONNX_OPSET`, dynamic batch axis) holding `metadata` in ``metadata_props``.

    torch's TorchScript-based exporter (``dynamo=False``) is used: it needs the ``onnx`` package only (the
    torch.export-based one, torch's default, also needs ``onnxscript``). ExportError without ``onnx``."""
    try:
        import onnx
    except ImportError:
        raise ExportError("an ONNX export needs the onnx package: pip install 'jungle-zero[onnx]'") from None
    net, example = _traceable(model)
    value = VALUE_OUTPUTS[model.config.value_head]
    with tempfile.TemporaryDirectory() as scratch, warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch marks this exporter as the older one
        warnings.simplefilter("ignore", torch.jit.TracerWarning)  # the network's plane count, fixed here
        written = Path(scratch) / "net.onnx"
        torch.onnx.export(
            net,
            (example,),
            written,
            input_names=[INPUT],
            output_names=[POLICY, value],
            dynamic_axes={name: {0: BATCH_AXIS} for name in (INPUT, POLICY, value)},
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
        proto = onnx.load(written)
    entry = proto.metadata_props.add()
    entry.key, entry.value = METADATA_KEY, json.dumps(metadata, sort_keys=True)
    onnx.checker.check_model(proto)
    return proto.SerializeToString()


def torchscript_bytes(model: JungleNet, metadata: dict[str, Any]) -> bytes:
    """`model` traced to TorchScript (any batch size runs it), holding `metadata` as the extra file
    ``jungle_zero.json`` (``torch.jit.load(..., _extra_files={"jungle_zero.json": ""})`` reads it)."""
    net, example = _traceable(model)
    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit is marked deprecated in torch 2.13
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(net, example)
        torch.jit.save(traced, buf, _extra_files={f"{METADATA_KEY}.json": json.dumps(metadata, sort_keys=True)})
    return buf.getvalue()


def sidecar_path(out: PathLike) -> Path:
    """Where the metadata JSON of an export to `out` is written: ``<out>.json``."""
    out = Path(out)
    return out.with_name(out.name + ".json")


def check_out(out: PathLike) -> Path:
    """`out` as a path an export can write (its folder exists or can be made, and takes files; `out` is no
    folder); ExportError naming it otherwise. Probes with a temp file it removes at once."""
    out = Path(out)
    if out.is_dir():
        raise ExportError(f"--out {str(out)!r} is a directory; give the file to write, e.g. {str(out / 'net.onnx')!r}")
    try:
        check_writable_dir(out.parent, key="its folder")
    except RunDirError as e:
        raise ExportError(f"--out {str(out)!r} cannot be written: {e}") from None
    return out


def export_checkpoint(spec: PathLike, out: PathLike, fmt: str = "onnx") -> dict[str, Any]:
    """Export the network of checkpoint `spec` (a file, a run, or ``shipped:<name>``) to `out` in format `fmt`
    (`FORMATS`), and its metadata to ``<out>.json``; returns the metadata.

    Everything is checked before anything is written: ExportError for a bad format or `out`, CheckpointError
    for a checkpoint that does not load; a failed write (OSError) leaves any earlier file at `out` as it was."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    out = check_out(out)
    path = resolve_checkpoint_path(spec)
    model, state = load_model(path)
    metadata = export_metadata(model, state, spec=str(spec), path=path, sha256=file_sha256(path), fmt=fmt)
    data = onnx_bytes(model, metadata) if fmt == "onnx" else torchscript_bytes(model, metadata)
    atomic_write_bytes(out, data)
    atomic_write_json(sidecar_path(out), metadata)
    return metadata

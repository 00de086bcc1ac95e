"""Tablebase files and directories are checked before they are trusted: every header field, the data's
checksum at first use, the directory the tables are read from or written to; each refusal is one line."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Union

import pytest

from envs import Board, RuleSet
from envs.__main__ import main as envs_main
from envs.tablebase import ROOT_ENV, Material, Tablebase, TablebaseError, TablebaseFileError, default_tablebase
from envs.tablebase.store import ALIGN, MAGIC, read_header

RULES = RuleSet()
REBUILD = "build it again with: python -m envs tablebase build --pieces 2"
R_E = Board("6e/7/7/7/7/7/7/7/R6 r 0 1")
"""Red's Rat against Blue's Elephant, Red to move: a position of the crafted files' first table."""


@pytest.fixture(scope="module")
def small() -> Tablebase:
    """The tables R-E and E-R (1666 and 1708 index entries), built in memory."""
    return Tablebase.build(RULES, pieces=2, only=[Material.parse("R-E")])


@pytest.fixture
def saved(small: Tablebase, tmp_path: Path) -> tuple[Path, dict[str, Any], bytes]:
    """(file, header, data) of `small` saved under tmp_path."""
    path, _ = small.save(tmp_path)
    header, start = read_header(path)
    return path, header, path.read_bytes()[start:]


def craft(path: Path, header: Union[dict[str, Any], str], data: bytes) -> None:
    """Write a file laid out as `store.write_tables` does, with any header (a dict, or its JSON text as is)."""
    text = (header if isinstance(header, str) else json.dumps(header, sort_keys=True, separators=(",", ":"))).encode()
    start = -(-(16 + len(text)) // ALIGN) * ALIGN
    path.write_bytes(MAGIC + len(text).to_bytes(8, "little") + text + bytes(start - 16 - len(text)) + data)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def refusal(root: Path) -> str:
    """The message of the one refusal of opening the tables under `root`, checked to be one line naming the
    file and the command that builds it again."""
    with pytest.raises(TablebaseFileError) as e:
        Tablebase.open(RULES, root=root)
    text = str(e.value)
    assert "\n" not in text and "up-to-2-pieces.jtb" in text and text.endswith(f"{REBUILD} --out {root}"), text
    return text


def test_a_file_written_again_as_crafted_opens(saved: tuple[Path, dict[str, Any], bytes], tmp_path: Path) -> None:
    """The crafted files below differ from a good one only where each says (this one, in nothing)."""
    path, header, data = saved
    craft(path, header, data)
    assert Tablebase.open(RULES, root=tmp_path).probe(R_E).wdl == Tablebase.build(RULES, pieces=2).probe(R_E).wdl


def test_a_table_shorter_than_its_material_is_refused(
    saved: tuple[Path, dict[str, Any], bytes], tmp_path: Path
) -> None:
    """A header that declares 2-byte tables, consistent offsets, positions and checksum: the probe would read
    past the data (it answered 'win in 209 plies')."""
    path, header, data = saved
    short = data[:2] + data[1666:1668] + data[3374:3376] + data[3374 + 1666 : 3374 + 1668]
    header.update(tables=[["R-E", 0, 2, 0], ["E-R", 2, 2, 0]], positions=4, sha256=sha(short))
    craft(path, header, short)
    assert "table R-E has 2 entries; its material's index has 1666" in refusal(tmp_path)


def _tables(edit: Callable[[list[list[Any]]], Any]) -> Callable[[dict[str, Any]], None]:
    def apply(header: dict[str, Any]) -> None:
        header["tables"] = edit(header["tables"])

    return apply


def _entry(i: int, j: int, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(header: dict[str, Any]) -> None:
        header["tables"][i][j] = value

    return apply


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(header: dict[str, Any]) -> None:
        header[key] = value

    return apply


BAD_HEADERS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "format as text": (_set("format", "1"), "has format '1'"),
    "empty": (lambda h: h.clear(), "has format None"),
    "no pieces": (lambda h: h.pop("pieces"), "has a damaged header: missing key(s) pieces"),
    "an unknown key": (_set("extra", 1), "unknown key(s) extra"),
    "pieces 9": (_set("pieces", 9), "pieces=9 (an integer in 2..3 expected)"),
    "pieces true": (_set("pieces", True), "pieces=True"),
    "pieces as text": (_set("pieces", "2"), "pieces='2'"),
    "positions negative": (_set("positions", -1), "positions=-1, not the 3374 entries of its tables"),
    "positions a float": (_set("positions", 3374.0), "positions=3374.0"),
    "positions too many": (_set("positions", 3375), "positions=3375, not the 3374"),
    "rules a list": (_set("rules", ["standard"]), "rules=['standard']"),
    "rules with a number": (lambda h: h["rules"].update(rank_order=1), "rules="),
    "sha256 a number": (_set("sha256", 5), "sha256=5"),
    "sha256 missing": (lambda h: h.pop("sha256"), "missing key(s) sha256"),
    "tables a dict": (_set("tables", {"R-E": 0}), "tables={'R-E': 0}"),
    "no table": (_set("tables", []), "tables=[] (1 to 512 tables expected)"),
    "20000 tables": (_tables(lambda t: t * 10_000), "lists 20000 tables (1 to 512 expected)"),
    "a material that is a number": (_entry(0, 0, 5), "table 0: material 5"),
    "a material that is no material": (_entry(0, 0, "XY-Z"), "table 0: bad material 'XY-Z'"),
    "a material of too many pieces": (_entry(0, 0, "LTR-E"), "table 0: material RTL-E has 4 pieces; the file holds 2"),
    "a material twice": (_entry(1, 0, "R-E"), "table 1: material R-E is listed twice"),
    "an entry of three": (_tables(lambda t: [t[0][:3], t[1]]), "table 0: ['R-E', 0, 1666] is not"),
    "an offset true": (_entry(0, 1, True), "table 0 (R-E): offset True"),
    "an offset with a gap": (_entry(1, 1, 1667), "table 1 (E-R): offset 1667, not 1666"),
    "a size as text": (_entry(0, 2, "1666"), "table R-E has '1666' entries; its material's index has 1666"),
    "clock_exact_from -1": (_entry(0, 3, -1), "table 0 (R-E): clock_exact_from -1 (an integer in 0..253"),
    "clock_exact_from huge": (_entry(0, 3, 10**30), "clock_exact_from 1000000000000000000000000000000"),
}


@pytest.mark.parametrize("case", list(BAD_HEADERS))
def test_a_damaged_header_is_refused_in_one_line(
    case: str, saved: tuple[Path, dict[str, Any], bytes], tmp_path: Path
) -> None:
    path, header, data = saved
    edit, words = BAD_HEADERS[case]
    edit(header)
    craft(path, header, data)
    assert words in refusal(tmp_path)


FIRST = '"tables":[["R-E",0,1666,0]'
"""The start of the crafted files' list of tables, as JSON."""


@pytest.mark.parametrize(
    "case,rewrite,words",
    [
        ("an overflowing clock_exact_from", lambda t: t.replace(FIRST, FIRST[:-2] + "1e400]"), "clock_exact_from inf"),
        ("a deeply nested header", lambda t: '{"format":1,"x":' + "[" * 100_000 + "]" * 100_000 + "}", "nested too"),
        ("a cut header", lambda t: t[:-20], "header is not JSON"),
        ("a list", lambda t: "[1,2]", "header is not a JSON object"),
    ],
)
def test_a_header_that_json_cannot_hold_is_refused_in_one_line(
    case: str, rewrite: Callable[[str], str], words: str, saved: tuple[Path, dict[str, Any], bytes], tmp_path: Path
) -> None:
    path, header, data = saved
    good = json.dumps(header, sort_keys=True, separators=(",", ":"))
    assert FIRST in good
    craft(path, rewrite(good), data)
    assert words in refusal(tmp_path)


def test_a_bad_magic_or_header_length_is_refused(saved: tuple[Path, dict[str, Any], bytes], tmp_path: Path) -> None:
    path, _, data = saved
    path.write_bytes(b"JUNGLETX" + data)
    assert "is not a tablebase file" in refusal(tmp_path)
    path.write_bytes(MAGIC + (1 << 40).to_bytes(8, "little") + data)
    assert "is not a tablebase file" in refusal(tmp_path)


@pytest.mark.parametrize("where", ["dtm", "dtz"])
def test_a_flipped_data_byte_is_found_at_first_use(
    where: str, saved: tuple[Path, dict[str, Any], bytes], tmp_path: Path
) -> None:
    """Without asking: the checksum is checked whenever a file is opened, before its values are used."""
    path, header, data = saved
    damaged = bytearray(data)
    damaged[100 if where == "dtm" else 3374 + 100] ^= 0x10
    craft(path, header, bytes(damaged))
    assert "fails its checksum (damaged)" in refusal(tmp_path)


def test_a_damaged_file_in_the_default_location_is_one_line(
    saved: tuple[Path, dict[str, Any], bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through $JUNGLE_ZERO_TABLEBASES (the players' and training's way in), without --out in the command."""
    path, header, data = saved
    _entry(0, 3, 10**30)(header)
    craft(path, header, data)
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    with pytest.raises(TablebaseFileError) as e:
        default_tablebase(RULES)
    assert str(e.value).endswith(REBUILD) and str(path) in str(e.value)


# --- directories ---------------------------------------------------------------------------------------------
def test_a_directory_name_too_long_is_refused_in_one_line(tmp_path: Path) -> None:
    root = tmp_path / ("x" * 300)
    with pytest.raises(TablebaseError, match=r"tablebase directory '.*x{300}.*': a name of 300 bytes is too long"):
        Tablebase.open(RULES, root=root)


def test_a_directory_under_a_file_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(TablebaseError, match=f"{tmp_path / 'file'}' is not a directory"):
        Tablebase.open(RULES, root=tmp_path / "file" / "tables")


def test_an_unreadable_directory_is_refused_in_one_line(
    small: Tablebase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests may run as root, whom a mode never stops: `os.access` is made to deny the directory instead."""
    small.save(tmp_path)
    denied = tmp_path / "standard.strict.any_rat.powerless"
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: Path(p) != denied and real(p, mode, **kw))
    with pytest.raises(TablebaseError, match=f"tablebase directory '{denied}' cannot be read"):
        Tablebase.open(RULES, root=tmp_path)


def test_save_refuses_a_directory_under_a_file(small: Tablebase, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(TablebaseError, match="file' is not a directory"):
        small.save(tmp_path / "file" / "tables")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """(exit status, stderr) of ``python -m envs tablebase <args>`` run in this process."""
    status = envs_main(["tablebase", *args])
    return status, capsys.readouterr().err


@pytest.mark.parametrize("case", ["/dev/null", "under a file", "too long", "not writable"])
def test_build_refuses_a_bad_out_directory_before_it_solves(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def solve(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the tables were solved")

    monkeypatch.setattr(Tablebase, "build", solve)
    (tmp_path / "file").write_text("")
    out, words = {
        "/dev/null": ("/dev/null", "'/dev/null' is not a directory"),
        "under a file": (str(tmp_path / "file" / "tables"), "file' is not a directory"),
        "too long": (str(tmp_path / ("x" * 300)), "a name of 300 bytes is too long"),
        "not writable": (str(tmp_path), "cannot be written"),
    }[case]
    if case == "not writable":
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: not mode & os.W_OK and real(p, mode, **kw))
    status, err = cli(capsys, "build", "--pieces", "2", "--out", out)
    assert status == 2 and err.startswith("error: tablebase directory ") and err.count("\n") == 1, err
    assert words in err


def test_probe_refuses_a_bad_dir_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = cli(capsys, "probe", "6e/7/7/7/7/7/7/7/R6 r 0 1", "--dir", str(tmp_path / ("x" * 300)))
    assert status == 2 and err.count("\n") == 1 and "is too long" in err, err

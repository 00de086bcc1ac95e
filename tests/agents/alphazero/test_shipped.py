"""The shipped networks: the manifest lists every file in checkpoints/shipped/, each entry loads and plays,
and a spec names one as `checkpoint:path=shipped:<name>`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agents.alphazero.net import shipped
from agents.alphazero.net.checkpoint import CheckpointError, load_model, resolve_checkpoint_path
from agents.play import errors as play_errors
from agents.play import levels as play_levels
from agents.play import specs as play_specs
from envs import Board
from envs.players import make_player
from envs.rules import RuleSet
from tests.support import ROOT

NETWORKS = shipped.networks()


def test_the_manifest_lists_exactly_the_shipped_files() -> None:
    assert shipped.SHIPPED_DIR == ROOT / "checkpoints" / "shipped"
    files = sorted(p.name for p in shipped.SHIPPED_DIR.glob("*.pt"))
    assert sorted(net.file for net in NETWORKS) == files and files
    assert len({net.name for net in NETWORKS}) == len(NETWORKS)
    assert shipped.read_manifest().faults == {}  # every entry well-formed


@pytest.mark.parametrize("net", NETWORKS, ids=[net.name for net in NETWORKS])
def test_each_entry_names_a_file_that_loads_and_says_how_it_was_made(net: shipped.ShippedNetwork) -> None:
    assert net.path.is_file() and hashlib.sha256(net.path.read_bytes()).hexdigest() == net.sha256
    _, state = load_model(net.spec_path)
    assert state["counters"]["iteration"] == net.entry["iterations"] and state["config"]
    run_name = next(line.split(":", 1)[1].strip() for line in state["config"].splitlines() if line.startswith("name:"))
    assert run_name in net.commands[-1], (run_name, net.commands[-1])  # the entry describes this very run
    assert net.what and net.commands and all(c.startswith("python train.py ") for c in net.commands)
    assert net.strength and all({"player", "opponent", "games", "wdl", "score", "elo"} <= set(r) for r in net.strength)
    for row in net.strength:
        w, d, l_ = map(int, row["wdl"].split("-"))
        assert w + d + l_ == row["games"] and abs((w + d / 2) / row["games"] - row["score"]) < 0.006, row
        assert f"path={net.spec_path}," in row["player"]
    assert (shipped.SHIPPED_DIR / "README.md").read_text().count(f"`{net.name}`") >= 1


def test_a_spec_names_a_shipped_network_by_its_entry() -> None:
    assert resolve_checkpoint_path("shipped:default-60") == shipped.SHIPPED_DIR / "default-60.pt"
    assert shipped.resolve("checkpoints/run/best.pt") == Path("checkpoints/run/best.pt")
    move = make_player("checkpoint:path=shipped:default-60,sims=4", seed=0).select_move(Board())
    assert move in Board().legal_moves
    with pytest.raises(CheckpointError, match="no shipped network 'default-6'; did you mean 'default-60'"):
        resolve_checkpoint_path("shipped:default-6")


def test_the_play_pages_network_level_is_a_manifest_entry() -> None:
    (level,) = [lv for lv in play_levels.LEVELS if lv.name == "network"]
    assert level.spec.startswith("checkpoint:path=shipped:") and level.available()
    assert shipped.network(level.spec.split("path=")[1].split(",")[0]).path.is_file()
    assert play_specs.opponent_spec("checkpoint:path=shipped:default-60,sims=8", play_specs.CHECKPOINT_DIRS)
    with pytest.raises(play_errors.PlayError, match="no shipped network 'nope'"):
        play_specs.opponent_spec("checkpoint:path=shipped:nope,sims=8", play_specs.CHECKPOINT_DIRS)
    ghost = play_levels.Level("ghost", "Ghost", "checkpoint:path=shipped:nope", "no such entry")
    assert not ghost.available()


def test_the_network_level_plays_the_manifests_first_entry_for_the_default_rules(tmp_path: Path) -> None:
    (level,) = [lv for lv in play_levels.LEVELS if lv.name == "network"]
    first = next(net for net in NETWORKS if net.rule_set_names == ("default",))
    assert f"path={first.spec_path}," in level.spec and shipped.strongest() == first

    def entry(name: str, rules: object) -> dict[str, object]:
        return {"name": name, "file": f"{name}.pt", "sha256": "0" * 64, "what": "", "commands": [], "strength": []} | (
            {"rules": rules} if rules else {}
        )

    manifest = tmp_path / "manifest.json"
    order = [entry("mix", ["default", "keeps_rank"]), entry("b", None), entry("a", "default")]
    manifest.write_text(json.dumps({"format": shipped.FORMAT, "networks": order}))
    names = [net.rule_set_names for net in shipped.networks(manifest)]
    assert names == [("default", "keeps_rank"), ("default",), ("default",)]
    assert shipped.strongest(manifest=manifest).name == "b"  # a rule mix is skipped; no "rules" is default
    assert play_levels._strongest_network(manifest) == "shipped:b"
    with pytest.raises(shipped.ShippedError, match="no shipped network plays the rule set 'keeps_rank' alone"):
        shipped.strongest("keeps_rank", manifest)
    # Without a readable manifest the level names no entry and is not offered.
    spec = f"checkpoint:path={play_levels._strongest_network(tmp_path / 'none.json')},time=1"
    assert not play_levels.Level("network", "Network", spec, "").available()


def test_a_missing_or_malformed_manifest_is_named(tmp_path: Path) -> None:
    with pytest.raises(shipped.ShippedError, match="does not exist"):
        shipped.networks(tmp_path / "manifest.json")
    bad = tmp_path / "manifest.json"
    bad.write_text(
        json.dumps(
            {
                "format": shipped.FORMAT,
                "networks": [
                    {"name": "x", "file": "../x.pt", "sha256": "0" * 64, "what": "", "commands": [], "strength": []}
                ],
            }
        )
    )
    assert shipped.networks(bad) == []
    with pytest.raises(
        shipped.ShippedError, match="network 'x' is malformed: it names '../x.pt', not a .pt file beside"
    ):
        shipped.network("x", bad)
    bad.write_text("{}")
    with pytest.raises(shipped.ShippedError, match="not a shipped-networks manifest"):
        shipped.networks(bad)


def copy_of_the_shipped_networks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *names: str) -> Path:
    """The manifest entries `names` and their files, copied to `tmp_path` and made the shipped ones; the manifest."""
    entries = [net.entry for net in NETWORKS if net.name in names]
    for net in NETWORKS:
        if net.name in names:
            (tmp_path / net.file).write_bytes(net.path.read_bytes())
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"format": shipped.FORMAT, "networks": entries}))
    monkeypatch.setattr(shipped, "SHIPPED_DIR", tmp_path)
    monkeypatch.setattr(shipped, "MANIFEST", manifest)
    return manifest


def test_a_shipped_file_that_differs_from_its_manifest_entry_is_refused_when_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    level = shipped.strongest().name  # the network level's entry
    copy_of_the_shipped_networks(tmp_path, monkeypatch, "default-60", "default-120", level)
    load_model("shipped:default-60")
    (tmp_path / "default-60.pt").write_bytes((tmp_path / "default-120.pt").read_bytes())  # another network's bytes
    for load in (
        lambda: load_model("shipped:default-60"),
        lambda: make_player("checkpoint:path=shipped:default-60,sims=4", seed=0),
    ):
        with pytest.raises(CheckpointError) as caught:
            load()
        line = str(caught.value)
        assert "'default-60'" in line and "default-60.pt" in line and "sha256" in line and "\n" not in line
    load_model("shipped:default-120")  # the other entries still load
    # The play page refuses the level of a bad network when it is chosen, in one line.
    (tmp_path / f"{level}.pt").write_bytes(b"PK\x03\x04 not the network")
    with pytest.raises(play_errors.PlayError, match=rf"{level}\.pt.*sha256"):
        play_specs.opponent_spec("network", play_specs.CHECKPOINT_DIRS)


def test_a_malformed_manifest_entry_is_one_line_and_the_others_still_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = copy_of_the_shipped_networks(tmp_path, monkeypatch, "default-60", "variants-40")
    good = json.loads(manifest.read_text())["networks"]
    bad = {
        "rules-five": {"rules": 5},
        "no-hash": {"sha256": "abc"},
        "odd-commands": {"commands": "python train.py"},
        "odd-strength": {"strength": [1, 2]},
    }
    entries = [dict(good[0], name=name, **change) for name, change in bad.items()]
    entries += [[1, 2], {"name": ["a", "list"]}, *good]
    manifest.write_text(json.dumps({"format": shipped.FORMAT, "networks": entries}))
    assert [net.name for net in shipped.networks()] == ["default-60", "variants-40"]
    assert shipped.strongest().name == "default-60" and play_levels._strongest_network() == "shipped:default-60"
    load_model("shipped:default-60")
    words = {"rules-five": "rules", "no-hash": "sha256", "odd-commands": "commands", "odd-strength": "strength"}
    for name, word in words.items():
        with pytest.raises(shipped.ShippedError) as caught:
            shipped.network(name)
        line = str(caught.value)
        assert str(manifest) in line and repr(name) in line and word in line and "\n" not in line, line
        with pytest.raises(CheckpointError, match=word):
            make_player(f"checkpoint:path=shipped:{name},sims=4", seed=0)
        assert not play_levels.Level(name, name, f"checkpoint:path=shipped:{name}", "").available()
    # The page's network level, its entry malformed, is refused when chosen, in one line.
    (level,) = [lv for lv in play_levels.LEVELS if lv.name == "network"]
    entries.insert(0, dict(good[0], name=level.spec.split("path=shipped:")[1].split(",")[0], rules=5))
    manifest.write_text(json.dumps({"format": shipped.FORMAT, "networks": entries}))
    assert not level.available()
    for choose in (
        lambda: play_levels.check_level_rules("network", RuleSet(), "default"),
        lambda: play_specs.opponent_spec("network"),
    ):
        with pytest.raises(play_errors.PlayError, match="the network level cannot play: .* is malformed: its 'rules'"):
            choose()
    manifest.write_text(json.dumps({"format": shipped.FORMAT, "networks": entries[:1]}))
    with pytest.raises(shipped.ShippedError, match=rf"alone; shipped: none; malformed: {entries[0]['name']}$"):
        shipped.strongest()
    # A manifest that cannot be read at all is one ShippedError, never another exception; the page's network
    # level then names no entry, is not offered, and is refused when chosen.
    for text in (
        "[" * 100_000 + "]" * 100_000,
        '{"format": "jungle-zero-shipped/1", "networks": [' + "9" * 5000 + "]}",
    ):
        manifest.write_text(text)
        with pytest.raises(shipped.ShippedError, match="manifest.json"):
            shipped.networks()
        assert play_levels._strongest_network() == "shipped:strongest"

"""train.py: smoke runs in a subprocess (events, checkpoints, resume, clear errors); its config composed
and checked in-process with Hydra's compose API (groups, presets, bad values refused before any work)."""

import logging
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import torch
from hydra.errors import HydraException
from omegaconf import OmegaConf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.alphazero.distributed.settings import InferenceConfig
from agents.alphazero.net.checkpoint import load_checkpoint, save_checkpoint
from agents.alphazero.net.network import build_network
from agents.alphazero.training import config as train_config
from agents.alphazero.training.learner import LearnMetrics
from agents.alphazero.training.run import TrainingRun
from agents.arena.records import read_jsonl
from agents.common.rundir import RunDirError
from envs.config import config_dir, group_options, read_config_file
from envs.rules import RuleSet
from tests.support import ROOT
from tests.support.configs import flat_search_layout

TINY = ["train=tiny", "model=tiny", "mcts.num_simulations=4", "seed=3"]


def run_train(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    r = run_train(
        *TINY,
        f"out_dir={out}",
        "name=smoke",
        "train.selfplay.opponents=[random]",
        "train.selfplay.opponent_fraction=0.5",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out / "smoke"


@pytest.mark.slow
def test_a_tiny_run_writes_events_checkpoints_and_games(run_dir: Path) -> None:
    for name in ("latest.pt", "best.pt", "iter_000001.pt", "iter_000002.pt", "config.yaml", "games.jsonl"):
        assert (run_dir / name).is_file(), name
    tags = scalars(run_dir)
    for tag in (
        "loss/total",
        "loss/policy",
        "loss/value",
        "loss/policy_entropy",
        "loss/lr",
        "selfplay/positions_per_s",
        "selfplay/game_length",
        "selfplay/draws",
        "selfplay/opponent_games",
        "eval/score_random",
        "eval/elo",
        "perf/seconds_selfplay",
        "perf/cpu_seconds",
    ):
        assert [s for s, _ in tags[tag]] == [1, 2], tag
    # Each score comes with its 95% interval.
    for (_, low), (_, score), (_, high) in zip(
        tags["eval/low_random"], tags["eval/score_random"], tags["eval/high_random"]
    ):
        assert 0.0 <= low <= score <= high <= 1.0 and high - low > 0.1
    state = load_checkpoint(run_dir / "latest.pt")
    assert state["counters"]["iteration"] == 2
    assert state["counters"]["learner_steps"] == 4
    cpu = [v for _, v in tags["perf/cpu_seconds"]]  # the run's processes' CPU seconds, iteration by iteration
    assert all(v > 0 for v in cpu) and state["counters"]["cpu_seconds"] == pytest.approx(sum(cpu), rel=1e-5)
    assert state["replay"]["has_contents"] and len(state["replay"]["value"]) == state["counters"]["positions"]
    assert "model:" in state["config"] and "blocks: 1" in state["config"]
    assert "rules_mix" not in state  # a single-rule run writes the checkpoint it always wrote
    torch.load(run_dir / "latest.pt", weights_only=True)


@pytest.mark.slow
def test_resume_continues_the_step_counter(run_dir: Path) -> None:
    r = run_train(f"resume={run_dir}", "train.iterations=3")
    assert r.returncode == 0, r.stderr[-3000:]
    state = load_checkpoint(run_dir / "latest.pt")
    assert state["counters"]["iteration"] == 3
    assert state["counters"]["learner_steps"] == 6
    tags = scalars(run_dir)
    cpu = [v for _, v in tags["perf/cpu_seconds"]]  # the resumed sitting adds to the first one's
    assert len(cpu) == 3 and state["counters"]["cpu_seconds"] == pytest.approx(sum(cpu), rel=1e-5)
    assert [s for s, _ in tags["loss/total"]] == [1, 2, 3]
    assert [s for s, _ in tags["eval/score_random"]] == [1, 2, 3]


@pytest.mark.slow
def test_self_play_workers_play_the_games_of_the_in_process_loop(run_dir: Path) -> None:
    """train.workers=2: the same run as the fixture's (in-process), its self-play in two worker processes."""
    out = run_dir.parent
    r = run_train(
        *TINY,
        f"out_dir={out}",
        "name=smoke-workers",
        "train.selfplay.opponents=[random]",
        "train.selfplay.opponent_fraction=0.5",
        "train.workers=2",
        "train.worker_backend=process",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "self-play on 2 process workers" in r.stdout + r.stderr
    here = list(read_jsonl(run_dir / "games.jsonl"))[:4]  # iteration 1: the same initial network
    there = list(read_jsonl(out / "smoke-workers" / "games.jsonl"))
    assert len(there) == 8 and [g.extra["game_index"] for g in there] == [0, 1, 2, 3] * 2
    assert [g.seed for g in there[:4]] == [g.seed for g in here]
    # Opponent and colour come from each game's seed; the network's own games are move for move the same.
    assert [("random" in (g.red, g.blue)) for g in there[:4]] == [("random" in (g.red, g.blue)) for g in here]
    selfplay = [k for k, g in enumerate(here) if "random" not in (g.red, g.blue)]
    assert selfplay and all(here[k].moves == there[k].moves for k in selfplay)


@pytest.mark.slow
def test_a_corrupted_checkpoint_is_refused_with_a_clear_message(run_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "latest.pt"
    data = (run_dir / "iter_000001.pt").read_bytes()
    bad.write_bytes(data[: len(data) // 3])
    r = run_train(f"resume={bad}")
    assert r.returncode != 0
    assert "corrupt or truncated" in r.stderr and str(bad) in r.stderr


def refused(*overrides: str) -> str:
    """The message of the error that the config `overrides` compose into (or that composing them raises)."""
    with pytest.raises((ValueError, HydraException)) as e:
        train_config.checked_config(train_config.compose_config(overrides))
    return str(e.value)


@pytest.mark.slow
def test_an_unknown_config_key_is_an_error() -> None:
    assert "bogus_key" in refused("train.bogus_key=1")
    assert "depth=-1 must lie in" in refused('train.selfplay.opponents=["alphabeta:depth=-1"]')  # a bad opponent spec
    assert "worker_backend='threads'" in refused("train.worker_backend=threads", "train.workers=2")
    assert "huge" in refused("model=huge")


def pretend_one_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process sees a machine of one CUDA device (for configs that serve on every GPU)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


@pytest.mark.parametrize("group", ["default", "gpu", "tiny", "opponents"])
def test_every_train_group_composes(group: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each configs/train/*.yaml composes into the structured config (no unknown or mistyped keys); the gpu
    group (a server on every GPU) is checked as on a machine of one GPU, whatever this one has."""
    if group == "gpu":
        pretend_one_gpu(monkeypatch)
    cfg = train_config.compose_config([f"train={group}"])
    text = OmegaConf.to_yaml(cfg)
    assert "iterations:" in text
    if group == "opponents":
        assert "- alphabeta:depth=2,noise=50" in text and "opponent_fraction: 0.3" in text
        assert "simulations: 128" in text  # the default group's evaluation is kept
    train_config.checked_config(cfg)


@pytest.mark.slow
@pytest.mark.parametrize(
    "override, words",
    [
        ("train.checkpoint_every=0", "train.checkpoint_every=0 must be >= 1"),
        ("train.batch_size=0", "train.batch_size=0 must lie in [1, 65536]"),
        ("train.iterations=0", "train.iterations=0 must be >= 1"),
        ("mcts.num_simulations=0", "mcts.num_simulations=0"),
        ("+train.bogus=1", "unknown train key(s) bogus"),
        ("+bogus=1", "unknown top-level config key(s) bogus"),
        ("+train.eval.bogus=1", "unknown train.eval key(s) bogus"),
        ("train.selfplay.parallel=0", "parallel=0"),
        ("train.games_per_iteration=0", "train.games_per_iteration=0"),
        ("train.selfplay.max_plies=0", "max_plies=0"),
        ("train.selfplay.opponent_fraction=1.5", "opponent_fraction=1.5 must lie in [0, 1]"),
        ("train.selfplay.opponent_fraction=0.5", "needs train.selfplay.opponents"),
        ("train.selfplay.player_name=me", "set name=... instead"),
        ("train.min_replay=70000", "learning would never start"),
        ("train.eval.games=0", "train.eval.games=0"),
        ("train.eval.num_simulations=0", "train.eval.num_simulations=0"),
        ("train.eval.every=-1", "train.eval.every=-1"),
        ("threads=-1", "threads=-1"),
        ("train.eval.opponents=[nobody]", "train.eval.opponents: unknown player kind 'nobody'"),
        ("rules.repetition=maybe", "repetition='maybe'"),
        ("model.blocks=-1", "blocks=-1"),
        ("train.learner.lr=0", "learning rate must be > 0"),
        ("mcts.algorithm=alphabeta", "'alphabeta' is not one of"),
        ("device=gpu9", "unknown device 'gpu9'"),
        # values impossible on any machine: refused by the bounds the schema's docstrings state
        ("seed=4294967296", "seed=4294967296 must lie in [0, 2**32 - 1]"),
        ("seed=-1", "seed=-1 must lie in [0, 2**32 - 1]"),
        ("threads=100000", "threads=100000 must lie in [0, 1024]"),
        ("mcts.num_simulations=1000000000", "mcts.num_simulations=1000000000 must lie in [0, 100000]"),
        (
            "train.eval.num_simulations=1000000000",
            "train.eval.num_simulations=1000000000 must lie in [1, 100000]",
        ),
        ("train.replay_capacity=100000000000", "train.replay_capacity=100000000000 must lie in [1, 100000000]"),
        ("train.batch_size=100000000000", "train.batch_size=100000000000 must lie in [1, 65536]"),
        ("train.selfplay.max_plies=100000000", "train.selfplay.max_plies=100000000 must lie in [1, 30000]"),
        ("train.selfplay.parallel=100000000", "train.selfplay.parallel=100000000 must lie in [1, 65536]"),
        ("train.workers=100000", "train.workers=100000 must lie in [0, 1024]"),
        ("model.channels=4000", "model.channels=4000 must lie in [1, 512]"),
        ("mcts.gumbel.max_actions=100000", "mcts.gumbel.max_actions=100000 must lie in [1, 252]"),
        ("train.learner.lr=inf", "train.learner.lr=inf: the learning rate must be > 0 and finite"),
        ("train.learner.lr=nan", "train.learner.lr=nan"),
        ("train.train_ratio=inf", "train.train_ratio=inf must be >= 0 and finite"),
        ("mcts.puct.c_puct=nan", "mcts.puct.c_puct=nan must be >= 0"),
        ("train.selfplay.value_q_weight=nan", "train.selfplay.value_q_weight=nan must lie in [0, 1]"),
        ("name=../../etc", "name='../../etc' must be one plain directory name"),
        ("name=a/b", "name='a/b' must be one plain directory name"),
        ("name=/etc", "name='/etc' must be one plain directory name"),
        ("name=..", "name='..' is not a directory name of its own"),
        ("device=cuda:7", "device='cuda:7' is not available"),
        ("precision=fp8", "precision='fp8' is not one of fp32, bf16, auto"),
    ],
)
def test_bad_values_are_refused(override: str, words: str) -> None:
    """Each bad value is an error that names it, found by composing and checking the config alone."""
    assert words in refused(override)


@pytest.mark.parametrize(
    "override",
    [
        "train.checkpoint_every=0",
        "+train.bogus=1",
        "mcts.num_simulations=0",
        'train.selfplay.opponents=["alphabeta:depth=-1"]',
    ],
)
def test_a_failed_start_does_no_work_and_leaves_no_run_directory(override: str, tmp_path: Path) -> None:
    overrides = [override, f"out_dir={tmp_path}", "name=failed"]
    with pytest.raises(ValueError, match=override.split("=")[0].lstrip("+").split(".")[-1]):
        TrainingRun.open(train_config.compose_config(overrides), overrides)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_typo_is_one_line_naming_the_closest_key() -> None:
    """Hydra's own errors (several lines, a hint about environment variables) become one line naming the
    override; an unknown key comes with the closest known one."""
    assert refused("trian.iterations=3") == "unknown config key 'trian.iterations' (did you mean train.iterations?)"
    assert refused("train.selfplay.paralel=3").endswith("(did you mean train.selfplay.parallel?)")
    assert "unknown top-level config key(s) trian (did you mean train?)" in refused("+trian=3")
    assert refused("train.iterations=abc") == (
        "train.iterations=abc: Value 'abc' of type 'str' could not be converted to Integer"
    )
    assert refused("model=huge") == "could not find 'model/huge'; the options are large, medium, small, tiny"
    for override in ("trian.iterations=3", "train.iterations=abc", "model=huge", "name=a(b", "~bogus", "seed=1e400"):
        assert "\n" not in refused(override), override


@pytest.mark.slow
def test_the_command_line_prints_one_line_for_a_typo(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "trian.iterations=3", f"out_dir={tmp_path}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2
    assert r.stderr.strip() == "train.py: error: unknown config key 'trian.iterations' (did you mean train.iterations?)"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_gpu_run_on_a_machine_without_cuda_stops_with_one_line() -> None:
    """preset=gpu asks for device=cuda: on a machine without CUDA it is refused before any work, naming why."""
    assert train_config.compose_config(["preset=gpu"]).device == "cuda"
    if torch.cuda.is_available():  # a GPU machine: the preset is valid, and a device it lacks is refused
        train_config.checked_config(train_config.compose_config(["preset=gpu"]))
        words = refused(f"device=cuda:{torch.cuda.device_count()}")
        assert "is not available" in words
        return
    for overrides in (["preset=gpu"], ["device=cuda"]):
        words = refused(*overrides)
        assert words.startswith("device='cuda' is not available: ") and "\n" not in words
        assert "preset=cpu" in words


@pytest.mark.slow
def test_buffers_larger_than_the_machine_are_refused_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay buffer and the self-play trees are allocated whole at the start: more than the machine's
    memory is refused by the config check (here: a machine of 1 GiB)."""
    monkeypatch.setattr(train_config, "machine_memory", lambda: 2**30)
    train_config.checked_config(train_config.compose_config([]))  # the default run fits
    assert (
        "the replay buffer (train.replay_capacity=2000000) would take 1.8 GiB, more than this machine's 1.0 GiB"
        in refused("train.replay_capacity=2000000")
    )
    assert "the self-play trees (train.selfplay.parallel=1024 games x mcts.num_simulations=20000)" in refused(
        "train.selfplay.parallel=1024", "mcts.num_simulations=20000"
    )


def defaults_of(schema: type) -> dict[str, Any]:
    """The schema's default values as plain data (nested dataclasses as dicts)."""
    return OmegaConf.to_container(OmegaConf.structured(schema))  # type: ignore[return-value]


def repeated_defaults(values: dict[str, Any], defaults: dict[str, Any], where: str = "") -> list[str]:
    """The keys of `values` whose value is the schema's default (a yaml file should not restate them)."""
    out = []
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(defaults.get(key), dict):
            out += repeated_defaults(value, defaults[key], f"{where}{key}.")
        elif key in defaults and value == defaults[key]:
            out.append(where + key)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("group", sorted(train_config.SCHEMAS))
def test_group_files_hold_only_what_differs_from_their_schema(group: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every option of a group composes alone and passes the checks (train=gpu, a server on every GPU, as on a
    machine of one GPU, whatever this one has), sets only its own node, and states only the values that
    differ from its dataclass's defaults."""
    pretend_one_gpu(monkeypatch)
    defaults = defaults_of(train_config.SCHEMAS[group])
    base = OmegaConf.to_container(train_config.compose_config([]))
    for option in group_options(group):
        values = read_config_file(config_dir(group) / f"{option}.yaml", group, ValueError)
        assert repeated_defaults(values, defaults) == [], f"{group}/{option}"
        cfg = train_config.compose_config([f"{group}={option}"])
        train_config.checked_config(cfg)
        changed = {k for k, v in OmegaConf.to_container(cfg).items() if v != base[k]}  # type: ignore[union-attr]
        assert changed <= {group}, f"{group}={option} changes {changed}"


def flat(values: dict[str, Any], where: str = "") -> dict[str, Any]:
    """Nested config values as one dict of dotted keys."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        out.update(flat(value, f"{where}{key}.") if isinstance(value, dict) else {where + key: value})
    return out


def test_the_dataclasses_defaults_are_the_default_run() -> None:
    """`Config()` is the run `python train.py` composes with no override, key by key: the yaml files of the
    default options (train=default, preset=cpu...) add nothing the dataclasses do not say."""
    schema = flat(OmegaConf.to_container(OmegaConf.structured(train_config.Config)))  # type: ignore[arg-type]
    composed = flat(OmegaConf.to_container(train_config.compose_config([])))  # type: ignore[arg-type]
    schema = {k: v for k, v in schema.items() if k.split(".")[0] not in ("defaults", "hydra")}  # Hydra's own
    differ = {
        k: (schema.get(k), composed.get(k)) for k in schema.keys() | composed.keys() if schema.get(k) != composed.get(k)
    }
    assert differ == {}  # key: (dataclass default, composed default)


@pytest.mark.slow
def test_presets_set_several_nodes_and_the_command_line_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    pretend_one_gpu(monkeypatch)  # preset=gpu serves on every GPU
    default = train_config.checked_config(train_config.compose_config([]))
    assert (default.model.blocks, default.mcts.num_simulations, default.threads) == (3, 32, 1)  # preset=cpu
    assert default.mcts.gumbel.max_actions == 4
    sp = default.train.selfplay  # the default run's recipe (TrainConfig's defaults; docs/results.md)
    assert (default.train.iterations, default.train.workers, default.train.learner.total_steps) == (180, 2, 80000)
    assert default.train.eval.every == 60  # three evaluations: the run's 60 minutes go to self-play
    assert default.train.reanalyse == 0.25  # a quarter of an older position reanalysed per new one
    assert (sp.random_plies, sp.draw_contempt, sp.contempt_sides, sp.draw_keep) == (6, 0.3, "one", 0.2)
    gpu = train_config.checked_config(
        train_config.compose_config(["preset=gpu", "device=cpu"])
    )  # preset=gpu asks for cuda
    assert (gpu.model.blocks, gpu.model.value_head, gpu.mcts.num_simulations, gpu.threads) == (10, "wdl", 64, 4)
    assert gpu.train.selfplay.parallel == 1024 and gpu.train.eval.opponents[-1] == "alphabeta:depth=4"
    mine = train_config.checked_config(
        train_config.compose_config(["preset=gpu", "model=medium", "mcts.num_simulations=8", "device=cpu"])
    )
    assert (mine.model.blocks, mine.mcts.num_simulations, mine.train.selfplay.parallel) == (6, 8, 1024)
    smoke = train_config.checked_config(train_config.compose_config(["preset=smoke"]))
    assert (smoke.model.blocks, smoke.mcts.num_simulations, smoke.train.iterations) == (1, 4, 2)
    assert (
        train_config.checked_config(train_config.compose_config(["rules=dog_over_wolf"])).rules.rule_set().rank_order
        == "dog_over_wolf"
    )


@pytest.mark.slow
def test_train_and_evaluate_compose_one_rules_group(tmp_path: Path) -> None:
    """`rules` is one config group of train.py and evaluate.py: the same overrides give the same RulesConfig,
    and a rule set of one's own (DIR/rules/NAME.yaml) is found by both with `hydra.searchpath=[file://DIR]`."""
    from agents.arena import config as evaluate_config
    from envs.rules import RulesConfig, RuleSet

    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "house.yaml").write_text("defaults:\n  - schema\n  - _self_\ntrapped_attacker: keeps_rank\n")
    for overrides, wanted in (
        (
            ["rules=keeps_rank", "rules.no_capture_draw=200"],
            RuleSet(trapped_attacker="keeps_rank", no_capture_draw=200),
        ),
        (
            [f"hydra.searchpath=[file://{tmp_path}]", "rules=house", "rules.rank_order=dog_over_wolf"],
            RuleSet(trapped_attacker="keeps_rank", rank_order="dog_over_wolf"),
        ),
    ):
        trained = train_config.checked_config(train_config.compose_config(overrides)).rules
        evaluated = evaluate_config.checked_config(evaluate_config.compose_config(overrides)).rules
        assert type(trained) is RulesConfig and type(evaluated) is RulesConfig
        assert trained == evaluated and trained.rule_set() == wanted, overrides


def test_resume_applies_key_value_overrides_to_the_stored_config(tmp_path: Path) -> None:
    stored = OmegaConf.to_yaml(train_config.compose_config(["train=tiny", "name=run", "seed=5"]))
    cfg = train_config.resumed_config(
        stored,
        tmp_path,
        [
            "resume=run",
            "train.iterations=9",
            "train.selfplay.opponents=[random]",
            "+train.selfplay.opponent_fraction=0.25",
        ],
    )
    conf = train_config.checked_config(cfg)
    assert (conf.seed, conf.name, conf.train.iterations, conf.train.batch_size) == (5, "run", 9, 16)
    assert conf.train.selfplay.opponents == ["random"] and conf.train.selfplay.opponent_fraction == 0.25
    assert "defaults" not in cfg and "hydra" not in cfg
    for bad, words in (
        ("model=large", "config group 'model'"),
        ("preset=gpu", "config group 'preset'"),
        ("train.bogus=1", "bogus"),
        ("train.iterations=many", "iterations"),
        ("~train.eval", "only key=value"),
    ):
        with pytest.raises(train_config.ConfigError, match=words):
            train_config.resumed_config(stored, tmp_path, [bad])


def test_a_run_moved_to_another_machine_resumes_where_its_latest_pt_lies(tmp_path: Path) -> None:
    """A campaign committed to git and cloned elsewhere: its stored config names the out_dir it began in (here
    one that cannot be made); the resume goes on in the directory of its latest.pt and checks only that one."""
    composed = train_config.compose_config(["train=tiny", "model=tiny", "name=moved", "out_dir=/proc/gone/runs"])
    conf = train_config.checked_config(composed)
    net = build_network(conf.model)
    state = {"model": net.state_dict(), "network": conf.model.to_dict(), "rules": RuleSet().to_dict()}
    run_dir = tmp_path / "clone" / "checkpoints" / "moved"
    save_checkpoint(
        run_dir / "latest.pt",
        dict(state, config=OmegaConf.to_yaml(composed), learner={}, replay={}, rng={}, counters={}, extra={}),
    )
    overrides = [f"resume={run_dir}"]
    run, resumed = TrainingRun.open(train_config.compose_config(overrides), overrides)
    assert run.run_dir == run_dir and (resumed.out_dir, resumed.name) == (str(run_dir.parent), "moved")
    assert not Path("/proc/gone").exists()
    with pytest.raises(RunDirError, match="cannot be written"):  # a fresh run still checks its out_dir
        fresh = ["train=tiny", "model=tiny", "name=new", "out_dir=/proc/gone/runs"]
        TrainingRun.open(train_config.compose_config(fresh), fresh)


def test_a_stored_config_in_the_flat_search_layout_resumes_as_it_meant(tmp_path: Path) -> None:
    """The flat search keys of a config stored by an earlier version go into their nodes on resume; the key
    set is that of a shipped network's stored config, and overrides take the new keys."""
    composed = train_config.compose_config(["train=tiny", "name=run", "mcts.puct.c_puct=2.5"])
    stored = flat_search_layout(OmegaConf.to_yaml(composed))
    shipped = torch.load(ROOT / "checkpoints" / "shipped" / "default-60.pt", weights_only=True)
    assert set(OmegaConf.create(stored).mcts) == set(OmegaConf.create(shipped["config"]).mcts)
    conf = train_config.checked_config(train_config.resumed_config(stored, tmp_path, ["resume=run"]))
    assert conf.mcts == train_config.checked_config(composed).mcts
    assert (conf.mcts.puct.c_puct, conf.mcts.gumbel.max_actions) == (2.5, 4)  # 4: preset=cpu's
    again = train_config.checked_config(
        train_config.resumed_config(stored, tmp_path, ["resume=run", "mcts.gumbel.max_actions=8"])
    )
    assert again.mcts.gumbel.max_actions == 8


def test_a_stored_config_without_the_draw_breakers_resumes_with_plain_self_play(tmp_path: Path) -> None:
    """A config stored before `random_plies`, `contempt_sides` and `draw_keep` existed (the shipped default-60's)
    resumes as it played: a key it lacks takes `SelfPlayConfig`'s plain value, not a training run's default."""
    shipped = torch.load(ROOT / "checkpoints" / "shipped" / "default-60.pt", weights_only=True)
    assert not {"random_plies", "contempt_sides", "draw_keep"} & set(OmegaConf.create(shipped["config"]).train.selfplay)
    sp = train_config.resumed_config(shipped["config"], tmp_path, ["resume=run"]).train.selfplay
    assert (sp.random_plies, sp.contempt_sides, sp.draw_keep) == (0, "both", 1.0)


def test_a_stored_config_with_renamed_keys_resumes_under_the_new_names(tmp_path: Path) -> None:
    """A key renamed since a run stored its config (`RENAMED_KEYS`) is read under its new name on resume, as in
    the stored configs of the campaigns; given by its old name on the command line it is refused in one line
    naming the new one."""
    composed = OmegaConf.to_container(train_config.compose_config(["train=tiny", "name=run", "train.workers=2"]))
    assert isinstance(composed, dict)
    inference = composed["train"].pop("inference")
    assert inference == {"server": False, "max_wait": 0.002, "halves": 1, "devices": []}
    composed["train"].update(inference_server=True, inference_max_wait=0.01, inference_halves=2)
    composed["train"]["eval"]["simulations"] = 7
    del composed["train"]["eval"]["num_simulations"]
    stored = OmegaConf.to_yaml(OmegaConf.create(composed))
    conf = train_config.checked_config(train_config.resumed_config(stored, tmp_path, ["resume=run"]))
    assert conf.train.inference == InferenceConfig(server=True, max_wait=0.01, halves=2)
    assert conf.train.eval.num_simulations == 7
    for campaign in sorted((ROOT / "checkpoints").glob("campaign-*/config.yaml")):
        cfg = train_config.resumed_config(campaign.read_text(), campaign, ["resume=run"])
        assert cfg.train.inference == OmegaConf.create(asdict(InferenceConfig())), campaign
        stored_eval = OmegaConf.create(campaign.read_text()).train.eval  # old names, or new once resumed since
        assert cfg.train.eval.num_simulations == stored_eval.get("simulations", stored_eval.get("num_simulations"))
    for old, new in train_config.RENAMED_KEYS.items():
        with pytest.raises(train_config.ConfigError) as refused:
            train_config.resumed_config(stored, tmp_path, [f"{old}=1"])
        assert str(refused.value) == f"{old} is now {new} ({old}=1)"


@pytest.mark.slow
def test_the_device_is_resolved_once_on_the_training_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Composing, checking and opening a run resolve its device once; what runs below (the inference server,
    the pools) takes the torch.device it got."""
    import agents.alphazero.distributed.workers as workers
    from agents.alphazero.distributed.pools import make_selfplay_pool
    from agents.alphazero.distributed.settings import InferenceSettings, WorkerSettings
    from agents.alphazero.net import device as device_module
    from agents.alphazero.net.network import build_network
    from tests.support.fake_ray import ThreadedRay

    calls: list[str] = []
    real = device_module.resolve_device

    def counted(spec: str) -> torch.device:
        calls.append(spec)
        return real(spec)

    for module in list(sys.modules.values()):
        if getattr(module, "resolve_device", None) is real:
            monkeypatch.setattr(module, "resolve_device", counted)
    overrides = ["preset=smoke", f"out_dir={tmp_path}", "name=once", "train.workers=1", "train.inference.server=true"]
    training, conf = TrainingRun.open(train_config.compose_config(overrides), overrides)
    assert calls == ["auto"] and training.device == real("auto")
    fake = ThreadedRay()
    monkeypatch.setattr(workers, "import_ray", lambda: fake)
    settings = WorkerSettings(network=conf.model, mcts=conf.mcts, rules=conf.rules.rule_set(), precision="fp32")
    inference = InferenceSettings(config=conf.train.inference, device=training.device)
    with make_selfplay_pool("ray", 1, settings, inference=inference) as pool:  # a server actor, in this process
        pool.play(build_network(conf.model).state_dict(), seed=0, num_games=1)
    assert calls == ["auto"]


def test_the_log_line_gives_each_evaluation_score_its_interval() -> None:
    from agents.alphazero.training.progress import iteration_line

    scores = {
        "score_alphabeta_depth2": 0.25,
        "low_alphabeta_depth2": 0.11,
        "high_alphabeta_depth2": 0.45,
        "score_random": 1.0,
    }
    line = iteration_line(30, 60, None, 1.0, 0, LearnMetrics(), scores)
    assert "eval: alphabeta_depth2 0.25 [0.11-0.45] random 1.00" in line
    # A mixed run's scores come per rule set (`run.mixed_scores`): the line gives each rule set's ladder score.
    mixed = {"default/ladder_score": 0.5, "default/score_random": 1.0, "keeps_rank/ladder_score": 0.25, "elo": 700.0}
    line = iteration_line(30, 60, None, 1.0, 0, LearnMetrics(), mixed)
    assert "eval: default 0.50 keeps_rank 0.25 elo 700" in line


@pytest.mark.slow
def test_evaluation_does_not_change_the_training(tmp_path: Path) -> None:
    # Evaluations draw from their own seeds: a run evaluated every iteration learns the same weights as
    # one never evaluated (so a run's training can be compared whatever its evaluation schedule).
    for every in (1, 0):
        r = run_train(*TINY, "train.iterations=2", f"train.eval.every={every}", f"out_dir={tmp_path}", f"name=e{every}")
        assert r.returncode == 0, r.stderr[-3000:]
    a, b = (load_checkpoint(tmp_path / name / "latest.pt")["model"] for name in ("e1", "e0"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert "eval/score_random" in scalars(tmp_path / "e1") and "eval/score_random" not in scalars(tmp_path / "e0")


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides, words",
    [
        (["train.rules_mix=[default,bogus]"], "train.rules_mix entry 'bogus': unknown rule set 'bogus'"),
        (["train.rules_mix=[default,keeps_rank:x]"], "train.rules_mix entry 'keeps_rank:x': the weight 'x'"),
        (["train.rules_mix=[default,keeps_rank:0]"], "train.rules_mix entry 'keeps_rank:0': the weight must be"),
        (["train.rules_mix=[default,keeps_rank:-2]"], "train.rules_mix entry 'keeps_rank:-2': the weight must be"),
        (
            ["train.rules_mix=[keeps_rank,keeps_rank:2]"],
            "'keeps_rank:2': the rule set 'keeps_rank' is in the mix twice",
        ),
        (["train.rules_mix=[default,keeps_rank]", "rules=enemy_rat"], "rules.jump_blocking='enemy_rat' is set"),
        (["train.rules_mix=[default]", "rules.no_capture_draw=200"], "rules.no_capture_draw=200 is set"),
        (["train.rules_mix=[default,keeps_rank]", "mcts.tablebase=true"], "mcts.tablebase cannot be used with"),
        (
            ["train.rules_mix=[default,keeps_rank]", "train.selfplay.tablebase_rescore=true"],
            "train.selfplay.tablebase_rescore cannot be used with train.rules_mix",
        ),
        (
            ["train.rules_mix=[default,keeps_rank]", "train.selfplay.tablebase_adjudicate=true"],
            "train.selfplay.tablebase_adjudicate cannot be used with train.rules_mix",
        ),
    ],
)
def test_a_bad_rules_mix_is_refused_with_one_line_naming_the_entry(overrides: list[str], words: str) -> None:
    message = refused(*overrides)
    assert words in message and "\n" not in message


def test_a_start_position_tagged_with_rules_the_run_does_not_play_is_refused(tmp_path: Path) -> None:
    starts = tmp_path / "holes.txt"
    starts.write_text("l5t/1d3c1/r1p1w1e/7/7/7/E1W1P1R/1C3D1/T5L r 0 1 rules=keeps_rank\n")
    given = [f"train.selfplay.starts={starts}", "train.selfplay.starts_fraction=0.5"]
    message = refused(*given, "train.rules_mix=[default,enemy_rat]")
    assert "position 1: rules=keeps_rank is no rule set of train.rules_mix (default, enemy_rat)" in message
    assert "rules=keeps_rank differs from the rules the run plays" in refused(*given)
    conf = train_config.checked_config(train_config.compose_config(given + ["train.rules_mix=[default,keeps_rank]"]))
    assert conf.train.selfplay.start_positions[0].endswith(" rules=keeps_rank")


def test_a_rules_mix_composes_with_weights() -> None:
    conf = train_config.checked_config(
        train_config.compose_config(["train.rules_mix=[default,keeps_rank:2,dog_over_wolf:0.5]"])
    )
    assert conf.train.rules_mix == ["default", "keeps_rank:2", "dog_over_wolf:0.5"]


@pytest.mark.slow
def test_a_mixed_run_evaluates_per_rule_set_records_its_mix_and_resumes(tmp_path: Path) -> None:
    """train.rules_mix: each game's record names its rules, eval/<rules>/... per rule set of the mix, the mix in
    every checkpoint (state["rules"] its first rule set), and the run resumes."""
    mix = "train.rules_mix=[keeps_rank,default:2]"
    r = run_train(*TINY, f"out_dir={tmp_path}", "name=mixed", mix)
    assert r.returncode == 0, r.stderr[-3000:]
    run = tmp_path / "mixed"
    expected_mix = [
        {"name": "keeps_rank", "weight": 1.0, "rules": RuleSet(trapped_attacker="keeps_rank").to_dict()},
        {"name": "default", "weight": 2.0, "rules": RuleSet().to_dict()},
    ]
    for name in ("latest.pt", "best.pt", "iter_000002.pt"):
        state = load_checkpoint(run / name)
        assert state["rules_mix"] == expected_mix, name
        assert state["rules"] == expected_mix[0]["rules"], name
    games = list(read_jsonl(run / "games.jsonl"))
    assert len(games) == 8 and {g.extra["rules_name"] for g in games} <= {"keeps_rank", "default"}
    for g in games:
        assert g.rules == expected_mix[[m["name"] for m in expected_mix].index(g.extra["rules_name"])]["rules"]
        g.replay()  # every move legal under the game's own rules
    tags = scalars(run)
    for rules in ("keeps_rank", "default"):
        for key in ("score_random", "score_previous", "elo", "ladder_score"):
            assert [s for s, _ in tags[f"eval/{rules}/{key}"]] == [1, 2], (rules, key)
    assert [s for s, _ in tags["eval/elo"]] == [1, 2] and "eval/score_random" not in tags
    r = run_train(f"resume={run}", "train.iterations=3")
    assert r.returncode == 0, r.stderr[-3000:]
    state = load_checkpoint(run / "latest.pt")
    assert state["counters"]["iteration"] == 3 and state["rules_mix"] == expected_mix
    assert [s for s, _ in scalars(run)["eval/default/score_random"]] == [1, 2, 3]
    assert len(list(read_jsonl(run / "games.jsonl"))) == 12


@pytest.mark.slow
@pytest.mark.parametrize(
    "where",
    [[], ["train.workers=2", "train.inference.server=true", "train.inference.halves=2"]],
    ids=["inprocess", "served"],
)
def test_a_run_with_carry_over_records_each_game_once_and_resumes_with_new_games(
    tmp_path: Path, where: list[str]
) -> None:
    # Games carried over from iteration to iteration are numbered over the run: each iteration records
    # exactly its games, no index twice; a resumed run drops the games that were in play and starts new
    # ones after every game started before its checkpoint. In the trainer's process, and on served worker
    # processes (two halves each: four loops interleaving their indices).
    carry = [*TINY, *where, f"out_dir={tmp_path}", "name=carry", "train.selfplay.carry_over=true"]
    r = run_train(*carry, "train.eval.every=100")
    assert r.returncode == 0, r.stderr[-3000:]
    run_dir = tmp_path / "carry"
    before = list(read_jsonl(run_dir / "games.jsonl"))
    next_game = load_checkpoint(run_dir / "latest.pt")["counters"]["next_game"]
    r = run_train(f"resume={run_dir}", "train.iterations=3")
    assert r.returncode == 0, r.stderr[-3000:]
    games = list(read_jsonl(run_dir / "games.jsonl"))
    assert games[: len(before)] == before
    indices = [g.extra["game_index"] for g in games]
    assert len(indices) == len(set(indices)) == 3 * 4
    assert [g.extra["iteration"] for g in games] == [1] * 4 + [2] * 4 + [3] * 4
    assert max(indices[:8]) < next_game <= min(indices[8:])
    assert next_game > 8  # games were in play at the checkpoint


@pytest.mark.slow
def test_carry_over_on_ray_workers_is_refused_in_one_line(tmp_path: Path) -> None:
    on_ray = ["train.selfplay.carry_over=true", "train.workers=2", "train.worker_backend=ray"]
    r = run_train(*TINY, f"out_dir={tmp_path}", "name=refused", *on_ray)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "carry_over" in r.stderr


@pytest.mark.slow
def test_init_from_a_24_plane_network_widens_its_stem_and_computes_what_it_computed(tmp_path: Path) -> None:
    """`init=shipped:default-180` as the README gives it, and init= of any checkpoint stored before the rule
    planes (24 input planes): the new run's 32-plane network starts with the rule planes' weights 0, as a fresh
    network's, so on the default rules it answers as the 24-plane network did."""
    from agents.alphazero.net.checkpoint import load_model, save_checkpoint
    from agents.alphazero.net.network import NetworkConfig, build_network
    from envs.encoding import LEGACY_PLANES, N_PLANES
    from tests.support.positions import position_batch

    tiny = NetworkConfig(blocks=1, channels=8, value_hidden=8, policy_channels=2, input_planes=LEGACY_PLANES)
    torch.manual_seed(0)
    mine = tmp_path / "mine.pt"
    save_checkpoint(mine, {"model": build_network(tiny).state_dict(), "network": tiny.to_dict(), "rules": {}})
    obs, _ = position_batch(16)  # positions of a game under the default rules
    for init, model_group in (("shipped:default-180", "model=small"), (str(mine), "model=tiny")):
        overrides = [f"init={init}", "name=ft", f"out_dir={tmp_path}", model_group]
        run, conf = TrainingRun.open(train_config.compose_config(overrides), overrides)
        assert conf.model.input_planes == N_PLANES and run.init_from is not None
        widened = build_network(conf.model).eval()
        widened.load_state_dict(run.init_from["model"])
        old, _ = load_model(init)
        assert old.config.input_planes == LEGACY_PLANES
        stem = widened.stem[0].weight.detach()
        assert torch.equal(stem[:, :LEGACY_PLANES], old.stem[0].weight) and not stem[:, LEGACY_PLANES:].any()
        with torch.no_grad():
            for a, b in zip(widened(torch.from_numpy(obs)), old(torch.from_numpy(obs))):
                torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
        assert not (tmp_path / "ft").exists()  # nothing written before the run claims its directory


def test_init_from_a_smaller_network_grows_it_into_the_runs_shape_computing_what_it_computed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`init=` of a 1 x 8 network into a run of `model=small` (3 x 32, a global pool added): the run starts from
    the grown weights, which answer as the given network did; the log says what grew; the new parts come from
    the run's seed."""
    from agents.alphazero.net.checkpoint import load_model
    from agents.alphazero.net.network import NetworkConfig
    from tests.support.positions import position_batch

    narrow = NetworkConfig(blocks=1, channels=8)
    torch.manual_seed(0)
    given = tmp_path / "narrow.pt"
    save_checkpoint(given, {"model": build_network(narrow).state_dict(), "network": narrow.to_dict(), "rules": {}})
    old, _ = load_model(given)
    obs = torch.from_numpy(position_batch(16)[0])
    starts = []
    for seed in (0, 0, 1):
        overrides = [f"init={given}", "name=grown", f"out_dir={tmp_path}", "model=small", "model.global_pool=true"]
        with caplog.at_level(logging.INFO, logger="train"):
            run, conf = TrainingRun.open(train_config.compose_config([*overrides, f"seed={seed}"]), overrides)
        assert "grown in blocks, channels, global_pool into this run's network" in caplog.text
        assert run.init_from is not None and run.init_from["network"] == conf.model.to_dict()
        grown = build_network(conf.model).eval()
        grown.load_state_dict(run.init_from["model"])
        with torch.no_grad():
            for a, b in zip(grown(obs), old(obs)):
                torch.testing.assert_close(a, b)
        starts.append(run.init_from["model"]["tower.2.conv1.weight"])
    assert torch.equal(starts[0], starts[1]) and not torch.equal(starts[0], starts[2])
    assert not (tmp_path / "grown").exists()


def test_a_group_option_must_be_one_of_the_groups_files_and_a_group_one_the_script_has() -> None:
    """`model=schema` (the dataclass the group's files start from, not an option) and a group of train.py given
    to evaluate.py (`preset=smoke`) are refused in one line naming the options, or the script's groups."""
    from agents.arena import config as evaluate_config
    from envs.config import ConfigError

    for compose, override, group in (
        (train_config.compose_config, "model=schema", "model"),
        (train_config.compose_config, "+train=schema", "train"),
        (evaluate_config.compose_config, "rules=schema", "rules"),
    ):
        with pytest.raises(ConfigError) as caught:
            compose([override])
        options = ", ".join(group_options(group))
        assert (
            str(caught.value)
            == f"{override}: 'schema' is not an option of the config group {group!r}; the options are {options}"
        )
    for override in ("preset=smoke", "model=tiny", "+train=tiny"):
        with pytest.raises(
            ConfigError, match=rf"^{re.escape(override)}: evaluate.py has no config group '\w+' \(its groups: rules\)$"
        ):
            evaluate_config.compose_config([override])


@pytest.mark.slow
def test_help_lists_the_scripts_own_groups_and_their_options_only() -> None:
    """`--help` of train.py lists its five groups, of evaluate.py the rules group alone (not train.py's), each
    with the options its files give (never `schema`), then the composed config."""
    all_groups = ("mcts", "model", "preset", "rules", "train")
    for script, groups, key in (
        ("train.py", all_groups, "out_dir=checkpoints"),
        ("evaluate.py", ("rules",), "games_per_pair=20"),
    ):
        r = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and not r.stderr, r.stderr
        listed = {
            line.split(":")[0].strip(): line.split(":", 1)[1]
            for line in r.stdout.splitlines()
            if line.strip().split(":")[0] in all_groups and ", " in line
        }
        assert sorted(listed) == sorted(groups), (script, r.stdout)
        for group in groups:
            assert re.findall(r"[a-z_0-9]+", listed[group].split("(")[0]) == group_options(group), listed
        assert any(line.strip().startswith(f"{key} ") for line in r.stdout.splitlines())  # the composed config


@pytest.mark.slow
def test_help_gives_each_config_key_with_the_first_line_of_its_fields_docstring() -> None:
    """`--help` (agents.common.cli.script_help, in-process) writes every key of the composed config as ``key=value``
    with the first line of its dataclass field's docstring beside it, ``...`` where the docstring goes on;
    the `rules` keys with RuleSet's (their dataclass, RulesConfig, is made from it)."""
    from agents.arena import config as evaluate_config
    from agents.common.cli import script_help
    from envs.config import dotted_keys

    for prog, schema, compose, expected in (
        (
            "train.py",
            train_config.Config,
            train_config.compose_config,
            {
                "train.iterations=7": "Iterations of {self-play, learn, evaluate, checkpoint}; >= 1. ...",
                "rules.no_capture_draw=120": "Plies without capture that draw the game; 0 switches the rule off. "
                "0 to `COUNTER_LIMIT`.",
                "name=''": "Run name: the run directory is `<out_dir>/<name>` (default: az-<date>-<time>). One plain "
                "path ...",
                "train.eval.opponents=[random]": "The ladder: player specs (see envs/players.py); each gets "
                "eval/score_<spec>. The default is the ...",
            },
        ),
        (
            "evaluate.py",
            evaluate_config.EvaluateConfig,
            evaluate_config.compose_config,
            {
                "games_per_pair=20": "Games per pairing, played as colour-swapped pairs from the same opening; "
                "1 to 100000."
            },
        ),
    ):
        overrides = ["train.iterations=7", "train.eval.opponents=[random]"] if prog == "train.py" else []
        text = script_help(prog, "What it does.\n\nExamples.\n\nMore.", schema, compose(overrides))
        config = text.split("an unknown key is refused):\n")[1].split("\n\n")[0].splitlines()
        for setting, description in expected.items():
            assert any(re.fullmatch(rf"  {re.escape(setting)} +{re.escape(description)}", line) for line in config), (
                setting,
                config,
            )
        keys = dotted_keys(schema)
        leaves = [key for key in keys if not any(other.startswith(key + ".") for other in keys)]
        assert [line.split("=")[0].strip() for line in config] == leaves
        for key, line in zip(leaves, config):
            assert re.fullmatch(rf"  {re.escape(key)}=\S(.*?\S)? {{2,}}\S.*", line), line  # a description beside it
        assert "More." not in text

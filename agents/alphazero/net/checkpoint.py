"""Checkpoints: atomic, code-free (``torch.load(weights_only=True)``) snapshots.

A checkpoint is a dict of tensors and plain containers::

    format        "jungle-zero/1"
    model         state_dict of the network
    network       NetworkConfig as a dict (the shape; checked on load)
    rules         RuleSet as a dict (checked on load; with a mix, its first rule set)
    rules_mix     [{"name", "weight", "rules": RuleSet as a dict}, ...]: the rule sets a run with
                  ``train.rules_mix`` trained on (only such runs write it; `trained_rule_sets`)
    config        the full training config as a YAML string ("" if none)
    counters      {"iteration", "learner_steps", "positions", "games", ...}
    run_id        the id of the run that wrote it (agents.common.rundir; checkpoints of train.py)
    learner       optimizer + grad scaler state and step count   (training only)
    replay        replay buffer state (contents, or counters only)  (training only)
    rng           python / numpy / torch / CUDA generator states     (training only)
    extra         anything else plain (evaluation history, Elo, reference model...)

A run directory ``checkpoints/<run>/`` holds ``latest.pt`` (everything,
rewritten each iteration), ``best.pt`` (model only, the best evaluation so
far) and one small ``iter_NNNNNN.pt`` per checkpointed iteration (model
only). Every file is written with a temp file and a rename, so a crash never
leaves a half-written ``latest.pt``. No checkpoint is written, or loaded, with a NaN or an
infinity in any tensor, and a loaded one's stated network shape must fit its tensors before any
network is built (`check_weights`).

Only a ``latest.pt`` holds the training state a run resumes from
(`require_training_state`), and a resumed run writes to that file's own
directory (`resume_dir`): resuming a copy kept elsewhere never writes to the
run it was copied from. The weights of any checkpoint can start a new run
(``train.py init=<file>``) of its network shape or a larger one (`grown_network`).
"""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
import torch

from agents.alphazero.net import shipped
from agents.alphazero.net.grow import grow_weights, growth_of
from agents.alphazero.net.network import JungleNet, NetworkConfig, build_network
from agents.alphazero.search.config import MCTSConfig
from agents.common.io import PathLike, atomic_write_bytes
from envs.rules import DEFAULT_RULES, RuleSet, RuleSetError, load_rules, rule_set_names

FORMAT = "jungle-zero/1"
ZIP_MAGIC = b"PK\x03\x04"
"""The first bytes of every file torch.save writes (a zip archive)."""
LATEST = "latest.pt"
BEST = "best.pt"
TRAINING_KEYS = ("learner", "replay", "rng", "counters", "extra")
"""What a checkpoint needs beyond the weights for a run to resume from it (latest.pt has them all)."""


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or does not fit (names the path)."""


def save_checkpoint(path: PathLike, state: Mapping[str, Any]) -> Path:
    """Write `state` to `path` atomically (temp file, fsync, rename).

    CheckpointError, writing nothing, when a floating-point tensor anywhere in `state` holds a NaN or an
    infinity: a diverged network is never checkpointed."""
    path = Path(path)
    bad = nonfinite_entry(state)
    if bad is not None:
        raise CheckpointError(
            f"not writing {str(path)!r}: its entry {bad} holds NaN or infinity (the training has diverged)"
        )
    buf = io.BytesIO()
    torch.save(dict(state, format=FORMAT), buf)
    atomic_write_bytes(path, buf.getvalue())
    return path


def resolve_checkpoint_path(spec: PathLike, root: PathLike = "checkpoints") -> Path:
    """A file, a run directory (its `latest.pt`), a run name under `root`, or a shipped network
    (``shipped:<name>``, `agents.alphazero.net.shipped`, its bytes checked against the manifest) -> the file path.

    Raises CheckpointError naming what was looked for when nothing exists.
    """
    if str(spec).startswith(shipped.PREFIX):
        try:
            return shipped.checked_file(str(spec))  # its bytes are the manifest's (sha256)
        except shipped.ShippedError as e:
            raise CheckpointError(str(e)) from None
    p = Path(spec)
    candidates = list(dict.fromkeys([p, p / LATEST, Path(root) / p / LATEST]))
    for c in candidates:
        if c.is_file():
            return c
    raise CheckpointError(
        f"no checkpoint at {str(spec)!r}: it does not exist (looked for {', '.join(str(c) for c in candidates)})"
    )


def load_checkpoint(path: PathLike) -> dict[str, Any]:
    """Read a checkpoint with ``weights_only=True`` (it can never run code).

    A missing, truncated or corrupt file raises CheckpointError naming the path.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint file {str(path)!r} does not exist")
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise CheckpointError(f"checkpoint {str(path)!r} cannot be read: {e.strerror}") from None
    if magic != ZIP_MAGIC:  # torch.save writes a zip archive; anything else is no checkpoint of ours
        raise CheckpointError(
            f"{str(path)!r} is not a Jungle Zero checkpoint: it is not a PyTorch file "
            f"(a checkpoint is the zip archive torch.save writes)"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises RuntimeError, UnpicklingError, EOFError... on bad bytes
        text = str(e).strip()
        if "weights_only" in text or "Weights only load failed" in text:  # never retried unsafely: say why
            raise CheckpointError(
                f"{str(path)!r} cannot be read as a Jungle Zero checkpoint: it holds Python "
                f"objects other than tensors and plain containers, which are never loaded"
            ) from None
        first = text.splitlines()[0] if text else type(e).__name__
        raise CheckpointError(f"checkpoint {str(path)!r} is corrupt or truncated and cannot be read: {first}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{str(path)!r} is not a Jungle Zero checkpoint (format {found!r}, expected {FORMAT!r})")
    for key in ("model", "network", "rules"):
        if key not in state:
            raise CheckpointError(f"checkpoint {str(path)!r} lacks its {key!r} entry")
    bad = nonfinite_entry(state)
    if bad is not None:
        raise CheckpointError(
            f"checkpoint {str(path)!r} holds NaN or infinity in {bad}: it was written by a "
            "diverged training and cannot be played or trained on"
        )
    return state


def nonfinite_entry(obj: Any, where: str = "") -> Optional[str]:
    """The dotted name of the first floating-point tensor in `obj` (dicts and lists walked) holding a NaN or
    an infinity, or None when every one is finite."""
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point() and obj.numel() and not bool(torch.isfinite(obj).all()):
            return where or "the state"
        return None
    if isinstance(obj, Mapping):
        items: Any = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        return None
    for key, value in items:
        found = nonfinite_entry(value, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


def require_training_state(state: Mapping[str, Any], path: PathLike) -> None:
    """Raise CheckpointError unless `state` holds everything a run resumes from (a latest.pt does;
    best.pt, iter_*.pt and shipped networks hold weights only)."""
    if any(k not in state for k in TRAINING_KEYS):
        raise CheckpointError(
            f"{str(path)!r} holds network weights only (no optimizer, replay buffer or random generator states), "
            f"so no run can resume from it; "
            f"resume= takes a run name, a run directory or its {LATEST}. To start a new run from these weights: "
            f"python train.py init={path}"
        )


def resume_dir(path: PathLike, new_run: Optional[PathLike] = None) -> Path:
    """The directory a run resumed from checkpoint `path` writes to.

    Without `new_run`: the directory of `path`, which must be a ``latest.pt``; any other file (a copy kept
    elsewhere, a backup beside it) is refused, since continuing the run its config names would rewind that run.
    With `new_run` (train.py's ``name=``): `path`'s own directory, or a new run directory that holds no
    checkpoint yet (the copy then starts a branch there and the original run is left alone)."""
    path = Path(path)
    home = path.parent if path.name == LATEST else None
    if new_run is None:
        if home is None:
            raise CheckpointError(
                f"{str(path)!r} is not a run directory's {LATEST}: resuming it in place could rewind the run it was "
                f"copied from. Continue it as a new run with resume={path} name=<new name>, or resume the run "
                f"itself (resume=<run name or directory>)"
            )
        return home
    target = Path(new_run)
    if home is not None and target.resolve() == home.resolve():
        return home
    held = sorted(p.name for p in target.glob("*.pt")) if target.is_dir() else []
    if held:
        raise CheckpointError(
            f"the run directory {str(target)!r} already holds checkpoints ({', '.join(held)}); "
            f"a run resumed from {str(path)!r} needs a new name"
        )
    return target


def grown_network(
    state: Mapping[str, Any], path: PathLike, network: NetworkConfig, seed: int
) -> tuple[dict[str, Any], list[str]]:
    """`state` made to start a new run of shape `network` (``train.py init=``). A checkpoint of a smaller network
    (fewer blocks, channels or input planes, no global pool or survival head where `network` has one) is grown into
    `network`'s shape computing what it computed on any position, its new parts drawn from `seed`
    (`agents.alphazero.net.grow`); one of the same shape comes back as it is. With it, the fields that grew
    (`growth_of`; [] for none). CheckpointError when its weights do
    not fit its stated shape (`check_weights`), or when its shape cannot grow into `network` (naming why)."""
    stored = check_weights(state, path)
    try:
        grown = growth_of(stored, network)
    except ValueError as e:
        diff = _differences(stored.to_dict(), network.to_dict())
        raise CheckpointError(
            f"checkpoint {str(path)!r} holds another network shape ({diff}), which cannot start a run of this one: {e}"
        ) from None
    if not grown:
        return dict(state), grown
    weights = grow_weights(state["model"], stored, network, seed)
    return dict(state, model=weights, network=network.to_dict()), grown


def check_compatible(
    state: Mapping[str, Any],
    path: PathLike,
    *,
    network: Optional[NetworkConfig] = None,
    rules: Optional[RuleSet] = None,
) -> None:
    """Raise CheckpointError when the checkpoint's network shape or rule set differ from the given ones."""
    if network is not None:
        try:  # through NetworkConfig: a key newer than the checkpoint counts at its default (its time's, for planes)
            stored = NetworkConfig.from_stored(dict(state["network"])).to_dict()
        except ValueError as e:
            raise CheckpointError(f"checkpoint {str(path)!r} holds an unreadable network shape: {e}") from None
        diff = _differences(stored, network.to_dict())
        if diff:
            raise CheckpointError(f"checkpoint {str(path)!r} holds another network shape ({diff})")
    if rules is not None:
        trained = trained_rule_sets(state, path)
        if all(r != rules for _, r in trained):
            raise CheckpointError(rules_refusal(trained, rules, path))


def rules_refusal(trained: list[tuple[str, RuleSet]], rules: RuleSet, path: PathLike) -> str:
    """The one line refusing `rules` for a checkpoint trained on `trained` (`trained_rule_sets`): the mix named,
    and how `rules` differ from its first rule set."""
    diff = _differences(trained[0][1].to_dict(), rules.to_dict())
    names = ", ".join(name for name, _ in trained)
    mix = f"its rule set {names}" if len(trained) == 1 else f"its mix of rule sets {names}"
    return f"checkpoint {str(path)!r} was trained under another rule set ({mix}; {diff})"


def _differences(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> str:
    """`key: checkpoint X vs wanted Y` for every key whose values differ ('' when none do)."""
    return ", ".join(
        f"{k}: checkpoint {theirs.get(k)!r} vs wanted {ours.get(k)!r}"
        for k in sorted(set(theirs) | set(ours))
        if theirs.get(k) != ours.get(k)
    )


def load_model(
    path: PathLike,
    *,
    rules: Optional[RuleSet] = None,
    network: Optional[NetworkConfig] = None,
    device: torch.device | str = "cpu",
) -> tuple[JungleNet, dict[str, Any]]:
    """The network stored in a checkpoint (eval mode, on `device`) and the checkpoint dict.

    When `rules` / `network` are given they must match the checkpoint's.
    """
    path = resolve_checkpoint_path(path)
    state = load_checkpoint(path)
    check_compatible(state, path, network=network, rules=rules)
    shape = check_weights(state, path)
    try:
        model = build_network(shape)
        model.load_state_dict(state["model"])
    except (ValueError, RuntimeError) as e:
        raise CheckpointError(
            f"checkpoint {str(path)!r}: the stored weights do not fit the stored shape: {e}"
        ) from None
    model.to(device).eval()
    return model, state


def stored_config(config_yaml: Any, path: PathLike) -> Any:
    """A checkpoint's stored training config (its ``config`` entry, YAML written by OmegaConf) as an
    OmegaConf mapping; CheckpointError naming the path when it is not a YAML mapping."""
    from omegaconf import DictConfig, OmegaConf

    if not isinstance(config_yaml, str):
        raise CheckpointError(
            f"checkpoint {str(path)!r}: its stored config is a {type(config_yaml).__name__}, not YAML text"
        )
    try:
        node = OmegaConf.create(config_yaml)
    except Exception as e:  # yaml's parser and OmegaConf raise many kinds
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"checkpoint {str(path)!r}: its stored config is not valid YAML ({first})") from None
    if not isinstance(node, DictConfig):
        raise CheckpointError(f"checkpoint {str(path)!r}: its stored config is not a mapping of keys")
    return node


def check_weights(state: Mapping[str, Any], path: PathLike) -> NetworkConfig:
    """The network shape a checkpoint states, checked before anything is built: within `NetworkConfig`'s
    bounds, and matching the stored tensors name for name and shape for shape (the expected shapes come
    from a network on the meta device, which allocates nothing). CheckpointError naming the difference."""
    try:
        shape = NetworkConfig.from_stored(dict(state["network"]))
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"checkpoint {str(path)!r} holds an unreadable network shape: {e}") from None
    weights = state["model"]
    if not isinstance(weights, Mapping) or not all(isinstance(v, torch.Tensor) for v in weights.values()):
        raise CheckpointError(f"checkpoint {str(path)!r}: its model entry is not a mapping of tensors")
    with torch.device("meta"):
        expected = {k: tuple(v.shape) for k, v in build_network(shape).state_dict().items()}
    stored = {k: tuple(v.shape) for k, v in weights.items()}
    missing, unexpected = sorted(set(expected) - set(stored)), sorted(set(stored) - set(expected))
    wrong = [k for k in expected if k in stored and stored[k] != expected[k]]
    if missing or unexpected or wrong:
        parts = (
            ([f"missing {', '.join(missing[:3])}"] if missing else [])
            + ([f"unexpected {', '.join(unexpected[:3])}"] if unexpected else [])
            + ([f"{k} is {list(stored[k])}, not {list(expected[k])}" for k in wrong[:3]])
        )
        raise CheckpointError(
            f"checkpoint {str(path)!r}: the stored weights do not fit the stated shape ({shape}): {'; '.join(parts)}"
        )
    return shape


def stored_mcts(config_yaml: Any, path: str) -> MCTSConfig:
    """The search settings of the training run (defaults when the checkpoint holds none); CheckpointError
    naming the file when its stored config is not YAML or its search settings are not valid. A config stored
    before the search settings were split by algorithm (``mcts.gumbel_max_actions``) reads as it meant
    (`MCTSConfig.from_dict`)."""
    from omegaconf import OmegaConf

    if not config_yaml:
        return MCTSConfig()
    node = stored_config(config_yaml, path)
    if "mcts" not in node:
        return MCTSConfig()
    try:
        return MCTSConfig.from_dict(OmegaConf.to_container(node.mcts))  # type: ignore[arg-type]
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"checkpoint {path!r}: its stored search settings are not valid: {e}") from None


def rules_of(state: Mapping[str, Any]) -> RuleSet:
    return RuleSet.from_dict(dict(state["rules"]))


CUSTOM_RULES = "custom"
"""What `rule_set_name` calls rules that no set of `configs/rules/` equals."""


def rule_set_name(rules: RuleSet) -> str:
    """The name of the set of `configs/rules/` that equals `rules` (``default`` first), else `CUSTOM_RULES`."""
    if rules == DEFAULT_RULES:
        return "default"
    for name in rule_set_names():
        try:
            if load_rules(name) == rules:
                return name
        except RuleSetError:
            continue
    return CUSTOM_RULES


def trained_rule_sets(state: Mapping[str, Any], path: PathLike = "") -> list[tuple[str, RuleSet]]:
    """The (name, RuleSet) pairs a checkpoint was trained on, in the order of its mix: its ``rules_mix`` when
    it has one (a run with ``train.rules_mix``), else its one rule set named by `rule_set_name`. CheckpointError
    naming the file when the mix is malformed."""
    mix = state.get("rules_mix")
    if mix is None:
        rules = rules_of(state)
        return [(rule_set_name(rules), rules)]
    where = f"checkpoint {str(path)!r}: its rules_mix" if path else "a checkpoint's rules_mix"
    if not isinstance(mix, (list, tuple)) or not mix:
        raise CheckpointError(f"{where} is not a non-empty list of rule sets")
    trained = []
    for entry in mix:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("rules"), Mapping):
            raise CheckpointError(f"{where} holds {entry!r}, not a mapping with name, weight and rules")
        try:
            rules = RuleSet.from_dict(dict(entry["rules"]))
        except RuleSetError as e:
            raise CheckpointError(f"{where}: {e}") from None
        trained.append((str(entry.get("name") or rule_set_name(rules)), rules))
    return trained


# -- random generator states ---------------------------------------------------------------
def rng_state() -> dict[str, Any]:
    """Python, numpy (global), torch and CUDA generator states as tensors/plain containers."""
    np_state = np.random.get_state(legacy=False)
    assert isinstance(np_state, dict)
    np_plain = dict(np_state)
    np_plain["state"] = {
        "key": torch.from_numpy(np_state["state"]["key"].astype(np.int64)),
        "pos": int(np_state["state"]["pos"]),
    }
    state: dict[str, Any] = {"python": _to_plain(random.getstate()), "numpy": np_plain, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore what `rng_state` saved."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np_state = dict(state["numpy"])
    np_state["state"] = {
        "key": state["numpy"]["state"]["key"].numpy().astype(np.uint32),
        "pos": int(state["numpy"]["state"]["pos"]),
    }
    np.random.set_state(np_state)
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _to_plain(obj: Any) -> Any:
    if isinstance(obj, tuple):
        return [_to_plain(x) for x in obj]
    return obj

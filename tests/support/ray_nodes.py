"""A two-node Ray cluster on this machine, in a loopback-only network namespace, for one scenario.

    python -m tests.support.ray_nodes SCENARIO OUT.json     # run by `run_two_nodes`, inside the namespace

Starts a head node (custom resource ``node_a``) and a second node (``node_b``), two CPUs each, both at
127.0.0.1 (`agents.common.loopback`), runs the scenario function in a driver connected to them, writes what
it returns as JSON, and stops both nodes, whatever happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable

from agents.common.loopback import listening_addresses, run_on_loopback
from tests.support import ROOT

ADDRESS = "127.0.0.1:6379"
"""The head's address inside the namespace (the namespace is new, so the default port is free)."""
NODE_RESOURCES = ("node_a", "node_b")
OBJECT_STORE_BYTES = 80_000_000


def ray_env() -> dict[str, str]:
    """The environment of the Ray commands: no usage report, no token file written under the home."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled", PYTHONPATH=path)


def ray_cli(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "ray.scripts.scripts", *args],
        check=True,
        env=ray_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def start_nodes(temp_dir: str) -> None:
    # Two CPUs a node: an inference server and a self-play actor.
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=2", f"--object-store-memory={OBJECT_STORE_BYTES}"]
    ray_cli(
        "start",
        "--head",
        f"--port={ADDRESS.rpartition(':')[2]}",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
        f"--resources={json.dumps({NODE_RESOURCES[0]: 1})}",
        *common,
    )
    ray_cli("start", f"--address={ADDRESS}", f"--resources={json.dumps({NODE_RESOURCES[1]: 1})}", *common)


def node_names(ray: Any) -> dict[str, str]:
    """Node id -> the custom resource that names the node (``node_a``, ``node_b``)."""
    return {n["NodeID"]: next(k for k in n["Resources"] if k in NODE_RESOURCES) for n in ray.nodes() if n["Alive"]}


def scenario_serving() -> dict[str, Any]:
    """Two served self-play actors over the two nodes: where each actor and its server ran (asked of the actors),
    the games they played, and the games of the in-process loop for the same seed and weights."""
    import ray
    import torch

    from agents.alphazero.distributed.pools import make_selfplay_pool
    from agents.alphazero.distributed.settings import InferenceSettings
    from agents.alphazero.net.network import build_network
    from agents.alphazero.net.runtime import make_evaluator
    from agents.alphazero.selfplay.games import play_games
    from tests.agents.alphazero.test_inference_service import RULES, TINY, settings

    torch.set_num_threads(1)
    torch.manual_seed(6)
    net = build_network(TINY)
    s = settings()
    here = play_games(make_evaluator(net, "cpu", "fp32"), s.selfplay, mcts=s.mcts, rules=RULES, num_games=4, seed=3)
    ray.init(address=ADDRESS, log_to_driver=False)
    try:
        with make_selfplay_pool("ray", 2, s, inference=InferenceSettings(), address=ADDRESS) as pool:
            where = pool.where()
            there = pool.play(net.state_dict(), seed=3, num_games=4)
            counts = pool.server_counts
        names = node_names(ray)
    finally:
        ray.shutdown()
    return {
        "where": [[names[a], names[b]] for a, b in where],
        "servers": sorted(names[n] for n, _ in pool.placement.servers),
        "positions_served": counts["positions"],
        "games": [r.to_json() for r in there.records],
        "in_process": [r.to_json() for r in here.records],
        "values": [there.value.tolist(), here.value.tolist()],
        "listening": sorted(listening_addresses()),
    }


SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {"serving": scenario_serving}


def main(scenario: str, out: str) -> None:
    temp_dir = tempfile.mkdtemp(prefix="ray-")  # short: Ray's socket paths live under it
    result: dict[str, Any]
    try:
        start_nodes(temp_dir)
        result = SCENARIOS[scenario]()
    except subprocess.CalledProcessError as e:
        result = {"error": f"ray {' '.join(e.cmd[3:])} failed: {e.stderr}"}
    except Exception:
        result = {"error": traceback.format_exc()}
    finally:
        subprocess.run(
            [sys.executable, "-m", "ray.scripts.scripts", "stop", "--force"],
            env=ray_env(),
            capture_output=True,
        )
    Path(out).write_text(json.dumps(result))


def run_two_nodes(scenario: str, tmp_path: Path, timeout: float = 300) -> dict[str, Any]:
    """`scenario` run on a fresh two-node cluster in a loopback-only namespace: what it returned."""
    out = tmp_path / f"{scenario}.json"
    done = run_on_loopback(
        [sys.executable, "-m", "tests.support.ray_nodes", scenario, str(out)],
        timeout=timeout,
        env=ray_env(),
        cwd=str(ROOT),
    )
    assert out.exists(), f"the scenario wrote nothing (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    result = json.loads(out.read_text())
    assert "error" not in result, result["error"]
    return result


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Per-node serving on Ray: the self-play actors spread over the nodes, each served by a server on its own node.

`place` is checked as a function; the pool runs on the part of Ray's API it uses, in this process
(`tests.support.fake_ray`, a cluster of named nodes). Real nodes: tests/agents/alphazero/test_ray_cluster.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from agents.alphazero.distributed.inference import WorkerDiedError
from agents.alphazero.distributed.pools import Placement, RayNode, make_selfplay_pool, place
from agents.alphazero.distributed.settings import InferenceSettings, WorkerBackendError
from agents.alphazero.net.network import build_network
from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.selfplay.games import play_games
from tests.agents.alphazero.test_inference_service import RULES, TINY, assert_same_games, settings
from tests.support.fake_ray import ThreadedRay, node
from tests.support.torch_threads import one_torch_thread  # noqa: F401 (autouse: one torch thread, as in the workers)

CPU = InferenceSettings()
CUDA = InferenceSettings(device=torch.device("cuda", 0))


def test_cpu_serving_puts_one_server_on_each_node_and_its_actors_beside_it() -> None:
    nodes = [RayNode("a", 3, 0), RayNode("b", 3, 0)]
    assert place(nodes, 4, CPU) == Placement(
        servers=(("a", "cpu"), ("b", "cpu")), workers=(("a", 0), ("a", 0), ("b", 1), ("b", 1))
    )


def test_gpu_serving_puts_a_server_on_each_gpu_and_leaves_cpu_only_nodes_their_own_networks() -> None:
    nodes = [RayNode("cpu-node", 4, 0), RayNode("gpu-node", 4, 2)]
    p = place(nodes, 6, CUDA)
    assert p.servers == (("gpu-node", "cuda:0"), ("gpu-node", "cuda:0"))  # each Ray GPU actor sees its GPU as 0
    # Room after the servers: 4 CPUs and 2: the workers split 4 to 2, the GPU node's round robin over its servers.
    assert p.workers == (*[("cpu-node", None)] * 4, ("gpu-node", 0), ("gpu-node", 1))


def test_without_a_server_the_workers_spread_by_cpus_and_a_node_without_workers_gets_no_server() -> None:
    nodes = [RayNode("a", 1, 0), RayNode("b", 8, 0), RayNode("c", 3, 0)]
    assert place(nodes, 4, None).workers == (("b", None), ("b", None), ("b", None), ("c", None))
    # With a server each: room 0, 7 and 2; both workers go to b, and a and c, without workers, get no server.
    assert place(nodes, 2, CPU) == Placement(servers=(("b", "cpu"),), workers=(("b", 0), ("b", 0)))


def test_actors_that_do_not_fit_the_cluster_are_refused_in_one_line() -> None:
    with pytest.raises(WorkerBackendError) as e:
        place([RayNode("a", 2, 0), RayNode("b", 1, 0)], 2, CPU)
    assert str(e.value) == (
        "2 self-play actors do not fit the Ray cluster (2 CPUs, 1 CPU): each actor takes one CPU "
        "and each inference server one CPU on its node"
    )
    assert "\n" not in str(e.value)


def two_nodes(monkeypatch: pytest.MonkeyPatch) -> ThreadedRay:
    import agents.alphazero.distributed.workers as workers

    fake = ThreadedRay([node("node-a", cpus=3), node("node-b", cpus=3), node("node-gone", cpus=8, alive=False)])
    monkeypatch.setattr(workers, "import_ray", lambda: fake)
    return fake


@pytest.mark.slow
def test_each_nodes_actors_are_served_by_their_own_nodes_server_and_play_the_in_process_games(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = two_nodes(monkeypatch)
    s = replace(settings(), threads=0)  # the actors share this process's torch threads
    torch.manual_seed(6)
    net = build_network(TINY)
    here = play_games(make_evaluator(net, "cpu", "fp32"), s.selfplay, mcts=s.mcts, rules=RULES, num_games=6, seed=3)
    with make_selfplay_pool("ray", 4, s, inference=CPU) as pool:
        assert pool.where() == [("node-a", "node-a"), ("node-a", "node-a"), ("node-b", "node-b"), ("node-b", "node-b")]
        there = pool.play(net.state_dict(), seed=3, num_games=6)
        assert pool.server_counts["positions"] > 0 and pool.server_counts["batches"] > 0
    assert_same_games(there, here)
    # Two servers and four actors, each asked for the node it runs on; every one of them killed at the end.
    assert fake.placed == ["node-a", "node-b", "node-a", "node-a", "node-b", "node-b"]
    assert (fake.killed, fake.initialized) == (6, False)


def test_a_dead_actor_is_named_with_its_node(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = two_nodes(monkeypatch)
    with pytest.raises(WorkerDiedError) as died:
        with make_selfplay_pool("ray", 4, settings(), inference=CPU) as pool:
            fake.actors[-1].dead = True  # self-play worker 3, on the second node
            pool.play(build_network(TINY).state_dict(), seed=3, num_games=4)
    assert str(died.value).startswith("self-play worker 3 on node 1 (a Ray actor) died: ")
    assert fake.killed == 6 and not fake.initialized

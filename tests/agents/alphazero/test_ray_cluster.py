"""A real two-node Ray cluster on this machine: per-node serving, with nothing listening beyond 127.0.0.1.

The nodes (a head with the custom resource ``node_a``, a second node with ``node_b``, started with
``ray start``) run in a network namespace whose only interface is the loopback (`agents.common.loopback`):
Ray binds its servers to every interface it finds, so there the only one is 127.0.0.1. Needs Ray (the
`distributed` extra, which the test command installs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.ray_nodes import run_two_nodes


@pytest.mark.slow
def test_each_nodes_actor_is_served_on_its_own_node_and_the_games_are_the_in_process_loops(tmp_path: Path) -> None:
    r = run_two_nodes("serving", tmp_path)
    # One actor a node (two CPUs each: the server takes one), each served by the server of its own node.
    assert r["servers"] == ["node_a", "node_b"]
    assert sorted(r["where"]) == [["node_a", "node_a"], ["node_b", "node_b"]]
    assert r["positions_served"] > 0
    # The games of the in-process loop for the same seed and weights, move by move.
    assert r["games"] == r["in_process"]
    assert r["values"][0] == pytest.approx(r["values"][1], abs=1e-5)
    # Everything the two nodes, the actors and the driver opened listens on the loopback address alone.
    assert set(r["listening"]) <= {"127.0.0.1", "[::ffff:127.0.0.1]"}

"""The checkpoint player's search options: a time budget per move and several leaves per network call."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf

from agents.alphazero.net import shipped
from agents.alphazero.player.player import DEFAULT_CACHE, TIMED_C_SCALE, TIMED_MAX_ACTIONS, CheckpointPlayer
from agents.alphazero.search.base import TemperedEvaluator
from agents.alphazero.search.tree import ROOT
from envs import Board, RuleSet
from envs.players import PlayerSpecError, make_player
from envs.tablebase import ROOT_ENV, Tablebase
from tests import support

SHIPPED = support.ROOT / "checkpoints" / "shipped" / "results-only-60.pt"
# Blue's Rat on d2 is next to Red's den: every Red move but the capture Ed3xd2 lets it enter d1.
STOP_DEN_ENTRY = "6e/7/7/7/C6/7/3E3/3r3/7 r 0 1"


@pytest.mark.slow
@pytest.mark.parametrize(("budget", "rounds"), [(0.25, 4), (0.625, 10)])
def test_time_budget_is_kept(monkeypatch: pytest.MonkeyPatch, budget: float, rounds: int) -> None:
    """A search by time runs whole rounds of `sims` simulations and starts one only while it would end within
    the budget: with each round taking 1/16 s on the player's clock, a budget of 1/4 s is 4 rounds and 5/8 s
    is 10, never a round that would overrun it."""
    import agents.alphazero.player.player as player_module

    player = make_player(f"checkpoint:path={SHIPPED},time={budget},sims=16,leaf_batch=8", seed=0)
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(player_module, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    search = player.search.search

    def a_round_takes_a_sixteenth(*args: Any, **kwargs: Any) -> Any:
        clock.now += 1 / 16
        return search(*args, **kwargs)

    monkeypatch.setattr(player.search, "search", a_round_takes_a_sixteenth)
    board = Board()
    move = player.select_move(board)
    assert board.is_legal(move)
    assert player.last_simulations == 16 * rounds and player.last_rounds == rounds
    assert clock.now <= budget


def test_leaf_batching_player_stops_a_den_entry() -> None:
    board = Board.from_jfen(STOP_DEN_ENTRY)
    for spec in (
        f"checkpoint:path={SHIPPED},sims=128,leaf_batch=16",
        f"checkpoint:path={SHIPPED},time=0.3,leaf_batch=8",
    ):
        move = make_player(spec, seed=0).select_move(board)
        assert str(move) == "d3d2", spec


def test_max_actions_overrides_the_runs_own_search() -> None:
    """`max_actions` sets Gumbel's considered root actions; without it the run's stored value is kept."""
    stored = make_player(f"checkpoint:path={SHIPPED},sims=32", seed=0)
    narrow = make_player(f"checkpoint:path={SHIPPED},sims=32,max_actions=4", seed=0)
    assert narrow.mcts.gumbel.max_actions == 4
    assert stored.mcts.gumbel.max_actions != 4
    # Sequential halving over 4 root actions visits exactly 4 of the start's children; 16 actions, 16.
    for player, considered in ((narrow, 4), (stored, 16)):
        player.select_move(Board())
        tree = player.search.tree
        first, count = int(tree.first_child[0, ROOT]), int(tree.num_children[0, ROOT])
        assert int((tree.visits[0, first : first + count] > 0).sum()) == considered
    move = narrow.select_move(Board.from_jfen(STOP_DEN_ENTRY))
    assert str(move) == "d3d2"


def _grandchildren_visited(player: CheckpointPlayer) -> int:
    tree = player.search.tree
    first, count = int(tree.first_child[0, ROOT]), int(tree.num_children[0, ROOT])
    seen = 0
    for child in range(first, first + count):
        if tree.visits[0, child] > 0 and tree.first_child[0, child] >= 0:
            below, n = int(tree.first_child[0, child]), int(tree.num_children[0, child])
            seen += int((tree.visits[0, below : below + n] > 0).sum())
    return seen


@pytest.mark.slow
def test_c_scale_overrides_the_runs_own_search() -> None:
    """`c_scale` sets Gumbel's sigma scale. A smaller one weighs Q less against the prior below the root,
    so a long search spreads over more of the opponent's replies instead of following the best Q found.
    A search by time takes the timed defaults unless told otherwise."""
    stored = make_player(f"checkpoint:path={SHIPPED},sims=512,max_actions=4", seed=0)
    gentle = make_player(f"checkpoint:path={SHIPPED},sims=512,max_actions=4,c_scale=0.1", seed=0)
    assert stored.mcts.gumbel.c_scale == 1.0 and gentle.mcts.gumbel.c_scale == 0.1
    for player in (stored, gentle):
        player.select_move(Board())
    assert _grandchildren_visited(gentle) > _grandchildren_visited(stored)
    timed = make_player(f"checkpoint:path={SHIPPED},time=0.3,leaf_batch=8", seed=0)
    assert (timed.mcts.gumbel.c_scale, timed.mcts.gumbel.max_actions) == (TIMED_C_SCALE, TIMED_MAX_ACTIONS)
    assert str(timed.select_move(Board.from_jfen(STOP_DEN_ENTRY))) == "d3d2"
    chosen = make_player(f"checkpoint:path={SHIPPED},time=0.3,c_scale=2,max_actions=4", seed=0)
    assert (chosen.mcts.gumbel.c_scale, chosen.mcts.gumbel.max_actions) == (2.0, 4)


def test_a_policy_temperature_spreads_the_search_over_more_replies() -> None:
    """`policy_temperature` above 1 flattens the priors at every node: at the same simulations the search
    visits more of the opponent's replies than with the network's own priors (1, the default, searches the
    network's answers as they are). The move found against a den entry stays the capture."""
    plain = make_player(f"checkpoint:path={SHIPPED},sims=512,max_actions=4", seed=0)
    hot = make_player(f"checkpoint:path={SHIPPED},sims=512,max_actions=4,policy_temperature=3", seed=0)
    assert plain.options.policy_temperature == 1.0
    assert plain.cache is not None and hot.cache is not None and plain.cache.evaluator is plain.evaluator
    assert isinstance(hot.cache.evaluator, TemperedEvaluator) and hot.cache.evaluator.evaluator is hot.evaluator
    for player in (plain, hot):
        player.select_move(Board())
    assert _grandchildren_visited(hot) > _grandchildren_visited(plain)
    spec = f"checkpoint:path={SHIPPED},time=0.3,leaf_batch=8,policy_temperature=1.5"
    assert str(make_player(spec, seed=0).select_move(Board.from_jfen(STOP_DEN_ENTRY))) == "d3d2"


def _stored_mcts(net: shipped.ShippedNetwork) -> dict:
    config = torch.load(shipped.SHIPPED_DIR / net.file, weights_only=True)["config"]
    stored = OmegaConf.to_container(OmegaConf.create(config).mcts)
    assert isinstance(stored, dict)
    return stored


FLAT = [net for net in shipped.networks() if "gumbel" not in _stored_mcts(net)]


def test_the_networks_shipped_before_the_split_are_the_flat_ones() -> None:
    # The six networks shipped before the search settings were split by algorithm store them flat; the later ones
    # (variants-40, random6-120) store the nested layout, and their players read it as it is.
    assert {net.name for net in FLAT} >= {"default-60", "default-120", "default-180"} and len(FLAT) == 6
    for net in shipped.networks():
        if net not in FLAT:
            stored = _stored_mcts(net)
            mcts = make_player(f"checkpoint:path=shipped:{net.name},sims=8,device=cpu", seed=0).mcts
            assert mcts.gumbel.max_actions == stored["gumbel"]["max_actions"] and mcts.algorithm == stored["algorithm"]


@pytest.mark.parametrize("net", FLAT, ids=lambda net: net.name)
def test_a_shipped_networks_flat_search_settings_are_read_into_their_nodes(net: shipped.ShippedNetwork) -> None:
    """The shipped networks' configs were stored before the search settings were split by algorithm: the player
    reads each flat key (``gumbel_max_actions``, ``c_puct``...) into its node, the common ones as they are."""
    stored = _stored_mcts(net)
    assert "gumbel_max_actions" in stored and "gumbel" not in stored
    player = make_player(f"checkpoint:path=shipped:{net.name},sims=8,device=cpu", seed=0)
    mcts = player.mcts
    read = {
        **{
            key: getattr(mcts.puct, key)
            for key in (
                "c_puct",
                "dirichlet_alpha",
                "dirichlet_fraction",
                "fpu_reduction",
                "temperature",
                "temperature_plies",
            )
        },
        **{f"gumbel_{key}": getattr(mcts.gumbel, key) for key in ("max_actions", "c_visit", "c_scale")},
        "algorithm": mcts.algorithm,
        "max_depth": mcts.max_depth,
        "decisive_moves": mcts.decisive_moves,
        "solver": mcts.solver,
        "draw_value": mcts.draw_value,
    }
    chosen = {"num_simulations", "reuse_tree", "leaf_batch"}  # the player's own (sims=8, no reuse, leaf_batch=1)
    assert set(stored) - chosen <= set(read)
    assert {key: read[key] for key in set(stored) - chosen} == {key: stored[key] for key in set(stored) - chosen}
    assert Board().is_legal(player.select_move(Board()))


def test_bad_time_and_leaf_batch_are_refused() -> None:
    for bad in (
        "time=-1",
        "time=soon",
        "leaf_batch=0",
        "leaf_batch=1000",
        "max_actions=0",
        "max_actions=all",
        "c_scale=-1",
        "c_scale=big",
    ):
        with pytest.raises(PlayerSpecError, match=bad.split("=")[0]):
            make_player(f"checkpoint:path={SHIPPED},{bad}")


@pytest.mark.parametrize(
    "bad, words",
    [
        ("max_actions=100000", "max_actions=100000 must lie in [1, 252]"),
        ("sims=100000000", "sims=100000000 must lie in [1, 100000]"),
        ("threads=100000", "threads=100000 must lie in [0, 1024]"),
        ("time=nan", "time=nan"),
        ("cache=-1", "cache=-1 must lie in [0, 4194304]"),
        ("policy_temperature=0.05", "policy_temperature=0.05 must lie in [0.1, 10]"),
        ("device=gpu9", "unknown device 'gpu9'"),
        ("device=cuda:99", "device='cuda:99' is not available"),
    ],
)
def test_spec_values_out_of_range_are_refused_before_loading(bad: str, words: str) -> None:
    """Values that would abort the process (threads), allocate without bound (sims, max_actions) or fail at the
    first network call (a device this machine lacks) are refused with one line naming them."""
    with pytest.raises(PlayerSpecError) as e:
        make_player(f"checkpoint:path={SHIPPED},{bad}")
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("shipped", sorted(p.name for p in SHIPPED.parent.glob("*.pt")))
def test_every_shipped_network_plays_by_its_spec(shipped: str) -> None:
    """Each file in checkpoints/shipped loads with `checkpoint:path=...` and plays a legal move."""
    board = Board()
    move = make_player(f"checkpoint:path={SHIPPED.parent / shipped},sims=8", seed=0).select_move(board)
    assert board.is_legal(move)


def test_tablebase_option_plays_the_tables_best_move(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tablebase=true`` searches with the tables of the default location (missing: an error naming the
    command that builds them); off by default, whatever the run trained with."""
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    with pytest.raises(ValueError, match="python -m envs tablebase build"):
        make_player(f"checkpoint:path={SHIPPED},sims=16,tablebase=true")
    with pytest.raises(PlayerSpecError, match="tablebase='yes' must be true or false"):
        make_player(f"checkpoint:path={SHIPPED},sims=16,tablebase=yes")
    tables = Tablebase.build(RuleSet(), pieces=2)
    tables.save()
    assert not make_player(f"checkpoint:path={SHIPPED},sims=16").mcts.tablebase
    player = make_player(f"checkpoint:path={SHIPPED},sims=16,tablebase=true", seed=0)
    assert player.mcts.tablebase
    board = Board("6c/7/7/7/7/7/7/7/L6 r 0 1")  # the Lion wins in 15 plies
    assert player.select_move(board) in tables.probe(board).best_moves
    assert player.last_value == 1.0


def _visits_after_a_reply(spec: str, board: Board, take_back: bool = False) -> tuple[int, int]:
    """Root visits of the first search, and of the search after the player's move and the opponent's
    reply (the reply the player's own tree found likeliest, so its subtree is large)."""
    player = make_player(spec, seed=0)
    assert isinstance(player, CheckpointPlayer)
    first = player.select_move(board)
    first_visits = player.last_visits
    board.push(first)
    reply = make_player(f"checkpoint:path={SHIPPED},sims=16", seed=0).select_move(board)
    board.push(reply)
    if take_back:
        board.pop()
        board.pop()
        board.push(next(m for m in board.legal_moves if m != first))
        board.push(next(iter(board.legal_moves)))
    player.select_move(board)
    return first_visits, player.last_visits


@pytest.mark.slow
def test_reuse_keeps_the_tree_of_the_move_and_the_reply() -> None:
    """With ``reuse=true`` the search after the player's move and the opponent's reply starts from the
    subtree it had grown there: more root visits than its own simulations. Without it, or when the game
    took another course (moves taken back), the search starts from an empty tree."""
    spec = f"checkpoint:path={SHIPPED},sims=64"
    first, kept = _visits_after_a_reply(spec + ",reuse=true", Board())
    assert first <= 65 and kept > 65
    assert _visits_after_a_reply(spec, Board())[1] <= 65
    assert _visits_after_a_reply(spec + ",reuse=true", Board(), take_back=True)[1] <= 65
    with pytest.raises(PlayerSpecError, match="reuse='yes' must be true or false"):
        make_player(f"{spec},reuse=yes")


def test_reuse_is_forgotten_by_reset() -> None:
    """`reset` (a new game) drops the kept tree: the same position then gets the same fresh search."""
    player = make_player(f"checkpoint:path={SHIPPED},sims=32,reuse=true", seed=0)
    assert isinstance(player, CheckpointPlayer)
    board = Board()
    first = player.select_move(board)
    player.reset()
    assert player.select_move(board) == first
    assert player.last_visits <= 33


def test_draw_value_sets_the_players_worth_of_a_draw() -> None:
    """``draw_value`` overrides the run's own (0 for the shipped networks) and is refused outside [-1, 1];
    a kept tree serves the next search with the same contempt (the turn has come back to the player)."""
    assert make_player(f"checkpoint:path={SHIPPED},sims=8", seed=0).mcts.draw_value == 0.0
    spec = f"checkpoint:path={SHIPPED},sims=64,draw_value=-0.3"
    assert make_player(spec, seed=0).mcts.draw_value == -0.3
    assert _visits_after_a_reply(spec + ",reuse=true", Board())[1] > 65
    for bad in ("draw_value=-1.5", "draw_value=much"):
        with pytest.raises(PlayerSpecError, match="draw_value"):
            make_player(f"checkpoint:path={SHIPPED},{bad}")


def test_the_cache_saves_network_calls_and_keeps_the_moves() -> None:
    """By default the player remembers `DEFAULT_CACHE` positions' network answers: over six moves, searched
    afresh each time, it plays what a player without the cache (``cache=0``) plays, while the network sees
    fewer positions (a repeat within a search or from the previous move's costs none)."""
    cached = make_player(f"checkpoint:path={SHIPPED},sims=48", seed=0)
    plain = make_player(f"checkpoint:path={SHIPPED},sims=48,cache=0", seed=0)
    assert isinstance(cached, CheckpointPlayer) and isinstance(plain, CheckpointPlayer)
    assert plain.cache is None and cached.cache is not None and cached.cache.capacity == DEFAULT_CACHE
    evaluated: list[int] = []
    network = plain.search.evaluator
    plain.search.evaluator = lambda obs, mask: (evaluated.append(len(obs)), network(obs, mask))[1]
    board = Board()
    for _ in range(6):
        move = cached.select_move(board)
        assert plain.select_move(board) == move
        board.push(move)
    assert cached.cache.hits > 0
    assert cached.cache.misses + cached.cache.hits == sum(evaluated)
    assert cached.cache.misses < sum(evaluated)
    small = make_player(f"checkpoint:path={SHIPPED},sims=16,cache=10")
    assert isinstance(small, CheckpointPlayer) and small.cache is not None and small.cache.capacity == 10

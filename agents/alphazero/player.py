"""The player kind ``checkpoint``: a trained network choosing moves with tree search.

    checkpoint:path=checkpoints/my-run/best.pt,sims=200,algorithm=puct,device=cpu

``path`` a checkpoint file, a run directory (its latest.pt), a run name, or a
shipped network ``shipped:<name>`` (checkpoints/shipped/manifest.json);
``sims`` simulations per move (default 100; at most `MAX_SIMULATIONS`); ``algorithm`` ``puct`` or
``gumbel`` (default: the run's own search); ``device`` ``auto``/``cpu``/``cuda``;
``threads`` torch CPU threads for the process (0 to `MAX_THREADS`; default 1: one-position network
calls of these small nets gain nothing from more, and players often share the CPU);
``precision`` ``fp32``/``bf16``/``auto`` (see `device.inference_dtype`; by
default ``auto`` when ``leaf_batch`` reaches `device.BF16_MIN_BATCH`, else
``fp32``: bf16 is slower than fp32 for a handful of positions per call);
``time`` seconds per move: the search runs in rounds of ``sims`` simulations
(default 32 then) on one growing tree, and starts another round only while the
rate measured so far says it ends within the budget (at least one round runs);
``leaf_batch`` leaves evaluated per network call, kept apart by virtual loss
(default 1; 8-16 feed the network batches it runs faster per position);
``max_actions`` Gumbel's root actions considered (default: the run's own
``mcts.gumbel.max_actions``; sequential halving splits the simulations among
fewer of them, each searched deeper); ``c_scale`` Gumbel's sigma scale (default: the run's own
``mcts.gumbel.c_scale``); ``tablebase`` ``true`` searches with the endgame tables as proven results
(``mcts.tablebase``: their default location, built with ``python -m envs tablebase build``; default
``false``); ``draw_value`` the worth of a drawn end to the player, in [-1, 1] (default: the run's own
``mcts.draw_value``; below 0 a contempt for draws, as self-play's ``draw_contempt``); ``reuse``
``true`` keeps the search tree from one move to the next: the subtree under the move
played and the opponent's reply becomes the next search's tree, so its visits come on top of the new
simulations (default ``false``: every move is searched from an empty tree); ``any_rules`` ``true``
plays rules the network was not trained on (zero-shot experiments;
default ``false``: the player is built for the game's rules, which must be one of the rule sets the
checkpoint was trained on, `checkpoint.trained_rule_sets`, else it is refused with a line naming them);
``cache`` positions whose network answers the player remembers (`CachedEvaluator`: a repeated position,
within a search or from an earlier move's, costs no network call; default `DEFAULT_CACHE`, 0 none);
``guard`` seconds of an alpha-beta search that checks the move before it is played (`guard.AlphaBetaGuard`:
a move whose alpha-beta score falls more than ``guard_margin`` below alpha-beta's best, default
`guard.DEFAULT_MARGIN` = 300, a Dog, is passed over for the search's next choices or alpha-beta's move;
under ``time`` the guard's time is part of the move's; default 0, no guard).
A search by ``time`` defaults to `TIMED_MAX_ACTIONS` and
`TIMED_C_SCALE` instead: with thousands of simulations, sigma(Q) = (c_visit + max N) * c_scale * q
grows with the visits until the selection below the root follows the best Q found so far and
stops looking at other replies; a smaller c_scale keeps it looking (docs/search.md, "Search by time").
The search is deterministic (no exploration noise). A missing or unreadable
checkpoint, or one trained under other rules than asked for, fails at
construction with a CheckpointError naming the path.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Optional

import numpy as np
import torch

from agents.alphazero.checkpoint import (
    CheckpointError,
    load_model,
    resolve_checkpoint_path,
    rules_refusal,
    stored_mcts,
    trained_rule_sets,
)
from agents.alphazero.device import BF16_MIN_BATCH, MAX_THREADS, PRECISIONS, resolve_device
from agents.alphazero.guard import DEFAULT_MARGIN, GUARD_CANDIDATES, AlphaBetaGuard
from agents.alphazero.runtime import make_evaluator
from agents.alphazero.search import BatchedMCTS, SearchOutput, make_policy, search_tables
from agents.alphazero.search.cache import MAX_CACHE_ENTRIES, CachedEvaluator
from agents.alphazero.search.config import ALGORITHMS, MAX_LEAF_BATCH, MAX_SIMULATIONS
from agents.alphazero.search.tree import ROOT, UNVISITED
from envs import Board, Move, RuleSet
from envs import kernels as K
from envs.batch import GameBatch
from envs.config import check_choice, check_range
from envs.encoding import N_ACTIONS, action_to_move, move_to_action
from envs.players import Limit, PlayerSpecError, StopSignal, register_player

DEFAULT_CACHE = 1 << 15
"""Positions a checkpoint player remembers unless told otherwise (about 36 MB; a few dozen moves' searches
at 0.5 s a move)."""


class CheckpointPlayer:
    """Plays the move of a `BatchedMCTS` search (one game) guided by a checkpoint's network."""

    def __init__(
        self,
        path: str,
        *,
        sims: int = 100,
        algorithm: Optional[str] = None,
        device: str = "auto",
        rules: Optional[RuleSet] = None,
        seed: Optional[int] = None,
        name: str = "",
        threads: int = 1,
        precision: str = "fp32",
        time: float = 0.0,
        leaf_batch: int = 1,
        max_actions: Optional[int] = None,
        c_scale: Optional[float] = None,
        tablebase: bool = False,
        any_rules: bool = False,
        reuse: bool = False,
        draw_value: Optional[float] = None,
        cache: int = DEFAULT_CACHE,
        guard: float = 0.0,
        guard_margin: int = DEFAULT_MARGIN,
    ) -> None:
        if guard < 0 or (time > 0 and guard >= time):
            raise ValueError(f"guard={guard} must be >= 0 and, with time={time}, less than the move's time")
        file = resolve_checkpoint_path(path)
        device_t = resolve_device(device)
        if device_t.type == "cpu" and threads > 0 and torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        self.model, state = load_model(file, device=device_t)
        self.device = device_t
        """Where the network runs (a tournament refuses to fork worker processes from a parent using CUDA)."""
        self.trained_rules = trained_rule_sets(state, file)
        """The (name, RuleSet) pairs the network was trained on (`checkpoint.trained_rule_sets`)."""
        if rules is not None and not any_rules and all(r != rules for _, r in self.trained_rules):
            raise CheckpointError(
                rules_refusal(self.trained_rules, rules, file) + "; any_rules=true plays other rules anyway"
            )
        self.rules = rules if rules is not None else self.trained_rules[0][1]
        self.path = str(file)
        self.name = name or "checkpoint"  # make_player names it by its spec
        if time > 0:
            max_actions = TIMED_MAX_ACTIONS if max_actions is None else max_actions
            c_scale = TIMED_C_SCALE if c_scale is None else c_scale
        stored = stored_mcts(state.get("config", ""), str(file))
        gumbel: dict[str, Any] = {
            k: v for k, v in {"max_actions": max_actions, "c_scale": c_scale}.items() if v is not None
        }
        self.mcts = dataclasses.replace(
            stored,
            algorithm=stored.algorithm if algorithm is None else algorithm,
            gumbel=dataclasses.replace(stored.gumbel, **gumbel),
            num_simulations=int(sims),
            reuse_tree=bool(reuse),
            leaf_batch=int(leaf_batch),
            tablebase=bool(tablebase),
            draw_value=stored.draw_value if draw_value is None else float(draw_value),
        )
        self.time = float(time)
        """Seconds per move (0: a fixed `sims` per move)."""
        self.evaluator = make_evaluator(self.model, device_t, precision)
        self.cache = CachedEvaluator(self.evaluator, cache) if cache > 0 else None
        """The evaluation cache (`cache` positions; None without): its `hits` and `misses` count positions."""
        self.search = BatchedMCTS(
            self.cache if self.cache is not None else self.evaluator,
            make_policy(self.mcts),
            self.rules.flags(),
            seed=0 if seed is None else seed,
            n_games=1,
            max_nodes=TIMED_NODES if self.time > 0 else None,
            tablebase=search_tables(self.mcts, self.rules),
        )
        self.guard = AlphaBetaGuard(self.rules, guard, guard_margin) if guard > 0 else None
        """The alpha-beta check of each move (None without ``guard``): its `checks` and `vetoes` count moves."""
        self.last_simulations = 0
        """Simulations of the last move's search."""
        self.last_rounds = 0
        """Rounds of `sims` simulations the last move's search ran (1 for a search by ``sims``)."""
        self.last_visits = 0
        """Root visits of the last move's search: its simulations and, with `reuse`, the kept subtree's."""
        self.last_value = 0.0
        """The root value of the last search, from the view of the side that was to move."""
        self._games: Optional[GameBatch] = None
        self._after: Optional[tuple[int, int]] = None
        """With `reuse`: (ply, side) of the position after this player's last move, whose tree is kept."""

    def select_move(self, board: Board, limit: Optional[Limit] = None, stop: Optional[StopSignal] = None) -> Move:
        """The search's move. `limit` replaces ``sims``/``time`` for this move: rounds of ``sims`` simulations
        on one tree until its `depth` rounds, `nodes` simulations (the last round cut to fit) or `time`
        seconds (a round starts only while it fits) is reached, or `stop` is set (checked between rounds),
        or the tree is full (`LIMITED_MAX_SIMULATIONS`); at least one round runs."""
        games = self._batch_for(board)
        games.load_board(0, board)
        if games.done[0]:
            raise ValueError(f"no move to choose: the game is over in {board.jfen()!r}")
        self._follow(board)
        start = time.perf_counter()
        if self.guard is not None:
            self.guard.reference(board)
        # a quarter of the guard's time is kept for its checks of the search's choice
        check = 0.0 if self.guard is None else 0.25 * self.guard.seconds
        if limit is not None or stop is not None:
            limit = limit if limit is not None else Limit()
            budget = None if limit.time is None else limit.time - (time.perf_counter() - start) - check
            out = self._rounds(games, budget, rounds=limit.depth, sims=limit.nodes, stop=stop)
        elif self.time > 0:
            out = self._timed_search(games, self.time - (time.perf_counter() - start) - check)
        else:
            out = self.search.search(games, add_noise=False)
            self.last_simulations = self.mcts.num_simulations
            self.last_rounds = 1
        self.last_value = float(out.root_value[0])
        self.last_visits = self.search.root_visits(0)
        action = int(out.action[0])
        if self.guard is not None:
            action = self._guarded(board, games, out, action, start)
        if self.mcts.reuse_tree:
            self.search.advance(0, action)
            self._after = (board.ply + 1, 1 - int(board.side_to_move))
        return Move.from_int(int(action_to_move(games.state[0], action)))

    def _follow(self, board: Board) -> None:
        """With `reuse`, move the kept tree on by the opponent's reply when `board` is the position one ply
        after this player's last move; otherwise (no reuse, a new game, moves taken back) start afresh.
        The search checks the kept root against the position too, so a wrong guess costs only the tree."""
        after, self._after = self._after, None
        if after is not None and board.ply == after[0] + 1 and board.move_stack:
            reply = board.move_stack[-1].to_int()
            self.search.advance(0, int(move_to_action(reply, after[1])))
        else:
            self.search.advance(0, -1)

    def _guarded(self, board: Board, games: GameBatch, out: SearchOutput, action: int, start: float) -> int:
        """The action the guard lets through: the search's choice, else its next by policy, else alpha-beta's."""
        assert self.guard is not None
        policy = out.policy[0]
        best = np.argsort(-policy, kind="stable")[:GUARD_CANDIDATES]
        order = [action] + [int(a) for a in best if policy[a] > 0 and a != action]
        state = games.state[0]
        moves = [Move.from_int(int(action_to_move(state, a))) for a in order[:GUARD_CANDIDATES]]
        deadline = start + self.time if self.time > 0 else time.perf_counter() + self.guard.seconds
        move = self.guard.choose(board, moves, deadline)
        return int(move_to_action(move.to_int(), int(board.side_to_move)))

    def _timed_search(self, games: GameBatch, budget: float) -> SearchOutput:
        """Rounds of `sims` simulations on one tree while the next round fits in `budget` seconds (at least one
        round runs)."""
        return self._rounds(games, budget)

    def _rounds(
        self,
        games: GameBatch,
        budget: Optional[float],
        *,
        rounds: Optional[int] = None,
        sims: Optional[int] = None,
        stop: Optional[StopSignal] = None,
    ) -> SearchOutput:
        """Rounds of `sims` simulations on one tree until the next round would not fit in `budget` seconds, or
        `rounds` rounds ran, or `sims` simulations (the last round cut to fit), or `stop` is set, or the tree
        has no room for another round (None: no such limit; at least one round runs). The tree grows for the
        rounds up to `LIMITED_MAX_SIMULATIONS` unless its size was fixed (``time``: `TIMED_NODES`)."""
        start = time.perf_counter()
        per_round = self.mcts.num_simulations
        done = count = 0
        while True:
            n = per_round if sims is None else min(per_round, sims - done)
            self.search.reserve(min(done + n, LIMITED_MAX_SIMULATIONS))
            if n == per_round:
                out = self.search.search(games, add_noise=False)
            else:  # a limit of nodes cuts its last round short
                out = self.search.search(games, add_noise=False, num_simulations=n)
            done += n
            count += 1
            spent = time.perf_counter() - start
            room = self.search.max_nodes - int(self.search.tree.num_nodes[0])
            if (
                (budget is not None and spent + spent / count > budget)
                or (rounds is not None and count >= rounds)
                or (sims is not None and done >= sims)
                or (stop is not None and stop.is_set())
                or room < (per_round + 1) * K.MAX_MOVES
            ):
                break
        self.last_simulations, self.last_rounds = done, count
        return out

    def principal_variation(self, first: Move, length: int = 8) -> list[Move]:
        """The last search's expected line: `first` (the move played), then the most visited child at each
        node below it, while one was visited (at most `length` moves)."""
        tree = self.search.tree
        line = [first]
        node = self._child(ROOT, first)
        while node is not None and len(line) < length:
            start, n = int(tree.first_child[0, node]), int(tree.num_children[0, node])
            if start == UNVISITED or n == 0:
                break
            best = start + int(np.argmax(tree.visits[0, start : start + n]))
            if tree.visits[0, best] == 0:
                break
            line.append(Move.from_int(int(tree.move[0, best])))
            node = best
        return line

    def _child(self, node: int, move: Move) -> Optional[int]:
        """The child of `node` that `move` leads to in game 0's tree, or None."""
        tree = self.search.tree
        start, n = int(tree.first_child[0, node]), int(tree.num_children[0, node])
        if start == UNVISITED:
            return None
        for child in range(start, start + n):
            if int(tree.move[0, child]) == move.to_int():
                return child
        return None

    def reset(self) -> None:
        self._after = None
        self.search.advance(0, -1)
        if self.guard is not None:
            self.guard.reset()

    def _batch_for(self, board: Board) -> GameBatch:
        """The one-game GameBatch the search reads, kept between moves: rebuilt only for other rules or
        when the game outgrows its history (grown in steps, with room to spare: a game never ends there)."""
        games = self._games
        if games is None or games.rules != board.rules or games.room < board.ply + 512:
            room = 2048
            while room < board.ply + 512:
                room *= 2
            games = self._games = GameBatch(1, board.rules, max_plies=room)
        return games


TIMED_MAX_ACTIONS = 16
"""Gumbel's root actions of a search by time unless `max_actions` is given (the rounds of `sims`
simulations each halve their way through them)."""

TIMED_C_SCALE = 0.1
"""Gumbel's sigma scale of a search by time unless `c_scale` is given: smaller than training's 1.0,
which a long search turns greedy with (docs/search.md, "Search by time")."""

TIMED_NODES = 1 << 20
"""Tree nodes of a player searching by time (about 33 MB; room for tens of thousands of simulations)."""


LIMITED_MAX_SIMULATIONS = TIMED_NODES // (2 * K.MAX_MOVES) - 1
"""Simulations the tree of a search by rounds grows for, at most (`BatchedMCTS.reserve`): a tree of about
`TIMED_NODES` nodes; a search by a `Limit` ends when it is full."""


def make_checkpoint_player(
    rules: Optional[RuleSet] = None, seed: Optional[int] = None, **options: Any
) -> CheckpointPlayer:
    known = {
        "path",
        "sims",
        "algorithm",
        "device",
        "threads",
        "precision",
        "time",
        "leaf_batch",
        "max_actions",
        "c_scale",
        "tablebase",
        "any_rules",
        "reuse",
        "draw_value",
        "cache",
        "guard",
        "guard_margin",
    }
    unknown = sorted(set(options) - known)
    if unknown:
        raise PlayerSpecError(
            f"player 'checkpoint' has no option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    if "path" not in options:
        raise PlayerSpecError(
            "player 'checkpoint' needs path=<checkpoint file, run directory, run name or shipped:<name>>"
        )
    try:
        seconds = float(options.get("time", 0.0))
        sims = int(options.get("sims", 32 if seconds > 0 else 100))
        threads = int(options.get("threads", 1))
        leaf_batch = int(options.get("leaf_batch", 1))
        max_actions = int(options["max_actions"]) if "max_actions" in options else None
        c_scale = float(options["c_scale"]) if "c_scale" in options else None
        draw_value = float(options["draw_value"]) if "draw_value" in options else None
        cache = int(options.get("cache", DEFAULT_CACHE))
        guard = float(options.get("guard", 0.0))
        guard_margin = int(options.get("guard_margin", DEFAULT_MARGIN))
    except ValueError:
        raise PlayerSpecError(
            f"player 'checkpoint': sims, threads, leaf_batch, max_actions, cache and guard_margin must be "
            f"integers, time and guard numbers of seconds and c_scale and draw_value numbers, got {options}"
        ) from None
    where = "player 'checkpoint': "
    numbers = {
        "sims": sims,
        "threads": threads,
        "time": seconds,
        "leaf_batch": leaf_batch,
        "max_actions": max_actions,
        "cache": cache,
        "guard": guard,
        "guard_margin": guard_margin,
    }
    check_range(
        numbers,
        where,
        PlayerSpecError,
        sims=(1, MAX_SIMULATIONS),
        threads=(0, MAX_THREADS),
        time=(0, 3600),
        leaf_batch=(1, MAX_LEAF_BATCH),
        cache=(0, MAX_CACHE_ENTRIES),
        guard=(0, 3600),
        guard_margin=(0, 100_000),
    )
    if seconds > 0 and guard >= seconds:
        raise PlayerSpecError(
            f"player 'checkpoint': guard={guard} must be less than time={seconds}: the guard's alpha-beta search "
            "is part of the move's time"
        )
    if max_actions is not None:
        check_range(numbers, where, PlayerSpecError, max_actions=(1, N_ACTIONS))
    if c_scale is not None and not 0 < c_scale <= 100:
        raise PlayerSpecError(f"player 'checkpoint': c_scale={c_scale} must lie in (0, 100]")
    if draw_value is not None:
        check_range({"draw_value": draw_value}, where, PlayerSpecError, draw_value=(-1, 1))
    algorithm = options.get("algorithm")
    if algorithm is not None:
        check_choice(options, where, PlayerSpecError, algorithm=ALGORITHMS)
    precision = options.get("precision", "auto" if leaf_batch >= BF16_MIN_BATCH else "fp32")
    check_choice({"precision": precision}, where, PlayerSpecError, precision=PRECISIONS)
    try:
        resolve_device(options.get("device", "auto"))
    except ValueError as e:
        raise PlayerSpecError(f"player 'checkpoint': {e}") from None
    return CheckpointPlayer(
        options["path"],
        sims=sims,
        algorithm=algorithm,
        device=options.get("device", "auto"),
        rules=rules,
        seed=seed,
        threads=threads,
        precision=precision,
        time=seconds,
        leaf_batch=leaf_batch,
        max_actions=max_actions,
        c_scale=c_scale,
        tablebase=_flag(options, "tablebase"),
        any_rules=_flag(options, "any_rules"),
        reuse=_flag(options, "reuse"),
        draw_value=draw_value,
        cache=cache,
        guard=guard,
        guard_margin=guard_margin,
    )


def _flag(options: dict[str, Any], name: str) -> bool:
    """A true/false option (default false); PlayerSpecError for anything else."""
    value = str(options.get(name, "false")).lower()
    if value not in ("true", "false"):
        raise PlayerSpecError(f"player 'checkpoint': {name}={options[name]!r} must be true or false")
    return value == "true"


register_player("checkpoint", make_checkpoint_player)

__all__ = ["CheckpointError", "CheckpointPlayer"]

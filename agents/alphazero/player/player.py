"""The player kind ``checkpoint``: a trained network choosing moves with tree search.

    checkpoint:path=checkpoints/my-run/best.pt,sims=200,algorithm=puct,device=cpu

Its options (``path``, ``sims``, ``time``, ``algorithm``, ``leaf_batch``, ...) are `CheckpointOptions`
(agents/alphazero/player/options.py: each one's default, bounds and line; the table in docs/evaluation.md);
``CheckpointPlayer(path, sims=200)`` takes the same names as keywords. ``time`` searches in rounds of
``sims`` simulations on one growing tree, starting another round only while the rate measured so far says it
ends within the budget (at least one round runs); such a search defaults to `TIMED_MAX_ACTIONS` and
`TIMED_C_SCALE`: with thousands of simulations, sigma(Q) = (c_visit + max N) * c_scale * q
grows with the visits until the selection below the root follows the best Q found so far and
stops looking at other replies; a smaller c_scale keeps it looking (docs/search.md, "Search by time").
``stretch`` (with ``time``) moves time from settled moves to unsettled ones within the game's average
(`timebank`). ``guard`` checks each move with an alpha-beta search (`guard.AlphaBetaGuard`); ``any_rules=true`` plays
rules the network was not trained on, else the game's rules must be one of the rule sets the checkpoint
was trained on (`checkpoint.trained_rule_sets`), or it is refused with a line naming them.
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

from agents.alphazero.net.checkpoint import (
    CheckpointError,
    load_model,
    resolve_checkpoint_path,
    rules_refusal,
    stored_mcts,
    trained_rule_sets,
)
from agents.alphazero.net.device import resolve_device
from agents.alphazero.net.runtime import make_evaluator
from agents.alphazero.player.guard import GUARD_CANDIDATES, AlphaBetaGuard
from agents.alphazero.player.options import DEFAULT_CACHE, TIMED_C_SCALE, TIMED_MAX_ACTIONS, CheckpointOptions
from agents.alphazero.player.timebank import MoveTimer, TimeBank
from agents.alphazero.search import BatchedMCTS, SearchOutput, make_policy, search_tables
from agents.alphazero.search.base import TemperedEvaluator
from agents.alphazero.search.cache import CachedEvaluator
from agents.alphazero.search.tree import ROOT, UNVISITED
from envs import Board, Move, RuleSet
from envs import kernels as K
from envs.batch import GameBatch
from envs.encoding import action_to_move, move_to_action
from envs.players import Limit, StopSignal, register_player


class CheckpointPlayer:
    """Plays the move of a `BatchedMCTS` search (one game) guided by a checkpoint's network."""

    def __init__(
        self,
        path: str = "",
        *,
        rules: Optional[RuleSet] = None,
        seed: Optional[int] = None,
        options: Optional[CheckpointOptions] = None,
        **keywords: Any,
    ) -> None:
        """A player for `rules` (None: the first the network was trained on) with `options`, or the options
        `CheckpointOptions(path=path, **keywords)` (`sims=`, `time=`, ...: the names of the spec's options)."""
        if options is None:
            options = CheckpointOptions.from_keywords({"path": str(path), **keywords})
        self.options = options.resolved()
        """The player's options, with every default that depends on others filled in."""
        o = self.options
        assert o.sims is not None and o.precision is not None
        file = resolve_checkpoint_path(o.path)
        device_t = resolve_device(o.device)
        if device_t.type == "cpu" and o.threads > 0 and torch.get_num_threads() != o.threads:
            torch.set_num_threads(o.threads)
        self.model, state = load_model(file, device=device_t)
        self.device = device_t
        """Where the network runs (a tournament refuses to fork worker processes from a parent using CUDA)."""
        self.trained_rules = trained_rule_sets(state, file)
        """The (name, RuleSet) pairs the network was trained on (`checkpoint.trained_rule_sets`)."""
        if rules is not None and not o.any_rules and all(r != rules for _, r in self.trained_rules):
            raise CheckpointError(
                rules_refusal(self.trained_rules, rules, file) + "; any_rules=true plays other rules anyway"
            )
        self.rules = rules if rules is not None else self.trained_rules[0][1]
        self.path = str(file)
        self.name = o.name or "checkpoint"  # make_player names it by its spec
        stored = stored_mcts(state.get("config", ""), str(file))
        gumbel: dict[str, Any] = {
            k: v for k, v in {"max_actions": o.max_actions, "c_scale": o.c_scale}.items() if v is not None
        }
        self.mcts = dataclasses.replace(
            stored,
            algorithm=stored.algorithm if o.algorithm is None else o.algorithm,
            gumbel=dataclasses.replace(stored.gumbel, **gumbel),
            num_simulations=o.sims,
            reuse_tree=o.reuse,
            leaf_batch=o.leaf_batch,
            tablebase=o.tablebase,
            draw_value=stored.draw_value if o.draw_value is None else float(o.draw_value),
        )
        self.time = float(o.time)
        """Seconds per move (0: a fixed `sims` per move)."""
        self.evaluator = make_evaluator(self.model, device_t, o.precision)
        """The network's own answers (the search reads them through `policy_temperature`)."""
        searched = (
            self.evaluator if o.policy_temperature == 1 else TemperedEvaluator(self.evaluator, o.policy_temperature)
        )
        self.cache = CachedEvaluator(searched, o.cache) if o.cache > 0 else None
        """The evaluation cache (`cache` positions; None without): its `hits` and `misses` count positions."""
        self.search = BatchedMCTS(
            self.cache if self.cache is not None else searched,
            make_policy(self.mcts),
            self.rules.flags(),
            seed=0 if seed is None else seed,
            n_games=1,
            max_nodes=TIMED_NODES if self.time > 0 else None,
            tablebase=search_tables(self.mcts, self.rules),
        )
        self.guard = AlphaBetaGuard(self.rules, o.guard, o.guard_margin) if o.guard > 0 else None
        """The alpha-beta check of each move (None without ``guard``): its `checks` and `vetoes` count moves."""
        self.last_simulations = 0
        """Simulations of the last move's search."""
        self.bank = TimeBank(self.time, o.stretch) if self.time > 0 and o.stretch > 1 else None
        """With ``stretch``: the seconds this game's moves left unspent (`timebank`); None without."""
        self._previous_value: Optional[float] = None
        """The root value of this player's previous search (None at a game's first move)."""
        self._banked_ply: Optional[int] = None
        """With ``stretch``: the ply of this player's previous move, to tell a game's next move from another's."""
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
        timer: Optional[MoveTimer] = None
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
        elif self.bank is not None:
            if self._banked_ply is None or board.ply != self._banked_ply + 2:  # another game, or moves taken back
                self._forget_game()
            self._banked_ply = board.ply
            timer = self.bank.start_move(time.perf_counter() - start, self._previous_value)
            out = self._rounds(games, None, timer=timer)
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
        move = Move.from_int(int(action_to_move(games.state[0], action)))
        if self.bank is not None and timer is not None:
            self.bank.end_move(time.perf_counter() - start, timer)
        self._previous_value = self.last_value
        return move

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
        timer: Optional[MoveTimer] = None,
    ) -> SearchOutput:
        """Rounds of `sims` simulations on one tree until the next round would not fit in `budget` seconds, or
        `rounds` rounds ran, or `sims` simulations (the last round cut to fit), or `stop` is set, or the tree
        has no room for another round (None: no such limit; at least one round runs), or `timer` (``stretch``)
        says the move is done. The tree grows for the rounds up to `LIMITED_MAX_SIMULATIONS` unless its size
        was fixed (``time``: `TIMED_NODES`)."""
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
                or (timer is not None and not self._go_on(timer, out, spent, count))
                or room < (per_round + 1) * K.MAX_MOVES
            ):
                break
        self.last_simulations, self.last_rounds = done, count
        return out

    @staticmethod
    def _go_on(timer: MoveTimer, out: SearchOutput, spent: float, rounds: int) -> bool:
        action = int(out.action[0])
        return timer.go_on(action, float(out.policy[0, action]), float(out.root_value[0]), spent, rounds)

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

    def _forget_game(self) -> None:
        """A new game: no previous search's value, nothing banked."""
        self._previous_value = self._banked_ply = None
        if self.bank is not None:
            self.bank.reset()

    def reset(self) -> None:
        self._after = None
        self._forget_game()
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


TIMED_NODES = 1 << 20
"""Tree nodes of a player searching by time (about 33 MB; room for tens of thousands of simulations)."""


LIMITED_MAX_SIMULATIONS = TIMED_NODES // (2 * K.MAX_MOVES) - 1
"""Simulations the tree of a search by rounds grows for, at most (`BatchedMCTS.reserve`): a tree of about
`TIMED_NODES` nodes; a search by a `Limit` ends when it is full."""


def make_checkpoint_player(
    rules: Optional[RuleSet] = None, seed: Optional[int] = None, **options: str
) -> CheckpointPlayer:
    """The player of a spec's options (`CheckpointOptions.from_spec`), checked before the checkpoint is read."""
    return CheckpointPlayer(rules=rules, seed=seed, options=CheckpointOptions.from_spec(options))


register_player("checkpoint", make_checkpoint_player)

__all__ = [
    "DEFAULT_CACHE",
    "TIMED_C_SCALE",
    "TIMED_MAX_ACTIONS",
    "CheckpointError",
    "CheckpointOptions",
    "CheckpointPlayer",
]

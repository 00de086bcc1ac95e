"""Reanalysis: the newest network searches positions of the replay buffer again, and their policy targets become
what that search gives (MuZero's Reanalyse, for the policy target; `TrainConfig.reanalyse`).

A replay position is only an observation; to search it again the run needs the game it came from, since the
search plays on from the whole position (repetitions and the counters included). `GameStore` keeps, beside the
buffer, the game and ply of each slot's position and each game's start, moves and rules, for as long as a slot
holds one of its positions. `Reanalyser` replays those positions into a `GameBatch` (`GameBatch.load_moves`,
one kernel call each), searches them as self-play searches its own moves (the run's `mcts` settings, with
exploration noise, each position seeded from the run's seed, the iteration and its slot) and writes the
search's policy over the slot's. Value targets stay as the games left them.

Each position's legal moves are checked against the mask stored with it before its target is replaced: a
store that does not match its buffer (a bug, or a damaged checkpoint) stops the run with a `ReplayError`
naming the slot instead of training on targets of other positions.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agents.alphazero.search import BatchedMCTS, MCTSConfig, make_policy
from agents.alphazero.search.base import Evaluator
from agents.alphazero.search.driver import search_tables
from agents.alphazero.selfplay.data import SelfPlayData
from agents.alphazero.training.replay import ReplayBuffer, ReplayError
from envs.batch import GameBatch
from envs.board import IllegalMoveError
from envs.notation import Move
from envs.rules import RuleSet
from envs.seeding import derive_seed

NO_GAME = -1
"""`GameStore.key` of a slot whose position has no game to replay it from."""


@dataclass
class StoredGame:
    """What replays a game's positions: its first position (JFEN), kernel moves (int32 [n], `Move.to_int`)
    and rules."""

    start: str
    moves: np.ndarray
    rules: RuleSet


class GameStore:
    """Beside a `ReplayBuffer` of `capacity` slots: the game (`key`, int64 [capacity], `NO_GAME` when none)
    and ply (`ply`, int16 [capacity]) of each slot's position, and the games those keys name (`games`).

    `add` follows the buffer's `add` (call it with the buffer's ``add_count`` from before that call): the
    slots it writes are the buffer's; a game whose every position was overwritten is dropped."""

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self.key = np.full(self.capacity, NO_GAME, np.int64)
        self.ply = np.zeros(self.capacity, np.int16)
        self.games: dict[int, StoredGame] = {}
        self.next_key = 0

    def add(self, add_count: int, data: SelfPlayData) -> None:
        """The rows of `data`, just added to the buffer whose ``add_count`` was `add_count` before, with their
        games."""
        n = len(data)
        keys = self.next_key + data.game.astype(np.int64)
        ply = data.ply
        if n > self.capacity:  # the buffer keeps the newest only
            keys, ply = keys[-self.capacity :], ply[-self.capacity :]
            add_count += n - self.capacity
            n = self.capacity
        idx = (add_count + np.arange(n)) % self.capacity
        self.key[idx] = keys
        self.ply[idx] = ply
        for k in np.unique(keys).tolist():
            rec = data.records[k - self.next_key]
            moves = np.array([Move.from_str(m).to_int() for m in rec.moves], np.int32)
            self.games[k] = StoredGame(rec.start, moves, RuleSet.from_dict(rec.rules))
        self.next_key += data.game_count
        live = set(np.unique(self.key[self.key != NO_GAME]).tolist())
        for k in [k for k in self.games if k not in live]:
            del self.games[k]

    def state_dict(self) -> dict[str, Any]:
        """Plain tensors, strings and ints (loads with weights_only=True)."""
        keys = sorted(self.games)
        return {
            "capacity": self.capacity,
            "key": torch.from_numpy(self.key.copy()),
            "ply": torch.from_numpy(self.ply.copy()),
            "next_key": self.next_key,
            "game_keys": keys,
            "starts": [self.games[k].start for k in keys],
            "moves": [torch.from_numpy(self.games[k].moves.copy()) for k in keys],
            "rules": [self.games[k].rules.to_dict() for k in keys],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """A saved store (ReplayError, changing nothing, when it does not fit this one or names a game it lacks)."""
        if int(state["capacity"]) != self.capacity:
            raise ReplayError(
                f"reanalysis store capacity {self.capacity} differs from the checkpoint's {state['capacity']}"
            )
        key, ply = state["key"].numpy(), state["ply"].numpy()
        if key.shape != (self.capacity,) or ply.shape != (self.capacity,):
            raise ReplayError(f"reanalysis store arrays are {list(key.shape)}, not [{self.capacity}]")
        games = {
            int(k): StoredGame(str(s), m.numpy().astype(np.int32), RuleSet.from_dict(r))
            for k, s, m, r in zip(state["game_keys"], state["starts"], state["moves"], state["rules"], strict=True)
        }
        missing = set(np.unique(key[key != NO_GAME]).tolist()) - set(games)
        if missing:
            raise ReplayError(f"reanalysis store names {len(missing)} games it does not hold (e.g. {min(missing)})")
        self.key[:], self.ply[:] = key, ply
        self.games = games
        self.next_key = int(state["next_key"])

    def clear(self) -> None:
        """No slot has a game (a buffer restored without its store, or emptied)."""
        self.key[:] = NO_GAME
        self.games = {}


@dataclass
class ReanalyseStats:
    """One `Reanalyser.reanalyse` call: positions searched, their simulations, the mean total variation between
    the old and the new policy targets, and the seconds it took."""

    positions: int = 0
    simulations: int = 0
    policy_change: float = math.nan
    seconds: float = 0.0


class Reanalyser:
    """Searches replay positions again with `evaluator` (the newest network), `parallel` at a time, as the
    run's self-play searches (`mcts`, with noise), and replaces their policy targets (module doc)."""

    def __init__(
        self, evaluator: Evaluator, mcts: MCTSConfig, rules: RuleSet, *, parallel: int, max_plies: int, seed: int
    ) -> None:
        self.parallel = int(parallel)
        self.seed = int(seed)
        self.mcts = mcts
        self.games = GameBatch(self.parallel, rules, max_plies=max_plies)
        self.search = BatchedMCTS(
            evaluator,
            make_policy(mcts),
            self.games.flags,
            seed=derive_seed(seed, "reanalyse"),
            n_games=self.parallel,
            tablebase=search_tables(mcts, rules),
        )

    def candidates(self, replay: ReplayBuffer, store: GameStore, newest: int) -> np.ndarray:
        """The slots that may be reanalysed: searched in full, with a game in the store, and not among the
        `newest` positions added (the newest network searched those already)."""
        n = len(replay)
        ok = (store.key[:n] != NO_GAME) & replay.full_search[:n]
        newest = min(int(newest), n)
        if newest > 0:
            ok[(replay.add_count - newest + np.arange(newest)) % replay.capacity] = False
        return np.flatnonzero(ok)

    def reanalyse(
        self, replay: ReplayBuffer, store: GameStore, count: int, newest: int, iteration: int
    ) -> ReanalyseStats:
        """`count` slots drawn at random (without repeats, from the run's seed and `iteration`) among the
        `candidates`, searched again; their policy targets replaced in `replay`."""
        t0 = time.perf_counter()
        pool = self.candidates(replay, store, newest)
        count = min(int(count), len(pool))
        stats = ReanalyseStats()
        if count <= 0:
            return stats
        rng = np.random.default_rng(derive_seed(self.seed, "reanalyse", iteration))
        slots = np.sort(rng.choice(pool, size=count, replace=False))
        change = 0.0
        for first in range(0, count, self.parallel):
            chunk = slots[first : first + self.parallel]
            k = len(chunk)
            for b, slot in enumerate(chunk.tolist()):
                game = store.games[int(store.key[slot])]
                ply = int(store.ply[slot])
                try:
                    self.games.load_moves(b, game.start, game.moves[:ply], game.rules)
                except (IllegalMoveError, ValueError) as e:
                    raise ReplayError(f"replay slot {slot}: its game does not replay to ply {ply}: {e}") from None
                self.search.advance(b, -1)  # a new position: its tree starts afresh
                self.search.reseed(b, derive_seed(self.seed, "reanalyse", iteration, slot))
            active = np.zeros(self.parallel, np.bool_)
            active[:k] = True
            bad = np.flatnonzero(self.games.done[:k] | (self.games.masks(np.arange(k)) != replay.mask[chunk]).any(1))
            if len(bad):
                raise ReplayError(
                    f"replay slot {int(chunk[bad[0]])}: the position its game replays to is not the one stored "
                    "there (its legal moves differ); the reanalysis store does not match the buffer"
                )
            out = self.search.search(self.games, active, add_noise=True)
            new = out.policy[:k]
            change += float(0.5 * np.abs(new - replay.policy[chunk].astype(np.float32)).sum(axis=1).sum())
            replay.policy[chunk] = new.astype(np.float16)
        stats.positions = count
        stats.simulations = count * int(self.mcts.num_simulations)
        stats.policy_change = change / count
        stats.seconds = time.perf_counter() - t0
        return stats


def reanalyse_count(fraction: float, new_positions: int) -> int:
    """Positions to reanalyse after an iteration that added `new_positions`: `fraction` of them, rounded."""
    return int(round(fraction * new_positions)) if fraction > 0 else 0

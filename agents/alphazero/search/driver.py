"""`BatchedMCTS`: the stateful driver that searches the B games of an `envs.batch.GameBatch` with one evaluator call
per step.

It owns the arrays (`tree`), the per-game random generators, subtree reuse
between moves, and the calls of the evaluator; what differs between
algorithms (noise, root selection, targets and moves) comes from the root
policy the caller hands it (`search.make_policy(config)`), which carries the
search settings.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from agents.alphazero.search.base import Evaluator, SearchOutput
from agents.alphazero.search.config import MCTSConfig
from agents.alphazero.search.policy import RootPolicy
from agents.alphazero.search.search import (
    apply_evaluations,
    apply_lane_evaluations,
    evaluate_roots,
    prepare_roots,
    record_base_visits,
    solver_outputs,
    tablebase_outputs,
)
from agents.alphazero.search.tree import (
    ROOT,
    Lanes,
    Leaves,
    Roots,
    Work,
    advance_trees,
    default_nodes,
    new_tree,
)
from envs import kernels as K
from envs.encoding import N_ACTIONS, OBS_SHAPE
from envs.rules import RuleSet
from envs.seeding import derive_seed
from envs.tablebase.probe import TablebaseArrays, empty_arrays
from envs.tablebase.table import default_tablebase


def search_tables(config: MCTSConfig, rules: RuleSet) -> Optional[TablebaseArrays]:
    """The endgame tables a search of `config` under `rules` reads (`BatchedMCTS`'s ``tablebase``): those of
    the rules' default location when ``config.tablebase`` is on (TablebaseMissingError, a ValueError,
    names the command that builds them), else None."""
    return default_tablebase(rules).arrays if config.tablebase else None


NOISE_PLIES = 32
"""Searches' worth of exploration noise a game slot draws ahead from its generator at a time."""


class BatchedMCTS:
    """Tree search over the B games of an `envs.batch.GameBatch`, one tree per game slot.

    `search` runs the simulations of all active games in lockstep (one
    evaluator call per simulation step) and returns targets and moves;
    `begin`, `step` and `results` run searches that start and end at
    different times in the same calls (pipelined self-play);
    `advance` keeps the subtree of the move played (call it after
    `GameBatch.play`, or with action -1 after a reset). A tree that does not
    match its game's current position is discarded by the next search.

    Game slot ``b`` draws its noise from its own generator (seeded from
    ``derive_seed(seed, "slot", b)`` or by `reseed`), so a game's search does not depend on the
    other games of the batch.

    `policy` is the search algorithm with its settings (`search.make_policy(config)`); it keeps
    per-slot state, so each BatchedMCTS takes a policy of its own.

    `n_games` fixes the number of slots now (needed for `reseed` before the
    first search; otherwise the first GameBatch decides). `max_nodes` fixes the
    nodes per game; by default it is room for two searches' expansions and
    grows when a search asks for more simulations than the config's.

    `tablebase`: the endgame tables the search reads when its config's ``tablebase`` is on
    (`search_tables` opens those of the rules' default location); ignored when it is off.

    `flags` are the rules' flags (int64 [N_FLAGS], `RuleSet.flags`) of every slot. A GameBatch brings
    each game's own (``game_flags``): `begin` searches each game under those, so the games of one
    search may play different rule sets (a slot's tree is discarded when its rules change).
    """

    def __init__(
        self,
        evaluator: Evaluator,
        policy: RootPolicy,
        flags: np.ndarray,
        *,
        seed: int,
        n_games: Optional[int] = None,
        max_nodes: Optional[int] = None,
        rounds: bool = True,
        tablebase: Optional[TablebaseArrays] = None,
    ) -> None:
        if not isinstance(policy, RootPolicy):
            raise TypeError(
                f"BatchedMCTS takes a root policy (search.make_policy(config)), not a {type(policy).__name__}"
            )
        if policy.taken:
            raise ValueError(
                "this root policy already serves another BatchedMCTS: give each search its own "
                "(search.make_policy(config))"
            )
        policy.taken = True
        self.evaluator = evaluator
        self._in_kernels = bool(getattr(evaluator, "runs_in_kernels", False))
        """The evaluator answers as the uniform one does: the whole search runs inside numba, never calling it."""
        self.policy = policy
        """The algorithm's noise, selection and outputs."""
        self.config = config = policy.config
        self.flags = np.asarray(flags, dtype=np.int64)
        """The rules' flags of the slots' games before a GameBatch brings its own."""
        self.seed = int(seed)
        self.params = config.params()
        if config.tablebase and tablebase is None:
            raise ValueError(
                "mcts.tablebase=true needs the tables: pass tablebase= (search.search_tables(config, rules))"
            )
        self.tablebase = tablebase if config.tablebase and tablebase is not None else empty_arrays()
        """The endgame tables the kernels probe (no tables when the switch is off: one kernel signature)."""
        self.rounds = policy.shares_calls(bool(rounds))
        """Whether simulations that cannot see each other's evaluations share an evaluator call (Gumbel's
        order-free runs, `selection.gumbel_root_round`): the same searches as one simulation per game and
        call (to the evaluator's rounding by batch size), in fewer and larger calls."""
        self._n = n_games
        self._max_nodes = max_nodes
        self.max_nodes = int(max_nodes) if max_nodes is not None else default_nodes(config.num_simulations)
        """Nodes per game's tree."""
        self._cap = -1
        self._flags = np.zeros((0, len(self.flags)), dtype=np.int64)
        """int64 [B, N_FLAGS]: the rules' flags each slot's search plays by (the kernels' ``flags``)."""
        if n_games is not None:
            self._allocate(n_games)

    # -- set-up ----------------------------------------------------------------------
    def _allocate(self, n: int) -> None:
        self._n = n
        self.tree = new_tree(n, self.max_nodes)
        self._flags = np.tile(self.flags, (n, 1))
        self._rngs = [np.random.default_rng(derive_seed(self.seed, "slot", b)) for b in range(n)]
        self._root_ply = np.full(n, -1, dtype=np.int64)
        self._root_hash = np.zeros(n, dtype=np.uint64)
        self._tree_draw = np.zeros(n, dtype=np.float64)
        """The draw value of each slot's tree to its root's side to move (the last search's, turned over by
        each `advance` since)."""
        rows = n * self.policy.leaves_per_call(self.rounds)
        self._leaves = Leaves(
            obs=np.zeros((rows,) + OBS_SHAPE, dtype=np.float32),
            mask=np.zeros((rows, N_ACTIONS), dtype=np.bool_),
            game=np.zeros(rows, dtype=np.int64),
        )
        self._lanes = Lanes(
            path=np.zeros((rows, self.config.max_depth + 1), dtype=np.int32),
            depth=np.zeros(rows, dtype=np.int32),
            status=np.zeros(rows, dtype=np.int8),
        )
        self._gumbel = np.zeros((n, K.MAX_MOVES), dtype=np.float64)
        self._base = np.zeros((n, K.MAX_MOVES), dtype=np.int32)
        self._sims_done = np.zeros(n, dtype=np.int32)
        self._sims_target = np.zeros(n, dtype=np.int32)
        self._searching = np.zeros(n, dtype=np.bool_)
        """Games whose search `begin` started and `step` has not finished."""
        self._starting = np.zeros(n, dtype=np.bool_)
        """Searching games whose roots the next `step` evaluates and sets up first."""
        self._sigma = np.zeros(K.MAX_MOVES, dtype=np.float64)
        self._picks = np.zeros((n, K.MAX_MOVES), dtype=np.int32)
        self._order = np.zeros(self.max_nodes, dtype=np.int32)
        self._new_index = np.zeros(self.max_nodes, dtype=np.int32)
        self.work = self._new_work(n, 0)  # room for no game yet: the first search makes it
        width = self.policy.noise_width
        self._noise = np.zeros((n, NOISE_PLIES, width), dtype=np.float64)
        """Each slot's next searches' noise, drawn ahead from its generator (`policy.fill_noise`)."""
        self._noise_next = np.full(n, NOISE_PLIES, dtype=np.int64)
        """The row of `_noise` the slot's next noisy search takes (NOISE_PLIES: none left, draw more)."""
        self._noise_rows = np.zeros((n, width), dtype=np.float64)
        self.policy.allocate(n)
        self._roots = self._new_roots(max(self.config.num_simulations, 1))

    def _new_roots(self, width: int) -> Roots:
        n = self._n
        assert n is not None
        return Roots(
            gumbel=self._gumbel,
            base_visits=self._base,
            schedule=np.zeros((n, width), np.int32),
            sims_done=self._sims_done,
            sims_target=self._sims_target,
            sigma=self._sigma,
        )

    def _widen_schedule(self, sims: int) -> None:
        """Room in the roots' schedule rows for searches of `sims` simulations (the rows kept)."""
        old = self._roots.schedule
        if sims <= old.shape[1]:
            return
        self._roots = self._new_roots(sims)
        self._roots.schedule[:, : old.shape[1]] = old

    def reserve(self, sims: int) -> None:
        """Room in the trees for `sims` simulations in all, over the searches that keep adding to one tree
        (rounds of a search by time or by a `Limit`); the trees are kept, and nothing changes when
        `max_nodes` was fixed."""
        self._grow(sims)

    def _grow(self, sims: int) -> None:
        """Make room for searches of `sims` simulations (unless max_nodes was fixed), keeping the trees."""
        nodes = default_nodes(sims)
        if self._max_nodes is not None or nodes <= self.max_nodes:
            return
        if self._n is None:
            self.max_nodes = nodes
            return
        old = self.tree
        self.tree = new_tree(old.visits.shape[0], nodes)
        for new, kept in zip(self.tree, old):
            if kept.ndim == 2:
                new[:, : kept.shape[1]] = kept
            else:
                new[:] = kept
        self.max_nodes = nodes
        self._order = np.zeros(nodes, dtype=np.int32)
        self._new_index = np.zeros(nodes, dtype=np.int32)

    def _ensure_work(self, games: Any) -> None:
        if self._n is None:
            self._allocate(games.n)
        if games.n != self._n:
            raise ValueError(f"this search holds {self._n} game slots, the GameBatch has {games.n}")
        cap = games.hist.shape[1]
        if cap != self._cap:
            if self._searching.any():
                raise ValueError("the GameBatch's history arrays changed size while games were searching")
            self.work = self._new_work(int(games.n), cap)
            self._cap = cap
            self._root_ply[:] = -1  # the trees' positions were in the old arrays

    def _new_work(self, n: int, cap: int) -> Work:
        """Scratch for `n` games of up to `cap` plies."""
        depth = self.config.max_depth
        return Work(
            root_state=np.zeros((n, K.STATE_LEN), dtype=np.int16),
            leaf_state=np.zeros((n, K.STATE_LEN), dtype=np.int16),
            hist=np.zeros((n, cap + depth + 1, K.HIST_WIDTH), dtype=np.int16),
            hashes=np.zeros((n, cap + depth + 2), dtype=np.uint64),
            path=np.zeros((n, depth + 1), dtype=np.int32),
            depth=np.zeros(n, dtype=np.int32),
            leaf_status=np.zeros(n, dtype=np.int8),
            draw_value=np.zeros(n, dtype=np.float64),
        )

    def reseed(self, game_index: int, seed: int) -> None:
        """Give slot `game_index` a fresh generator from `seed` (a new game's own seed)."""
        if self._n is None:
            raise ValueError("reseed before the first search needs n_games at construction")
        self._rngs[game_index] = np.random.default_rng(seed)
        self._noise_next[game_index] = NOISE_PLIES  # what was drawn ahead came from the old generator

    def _next_noise(self, noisy: np.ndarray) -> np.ndarray:
        """float64 [B, noise_width]: row b holds the noise of game b's search now, for the games `noisy`
        (taken in order from the slot's noise drawn ahead; a slot that has none left draws the next
        NOISE_PLIES searches' worth from its generator, one Python call per slot that many searches)."""
        for b in noisy[self._noise_next[noisy] >= NOISE_PLIES].tolist():
            self._noise[b] = self.policy.fill_noise(self._rngs[b], NOISE_PLIES)
            self._noise_next[b] = 0
        self._noise_rows[noisy] = self._noise[noisy, self._noise_next[noisy]]
        self._noise_next[noisy] += 1
        return self._noise_rows

    # -- searching ---------------------------------------------------------------------
    def search(
        self,
        games: Any,
        active: Optional[np.ndarray] = None,
        *,
        add_noise: Any = True,
        num_simulations: Any = None,
        draw_value: Any = None,
    ) -> SearchOutput:
        """Search the active, unfinished games of `games` (default: all unfinished) in lockstep.

        `add_noise` (a bool, or bool [B] per game) switches on self-play
        exploration (PUCT: Dirichlet noise and the visit temperature for the
        first plies; Gumbel: Gumbel noise); without it a game's search is
        deterministic. `num_simulations` (an int, or int [B] per game)
        overrides the config's count: games with fewer simulations sit out the
        last steps, so cheap playout-capped searches share the evaluator
        batches of the full ones. `draw_value` (a float, or float [B] per
        game, each in [-1, 1]) overrides the config's worth of a drawn end
        to the root's side to move (`MCTSConfig.draw_value`), so one batch
        can search a contempt for draws on one side of a game only.

        The same as `begin` for those games, `step` until none is searching, then `results`; so it
        refuses to run while searches started by `begin` are still going."""
        if self._n is not None and self._searching.any():
            raise RuntimeError(
                f"games {np.flatnonzero(self._searching).tolist()} are still searching (begin/step); "
                "finish them with step before a lockstep search"
            )
        act = ~games.done if active is None else (np.asarray(active, dtype=np.bool_) & ~games.done)
        idx = np.flatnonzero(act).astype(np.int64)
        self.begin(games, idx, add_noise=add_noise, num_simulations=num_simulations, draw_value=draw_value)
        while self._searching.any():
            self.step()
        return self.results(idx)

    @property
    def searching(self) -> np.ndarray:
        """bool [B]: the games whose search `begin` started and `step` has not finished (a copy)."""
        return np.zeros(0, dtype=np.bool_) if self._n is None else self._searching.copy()

    def begin(
        self,
        games: Any,
        idx: np.ndarray,
        *,
        add_noise: Any = True,
        num_simulations: Any = None,
        draw_value: Any = None,
    ) -> None:
        """Start the searches of the games `idx` (int, unfinished, not searching) from their positions in
        `games` now; `step` runs them, beside any started earlier, and says which have finished.

        `add_noise`, `num_simulations` and `draw_value` as in `search` (a value, or one per game slot). The games must
        not be played until their search has finished: the search copied their positions. Searches
        started at different times share the evaluator's calls, so a game whose search ends early
        plays its move and starts the next one while the others go on (the pipelined self-play of
        `selfplay.play_games`); each search is the one `search` would run for that game alone."""
        cfg = self.config
        self._ensure_work(games)
        n = self._n
        assert n is not None
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        if len(idx) == 0:
            return
        if idx.min() < 0 or idx.max() >= n:
            raise ValueError(f"game indices must be in [0, {n}), got {idx.tolist()}")
        if games.done[idx].any():
            raise ValueError(f"games {idx[games.done[idx]].tolist()} are over: there is nothing to search")
        if self._searching[idx].any():
            raise ValueError(f"games {idx[self._searching[idx]].tolist()} are already searching")
        sims = np.broadcast_to(
            np.asarray(cfg.num_simulations if num_simulations is None else num_simulations, dtype=np.int64), (n,)
        )
        if sims[idx].min() < 0:
            raise ValueError(f"num_simulations must be >= 0, got {sims[idx].min()}")
        noise = np.broadcast_to(np.asarray(add_noise, dtype=np.bool_), (n,))
        draws = np.broadcast_to(
            np.asarray(self.params.draw_value if draw_value is None else draw_value, dtype=np.float64), (n,)
        )
        if not np.all(np.abs(draws[idx]) <= 1.0):
            raise ValueError(f"draw_value must be in [-1, 1], got {draws[idx].tolist()}")
        max_sims = int(sims[idx].max())
        self._take_rules(games, idx)
        # A kept subtree holds drawn ends valued for the last search's root side, seen from this root's side
        # (`advance` turns it over with each move): it serves this search only if that is this search's value.
        stale = idx[draws[idx] != self._tree_draw[idx]]
        self._root_ply[stale] = -1  # prepare_roots resets their trees
        self._tree_draw[idx] = draws[idx]
        self.work.draw_value[idx] = draws[idx]
        self._grow(max_sims)
        self._widen_schedule(max_sims)
        prepare_roots(
            self.tree,
            self.work,
            games.state,
            games.hist,
            games.hashes,
            idx,
            self._root_ply,
            self._root_hash,
            (max_sims + 1) * K.MAX_MOVES,
        )
        self._sims_target[idx] = sims[idx]
        noisy = idx[noise[idx]]
        self.policy.draw_noise(games, idx, noisy, self._next_noise(noisy), self._roots)
        self._searching[idx] = True
        self._starting[idx] = True

    def _take_rules(self, games: Any, idx: np.ndarray) -> None:
        """The rules of the games `idx` from `games` (``game_flags``, when it has them); a slot whose rules
        changed starts a new tree."""
        game_flags = getattr(games, "game_flags", None)
        if game_flags is None:
            return
        changed = idx[(self._flags[idx] != game_flags[idx]).any(axis=1)]
        if len(changed):
            self._flags[changed] = game_flags[changed]
            self._root_ply[changed] = -1  # prepare_roots resets their trees

    def step(self) -> np.ndarray:
        """One step of every search in progress: the roots of the searches just begun are evaluated (one
        evaluator call, for those not kept from the previous move), then each search selects its next
        leaves (Gumbel's order-free runs several, `rounds`) for one evaluator call and backs them up.
        Returns int64, ascending: the games whose searches have now finished (read them with `results`)."""
        if self._n is None or not self._searching.any():
            return np.zeros(0, dtype=np.int64)
        cfg = self.config
        tree, work, policy, roots, tb = self.tree, self.work, self.policy, self._roots, self.tablebase
        idx = np.flatnonzero(self._searching).astype(np.int64)
        uniform = self._in_kernels
        new = idx[self._starting[idx]]
        if len(new):
            # The root's own evaluation (for a root not kept from the previous search).
            self._evaluate(evaluate_roots(tree, work, self._leaves, self._flags, self.params, tb, new, uniform))
            policy.after_root_evaluation(tree, roots, new)
            record_base_visits(tree, new, self._base)
            self._sims_done[new] = 0
            self._starting[new] = False
        lanes = 0  # leaves queued with their paths in `_lanes` (several a game)
        if uniform:
            policy.simulate(
                tree,
                work,
                roots,
                self._leaves,
                self._flags,
                self.params,
                tb,
                idx,
                int(self._sims_target[idx].max()),
                True,
            )
        elif self.rounds:
            lanes = policy.simulate_rounds(
                tree, work, roots, self._leaves, self._lanes, self._flags, self.params, tb, idx, self._picks
            )
        elif cfg.leaf_batch > 1:
            lanes = policy.simulate_lanes(
                tree, work, roots, self._leaves, self._lanes, self._flags, self.params, tb, idx, cfg.leaf_batch
            )
        else:
            self._evaluate(
                policy.simulate(tree, work, roots, self._leaves, self._flags, self.params, tb, idx, 1, False)
            )
        if lanes:
            logits, values = self._call_evaluator(lanes)
            apply_lane_evaluations(tree, self._leaves, self._lanes, logits, values, lanes, not self.rounds)
        done = idx[self._sims_done[idx] >= self._sims_target[idx]]
        self._searching[done] = False
        return done

    def results(self, idx: np.ndarray) -> SearchOutput:
        """The outcome of the finished searches of the games `idx`, a row per slot (rows of other games
        zero, action -1)."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        rows = self._n
        assert rows is not None, "no search has begun"
        out = SearchOutput(
            policy=np.zeros((rows, N_ACTIONS), dtype=np.float32),
            action=np.full(rows, -1, dtype=np.int64),
            root_value=np.zeros(rows, dtype=np.float32),
            visits=np.zeros((rows, N_ACTIONS), dtype=np.int32),
        )
        if len(idx) == 0:
            return out
        if self._searching[idx].any():
            raise ValueError(f"games {idx[self._searching[idx]].tolist()} have not finished their searches")
        self.policy.outputs(self.tree, self._roots, self.params, idx, out)
        if self.params.solver:
            solver_outputs(self.tree, idx, out.action, out.root_value)
        if self.params.tablebase:
            tablebase_outputs(
                self.tree,
                self.work,
                self._flags,
                self.tablebase,
                idx,
                out.action,
                out.root_value,
            )
        return out

    def _evaluate(self, k: int) -> None:
        """Evaluate the `k` leaves queued by the last step and back their values up."""
        if k == 0:
            return
        logits, values = self._call_evaluator(k)
        apply_evaluations(self.tree, self.work, self._leaves, logits, values, k)

    def _call_evaluator(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The evaluator's (logits float32 [k, 252], values float32 [k]) for the `k` queued leaves, checked."""
        logits, values = self.evaluator(self._leaves.obs[:k], self._leaves.mask[:k])
        logits = np.ascontiguousarray(logits, dtype=np.float32)
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        if logits.shape != (k, N_ACTIONS) or values.shape != (k,):
            raise ValueError(
                f"evaluator returned logits {logits.shape} and values {values.shape} for {k} positions; "
                f"expected ({k}, {N_ACTIONS}) and ({k},)"
            )
        return logits, values

    def advance(self, game_index: int, action: int) -> None:
        """Move game `game_index`'s root to the child of `action` (just played), keeping its
        subtree when `reuse_tree`; action -1 (or an unknown action) clears the tree."""
        if self._n is None:
            return
        actions = np.full(self._n, -1, dtype=np.int64)
        actions[int(game_index)] = int(action)
        self.advance_many(np.array([int(game_index)], dtype=np.int64), actions)

    def advance_many(self, idx: np.ndarray, actions: np.ndarray) -> None:
        """`advance` for the games `idx` at once (one kernel call): game `b`'s root moves to its child of
        `actions[b]` (int [B]; -1 clears the tree). A proven root (a decisive move) is searched afresh."""
        if self._n is None:
            return
        idx = np.asarray(idx, dtype=np.int64)
        if self._searching[idx].any():
            raise ValueError(f"games {idx[self._searching[idx]].tolist()} are searching: finish the search first")
        keep = bool(self.config.reuse_tree)
        self._tree_draw[idx] = -self._tree_draw[idx]  # the turn passes: a draw's worth to the new root side
        advance_trees(
            self.tree,
            self.work,
            self._root_ply,
            self._root_hash,
            idx,
            np.asarray(actions, dtype=np.int64),
            keep,
            self._order,
            self._new_index,
        )

    def root_visits(self, game_index: int) -> int:
        """Visits of game `game_index`'s root (including those of a kept subtree)."""
        return 0 if self._n is None else int(self.tree.visits[game_index, ROOT])

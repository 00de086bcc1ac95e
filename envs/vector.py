"""`Jungle-v0` batched: N games stepped in one numba call, as a `gymnasium.vector.VectorEnv`.

    >>> import gymnasium as gym, envs
    >>> venv = gym.make_vec("Jungle-v0", num_envs=4096, vectorization_mode="vector_entry_point")
    >>> obs, info = venv.reset(seed=0)                    # obs float32 [4096, 32, 9, 7]
    >>> actions = venv.action_space.sample()              # a legal action per game
    >>> obs, rewards, terminated, truncated, info = venv.step(actions)
    >>> info["action_mask"].shape                         # int8 [4096, 252]
    (4096, 252)

Each game follows `Jungle-v0` exactly (same kernels, same rewards,
terminations and truncations; see `envs.env.JungleEnv`); the tests check it
against N independent `Jungle-v0` fed the same actions. What is batched:

* **Autoreset** — Gymnasium's next-step mode (``metadata["autoreset_mode"]``):
  the step after a game ends resets it, ignores its action and returns its
  first observation with reward 0, ``terminated`` and ``truncated`` False.
* **Opponents** — ``opponent=None`` self-play (rewards to the side that just
  moved); ``"random"``, a uniformly random legal reply drawn inside the same
  numba call; or a batched policy, a callable ``(obs [M, 32, 9, 7], mask
  [M, 252]) -> actions [M]`` called once per step on the M games whose
  opponent is to move (for instance a frozen copy of the learner). With an
  opponent, rewards are from the agent's view and ``agent_side`` is
  ``"red"``, ``"blue"`` or ``"random"`` (drawn per game at each reset).
* **Info** — arrays for every game at every call: ``action_mask`` int8
  ``[N, 252]``, ``side_to_move`` int8 ``[N]`` (0 Red, 1 Blue),
  ``side_rewards`` float32 ``[N, 2]``, ``termination`` int8 ``[N]`` (an index
  into `TERMINATIONS`, 0 while the game goes on), ``winner`` int8 ``[N]``
  (0 Red, 1 Blue, 2 draw, -1 none); against an opponent also ``agent_side``
  int8 ``[N]`` and ``opponent_move`` int16 ``[N]`` (`Move.from_int` of it, -1
  when the opponent did not move).
* **Illegal actions** raise `IllegalActionError` naming the game, before any
  game moves.

Seeding: ``reset(seed=s)`` seeds the env's generator, from which each game's
own generator (random opponent, random side) is drawn; ``action_space.sample()``
draws a legal action per game from the action space's generator.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from envs import kernels as K
from envs.batch import GameBatch
from envs.batch_kernels import (
    C_MAX_PLIES,
    C_OPPONENT,
    C_SIDE,
    N_CONFIG,
    OPENING_ENDED_GAME,
    OPP_EXTERNAL,
    OPP_NONE,
    OPP_RANDOM,
    SIDE_RANDOM,
    Episodes,
    Outputs,
    Setup,
    first_illegal,
    sample_legal_actions,
    vector_opponent_step,
    vector_reset,
    vector_step,
)
from envs.board import Board, Termination
from envs.config import ConfigError, check_range, shown
from envs.encoding import N_ACTIONS, OBS_SHAPE
from envs.env import DEFAULT_MAX_PLIES, IllegalActionError
from envs.notation import START_JFEN, Move, Side, state_to_jfen
from envs.rules import RulesLike, resolve_rules

BatchedPolicy = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""An opponent for the vector env: ``(obs [M, 32, 9, 7], mask int8 [M, 252]) -> actions [M]``."""

TERMINATIONS = ("", *(t.name.lower() for t in sorted(Termination, key=lambda t: t.value)), "ply_cap")
"""Names of the ``info["termination"]`` codes (the kernels' TERM_* codes, then `TERM_PLY_CAP`), as
`Jungle-v0`'s ``info["termination"]`` strings."""

INITIAL_PLY_ROOM = 256
"""Plies of history allocated per game at first; the arrays double when a game needs more."""

_SIDE_CODES = {"red": K.RED, "blue": K.BLUE, "random": SIDE_RANDOM}


class LegalMultiDiscrete(spaces.MultiDiscrete):
    """``MultiDiscrete([252] * N)`` whose ``sample()`` draws a legal action for every game.

    Without a mask it reads its vector env's current masks; ``mask`` may also
    be an int8 ``[N, 252]`` array (one numba call) or, as in `MultiDiscrete`,
    a tuple of ``[252]`` masks. Games with no legal action get 0 (their
    action is ignored: they are reset at the next step)."""

    def __init__(self, venv: "JungleVectorEnv", seed: Optional[int] = None) -> None:
        super().__init__(np.full(venv.num_envs, N_ACTIONS, dtype=np.int64), seed=seed)
        self._venv = venv

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if probability is not None or isinstance(mask, tuple):
            return super().sample(mask=mask, probability=probability)
        masks = self._venv._out.masks if mask is None else np.ascontiguousarray(mask, dtype=np.int8)
        if masks.shape != (len(self.nvec), N_ACTIONS):
            raise ValueError(f"mask must have shape [{len(self.nvec)}, {N_ACTIONS}], got {list(masks.shape)}")
        out = np.empty(len(self.nvec), dtype=np.int64)
        sample_legal_actions(masks, self.np_random.random(len(self.nvec)), out)
        return out

    def __reduce__(self) -> tuple:
        return (spaces.MultiDiscrete, (self.nvec,))


class JungleVectorEnv(gym.vector.VectorEnv):
    """N games of `Jungle-v0` advanced together in one numba call per step (see the module doc)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int = 1,
        rules: RulesLike = None,
        opponent: Union[None, str, BatchedPolicy] = None,
        agent_side: Union[str, Side] = "red",
        max_plies: Optional[int] = DEFAULT_MAX_PLIES,
        start_jfen: Optional[str] = None,
        copy: bool = True,
    ) -> None:
        """Args:
        num_envs: N, the number of games.
        rules: a RuleSet, a mapping of rule keys, or a rule-set name (as `Jungle-v0`).
        opponent: None (self-play), ``"random"`` or a `BatchedPolicy`.
        agent_side: ``"red"``, ``"blue"`` or ``"random"``; only with an opponent.
        max_plies: truncate a game once this many plies have been played; None truncates only at the
            counters' limit (`envs.rules.COUNTER_LIMIT`, as `Jungle-v0`).
        start_jfen: the position every game starts from (default the start position).
        copy: return arrays of the caller's own at each call (True: the observations are
            written into a new array, the masks copied) or the env's buffers, which the next
            call overwrites (False, faster).
        """
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise ConfigError(f"num_envs={shown(num_envs)} must be an integer")
        check_range({"num_envs": num_envs}, "", num_envs=(1, None))
        if max_plies is not None:
            if isinstance(max_plies, bool) or not isinstance(max_plies, (int, np.integer)):
                raise ConfigError(f"max_plies={shown(max_plies)} must be an integer or None")
            check_range({"max_plies": max_plies}, "", max_plies=(1, None))
        self.num_envs = int(num_envs)
        self.rules = resolve_rules(rules)
        self.flags = self.rules.flags()
        board = Board.from_jfen(START_JFEN if start_jfen is None else start_jfen, rules=self.rules)
        over = board.outcome()
        if over is not None:
            raise ValueError(f"the start position {board.jfen()!r} is already over ({over.termination.name.lower()})")
        self.start_jfen = board.jfen()
        self.max_plies = None if max_plies is None else int(max_plies)
        self.copy = bool(copy)

        self._policy: Optional[BatchedPolicy] = None
        if opponent is None:
            kind = OPP_NONE
            if agent_side not in ("red", Side.RED):
                raise ValueError(f"agent_side={agent_side!r} needs an opponent (self-play plays both sides)")
        elif opponent == "random":
            kind = OPP_RANDOM
        elif callable(opponent):
            kind = OPP_EXTERNAL
            self._policy = opponent
        else:
            raise ValueError(
                f"opponent must be None, 'random' or a batched policy (obs, mask) -> actions, got {opponent!r}; "
                "for other player specs use gym.make_vec('Jungle-v0', vectorization_mode='sync', opponent=...)"
            )
        if isinstance(agent_side, Side):
            agent_side = agent_side.name.lower()
        if agent_side not in _SIDE_CODES:
            raise ValueError(f"agent_side {agent_side!r} is not 'red', 'blue' or 'random'")
        self.opponent = opponent
        self.agent_side_choice = agent_side
        config = np.zeros(N_CONFIG, dtype=np.int64)
        config[C_MAX_PLIES] = 0 if self.max_plies is None else self.max_plies
        config[C_OPPONENT] = kind
        config[C_SIDE] = _SIDE_CODES[agent_side]
        self._setup = Setup(board.state.copy(), board.hashes[:1].copy(), self.flags, config)

        self.single_observation_space = spaces.Box(0.0, 1.0, shape=OBS_SHAPE, dtype=np.float32)
        self.single_action_space = spaces.Discrete(N_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = LegalMultiDiscrete(self)

        n = self.num_envs
        room = INITIAL_PLY_ROOM if self.max_plies is None else min(INITIAL_PLY_ROOM, self.max_plies + 2)
        # The games' positions. Their episodes' ends are in `_out` and `_episodes` (the kernels of
        # `envs.batch_kernels` write them), not in the batch's `done`, which only `GameBatch.play` keeps.
        self._batch = GameBatch(n, self.rules, self.start_jfen, self.max_plies, room=room)
        self._episodes = Episodes(
            rngs=np.zeros(n, dtype=np.uint64),
            agent_sides=np.zeros(n, dtype=np.int8),
            pending=np.zeros(n, dtype=np.bool_),
            awaiting=np.zeros(n, dtype=np.bool_),
        )
        self._out = Outputs(
            obs=np.zeros((n, *OBS_SHAPE), dtype=np.float32),
            masks=np.zeros((n, N_ACTIONS), dtype=np.int8),
            rewards=np.zeros(n, dtype=np.float64),
            terminated=np.zeros(n, dtype=np.bool_),
            truncated=np.zeros(n, dtype=np.bool_),
            side_rewards=np.zeros((n, 2), dtype=np.float32),
            terminations=np.zeros(n, dtype=np.int8),
            winners=np.zeros(n, dtype=np.int8),
            opponent_moves=np.zeros(n, dtype=np.int16),
        )
        self._moves = np.empty(K.MAX_MOVES, dtype=np.int64)
        self._top_ply = 0
        self._started = False

    # -- the Gymnasium API ------------------------------------------------------------------
    def reset(
        self, *, seed: Union[int, None] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset all games, or those of ``options["reset_mask"]`` (bool ``[N]``)."""
        super().reset(seed=seed)
        reset_mask = np.ones(self.num_envs, dtype=np.bool_)
        if options:
            unknown = sorted(set(options) - {"reset_mask"})
            if unknown:
                raise ValueError(f"unknown reset option(s) {', '.join(unknown)}; known: reset_mask")
            if "reset_mask" in options:
                reset_mask = np.asarray(options["reset_mask"])
                if reset_mask.shape != (self.num_envs,) or reset_mask.dtype != np.bool_:
                    raise ValueError(f"options['reset_mask'] must be bool [{self.num_envs}], got {reset_mask!r}")
        if not self._started and not reset_mask.all():
            raise ValueError("the first reset must reset every game (no reset_mask)")
        if seed is not None or not self._started:
            rngs = self.np_random.integers(1, 2**63 - 1, size=self.num_envs, dtype=np.int64)
            self._episodes.rngs[:] = rngs.astype(np.uint64)
        self._started = True
        self._new_obs(keep=not reset_mask.all())
        self._check_opening(
            vector_reset(reset_mask, self._setup, self._batch.arrays(), self._episodes, self._out, self._moves)
        )
        self._opponent_reply()
        return self._out.obs, self._info()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One env step for every game: `actions` int ``[N]`` (those of games being reset are ignored)."""
        if not self._started:
            raise gym.error.ResetNeeded("call reset() before step()")
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,) or not np.issubdtype(acts.dtype, np.integer):
            raise IllegalActionError(
                f"actions must be integers of shape [{self.num_envs}], got {acts.dtype} {list(acts.shape)}"
            )
        acts = acts.astype(np.int64, copy=False)
        self._check_actions(acts, self._episodes.pending)
        self._ensure_room()
        self._new_obs(keep=False)  # every game is written: stepped or reset
        status, top = vector_step(acts, self._setup, self._batch.arrays(), self._episodes, self._out, self._moves)
        self._top_ply = max(self._top_ply, int(top))
        self._check_opening(status)
        self._opponent_reply()
        out = self._out
        return out.obs, out.rewards.copy(), out.terminated.copy(), out.truncated.copy(), self._info()

    # -- internals -------------------------------------------------------------------------
    def _check_actions(self, actions: np.ndarray, skip: np.ndarray, who: str = "") -> None:
        masks = self._out.masks
        bad = int(first_illegal(actions, masks, skip))
        if bad >= 0:
            legal = np.flatnonzero(masks[bad]).tolist()
            raise IllegalActionError(
                f"illegal {who}action {int(actions[bad])} in game {bad} "
                f"({state_to_jfen(self._batch.state[bad])!r}); legal actions: {legal}"
            )

    def _opponent_reply(self) -> None:
        """Ask the batched policy for the games marked `awaiting` and play its answers."""
        awaiting = self._episodes.awaiting
        idx = np.flatnonzero(awaiting)
        if self._policy is None or len(idx) == 0:
            return
        answers = np.asarray(self._policy(self._out.obs[idx].copy(), self._out.masks[idx].copy()))
        if answers.shape != (len(idx),) or not np.issubdtype(answers.dtype, np.integer):
            raise IllegalActionError(f"the opponent policy must return integers of shape [{len(idx)}], got {answers!r}")
        full = np.zeros(self.num_envs, dtype=np.int64)
        full[idx] = answers
        self._check_actions(full, ~awaiting, who="opponent ")
        self._ensure_room()
        self._check_opening(
            vector_opponent_step(full, self._setup, self._batch.arrays(), self._episodes, self._out, self._moves)
        )
        self._top_ply = max(self._top_ply, int(self._batch.state[idx, K.S_PLY].max()))

    def _check_opening(self, status: int) -> None:
        if status == OPENING_ENDED_GAME:
            raise ValueError(f"the opponent's first move from {self.start_jfen!r} ended a game; pick another start")

    def _ensure_room(self) -> None:
        """Keep room for two more plies per game (the agent's move and the reply)."""
        self._batch.grow(self._top_ply + 3)

    def _new_obs(self, keep: bool) -> None:
        """With `copy`, give the coming call a new observation array (a fresh one is cheaper than a
        copy of the old: nothing reads it); `keep` carries the old rows over for games left alone."""
        if self.copy:
            obs = self._out.obs
            self._out = self._out._replace(obs=obs.copy() if keep else np.empty_like(obs))

    def _info(self) -> dict[str, Any]:
        out = self._out
        info: dict[str, Any] = {
            "action_mask": out.masks.copy() if self.copy else out.masks,
            "side_to_move": self._batch.state[:, K.S_SIDE].astype(np.int8),
            "side_rewards": out.side_rewards.copy(),
            "termination": out.terminations.copy(),
            "winner": out.winners.copy(),
        }
        if self.opponent is not None:
            info["agent_side"] = self._episodes.agent_sides.copy()
            info["opponent_move"] = out.opponent_moves.copy()
        return info

    # -- conveniences ----------------------------------------------------------------------
    def action_masks(self) -> np.ndarray:
        """bool ``[N, 252]``: each game's legal actions (all False for a game that just ended)."""
        return self._out.masks.astype(bool)

    def board(self, i: int) -> Board:
        """Game `i`'s position as a `Board` with its move history."""
        board = Board.from_jfen(self.start_jfen, rules=self.rules)
        games = self._batch
        for frm, to in games.hist[i, : int(games.state[i, K.S_PLY]), :2].tolist():
            board.push(Move.from_int(frm << 6 | to))
        return board


__all__ = ["BatchedPolicy", "JungleVectorEnv", "LegalMultiDiscrete", "TERMINATIONS"]

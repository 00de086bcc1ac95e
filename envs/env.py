"""`Jungle-v0`: Jungle as a Gymnasium environment with action masking.

    >>> import gymnasium as gym, envs
    >>> env = gym.make("Jungle-v0")                    # self-play: the env alternates sides
    >>> obs, info = env.reset(seed=0)
    >>> action = env.action_space.sample(info["action_mask"])
    >>> obs, reward, terminated, truncated, info = env.step(action)

    >>> env = gym.make("Jungle-v0", opponent="random", agent_side="random")
    >>> obs, info = env.reset(seed=0)                  # a single-agent MDP against `random`

See `JungleEnv` for the observation planes, the actions, the rewards and the
info keys.
"""

from __future__ import annotations

import operator
import weakref
from typing import Any, Callable, Optional, SupportsFloat, Union

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs import kernels as K
from envs.board import Board, IllegalMoveError, Outcome, Termination
from envs.encoding import N_ACTIONS, OBS_SHAPE
from envs.encoding import action_to_move as _action_to_move_kernel
from envs.encoding import move_to_action as _move_to_action_kernel
from envs.env_kernels import JFEN_MAX, NOT_LEGAL, OFF_BOARD, OK, env_observe, env_step_action, env_step_move
from envs.notation import SQUARE_NAMES, Move, Side
from envs.players import make_player
from envs.render import IMAGE_SHAPE, render_ansi, render_rgb
from envs.rules import RulesLike, resolve_rules

OpponentFn = Callable[[Board], Union[Move, str]]

DEFAULT_MAX_PLIES = 2000
"""Default ply cap. Under the default rules a game cannot last longer: at most
15 captures, each preceded by fewer than 120 capture-free plies, so the cap only
truncates games under variants that switch the draw rules off."""

_SIDES = (Side.RED, Side.BLUE)
_SIDE_NAMES = {"red": Side.RED, "blue": Side.BLUE}
_DIRECTION_NAMES = ("forward", "right", "back", "left")  # canonical directions 0-3


class IllegalActionError(ValueError):
    """An action that is not legal (masked) in the current position."""


class GameOverError(gym.error.ResetNeeded):
    """`step` called after the episode ended (or before the first `reset`)."""


class LegalActionSpace(spaces.Discrete):
    """`Discrete(252)` whose `sample()` without a mask draws a legal action.

    With no mask it samples among the legal actions of its environment's
    current position, so `env.action_space.sample()` is a legal action, as
    random agents and Gymnasium's env checker expect (once the episode is
    over it samples uniformly, and `step` refuses anyway); an explicit `mask` or
    `probability` behaves exactly as in `Discrete`. It equals `Discrete(252)`
    and pickles as one (the link to the environment is not pickled)."""

    def __init__(self, env: "JungleEnv", seed: Optional[int] = None) -> None:
        super().__init__(N_ACTIONS, seed=seed)
        self._env = weakref.ref(env)

    def sample(self, mask: Optional[np.ndarray] = None, probability: Optional[np.ndarray] = None) -> np.int64:
        if mask is None and probability is None:
            env = self._env()
            if env is not None and env._legal.any():
                mask = env._legal
        return super().sample(mask=mask, probability=probability)

    def __reduce__(self) -> tuple:
        return (spaces.Discrete, (self.n,))


class JungleEnv(gym.Env[np.ndarray, np.int64]):
    """Jungle (Dou Shou Qi) for reinforcement learning, with action masks.

    **Observation** — float32 ``[32, 9, 7]`` planes in the *canonical frame*
    of the side to move: for Red the board as it is, for Blue the board
    rotated 180 degrees (which maps the terrain and the start position onto
    themselves), so the mover's den is always at row 0, column 3. Indexed
    ``[plane, row, column]``, row 0 being the mover's back rank; every value
    lies in [0, 1]. The planes (listed in `envs.encoding`, which builds
    them): 0-7 the mover's pieces Rat..Elephant, 8-15 the opponent's, 16
    water, 17-18 the mover's and the opponent's traps, 19-20 the dens, 21 the
    no-capture clock, 22 the repetition count, 23 the colour to move, 24-31
    the rule set (constant planes, all 0 under the default rules).

    **Actions** — ``Discrete(252)``: ``action = from_square * 4 + direction``
    in the mover's canonical frame (square = row * 7 + column as above;
    direction 0 forward towards the enemy den, 1 right, 2 back, 3 left as
    the mover sees it). A jump over a river is the direction of the jump.
    `action_to_move` / `move_to_action` convert to and from `Move`
    (`envs.encoding` holds the one encode/decode pair). Only legal actions
    may be played: an illegal one raises `IllegalActionError` (a
    ValueError) naming the action and the position, or, with
    ``illegal_action="lose"``, ends the episode as a loss for the mover.
    ``action_space.sample()`` draws a legal action (`LegalActionSpace`).

    **Masks** — ``info["action_mask"]``: int8 ``[252]``, 1 for legal actions
    (the convention of ``Discrete.sample(mask=...)``), on `reset` and every
    `step`; all 0 once the game is over, never all 0 before.
    `action_masks()` returns the same as bool ``[252]`` (sb3-contrib's
    MaskablePPO convention).

    **Modes and rewards** —

    * self-play (``opponent=None``): each `step` plays one ply for the side
      to move and the env alternates sides. The reward goes to the side that
      just moved: +1 if its move won the game, -1 if it lost, 0 otherwise
      (draws, moves before the end). The other side's reward is the
      opposite; ``info["side_rewards"]`` gives both, ``[red, blue]``.
    * versus an opponent (``opponent="random"``, a player spec, a `Player`
      or a callable ``Board -> Move``): the agent plays ``agent_side``; the
      opponent answers inside `step` (and opens inside `reset` when the
      agent is Blue), so the agent always sees its own turn. Rewards are
      from the agent's view: +1 win, -1 loss, 0 draw or not over.

    **Episode end** — ``terminated`` when the rules end the game (RULES.md
    8-12: den, all captured, no legal move, repetition, no-capture limit);
    ``truncated`` when ``max_plies`` plies have been played since the start
    position without an end, or a game counter has reached its limit
    (`envs.rules.COUNTER_LIMIT`, 30000; even with ``max_plies=None``) (reward 0).
    `step` after either raises `GameOverError` until `reset`.

    **Info** — every call: ``action_mask``, ``jfen`` (the position reached),
    ``side_to_move`` (`Side`), ``side_rewards`` (float32 ``[2]``, red and
    blue); versus an opponent also ``agent_side`` and, when it moved,
    ``opponent_move`` (str). At the end also ``outcome`` (an `Outcome`, or
    None when truncated or lost by an illegal action), ``termination``
    (``den``, ``all_captured``, ``no_moves``, ``repetition``,
    ``no_capture_limit``, ``illegal_action`` or ``ply_cap``) and ``winner``
    (`Side`, or None for a draw or a truncation).

    **Seeding** — ``reset(seed=...)`` seeds the env's generator, which draws
    ``agent_side="random"`` and seeds an opponent given as a spec string
    (it is rebuilt with a seed drawn from the env). An opponent given as an
    object is `reset()` each episode; seeding it is the caller's duty.

    **Reset options** — ``{"start_jfen": "..."}`` starts that episode from
    another position.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 2}

    def __init__(
        self,
        rules: RulesLike = None,
        opponent: Union[None, str, OpponentFn, Any] = None,
        agent_side: Union[str, Side] = "red",
        max_plies: Optional[int] = DEFAULT_MAX_PLIES,
        start_jfen: Optional[str] = None,
        render_mode: Optional[str] = None,
        illegal_action: str = "raise",
    ) -> None:
        """Args:
        rules: a RuleSet, a mapping of rule keys, or a rule-set name.
        opponent: None for self-play; else a player spec string (``"random"``,
            ``"alphabeta:depth=4"``…, see `envs.players.make_player`), a
            `Player` (has ``select_move(board)``) or a callable ``Board -> Move``.
        agent_side: ``"red"``, ``"blue"`` or ``"random"`` (drawn at each reset);
            only with an opponent.
        max_plies: truncate once this many plies (both sides' moves, the
            opponent's opening move included) have been played from the start
            position; None truncates only at the counters' limit.
        start_jfen: the position episodes start from (default the start position).
        render_mode: None, ``"ansi"`` or ``"rgb_array"``.
        illegal_action: ``"raise"`` (IllegalActionError) or ``"lose"`` (the
            mover loses: terminated, reward -1 for it).
        """
        self.rules = resolve_rules(rules)
        self.flags = self.rules.flags()
        self.start_jfen = start_jfen if start_jfen is not None else Board().jfen()
        Board.from_jfen(self.start_jfen, rules=self.rules)  # fail early on a bad JFEN
        if max_plies is not None and (
            isinstance(max_plies, bool) or not isinstance(max_plies, (int, np.integer)) or max_plies < 1
        ):
            raise ValueError(f"max_plies must be a positive integer or None, got {max_plies!r}")
        self.max_plies = None if max_plies is None else int(max_plies)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        if illegal_action not in ("raise", "lose"):
            raise ValueError(f"illegal_action {illegal_action!r} is not 'raise' or 'lose'")
        self.illegal_action = illegal_action

        self._opponent_spec: Optional[str] = None
        self._opponent: Any = None
        if opponent is None:
            if agent_side not in ("red", Side.RED):
                raise ValueError(f"agent_side={agent_side!r} needs an opponent (self-play plays both sides)")
        elif isinstance(opponent, str):
            self._opponent_spec = opponent
            self._opponent = self._make_opponent(seed=None)
        elif callable(getattr(opponent, "select_move", None)) or callable(opponent):
            self._opponent = opponent
        else:
            raise ValueError(f"opponent must be None, a player spec, a Player or a callable, got {opponent!r}")
        if isinstance(agent_side, Side):
            agent_side = agent_side.name.lower()
        if agent_side not in ("red", "blue", "random"):
            raise ValueError(f"agent_side {agent_side!r} is not 'red', 'blue' or 'random'")
        self.agent_side_choice = agent_side

        self.observation_space = spaces.Box(0.0, 1.0, shape=OBS_SHAPE, dtype=np.float32)
        self.action_space = LegalActionSpace(self)

        self._board = Board.from_jfen(self.start_jfen, rules=self.rules)
        self._moves = np.empty(K.MAX_MOVES, dtype=np.int64)
        self._text = np.empty(JFEN_MAX, dtype=np.uint8)
        self._legal = np.zeros(N_ACTIONS, dtype=np.int8)
        self._move_ints: list[int] = []  # the kernel moves played; Board.move_stack is filled on demand
        self._agent_side = Side.RED
        self._over = True
        self._started = False
        self._result = ""  # how the episode ended, once it has

    # -- properties -------------------------------------------------------------------
    @property
    def self_play(self) -> bool:
        """Whether the env plays both sides (no opponent)."""
        return self._opponent is None

    @property
    def agent_side(self) -> Side:
        """The agent's side in this episode (Red in self-play, where it plays both)."""
        return self._agent_side

    @property
    def board(self) -> Board:
        """A copy of the current position with its history, as a `Board`."""
        self._sync_move_stack()
        return self._board.copy()

    @property
    def side_to_move(self) -> Side:
        return _SIDES[int(self._board.state[K.S_SIDE])]

    # -- the Gymnasium API ------------------------------------------------------------------
    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        jfen = self.start_jfen
        if options:
            unknown = sorted(set(options) - {"start_jfen"})
            if unknown:
                raise ValueError(f"unknown reset option(s) {', '.join(unknown)}; known: start_jfen")
            jfen = options.get("start_jfen", jfen)
        board = Board.from_jfen(jfen, rules=self.rules)
        over = board.outcome()
        if over is not None:
            raise ValueError(f"the start position {jfen!r} is already over ({over.termination.name.lower()})")
        if board.at_counter_limit():
            raise ValueError(f"the start position {jfen!r} has a counter at its limit: no move could follow it")
        self._board = board
        self._move_ints = []
        if self.agent_side_choice == "random":
            self._agent_side = _SIDES[int(self.np_random.integers(2))]
        else:
            self._agent_side = _SIDE_NAMES[self.agent_side_choice]
        if self._opponent is not None:
            if self._opponent_spec is not None and seed is not None:
                self._opponent = self._make_opponent(seed=int(self.np_random.integers(2**63 - 1)))
            elif callable(getattr(self._opponent, "reset", None)):
                self._opponent.reset()
        self._over = False
        self._started = True
        obs = np.empty(OBS_SHAPE, dtype=np.float32)
        status, term, winner, n, _ = self._observe(obs)
        info: dict[str, Any] = {}
        if self._opponent is not None and self.side_to_move != self._agent_side:
            opp_move = self._opponent_move()
            self._board._ensure_room(1)
            status, term, winner, n, _ = self._play(opp_move.to_int(), obs)
            self._move_ints.append(opp_move.to_int())
            info["opponent_move"] = str(opp_move)
            if term != K.TERM_NONE:
                self._over = True
                raise ValueError(
                    f"the opponent's first move {opp_move} from {jfen!r} ended the game; pick another start"
                )
        self._result = ""
        info.update(self._info(n))
        return obs, info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._over:
            if not self._started:
                raise GameOverError("call reset() before step()")
            raise GameOverError(f"the episode is over ({self._result}); call reset() before step()")
        a = self._check_action(action)
        self._board._ensure_room(2)
        board = self._board
        st = board.state
        mover = int(st[K.S_SIDE])
        obs = np.empty(OBS_SHAPE, dtype=np.float32)
        if a < 0:  # out of range, under illegal_action="lose"
            status, term, winner, n, m = OFF_BOARD, K.TERM_NONE, -1, 0, -1
        else:
            status, term, winner, n, m = env_step_action(
                st, board.hist, board.hashes, self.flags, a, self._moves, self._legal, obs, self._text
            )
        if status != OK:
            return self._illegal(action, a, status, mover, obs)
        self._move_ints.append(m)
        info: dict[str, Any] = {}
        if self._opponent is not None and term == K.TERM_NONE and not self._at_cap():
            opp_move = self._opponent_move()
            status, term, winner, n, _ = self._play(opp_move.to_int(), obs)
            self._move_ints.append(opp_move.to_int())
            info["opponent_move"] = str(opp_move)
        viewer = mover if self._opponent is None else int(self._agent_side)
        terminated = term != K.TERM_NONE
        truncated = not terminated and self._at_cap()
        reward = 0.0
        side_rewards = np.zeros(2, dtype=np.float32)
        if terminated and winner != K.DRAW:
            side_rewards[winner] = 1.0
            side_rewards[1 - winner] = -1.0
            reward = 1.0 if winner == viewer else -1.0
        info.update(self._info(n, side_rewards))
        if terminated or truncated:
            self._finish(info, term, winner, truncated)
        return obs, reward, terminated, truncated, info

    def render(self) -> Union[str, np.ndarray, None]:
        """The position as text (``ansi``) or a uint8 ``[408, 328, 3]`` picture
        (``rgb_array``), Red at the bottom, the last move marked."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        last = Move.from_int(self._move_ints[-1]) if self._move_ints else None
        if self.render_mode == "ansi":
            return render_ansi(self._board.state, last, self._status_line())
        return render_rgb(self._board.state, last)

    # -- masks and the action encoding -------------------------------------------------------
    def action_masks(self) -> np.ndarray:
        """bool ``[252]``: the legal actions of the side to move (all False once over)."""
        return self._legal.astype(bool)

    def legal_actions(self) -> np.ndarray:
        """int64 ``[n]``: the legal actions of the side to move, ascending."""
        return np.flatnonzero(self._legal)

    def action_to_move(self, action: int) -> Move:
        """The `Move` that `action` denotes for the side to move now.

        The move is geometric (a step, or a jump where the first square is
        water); it need not be legal. IllegalActionError if it leaves the board."""
        a = self._action_index(action)
        m = int(_action_to_move_kernel(self._board.state, a))
        if m < 0:
            raise IllegalActionError(f"action {a} leaves the board in {self._board.jfen()!r}")
        return Move.from_int(m)

    def move_to_action(self, move: Union[Move, str]) -> int:
        """The action that plays `move` (a Move or a string like ``a3a4``) for the side to move.

        ValueError if the move is not a step or jump of that side's geometry."""
        mv = move if isinstance(move, Move) else Move.from_str(move)
        a = int(_move_to_action_kernel(mv.to_int(), int(self._board.state[K.S_SIDE])))
        if _action_to_move_kernel(self._board.state, a) != mv.to_int():
            raise IllegalMoveError(
                f"move {str(mv)!r} is not a one-square step or a river jump in {self._board.jfen()!r}"
            )
        return a

    # -- internals -------------------------------------------------------------------------
    def _make_opponent(self, seed: Optional[int]) -> Any:
        assert self._opponent_spec is not None
        return make_player(self._opponent_spec, rules=self.rules, seed=seed)

    def _action_index(self, action: Any) -> int:
        if isinstance(action, (bool, np.bool_)):  # True would index as action 1
            raise IllegalActionError(f"action {action!r} is not an integer in 0..{N_ACTIONS - 1}")
        try:
            a = operator.index(action)
        except TypeError:
            arr = np.asarray(action)
            if arr.size != 1 or not np.issubdtype(arr.dtype, np.integer):
                raise IllegalActionError(f"action {action!r} is not an integer in 0..{N_ACTIONS - 1}") from None
            a = int(arr.reshape(()))
        if not 0 <= a < N_ACTIONS:
            raise IllegalActionError(f"action {a} is out of range 0..{N_ACTIONS - 1}")
        return a

    def _check_action(self, action: Any) -> int:
        try:
            return self._action_index(action)
        except IllegalActionError:
            if self.illegal_action == "lose":
                return -1
            raise

    def _illegal(self, action: Any, a: int, status: int, mover: int, obs: np.ndarray) -> tuple:
        where = self._board.jfen()
        if self.illegal_action == "raise":
            legal = self.legal_actions().tolist()
            if status == OFF_BOARD:
                csq, cdir = divmod(a, 4)
                frm = csq if mover == K.RED else K.N_SQUARES - 1 - csq
                raise IllegalActionError(
                    f"illegal action {a} in {where!r}: {_DIRECTION_NAMES[cdir]} from {SQUARE_NAMES[frm]} "
                    f"leaves the board; legal actions: {legal}"
                )
            try:
                self._board.parse_move(self.action_to_move(a))
                why = "not legal"  # not reached: the kernel and the Board agree on legality
            except IllegalMoveError as e:
                why = str(e)
            raise IllegalActionError(f"illegal action {a}: {why}; legal actions: {legal}")
        # illegal_action == "lose": the mover loses, the position stays as it was
        status_, term, winner, n, _ = self._observe(obs)
        side_rewards = np.zeros(2, dtype=np.float32)
        side_rewards[mover] = -1.0
        side_rewards[1 - mover] = 1.0
        self._legal[:] = 0
        info = self._info(n, side_rewards)
        self._over = True
        self._result = (
            f"{_SIDES[1 - mover].name.capitalize()} wins: {_SIDES[mover].name.lower()} played illegal action {action!r}"
        )
        info["outcome"] = None
        info["termination"] = "illegal_action"
        info["winner"] = _SIDES[1 - mover]
        return obs, -1.0, True, False, info

    def _observe(self, obs: np.ndarray) -> tuple:
        b = self._board
        return env_observe(b.state, b.hist, b.hashes, self.flags, self._moves, self._legal, obs, self._text)

    def _play(self, m: int, obs: np.ndarray) -> tuple:
        b = self._board
        status, term, winner, n, mv = env_step_move(
            b.state, b.hist, b.hashes, self.flags, m, self._moves, self._legal, obs, self._text
        )
        if status == NOT_LEGAL:
            raise IllegalMoveError(f"the opponent played illegal move {Move.from_int(m)} in {b.jfen()!r}")
        return status, term, winner, n, mv

    def _sync_move_stack(self) -> None:
        stack = self._board.move_stack
        stack.extend(Move.from_int(m) for m in self._move_ints[len(stack) :])

    def _opponent_move(self) -> Move:
        board = self.board
        if callable(getattr(self._opponent, "select_move", None)):
            move = self._opponent.select_move(board)
        else:
            move = self._opponent(board)
        if isinstance(move, str):
            move = Move.from_str(move)
        if not isinstance(move, Move):
            raise TypeError(f"the opponent returned {move!r}, not a Move or a move string")
        return move

    def _at_cap(self) -> bool:
        """Truncation: `max_plies` plies played, or a counter at its limit (`Board.at_counter_limit`)."""
        return (
            self.max_plies is not None and int(self._board.state[K.S_PLY]) >= self.max_plies
        ) or self._board.at_counter_limit()

    def _info(self, n: int, side_rewards: Optional[np.ndarray] = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "action_mask": self._legal.copy(),
            "jfen": self._text[:n].tobytes().decode("ascii"),
            "side_to_move": _SIDES[int(self._board.state[K.S_SIDE])],
            "side_rewards": np.zeros(2, dtype=np.float32) if side_rewards is None else side_rewards,
        }
        if self._opponent is not None:
            info["agent_side"] = self._agent_side
        return info

    def _finish(self, info: dict[str, Any], term: int, winner: int, truncated: bool) -> None:
        self._over = True
        self._legal[:] = 0
        info["action_mask"][:] = 0
        if truncated:
            info["outcome"] = None
            info["termination"] = "ply_cap"
            info["winner"] = None
        else:
            side = None if winner == K.DRAW else _SIDES[winner]
            outcome = Outcome(side, Termination(term))
            info["outcome"] = outcome
            info["termination"] = outcome.termination.name.lower()
            info["winner"] = side
        ply = int(self._board.state[K.S_PLY])
        if truncated:
            self._result = f"truncated at the ply cap after {ply} plies"
        else:
            why = Termination(term).name.lower().replace("_", " ")
            if winner == K.DRAW:
                self._result = f"draw by {why} after {ply} plies"
            else:
                self._result = f"{_SIDES[winner].name.capitalize()} wins by {why} after {ply} plies"

    def _status_line(self) -> str:
        if self._over:
            return self._result[:1].upper() + self._result[1:]
        st = self._board.state
        ply = int(st[K.S_PLY])
        to_move = _SIDES[int(st[K.S_SIDE])].name.capitalize()
        return f"{to_move} to move, ply {ply}, {int(st[K.S_CLOCK])} plies since a capture"


__all__ = [
    "DEFAULT_MAX_PLIES",
    "GameOverError",
    "IllegalActionError",
    "JungleEnv",
    "LegalActionSpace",
    "resolve_rules",
    "IMAGE_SHAPE",
]

"""`jungle_v0`: Jungle as a PettingZoo AEC environment, in the conventions of PettingZoo's classic games.

    >>> from envs.pettingzoo import jungle_v0
    >>> env = jungle_v0.env(render_mode="ansi")
    >>> env.reset(seed=0)
    >>> for agent in env.agent_iter():
    ...     observation, reward, termination, truncation, info = env.last()
    ...     action = None if termination or truncation else env.action_space(agent).sample(observation["action_mask"])
    ...     env.step(action)

* **Agents** — ``player_0`` plays Red (moves first from the start position),
  ``player_1`` Blue.
* **Observation** — a dict: ``observation``, the float32 ``[32, 9, 7]``
  planes of `Jungle-v0` (`envs.encoding`) seen from that agent's side, and
  ``action_mask``, int8 ``[252]``, the agent's legal actions (all 0 when it
  is not its turn or the game is over). `observe(agent)` gives any agent's
  view: for the agent to move it is exactly `Jungle-v0`'s observation; for
  the other the planes are those it would see were it to move (its pieces
  first, its den at row 0, plane 23 its own colour).
* **Actions** — ``Discrete(252)``, `Jungle-v0`'s encoding (from-square x
  direction in the mover's frame).
* **Rewards** — at the end only: +1 to the winner, -1 to the loser, 0 each
  for a draw or a truncation.
* **Ends** — ``terminations`` when the rules end the game (RULES.md 8-12),
  ``truncations`` at ``max_plies``; ``infos`` then hold ``termination``
  (`Jungle-v0`'s names) and ``winner`` (an agent, or None).
* ``render_mode`` ``"ansi"`` (a text board) or ``"rgb_array"`` (a uint8
  ``[408, 328, 3]`` picture).

`env()` wraps `raw_env` as the classic games do: an illegal action ends the
game with -1 for its player (`TerminateIllegalWrapper`), then bounds and
call-order checks. The game itself is a `JungleEnv` in self-play: this
module keeps only the agents' bookkeeping.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

try:
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers
except ModuleNotFoundError as e:  # the optional extra is not installed: say which one to install
    if (e.name or "").partition(".")[0] != "pettingzoo":
        raise
    raise ModuleNotFoundError(
        f"envs.pettingzoo needs PettingZoo, which is not installed ({e}); install the "
        f"project's extra: pip install -e '.[pettingzoo]'",
        name="pettingzoo",
    ) from None

from envs import kernels as K
from envs.encoding import N_ACTIONS, OBS_SHAPE, encode_observation
from envs.env import DEFAULT_MAX_PLIES, JungleEnv
from envs.rules import RulesLike

AGENTS = ("player_0", "player_1")
"""The agents by side: index 0 Red, 1 Blue (`envs.Side`)."""


def env(**kwargs: Any) -> AECEnv:
    """`raw_env` with the classic games' wrappers (illegal action loses, bounds and order checks)."""
    game: AECEnv = raw_env(**kwargs)
    game = wrappers.TerminateIllegalWrapper(game, illegal_reward=-1)
    game = wrappers.AssertOutOfBoundsWrapper(game)
    return wrappers.OrderEnforcingWrapper(game)


class raw_env(AECEnv, EzPickle):
    """Jungle for two agents, turn by turn (see the module doc)."""

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "jungle_v0", "is_parallelizable": False, "render_fps": 2}

    def __init__(
        self,
        render_mode: Optional[str] = None,
        rules: RulesLike = None,
        max_plies: Optional[int] = DEFAULT_MAX_PLIES,
        start_jfen: Optional[str] = None,
    ) -> None:
        """Args: as `Jungle-v0` (`envs.env.JungleEnv`): render_mode None, ``"ansi"`` or ``"rgb_array"``;
        rules a RuleSet, mapping or rule-set name; max_plies the truncation cap (None: none);
        start_jfen the position games start from."""
        EzPickle.__init__(self, render_mode, rules, max_plies, start_jfen)
        super().__init__()
        self._game = JungleEnv(rules=rules, max_plies=max_plies, start_jfen=start_jfen, render_mode=render_mode)
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(0.0, 1.0, shape=OBS_SHAPE, dtype=np.float32),
                    "action_mask": spaces.Box(0, 1, shape=(N_ACTIONS,), dtype=np.int8),
                }
            )
            for a in AGENTS
        }
        self.action_spaces = {a: spaces.Discrete(N_ACTIONS) for a in AGENTS}
        self._obs = np.zeros(OBS_SHAPE, dtype=np.float32)
        self._mask = np.zeros(N_ACTIONS, dtype=np.int8)

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """`agent`'s observation dict (see the module doc)."""
        if agent == self._mover():
            return {"observation": self._obs.copy(), "action_mask": self._mask.copy()}
        board = self._game.board
        board.state[K.S_SIDE] = AGENTS.index(agent)
        planes = np.empty(OBS_SHAPE, dtype=np.float32)
        encode_observation(board.state, board.hashes, board.flags, planes)
        return {"observation": planes, "action_mask": np.zeros(N_ACTIONS, dtype=np.int8)}

    def reset(self, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None) -> None:
        """Start a game; ``options={"start_jfen": ...}`` starts it from another position (other keys are ignored)."""
        known = {k: v for k, v in (options or {}).items() if k == "start_jfen"}
        self._obs, info = self._game.reset(seed=seed, options=known or None)
        self._mask = info["action_mask"]
        self.agents = list(AGENTS)
        self.rewards = {a: 0.0 for a in AGENTS}
        self._cumulative_rewards = {a: 0.0 for a in AGENTS}
        self.terminations = {a: False for a in AGENTS}
        self.truncations = {a: False for a in AGENTS}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in AGENTS}
        self.agent_selection = self._mover()

    def step(self, action: Union[int, np.integer, None]) -> None:
        """Play the selected agent's action (None once it is terminated or truncated)."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self._obs, _, terminated, truncated, info = self._game.step(action)
        self._mask = info["action_mask"]
        self.rewards = {a: float(r) for a, r in zip(AGENTS, info["side_rewards"])}
        if terminated or truncated:
            winner = info["winner"]
            end = {"termination": info["termination"], "winner": None if winner is None else AGENTS[int(winner)]}
            self.terminations = {a: bool(terminated) for a in AGENTS}
            self.truncations = {a: bool(truncated) for a in AGENTS}
            self.infos = {a: dict(end) for a in AGENTS}
        self.agent_selection = self._mover()
        self._accumulate_rewards()

    def render(self) -> Union[str, np.ndarray, None]:
        """The position as text (``ansi``) or a uint8 ``[408, 328, 3]`` picture (``rgb_array``)."""
        return self._game.render()

    def close(self) -> None:
        self._game.close()

    def _mover(self) -> str:
        return AGENTS[int(self._game.side_to_move)]

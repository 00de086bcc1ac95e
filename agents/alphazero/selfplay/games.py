"""Self-play: B games at once, searched by one `BatchedMCTS` in shared network calls, recorded as training data.

    settings = SelfPlayConfig(parallel=4, max_plies=200)
    data = play_games(uniform_evaluator, settings, mcts=MCTSConfig(num_simulations=16), rules=RuleSet(),
                      num_games=8, seed=0)
    data.obs.shape, data.policy.shape, data.value.shape    # (N, 32, 9, 7), (N, 252), (N,)

`SelfPlayConfig` is the one list of self-play settings: `play_games` reads
it, the workers of `agents.alphazero.distributed.workers` carry it, and train.py's
``train`` group holds its fields.

Each position played yields (observation, legal mask, search policy, final
outcome from the view of the side to move there, and which pieces are still
on the board when the game ends, ordered from that side: `survival_targets`). A game slot that finishes
is refilled with the next game until `num_games` have started, then idles
(with `SelfPlayConfig.carry_over` it always starts the next one, and the
loop's `play_next` hands back a number of finished games, the rest playing on).
Game ``k`` draws its search noise, its playout-cap coin and its opponent from
generators seeded by ``game_seed(seed, k)``, whatever slot it runs in, and the
output lists the games by index. Games are numbered from `first_game`, so a
call's games can be split into index ranges played apart (by the workers of
`agents.alphazero.distributed.workers`) and put back together with `selfplay_data.merge_selfplay`:

    a = play_games(ev, settings, num_games=3, first_game=0, seed=7, ...)
    b = play_games(ev, settings, num_games=5, first_game=3, seed=7, ...)
    merge_selfplay([a, b])       # the games of play_games(ev, settings, num_games=8, seed=7, ...)

The network sees batches of another size then; its CPU kernels may round the
last bit differently by batch size (about 1e-8), so arrays agree to that
precision and, barring a near-tie that this flips, the games are the same.

Playout-cap randomisation (KataGo): with probability `playout_cap_fraction`
a move is searched cheaply (`cheap_simulations`, no noise); such positions
keep their value target but are flagged ``full_search = False`` so that the
learner does not use their policy.

Opponent games (a league in its simplest form): with `opponents` (player
specs) a fraction `opponent_fraction` of the games is played by the network
against one of those players (a noisy alpha-beta, an old checkpoint; or any
`Player` objects handed to `play_games`),
the opponent and the network's colour drawn from the game's own seed. The
network's positions are recorded as usual; the opponent's positions keep
their value target only (``full_search = False``: the opponent's move is no
search policy). Such games show the network attacks that its own play
rarely makes, which pure self-play with little compute learns to meet late.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, NamedTuple, Optional, Sequence

import numpy as np
from tqdm import tqdm

from agents.alphazero.search import BatchedMCTS, Evaluator, MCTSConfig, make_policy, search_tables
from agents.alphazero.search.config import MAX_SIMULATIONS
from agents.alphazero.selfplay.data import SelfPlayData, SelfPlayStats
from agents.alphazero.selfplay.endgames import game_table_values, rescore, table_verdicts, table_winner
from agents.alphazero.selfplay.rules_mix import MixEntry, check_mix_compatible, draw_rules
from agents.alphazero.selfplay.samples import game_samples, new_samples, record_samples
from agents.alphazero.selfplay.starts import StartsError, load_starts, split_start, start_rules
from agents.arena.records import GameRecord
from envs import kernels as K
from envs.batch import GameBatch
from envs.board import Termination
from envs.config import ConfigError, check_choice, check_range, config_kwargs
from envs.encoding import move_to_action
from envs.notation import START_JFEN, parse_jfen
from envs.players import Player, make_player
from envs.rules import COUNTER_LIMIT, RuleSet
from envs.seeding import derive_seed
from envs.tablebase import UNKNOWN, default_tablebase

RESULT_OF_WINNER = {K.RED: "1-0", K.BLUE: "0-1", K.DRAW: "1/2-1/2"}


TRUNCATED_VALUES = ("search", "draw")
"""Value targets of a game cut at `SelfPlayConfig.max_plies` (see `truncated_value`)."""
CONTEMPT_SIDES = ("both", "one")
"""Who searches with `SelfPlayConfig.draw_contempt` (see `contempt_sides`)."""


class SelfPlayConfigError(ConfigError):
    """An unknown or out-of-range self-play setting."""


MAX_PARALLEL = 65536
"""The most self-play games played at once by one process (their trees and histories are allocated up front)."""


@dataclass
class SelfPlayConfig:
    """How self-play games are played: the one list of self-play settings (`play_games`, the workers,
    train.py's ``train`` group). The search has its own settings (`MCTSConfig`)."""

    parallel: int = 64
    """Games played at once (one evaluator call per search step covers all their searches; each game
    searches on its own clock, `play_games`); 1 to `MAX_PARALLEL`."""
    max_plies: int = 200
    """A game longer than this stops (termination ``ply_cap``, recorded as a draw); its value targets
    follow `truncated_value`. 1 to `envs.rules.COUNTER_LIMIT` (30000)."""
    truncated_value: str = "search"
    """Value targets of a game cut at `max_plies`, which is no draw by the rules: ``search``
    bootstraps them from the search (the mean root value of the last `bootstrap_plies` searched
    positions, seen from each position's side to move); ``draw`` gives every position 0."""
    bootstrap_plies: int = 4
    """Searched positions at the end of a cut game whose root values are averaged (truncated_value=search);
    1 to 30000."""
    value_q_weight: float = 0.5
    """Blend of the value target: (1 - w) * game result + w * the position's own root search value
    (the z/q mix), in [0, 1]; 0 trains on results alone. Opponents' positions (no search) keep the result.
    0.5 by default: with results alone the value head learned next to nothing (docs/results.md)."""
    random_plies: int = 0
    """The first `random_plies` plies of every game (the opponents' included) are uniformly random legal moves
    drawn from the game's own seed, for opening diversity; the searches still run there, so those positions
    train as usual (the search's policy, the game's result). 0 to 30000; 0: every move by the search."""
    draw_score: float = 0.0
    """Value target of a game drawn by the rules (repetition, no-capture limit) or cut and scored as a draw:
    draw_score times the material balance at its end, (the side's pieces - the opponent's) / 8, from each
    position's side to move, in place of 0; so a side ahead on the board learns that repeating throws its
    lead away. In [0, 1]; 0 scores every draw 0."""
    draw_contempt: float = 0.0
    """Contempt for draws in self-play: each move's search values a drawn end (repetition, no-capture
    limit) at -draw_contempt for its side to move (the search's draw value), so both sides steer away
    from repetitions that pure self-play otherwise settles into. The value targets keep the result
    (a draw is 0); evaluation searches are not affected. In [0, 1]."""
    contempt_sides: str = "both"
    """Who holds `draw_contempt`: ``both`` sides of every game, or ``one``: in each game one colour (drawn
    from the game's seed, either with even odds) searches with the contempt and the other values a draw at 0,
    as the rules do; so one side has to play for a win while the other may take a draw it is offered."""
    draw_keep: float = 1.0
    """Fraction of the games without a winner (drawn by the rules, cut at `max_plies`, or drawn by the tables)
    whose positions train: each such game's positions go to the replay buffer or are all left out, by a coin
    drawn from the game's seed; left out, the game is still recorded and counted (`SelfPlayStats.left_out`).
    In [0, 1]; 1 trains on every game, 0 on decisive games only. `cut_keep`, when set, decides for the games
    cut at `max_plies` instead."""
    cut_keep: Optional[float] = None
    """Fraction of the games cut at `max_plies` whose positions train, in place of `draw_keep` for them (their
    value targets follow `truncated_value`, so a cut game need not teach that every position is level): each
    such game's positions go to the replay buffer or are all left out, by the coin `draw_keep` draws from the
    game's seed. In [0, 1]; null (the default): `draw_keep` decides for cut games too."""
    level_plies: int = 0
    """From this ply on, a game whose last `level_window` searched root values all lie within `level_margin` of
    0 (seen from each searching side to move) ends there, cut as at `max_plies`: termination ``level``,
    recorded as a draw, its value targets by `truncated_value`, kept by `cut_keep` (or `draw_keep`). So the
    long even games that would shuffle on to the cap stop early and their plies go to other games. 0 to
    30000; 0: never (the default)."""
    level_window: int = 20
    """Searched positions in a row whose root values must lie within `level_margin` of 0 for `level_plies` to
    end a game; 1 to 30000."""
    level_margin: float = 0.1
    """How near 0 each of the last `level_window` root values must be for `level_plies` to end a game; in [0, 1]."""
    draw_policy: float = 0.0
    """Of a game without a winner that `draw_keep` leaves out, this fraction of its fully searched positions
    (each by a coin drawn from the game's seed) still trains the policy: their rows go to the replay buffer
    without a value target (`SelfPlayData.trains_value` False), so the search's work in those games is not
    thrown away while their drawn result stays out of the value head. In [0, 1]; 0 leaves such games out whole."""
    playout_cap_fraction: float = 0.0
    """Fraction of moves searched cheaply (playout-cap randomisation), in [0, 1]; those positions train
    the value only."""
    cheap_simulations: int = 4
    """Simulations of a cheap search (no exploration noise); 0 to `MAX_SIMULATIONS`."""
    opponents: list[str] = field(default_factory=list)
    """Player specs (see envs/players.py) that take one side in a fraction of the games, e.g. a noisy
    alpha-beta; the network's positions train as usual, the opponent's train the value only."""
    opponent_fraction: float = 0.0
    """Fraction of the games played against `opponents`, in [0, 1] (0: pure self-play)."""
    player_name: str = "selfplay"
    """The network's name in the game records, for both colours (train.py gives the run name)."""
    start_jfen: str = START_JFEN
    """The position every game starts from (but those `starts` gives)."""
    starts: Optional[str] = None
    """A file of start positions, one JFEN a line (blank lines and lines starting with ``#`` skipped), such as the
    positions where the network's move and a shallow alpha-beta search disagree (``python -m agents.alphazero
    mine-starts``): a fraction `starts_fraction` of the games, by a coin from each game's seed, starts from one
    of them (drawn from the same seed) in place of `start_jfen`, and plays no `random_plies`. A line may end with
    ``rules=<name>``, the rule set its game plays (an entry of `train.rules_mix`, or without a mix the run's
    rules by name; `starts.start_rules`). Read once, when the settings are made: the positions travel with them
    to the workers (`start_positions`). null: none."""
    starts_fraction: float = 0.0
    """Fraction of the games started from a position of `starts`, in [0, 1]; more than 0 needs `starts`."""
    tablebase_adjudicate: bool = False
    """A game that reaches a position the endgame tables hold (with a result under the no-capture rule
    at its clock) ends there with the tables' result: termination ``tablebase``, the value targets
    those of a game won, drawn or lost so by the rules. The tables of the rules' default location
    (``python -m envs tablebase build``); a missing build is an error naming the command."""
    tablebase_rescore: bool = False
    """The value target of every recorded position the endgame tables hold is their exact result for its
    side to move (+1, 0, -1 under the no-capture rule at its clock), in place of the game's result and
    the search's blend (`value_q_weight`). Same tables as `tablebase_adjudicate`."""
    carry_over: bool = False
    """Keep the games in play from one training iteration to the next (`SelfPlayLoop.play_next`): an
    iteration ends once its number of games have finished (those carried over counting first), every slot
    whose game ends starts the next game at once, the games are numbered over the run, and a carried game's
    search goes on with the new weights; so the network's batches stay full at an iteration's end. Off:
    each iteration plays its own games, from all starting at once to the last one's end. Self-play in the
    trainer's process only (train.workers=0)."""

    def __post_init__(self) -> None:
        check_range(
            self,
            "train.selfplay",
            SelfPlayConfigError,
            parallel=(1, MAX_PARALLEL),
            max_plies=(1, COUNTER_LIMIT),
            cheap_simulations=(0, MAX_SIMULATIONS),
            bootstrap_plies=(1, COUNTER_LIMIT),
            random_plies=(0, COUNTER_LIMIT),
            playout_cap_fraction=(0, 1),
            opponent_fraction=(0, 1),
            value_q_weight=(0, 1),
            draw_contempt=(0, 1),
            draw_score=(0, 1),
            draw_keep=(0, 1),
            draw_policy=(0, 1),
            level_plies=(0, COUNTER_LIMIT),
            level_window=(1, COUNTER_LIMIT),
            level_margin=(0, 1),
            starts_fraction=(0, 1),
        )
        self._start_positions: tuple[str, ...] = ()
        if (self.starts is None) != (self.starts_fraction == 0):
            raise SelfPlayConfigError(
                f"train.selfplay.starts={self.starts!r} and starts_fraction={self.starts_fraction} go together: "
                "a file of start positions and the fraction of games started from them (more than 0)"
            )
        if self.starts is not None:
            try:
                self._start_positions = load_starts(self.starts)
            except StartsError as e:
                raise StartsError(f"train.selfplay.starts: {e}") from None
        if self.cut_keep is not None:
            check_range(self, "train.selfplay", SelfPlayConfigError, cut_keep=(0, 1))
        check_choice(self, "train.selfplay", SelfPlayConfigError, truncated_value=TRUNCATED_VALUES)
        check_choice(self, "train.selfplay", SelfPlayConfigError, contempt_sides=CONTEMPT_SIDES)
        if isinstance(self.opponents, str):
            raise SelfPlayConfigError(f"selfplay opponents={self.opponents!r} must be a list of player specs")
        for where, jfen in (("start_jfen", self.start_jfen),) + tuple(
            (f"starts ({self.starts}, position {i + 1})", split_start(j)[0])
            for i, j in enumerate(self._start_positions)
        ):
            start = parse_jfen(jfen)  # a JFENError (a ValueError) names what is wrong
            if max(int(start[K.S_CLOCK]), int(start[K.S_MOVENO]) // 2) + self.max_plies > COUNTER_LIMIT:
                raise SelfPlayConfigError(
                    f"train.selfplay.{where}: the counters ({jfen.split()[2:]}) plus "
                    f"max_plies={self.max_plies} would pass {COUNTER_LIMIT}"
                )

    @property
    def start_positions(self) -> tuple[str, ...]:
        """The positions of `starts`, read when the settings were made (empty without `starts`)."""
        return self._start_positions

    def changed(self, **changes: Any) -> "SelfPlayConfig":
        """A copy with `changes` (not `starts`), its start positions carried over rather than read again: a worker
        on another machine may not have the file (`dataclasses.replace` would read it)."""
        if {"starts", "starts_fraction"} & set(changes):
            raise ValueError("changed() carries the start positions over: make new settings to change them")
        copy = replace(self, starts=None, starts_fraction=0.0, **changes)
        copy.starts, copy.starts_fraction, copy._start_positions = (
            self.starts,
            self.starts_fraction,
            self.start_positions,
        )
        return copy

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "SelfPlayConfig":
        """Build from a mapping (a Hydra node); unknown keys are errors (``name`` is ignored)."""
        return cls(**config_kwargs(cls, values, "selfplay", SelfPlayConfigError))


def opponent_seed(seed: int, k: int) -> int:
    """The seed of opponent `k` for a call seeded `seed`, when the caller gives none."""
    return derive_seed(seed, "opponent", k)


def build_opponents(
    settings: SelfPlayConfig, rules: RuleSet, seed: int, opponent_seeds: Optional[Sequence[int]] = None
) -> list[Player]:
    """The players of `settings.opponents` (specs), opponent k seeded by `opponent_seeds[k]` (default
    `opponent_seed(seed, k)`); none when `opponent_fraction` is 0. ValueError for a bad spec or count."""
    if settings.opponent_fraction <= 0:
        return []
    if not settings.opponents:
        raise SelfPlayConfigError(f"opponent_fraction={settings.opponent_fraction} needs opponents (player specs)")
    if opponent_seeds is not None and len(opponent_seeds) != len(settings.opponents):
        raise ValueError(f"{len(opponent_seeds)} opponent seeds for {len(settings.opponents)} opponents")
    seeds = (
        list(opponent_seeds)
        if opponent_seeds is not None
        else [opponent_seed(seed, k) for k in range(len(settings.opponents))]
    )
    return [make_player(spec, rules=rules, seed=s) for spec, s in zip(settings.opponents, seeds)]


class _Game:
    """One game in progress: its index, seed, playout-cap coin and opponent (its positions are kept by slot
    in `samples.Samples`)."""

    def __init__(self, index: int, seed: int) -> None:
        self.index = index
        self.seed = seed
        self.coin = np.random.default_rng(derive_seed(seed, "playout cap"))
        self.opening = np.random.default_rng(derive_seed(seed, "random plies"))
        """Draws the game's random opening moves (`SelfPlayConfig.random_plies`)."""
        self.opponent: Optional[Player] = None
        self.opponent_side = -1
        self.rules: Optional[RuleSet] = None
        """The game's rules when it plays one of a mix (None: the call's rules)."""
        self.rules_name = ""
        self.start = START_JFEN
        """The game's first position."""
        self.start_index = -1
        """The position of `SelfPlayConfig.starts` the game started from (-1: `start_jfen`)."""

    def random_move(self, mask: np.ndarray) -> int:
        """A uniformly random action of the legal `mask` [252] from the game's opening generator."""
        legal = np.flatnonzero(mask)
        return int(legal[int(self.opening.integers(len(legal)))])


class _Finished(NamedTuple):
    """A finished game's record and training rows (`SelfPlayData`'s fields, one game)."""

    record: GameRecord
    obs: np.ndarray
    mask: np.ndarray
    policy: np.ndarray
    value: np.ndarray
    full_search: np.ndarray
    survival: np.ndarray
    trains_value: np.ndarray
    ply: np.ndarray
    """int16 [n]: the ply of each row in the game."""
    truncated: bool
    """Cut at `SelfPlayConfig.max_plies`."""
    opponent_point: Optional[float]
    """The network's score in an opponent game (None: self-play)."""
    left_out: int = 0
    """Positions played and not kept as rows (`SelfPlayConfig.draw_keep`, `SelfPlayConfig.draw_policy`)."""

    @property
    def game(self) -> np.ndarray:
        """int32 [n]: each row's game among this one's records (the one: 0)."""
        return np.zeros(len(self.value), np.int32)

    @property
    def game_count(self) -> int:
        return 1


def game_seed(seed: int, index: int) -> int:
    """The seed of game `index` of a self-play call seeded with `seed`."""
    return derive_seed(seed, "game", index)


def play_games(
    evaluator: Evaluator,
    settings: SelfPlayConfig,
    *,
    mcts: MCTSConfig,
    rules: RuleSet,
    num_games: int,
    seed: int,
    first_game: int = 0,
    opponents: Optional[Sequence[Player]] = None,
    progress: bool = False,
    rules_mix: Sequence[MixEntry] = (),
) -> SelfPlayData:
    """Play games `first_game` .. `first_game + num_games - 1` as `settings` say, `settings.parallel` at a
    time, with the search `mcts` over `evaluator`.

    With `rules_mix` (`rules_mix.parse_rules_mix`) each game plays the rule set it draws from its own seed
    (`rules_mix.draw_rules`), recorded in its record; `rules` is then ignored. No endgame tables and no
    opponent games with a mix.

    Game ``k`` is seeded by ``game_seed(seed, k)`` and recorded with
    ``extra["game_index"] = k``. Each game is an opponent game with
    probability ``settings.opponent_fraction``, against one of `opponents`
    with either colour (all drawn from the game's own seed); `opponents`
    defaults to the players of ``settings.opponents`` (`build_opponents`).
    The opponent's moves come from the player object, shared by the games of
    this call: a player with its own random generator or memory (a noisy
    alpha-beta) makes its games depend on the others played with it."""
    return SelfPlayLoop(
        evaluator,
        settings,
        mcts=mcts,
        rules=rules,
        num_games=num_games,
        seed=seed,
        first_game=first_game,
        opponents=opponents,
        progress=progress,
        rules_mix=rules_mix,
    ).run()


class SelfPlayLoop:
    """One `play_games` call: its game slots, the search over them, and what the finished games left.

    Pipelined: every game searches on its own clock. Each step evaluates the leaves of all the searches in
    progress in one call; a game whose search has finished plays its move (and the opponent's, or its next
    game starts) and begins its next search at once, while the others go on. A game is the same as in
    lockstep (its noise, coins and opponent come from its own seed); only the network's batches differ.
    Python touches the batch a fixed number of times per step; it goes game by game only for opponents'
    moves and for games that end. `run` plays the games once; with `SelfPlayConfig.carry_over`, `play_next`
    plays them on from call to call."""

    def __init__(
        self,
        evaluator: Evaluator,
        settings: SelfPlayConfig,
        *,
        mcts: MCTSConfig,
        rules: RuleSet,
        num_games: int,
        seed: int,
        first_game: int = 0,
        opponents: Optional[Sequence[Player]] = None,
        progress: bool = False,
        rules_mix: Sequence[MixEntry] = (),
        stride: int = 1,
    ) -> None:
        if rules_mix:
            check_mix_compatible(mcts, settings)
            rules = rules_mix[0].rules
        self.rules_mix = list(rules_mix)
        if num_games < 1:
            raise ValueError(f"num_games ({num_games}) must be >= 1")
        if first_game < 0:
            raise ValueError(f"first_game ({first_game}) must be >= 0")
        if stride < 1 or (stride > 1 and not settings.carry_over):
            raise ValueError(f"stride ({stride}) must be >= 1, and 1 without carry_over")
        if opponents is None:
            opponents = build_opponents(settings, rules, seed)
        if settings.opponent_fraction > 0 and not opponents:
            raise ValueError(f"opponent_fraction={settings.opponent_fraction!r} needs at least one opponent")
        self.t0 = time.perf_counter()  # the stats' seconds count the set-up too
        self.settings, self.rules, self.seed, self.opponents = settings, rules, seed, opponents
        self.num_games, self.progress = num_games, progress
        n = min(settings.parallel, num_games)
        self.games = GameBatch(n, rules, start_jfen=settings.start_jfen, max_plies=settings.max_plies)
        self.mcts = mcts
        self.tables = (
            default_tablebase(rules).arrays if settings.tablebase_adjudicate or settings.tablebase_rescore else None
        )
        """The endgame tables adjudication and rescoring read (None when both are off)."""
        self.search = BatchedMCTS(
            evaluator, make_policy(mcts), self.games.flags, seed=seed, n_games=n, tablebase=search_tables(mcts, rules)
        )
        self.verdict = np.full(n, UNKNOWN, dtype=np.int64)
        """Each slot's tables' verdict of its position when `tablebase_adjudicate` ended its game there."""
        self.level = np.zeros(n, dtype=np.bool_)
        """Each slot's game ended by `level_plies` (its searches judged it level)."""
        self.first = parse_jfen(settings.start_jfen)
        self.starts = settings.start_positions
        self.mix_names = {entry.name: entry for entry in self.rules_mix}
        """The mix's entries by name: a `starts` line's ``rules=`` tag names the one its game plays."""
        # StartsError before any game for a tag naming rules this loop does not play:
        start_rules(
            self.starts, rules, {e.name: e.rules for e in self.rules_mix}, f"train.selfplay.starts ({settings.starts})"
        )
        self.opening_plies = np.full(n, settings.random_plies, dtype=np.int64)
        """Each slot's game's random opening plies (`SelfPlayConfig.random_plies`; 0 from a `starts` position)."""
        self.samples = new_samples(n, settings.max_plies)
        self.slots: list[Optional[_Game]] = [None] * n
        self.occupied = np.zeros(n, dtype=np.bool_)
        self.opponent_side = np.full(n, -1, dtype=np.int64)
        self.contempt_side = np.full(n, -1, dtype=np.int64)
        """The colour searching with `draw_contempt` in each slot's game (contempt_sides=one; -1: none)."""
        self.draw_values = np.zeros(n, dtype=np.float64)
        # Game k's playout-cap coins, one per ply, drawn ahead at its start from its own generator.
        self.coins = np.ones((n, settings.max_plies), dtype=np.float64)
        self.started = first_game
        self.stride = stride
        """The step between the indices of the games this loop starts (carry_over: one loop of several)."""
        self.end = first_game + num_games
        self.finished: dict[int, _Finished] = {}
        self.order: list[int] = []
        """The indices of `finished` in the order the games ended."""
        self.carry = settings.carry_over
        """Games go on from one `play_next` call to the next; a slot whose game ends always starts another."""
        self.target: Optional[int] = None
        """The finished games that end this `play_next` call (None: `run` plays every game)."""
        self.pending: list[int] = []
        """Slots whose game ended (or whose opponent is to move) once the call had its games: served first next call."""
        self.begun = False
        self.stats = SelfPlayStats()  # the simulations; `_data` fills in the rest
        self.full = np.zeros(n, dtype=np.bool_)  # each search's playout-cap draw: a full (noisy) search or a cheap one
        self.actions = np.full(n, -1, dtype=np.int64)
        self.searched = np.ones(n, dtype=np.bool_)  # the network's positions: searched; an opponent's: neither
        self.neither = np.zeros(n, dtype=np.bool_)  # searched nor full (record_samples reads no policy or value then)
        self.no_policy = np.zeros((n, 1), dtype=np.float32)
        self.no_value = np.zeros(n, dtype=np.float32)
        self.bar: Optional[tqdm] = None

    def run(self) -> SelfPlayData:
        """Play the games; their positions in game-index order, their records and stats. With
        `SelfPlayConfig.carry_over`: the first `num_games` to finish (`play_next`), the others left in play."""
        if self.carry:
            return self.play_next(self.num_games)
        for s in range(len(self.slots)):
            self._start_game(s)
        self.bar = tqdm(total=self.num_games, desc="self-play", unit="game", disable=not self.progress)
        for s in range(len(self.slots)):
            self._serve(s)  # an opponent may open the game
        while self.occupied.any():
            self._begin_searches()
            moved = self.search.step()
            if len(moved):
                self._play_moves(moved)
        self.bar.close()
        return self._data(time.perf_counter() - self.t0, self.order)

    def play_next(self, count: int, progress: Optional[bool] = None) -> SelfPlayData:
        """With `SelfPlayConfig.carry_over`: the next `count` games to finish (those that ended after the last
        call had its games first), their positions in game-index order; the games in play stay in their slots,
        trees and records for the next call, and searches them with whatever the evaluator is then. Game
        indices run on from call to call (`first_game`, `first_game + stride`, ...), each game seeded by its index
        alone."""
        if not self.carry:
            raise ValueError("play_next needs SelfPlayConfig.carry_over=True (without it, run plays the games once)")
        if count < 1:
            raise ValueError(f"count ({count}) must be >= 1")
        if self.begun:  # the first call's seconds count the set-up, as `run`'s do
            self.t0, self.stats = time.perf_counter(), SelfPlayStats()
        self.target = count
        show = self.progress if progress is None else progress
        self.bar = tqdm(
            total=count, initial=min(len(self.order), count), desc="self-play", unit="game", disable=not show
        )
        if not self.begun:
            self.begun = True
            for s in range(len(self.slots)):
                self._start_game(s)
            waiting = list(range(len(self.slots)))  # an opponent may open a game
        else:
            waiting, self.pending = self.pending, []
        for s in waiting:
            self._serve_or_defer(s)
        while len(self.order) < count:
            self._begin_searches()
            moved = self.search.step()
            if len(moved):
                self._play_moves(moved)
        self.bar.close()
        taken, self.order = self.order[:count], self.order[count:]
        data = self._data(time.perf_counter() - self.t0, taken)
        for k in taken:
            del self.finished[k]
        return data

    def _serve_or_defer(self, s: int) -> None:
        """`_serve` slot `s`, or, once this `play_next` call has its games, leave it for the next call."""
        if self.target is not None and len(self.order) >= self.target:
            self.pending.append(s)
        else:
            self._serve(s)

    def _start_game(self, slot: int) -> None:
        """Game `started` into `slot`, its position set (its tree is reset afterwards, with the others')."""
        g = _Game(self.started, game_seed(self.seed, self.started))
        self.started += self.stride
        draw = np.random.default_rng(derive_seed(g.seed, "opponent game"))
        opponent_fraction = self.settings.opponent_fraction
        if opponent_fraction > 0 and draw.random() < opponent_fraction:
            g.opponent = self.opponents[int(draw.integers(len(self.opponents)))]
            g.opponent_side = int(draw.integers(2))  # K.RED or K.BLUE
            g.opponent.reset()
        g.start, tag = self.settings.start_jfen, None
        if self.starts:
            pick = np.random.default_rng(derive_seed(g.seed, "start position"))
            if pick.random() < self.settings.starts_fraction:
                g.start_index = int(pick.integers(len(self.starts)))
                g.start, tag = split_start(self.starts[g.start_index])
        self.opening_plies[slot] = self.settings.random_plies if g.start_index < 0 else 0
        if self.rules_mix:
            entry = self.mix_names[tag] if tag is not None else draw_rules(self.rules_mix, g.seed)
            g.rules, g.rules_name = entry.rules, entry.name
        self.games.reset_many(np.array([slot]), g.start, rules=g.rules)
        self.slots[slot] = g
        self.occupied[slot] = True
        self.level[slot] = False
        self.opponent_side[slot] = g.opponent_side
        if self.settings.draw_contempt and self.settings.contempt_sides == "one":
            self.contempt_side[slot] = int(np.random.default_rng(derive_seed(g.seed, "contempt side")).integers(2))
        if self.settings.playout_cap_fraction > 0:
            self.coins[slot] = g.coin.random(self.settings.max_plies)
        self.search.reseed(slot, g.seed)

    def _begin_searches(self) -> None:
        """A search for every game that is not searching: full (noisy) or, by its playout-cap coin, cheap."""
        idle = self.occupied & ~self.search.searching
        if not idle.any():
            return
        begin, full, settings = np.flatnonzero(idle), self.full, self.settings
        full[begin] = True
        if settings.playout_cap_fraction > 0:  # cheap: fewer simulations, no noise, in the same batches
            ply = np.minimum(self.games.state[begin, K.S_PLY], settings.max_plies - 1)
            full[begin] = self.coins[begin, ply] >= settings.playout_cap_fraction
        sims = np.where(full, self.mcts.num_simulations, settings.cheap_simulations)
        draws = None  # the search config's draw value
        if settings.draw_contempt:
            draws = self.draw_values
            held = settings.contempt_sides == "both" or self.games.state[begin, K.S_SIDE] == self.contempt_side[begin]
            draws[begin] = np.where(held, -float(settings.draw_contempt), 0.0)
        self.search.begin(self.games, begin, add_noise=full, num_simulations=sims, draw_value=draws)
        self.stats.simulations += int(sims[begin].sum())

    def _play_moves(self, moved: np.ndarray) -> None:
        """The moves of the games whose searches have finished (`moved`), recorded; then the games that ended
        or whose opponent is to move are served."""
        games, out = self.games, self.search.results(moved)
        record_samples(self.samples, moved, games.state, out.policy, out.root_value, self.full, self.searched)
        self.actions[:] = -1
        self.actions[moved] = out.action[moved]
        if self.settings.random_plies > 0:
            self._random_opening_moves(moved)
        games.play_many(self.actions)
        self.search.advance_many(moved, self.actions)
        ended = games.done[moved] | self._adjudicate(moved)
        for s in moved[ended | (self.opponent_side[moved] == games.state[moved, K.S_SIDE])].tolist():
            self._serve_or_defer(s)  # in slot order, as players expect

    def _random_opening_moves(self, moved: np.ndarray) -> None:
        """In `actions`, a uniformly random legal move (from each game's own generator) for the games of `moved`
        still in their first `random_plies` plies."""
        games = self.games
        opening = moved[games.state[moved, K.S_PLY] < self.opening_plies[moved]]
        if len(opening) == 0:
            return
        masks = games.masks(opening)
        for row, s in enumerate(opening.tolist()):
            g = self.slots[s]
            assert g is not None
            self.actions[s] = g.random_move(masks[row])

    def _serve(self, s: int) -> None:
        """Slot `s` between two of the network's searches: the opponent's moves while it is to move,
        then, if the game is over, its record and the next game (or the slot idles)."""
        games = self.games
        while True:
            g = self.slots[s]
            assert g is not None
            if not games.done[s] and not self._adjudicate(np.array([s]))[0]:
                if self.opponent_side[s] != games.state[s, K.S_SIDE]:
                    return  # the network's move: the slot searches again
                assert g.opponent is not None
                record_samples(
                    self.samples, np.array([s]), games.state, self.no_policy, self.no_value, self.neither, self.neither
                )
                side = games.side_to_move(s)
                if games.state[s, K.S_PLY] < self.opening_plies[s]:
                    action = g.random_move(games.masks(np.array([s]))[0])
                else:
                    action = int(move_to_action(g.opponent.select_move(games.board(s)).to_int(), side))
                games.play(s, action)
                self.search.advance(s, action)
                continue
            self._finish_game(s, g)
            if not self.carry and self.started >= self.end:
                self.slots[s] = None
                self.occupied[s] = False
                return
            self._start_game(s)
            self.search.advance(s, -1)

    def _adjudicate(self, idx: np.ndarray) -> np.ndarray:
        """bool [len(idx)]: which games of the slots `idx` (not over) end now before the rules end them: by the
        tables (`tablebase_adjudicate`, their verdicts kept in `verdict`) or judged level by their searches
        (`level_plies`, marked in `level`); none when both are off."""
        settings, games = self.settings, self.games
        ended = np.zeros(len(idx), dtype=np.bool_)
        if settings.tablebase_adjudicate:
            assert self.tables is not None
            live = idx[~games.done[idx]]
            self.verdict[live] = table_verdicts(games.state[live], games.flags, self.tables)
            ended = ~games.done[idx] & (self.verdict[idx] != UNKNOWN)
        if settings.level_plies > 0:
            plies = games.state[idx, K.S_PLY]
            for row in np.flatnonzero(~games.done[idx] & ~ended & (plies >= settings.level_plies)).tolist():
                s = int(idx[row])
                if level_reached(self.samples.root_value[s], int(plies[row]), settings):
                    self.level[s] = ended[row] = True
        return ended

    def _finish_game(self, s: int, g: _Game) -> None:
        """The record and training rows of game `g`, over in slot `s`."""
        games, samples, name = self.games, self.samples, self.settings.player_name
        names = (name, name)
        if g.opponent is not None:
            names = (g.opponent.name, name) if g.opponent_side == K.RED else (name, g.opponent.name)
        plies = games.plies(s)
        sides = samples.side[s, :plies].astype(np.int64)
        level = bool(self.level[s])  # ended by `_adjudicate`: judged level, or by the tables
        verdict = int(self.verdict[s]) if not games.done[s] and not level else UNKNOWN
        rules = self.rules if g.rules is None else g.rules
        values, record = _finish(
            games, s, g, sides, samples.root_value[s, :plies], rules, names, self.settings, verdict, level
        )
        if g.rules is not None:
            record.extra["rules_name"] = g.rules_name
        if self.contempt_side[s] >= 0:
            record.extra["contempt_side"] = "red" if self.contempt_side[s] == K.RED else "blue"
        first = self.first
        if g.start_index >= 0:
            record.extra["start_index"] = g.start_index
            first = parse_jfen(g.start)
        if self.settings.tablebase_rescore:
            assert self.tables is not None
            rescore(values, game_table_values(first, games.hist[s], plies, games.flags, self.tables))
        point: Optional[float] = None
        if g.opponent is not None:
            mine = np.flatnonzero(sides != g.opponent_side)
            point = 0.5 * (1.0 + float(values[mine[0]])) if len(mine) else 0.5
        full = samples.full[s, :plies].copy()
        rows: slice | np.ndarray
        cut, keep = bool(games.truncated[s]) or level, self.settings.draw_keep
        if cut and self.settings.cut_keep is not None:
            keep = self.settings.cut_keep
        if record.result != "1/2-1/2" or keeps_draw(g.seed, keep):
            rows, count, upto = slice(0, plies), plies, plies  # the whole game: views, no copies
            trains_value = np.ones(plies, np.bool_)
        else:  # left out, but for the positions whose policy targets still train (`draw_policy`)
            rows = np.flatnonzero(policy_rows(g.seed, full, self.settings.draw_policy))
            count = len(rows)
            upto = int(rows[-1]) + 1 if count else 0  # replay only as far as the last row
            trains_value = np.zeros(count, np.bool_)
        obs, mask, policy = game_samples(samples, s, first, games.hist[s], upto, games.game_flags[s])
        self.finished[g.index] = _Finished(
            record,
            obs[rows],
            mask[rows],
            policy[rows],
            values[rows],
            full[rows],
            survival_targets(games.state[s], sides[rows]),
            trains_value,
            np.arange(plies, dtype=np.int16)[rows],
            cut,
            point,
            plies - count,
        )
        self.order.append(g.index)
        assert self.bar is not None
        self.bar.update(1)

    def _data(self, seconds: float, indices: Sequence[int]) -> SelfPlayData:
        """The rows of the finished games `indices` (in the order they ended) in game-index order, their records
        and the call's stats."""
        stats, points = self.stats, []
        for k in indices:  # counted in the order the games ended
            d = self.finished[k]
            if d.record.result == "1-0":
                stats.red_wins += 1
            elif d.record.result == "0-1":
                stats.blue_wins += 1
            else:
                stats.draws += 1
            stats.truncated += int(d.truncated)
            stats.terminations[str(d.record.termination)] = stats.terminations.get(str(d.record.termination), 0) + 1
            if d.opponent_point is not None:
                points.append(d.opponent_point)
        done = [self.finished[k] for k in sorted(indices)]
        stats.games = len(done)
        stats.left_out = int(sum(d.left_out for d in done))
        stats.policy_only = int(sum(int((~d.trains_value).sum()) for d in done))
        stats.positions = int(sum(len(d.value) for d in done)) + stats.left_out
        stats.full_search_positions = int(sum(int(d.full_search.sum()) for d in done))
        stats.seconds = seconds
        stats.opponent_games = len(points)
        stats.opponent_score = float(np.mean(points)) if points else float("nan")
        return SelfPlayData.joined(done, [d.record for d in done], stats)


def level_reached(root_value: np.ndarray, plies: int, settings: SelfPlayConfig) -> bool:
    """Whether a game of `plies` positions so far, whose root values are `root_value` (float [>= plies], NaN
    where no search chose the move), is judged level: its last `settings.level_window` searched root values all
    lie within `settings.level_margin` of 0. The ply (`level_plies`) is the caller's test."""
    seen = root_value[:plies]
    seen = seen[~np.isnan(seen)]
    window = settings.level_window
    return len(seen) >= window and bool(np.all(np.abs(seen[-window:]) <= settings.level_margin))


def keeps_draw(seed: int, keep: float) -> bool:
    """Whether the positions of a game without a winner, seeded `seed`, train (`SelfPlayConfig.draw_keep`)."""
    if keep >= 1.0:
        return True
    return bool(np.random.default_rng(derive_seed(seed, "draw keep")).random() < keep)


def policy_rows(seed: int, full_search: np.ndarray, fraction: float) -> np.ndarray:
    """bool [n]: which positions of a game without a winner, seeded `seed`, that `draw_keep` leaves out still
    train the policy (`SelfPlayConfig.draw_policy`): a coin of probability `fraction` each, among those
    searched in full (`full_search` [n]; the others have no policy target)."""
    if fraction <= 0.0:
        return np.zeros(len(full_search), np.bool_)
    coins = np.random.default_rng(derive_seed(seed, "draw policy")).random(len(full_search))
    return full_search & (coins < fraction)


def value_targets(
    sides: np.ndarray,
    root_value: np.ndarray,
    winner: int,
    truncated: bool,
    settings: SelfPlayConfig,
    balance: float = 0.0,
) -> np.ndarray:
    """float32 [n] value targets of a finished game's positions, each from its side to move.

    `sides` [n] are the sides to move, `root_value` [n] the search's root values (NaN where an
    opponent moved), `winner` the kernels' winner (RED, BLUE or DRAW) of a game that ended by the
    rules. A cut game (`truncated`) bootstraps its result from the mean root value of its last
    `bootstrap_plies` searched positions (``truncated_value="search"``), or scores 0 (``"draw"``).
    A draw scores `draw_score` times `balance`, the final material balance from Red ((Red's pieces -
    Blue's) / 8, `material_balance`). `value_q_weight` then blends each position's own root value in."""
    red = sides == K.RED
    drawn = settings.draw_score * balance
    if truncated:
        searched = np.flatnonzero(~np.isnan(root_value))[-settings.bootstrap_plies :]
        if settings.truncated_value == "draw" or len(searched) == 0:
            red_result = drawn
        else:  # root values seen from Red, averaged
            red_result = float(np.mean(np.where(red[searched], root_value[searched], -root_value[searched])))
    else:
        red_result = drawn if winner == K.DRAW else (1.0 if winner == K.RED else -1.0)
    values = np.where(red, red_result, -red_result)
    w = settings.value_q_weight
    if w > 0:
        values = np.where(np.isnan(root_value), values, (1.0 - w) * values + w * np.nan_to_num(root_value))
    return values.astype(np.float32)


def material_balance(final: np.ndarray) -> float:
    """(Red's pieces on the board - Blue's) / 8 in the kernel state `final`, in [-1, 1]."""
    alive = final[K.S_PIECES : K.S_PIECES + 16].reshape(2, 8) >= 0  # [colour, animal - 1]
    return float(int(alive[K.RED].sum()) - int(alive[K.BLUE].sum())) / 8.0


def survival_targets(final: np.ndarray, sides: np.ndarray) -> np.ndarray:
    """float32 [n, 16] survival targets of a game's positions: 1 for each piece on the board in the game's
    `final` position (a kernel state), the side to move's 8 animals first, for the sides to move `sides` [n]."""
    alive = final[K.S_PIECES : K.S_PIECES + 16].reshape(2, 8) >= 0  # [colour, animal - 1]
    views = np.zeros((2, 16), dtype=np.float32)  # [side to move, piece in observation order]
    for side in (K.RED, K.BLUE):
        views[side] = np.concatenate([alive[side], alive[1 - side]])
    return views[sides]


def _finish(
    games: GameBatch,
    s: int,
    g: _Game,
    sides: np.ndarray,
    root_value: np.ndarray,
    rules: RuleSet,
    player_names: tuple[str, str],
    settings: SelfPlayConfig,
    verdict: int = UNKNOWN,
    level: bool = False,
) -> tuple[np.ndarray, GameRecord]:
    """Value targets (from each position's side to move) and the record of the game in slot `s`, whose
    positions had the sides to move `sides` and the root values `root_value` (NaN: an opponent's move).
    A game the tables ended (`verdict`, for the side to move in its last position) scores their result;
    one judged level (`level`, `SelfPlayConfig.level_plies`) is cut as at the ply cap."""
    if verdict != UNKNOWN:
        term, winner = -1, table_winner(verdict, int(games.state[s, K.S_SIDE]))
    else:
        term, winner = games.outcome(s)
    cut = bool(games.truncated[s]) or level
    values = value_targets(sides, root_value, winner, cut, settings, material_balance(games.state[s]))
    if verdict != UNKNOWN:
        result, termination = RESULT_OF_WINNER[winner], "tablebase"
    elif level:
        result, termination = "1/2-1/2", "level"
    elif games.truncated[s]:
        result, termination = "1/2-1/2", "ply_cap"
    else:
        result, termination = RESULT_OF_WINNER[winner], Termination(term).name.lower()
    record = GameRecord(
        start=games.start[s],
        moves=games.moves(s),
        result=result,
        termination=termination,
        red=player_names[0],
        blue=player_names[1],
        rules=rules.to_dict(),
        seed=g.seed,
        extra={"game_index": g.index, "plies": len(sides)},
    )
    return values, record

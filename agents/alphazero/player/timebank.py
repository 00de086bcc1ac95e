"""Time management for a search by ``time``: settled moves end early, unsettled ones search on with what
they saved.

A player searching by ``time=T,stretch=S`` keeps a bank of the seconds its moves left unspent this game. A
move searches in rounds (`CheckpointPlayer`); after each round `MoveTimer.go_on` decides:

- a round that would end past the move's **hard** limit, min(S x T, T + the bank), never starts;
- before the move's **soft** limit, T (less any overrun still owed), the search goes on, unless the move
  is **settled**: at least `EARLY_FRACTION` of T spent, the last `SETTLED_ROUNDS` rounds chose one
  action, the search's policy gives it `CLEAR` or more and the root value did not fall; it then ends, and
  what it left goes to the bank;
- past the soft limit it goes on only while the move is **unsettled**: the last round chose another action
  than the round before, or the search's policy gives its choice less than `CLOSE` (another move is
  nearly as good), or the root value lies `FALL` or more below the value this player's previous search
  ended with (the opponent's reply found something).

So a game's moves take T each on average at most (the bank never lends; an overrun of the last round is
paid back by the next moves' soft limits, each at least half of T; an overrun past `MAX_DEBT` move times,
such as a first move's compiling, is not), and the time goes where the search is unsure.
``stretch=1`` is a plain search by time: every move runs rounds while the next fits in T.
"""

from __future__ import annotations

from typing import Optional

SETTLED_ROUNDS = 4
"""Rounds in a row choosing one action (the root value not falling) that let a move end before its time."""

EARLY_FRACTION = 0.5
"""The share of the move time a settled move searches at least."""

CLEAR = 0.9
"""The search policy's share of its choice (Gumbel: the completed-Q policy) from which a move may settle."""

CLOSE = 0.6
"""The share below which a move is unsettled: another move is nearly as good, and more search may tell."""

FALL = 0.1
"""How far below the previous search's root value (the same side's view, values in [-1, 1]) the root value
must lie to keep a move searching past its time."""


MAX_DEBT = 1.0
"""The most move times of overrun the bank asks back: the rest of a longer one (a first search compiling, a
stalled machine) is not the search's doing, and paying it back would starve the moves after it."""


class MoveTimer:
    """The limits of one move's search and the rounds it ran (`TimeBank.start_move`)."""

    def __init__(self, soft: float, hard: float, early: float, last_value: Optional[float]) -> None:
        self.soft, self.hard, self.early, self.last_value = soft, hard, early, last_value
        self.actions: list[int] = []
        self.extended = False
        """Whether a round started past the soft limit."""
        self.stopped_early = False
        """Whether the move ended settled, before its soft limit."""

    def falling(self, value: float) -> bool:
        return self.last_value is not None and value <= self.last_value - FALL

    def go_on(self, action: int, share: float, value: float, spent: float, rounds: int) -> bool:
        """After a round that chose `action`, which the search's policy gives `share`, with root value
        `value`, `spent` seconds into the search's `rounds` rounds: whether to run another (the next round is
        taken to cost the mean round so far)."""
        self.actions.append(action)
        end = spent + spent / max(1, rounds)
        if end > self.hard:
            return False
        if end <= self.soft:
            recent = self.actions[-SETTLED_ROUNDS:]
            settled = (
                len(recent) == SETTLED_ROUNDS and len(set(recent)) == 1 and share >= CLEAR and not self.falling(value)
            )
            if settled and spent >= self.early:
                self.stopped_early = True
                return False
            return True
        changed = len(self.actions) >= 2 and self.actions[-1] != self.actions[-2]
        if changed or share < CLOSE or self.falling(value):
            self.extended = True
            return True
        return False


class TimeBank:
    """The seconds a player's moves left unspent this game (`balance`; below 0 while an overrun is owed)."""

    def __init__(self, seconds: float, stretch: float) -> None:
        if not seconds > 0 or not stretch >= 1:
            raise ValueError(f"a time bank needs seconds > 0 and stretch >= 1, not {seconds} and {stretch}")
        self.seconds, self.stretch = float(seconds), float(stretch)
        self.balance = 0.0
        self.moves = self.early = self.extended = 0
        """This game's moves, those that ended settled before their time and those that searched past it."""

    def limits(self) -> tuple[float, float]:
        """(soft, hard) seconds for the next move."""
        soft = self.seconds + max(-0.5 * self.seconds, min(0.0, self.balance))
        hard = max(soft, min(self.stretch * self.seconds, self.seconds + self.balance))
        return soft, hard

    def start_move(self, overhead: float, last_value: Optional[float]) -> MoveTimer:
        """The timer of the next move's search, its limits less `overhead` seconds already spent on the move
        or kept for after the search; `last_value`: the root value of this player's previous search."""
        soft, hard = self.limits()
        return MoveTimer(soft - overhead, hard - overhead, EARLY_FRACTION * self.seconds - overhead, last_value)

    def end_move(self, spent: float, timer: MoveTimer) -> None:
        """Book a move that took `spent` seconds in all."""
        self.balance = max(-MAX_DEBT * self.seconds, self.balance + self.seconds - spent)
        self.moves += 1
        self.early += timer.stopped_early
        self.extended += timer.extended

    def reset(self) -> None:
        """A new game: nothing saved."""
        self.balance = 0.0
        self.moves = self.early = self.extended = 0

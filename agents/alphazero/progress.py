"""Training progress: seconds per phase, and an ETA made of the phases still to come.

An iteration of training is self-play, learning, perhaps an evaluation, and a
checkpoint; evaluation iterations cost several times the others. An ETA from
the mean iteration jumps whenever an evaluation falls in or out of the
average. `PhaseClock` keeps the mean of each phase instead (across sittings:
its state goes into the checkpoint) and prices the iterations left as what
they will run: every remaining iteration's self-play, learning and
checkpoint, plus the evaluations still due.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

PHASES = ("selfplay", "learn", "eval", "checkpoint")
EVERY_ITERATION = ("selfplay", "learn", "checkpoint")


def evaluation_due(it: int, iterations: int, every: int) -> bool:
    """Whether iteration `it` of `iterations` ends with an evaluation (every `every`-th and the last; 0: never)."""
    return every > 0 and (it % every == 0 or it == iterations)


class PhaseClock:
    """Mean seconds of each phase so far and the time the rest of a run will take."""

    def __init__(self, state: Optional[Mapping[str, Any]] = None) -> None:
        self.totals: dict[str, list[float]] = {p: [0.0, 0] for p in PHASES}
        """phase -> [seconds, times measured]."""
        for phase, (seconds, count) in (state or {}).items():
            if phase in self.totals:
                self.totals[phase] = [float(seconds), int(count)]

    def add(self, phase: str, seconds: float) -> None:
        if phase not in self.totals:
            raise ValueError(f"unknown phase {phase!r}; known: {', '.join(PHASES)}")
        self.totals[phase][0] += seconds
        self.totals[phase][1] += 1

    def mean(self, phase: str) -> Optional[float]:
        """Mean seconds of `phase`, or None before it was first measured."""
        seconds, count = self.totals[phase]
        return seconds / count if count else None

    def state_dict(self) -> dict[str, list[float]]:
        return {p: list(v) for p, v in self.totals.items()}

    def eta(self, done: int, iterations: int, eval_every: int, pending_eval: bool = False) -> tuple[float, int]:
        """(seconds left, evaluations left unpriced) once iteration `done` is complete (or, with `pending_eval`,
        has only its evaluation left). A phase never measured yet is priced at 0; evaluations are then
        counted in the second value, so the caller can say the estimate leaves them out."""
        left = iterations - done
        evals = sum(evaluation_due(i, iterations, eval_every) for i in range(done + 1, iterations + 1))
        evals += int(pending_eval)
        seconds = left * sum(self.mean(p) or 0.0 for p in EVERY_ITERATION)
        eval_mean = self.mean("eval")
        if eval_mean is None:
            return seconds, evals
        return seconds + evals * eval_mean, 0

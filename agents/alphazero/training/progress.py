"""Training progress: seconds per phase, an ETA made of the phases still to come, and each iteration's
log line and self-play scalars.

An iteration of training is self-play, learning, perhaps an evaluation, and a
checkpoint; evaluation iterations cost several times the others. An ETA from
the mean iteration jumps whenever an evaluation falls in or out of the
average. `PhaseClock` keeps the mean of each phase instead (across sittings:
its state goes into the checkpoint) and prices the iterations left as what
they will run: every remaining iteration's self-play, learning and
checkpoint, plus the evaluations still due.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any, Mapping, Optional

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

    from agents.alphazero.selfplay.data import SelfPlayStats
    from agents.alphazero.training.learner import LearnMetrics

PHASES = ("selfplay", "learn", "eval", "checkpoint")
PROC = "/proc"


def process_tree_cpu_seconds(root: Optional[int] = None, proc: str = PROC) -> Optional[float]:
    """CPU seconds (user + system) spent so far by process `root` (default: this one) and its descendants, the
    workers, inference server and evaluation pools of a run included, alive or already waited for: what the
    run has cost the machine, whatever else shares it. Read from Linux's /proc; None where there is none."""
    root = os.getpid() if root is None else root
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "stat"), "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone between the listing and the read, or not a process
        # after the command's ")": state ppid ... utime stime cutime cstime are fields 11-14 (0-based)
        pid, ppid = int(name), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        times[pid] = sum(int(v) for v in fields[11:15]) / tick
    if root not in times:
        return None
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


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


def log_selfplay(writer: SummaryWriter, it: int, s: SelfPlayStats, seconds: float, opponents: bool) -> None:
    """Iteration `it`'s self-play scalars (`seconds`: its self-play phase; `opponents`: a run with opponent games)."""
    games = max(1, int(s.games))
    writer.add_scalar("perf/seconds_selfplay", seconds, it)
    writer.add_scalar("selfplay/games_per_s", s.games / max(seconds, 1e-9), it)
    writer.add_scalar("selfplay/positions_per_s", s.positions / max(seconds, 1e-9), it)
    writer.add_scalar("selfplay/simulations_per_s", s.simulations / max(seconds, 1e-9), it)
    writer.add_scalar("selfplay/game_length", s.mean_length, it)
    writer.add_scalar("selfplay/red_wins", s.red_wins / games, it)
    writer.add_scalar("selfplay/blue_wins", s.blue_wins / games, it)
    writer.add_scalar("selfplay/draws", s.draws / games, it)
    if s.left_out:
        writer.add_scalar("selfplay/left_out_positions", s.left_out, it)
    if s.policy_only:
        writer.add_scalar("selfplay/policy_only_positions", s.policy_only, it)
    if opponents:
        writer.add_scalar("selfplay/opponent_games", s.opponent_games, it)
        if s.opponent_games:
            writer.add_scalar("selfplay/opponent_score", s.opponent_score, it)


SERVER_TAGS = ("batches", "mean_batch", "max_batch", "mean_wait_ms", "mean_batch_ms", "tail_mean_batch")
"""The inference server's counts of an iteration (`batcher.LeafBatcher.take_counts`) logged as ``perf/server_*``."""


def log_server(writer: SummaryWriter, it: int, counts: Mapping[str, float]) -> str:
    """Iteration `it`'s inference-server scalars (``perf/server_mean_batch`` ...); the log line that says them."""
    for name in SERVER_TAGS:
        if name in counts:
            writer.add_scalar(f"perf/server_{name}", counts[name], it)
    batches, mean, largest, wait, batch_ms, tail = (float(counts.get(name, 0)) for name in SERVER_TAGS)
    return (
        f"iter {it}: inference server: {batches:.0f} batches, mean {mean:.0f} positions (largest {largest:.0f}, "
        f"last tenth {tail:.0f}), mean wait {wait:.1f} ms, {batch_ms:.1f} ms a batch"
    )


def iteration_line(
    it: int,
    iterations: int,
    s: Optional[SelfPlayStats],
    seconds: float,
    steps: int,
    metrics: LearnMetrics,
    scores: dict[str, float],
) -> str:
    """The log line of an iteration: self-play, learning and evaluation figures (`s` None: an iteration
    whose self-play and learning ran before a stop)."""
    parts = [f"iter {it}/{iterations}"]
    if s is not None:
        left_out = f", {s.left_out} positions of draws left out" if s.left_out else ""
        if s.policy_only:
            left_out += f", {s.policy_only} trained for the policy only"
        parts.append(
            f"{s.games} games {s.positions} positions ({s.positions / max(seconds, 1e-9):.0f} pos/s, "
            f"{s.simulations / max(seconds, 1e-9):.0f} sims/s, len {s.mean_length:.0f}, red/blue/draw "
            f"{s.red_wins}/{s.blue_wins}/{s.draws}{left_out})"
        )
        parts.append(
            f"{steps} steps loss {or_nan(metrics.total):.3f} (policy "
            f"{or_nan(metrics.policy):.3f} value {or_nan(metrics.value):.3f})"
        )
    else:
        parts.append("self-play and learning done before the stop")
    shown = []
    for key, score in scores.items():
        if key.endswith("/ladder_score"):  # a mixed run: each rule set's ladder score (its opponents in TensorBoard)
            shown.append(f"{key[: -len('/ladder_score')]} {score:.2f}")
        elif key.startswith("score_"):
            tag = key[len("score_") :]
            low, high = scores.get(f"low_{tag}"), scores.get(f"high_{tag}")
            shown.append(
                f"{tag} {score:.2f}" + (f" [{low:.2f}-{high:.2f}]" if low is not None and high is not None else "")
            )
    evaluation = " ".join(shown)
    if "elo" in scores:
        evaluation += f" elo {scores['elo']:.0f}"
    if evaluation:
        parts.append(f"eval: {evaluation}")
    return " | ".join(parts)


def or_nan(value: Optional[float]) -> float:
    """`value`, or NaN for a figure never measured (a learn phase that took no step)."""
    return math.nan if value is None else value


def format_seconds(s: float) -> str:
    """Seconds as the log line shows them: `4m05s`, or `1h02m` from an hour on."""
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"

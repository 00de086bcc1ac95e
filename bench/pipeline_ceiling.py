"""The self-play pipeline's ceiling: self-play on a network that costs nothing, and the per-leaf costs of the
served path (packing, unpacking, the shared-memory slot's round trip) measured one by one.

    python bench/pipeline_ceiling.py                       # every row, the default run's search, 64 games
    python bench/pipeline_ceiling.py --rows free,server    # some rows only (free, kernels, server, servers, ray)
    python bench/pipeline_ceiling.py --device cuda         # the device-side unpack on the GPU
    python bench/pipeline_ceiling.py --quick               # tiny sizes (the smoke test's)

Self-play: the default run's search and self-play settings (`Config()`: Gumbel, 32 simulations over 4 root
actions, the draw breakers, games capped at 200 plies), `--games` games at once, on a network that costs
nothing: a uniform policy over the legal moves (masked logits, as `make_evaluator` returns them) and value 0.
Each pipeline is a row (`PIPELINES`):

- ``free``: in this process (`InProcessPool`), that evaluator called once a leaf batch like the real one, so
  the search, the game loop and the evaluator calls are all that is left;
- ``kernels``: in this process, the uniform evaluator that the search runs inside numba (no calls at all);
- ``server``: one self-play process and one inference server process (``train.inference.server``; the
  server's network replaced by the free one, `InferenceSettings.free_network`), the leaves crossing through
  the shared-memory slots and pipes;
- ``servers``: two self-play processes, each feeding its own CPU server (``train.inference.devices:
  [cpu, cpu]``), `--games` split between them;
- ``ray``: one Ray self-play actor served by its node's CPU server (`RayPool`) on a local Ray, run by this
  bench again (``--ray-row``) inside a loopback-only network namespace (`agents.common.loopback`), since Ray
  listens on every interface otherwise; a printed line says so when it cannot run.

A served row's pool starts and plays a warm-up call before the timed one. Figures per CPU second of the whole
process tree (this process, its ended children by `resource.getrusage`, the live ones, workers, servers and
Ray's own processes, by /proc; all threads), per wall second, and the servers' mean leaf batch.

Per leaf: the bytes a position takes in float32 planes and packed (`net/packing.py`; what crosses to the
inference server and back), and microseconds a position for numpy packing and unpacking, the server's unpack
on `--device` (the host-to-device copy included), a round trip through a shared-memory slot
(`distributed/slots.py`: the client's `ServedEvaluator` packs the batch into its slot and rings a server
process on a pipe, which writes zero answers back into the slot; the server's network and unpack left out),
and the server's side of a batch (its `LeafBatcher` from one client: the hand-over to its device thread and
back around an evaluator that does nothing, then around the free network, which unpacks the masks and builds
the answers), each at the batch sizes `--batches`, on the positions the self-play above played; the server's
two are also shown a batch. Packing and unpacking count this process's CPU time; the round trip and the
server's batch count wall time. Each figure is the best of three rounds of at least `--seconds`. Figures only
(no assertions).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

from learner_share import cpu_seconds

PROG = "pipeline_ceiling.py"
QUICK = {"games": 4, "max_plies": 8, "sims": 4, "batches": "16", "seconds": 0.01}
"""The sizes of `--quick` (the smoke test's): a run of seconds whose figures mean nothing (each
where its option is left at its default)."""
RAY_ROW = "ray row:"
"""How the bench run with `--ray-row` (in the loopback namespace) prints its row: this, then the row as JSON."""
RAY_SECONDS = 300
"""The most seconds the Ray row's run may take, Ray's start included."""


class FreeEvaluator:
    """An `Evaluator` that costs nothing but its call: a uniform policy over the legal actions (illegal logits at
    float32's minimum, as `make_evaluator` masks them) and value 0 for the side to move."""

    def __call__(self, obs: Any, mask: Any) -> tuple[Any, Any]:
        import numpy as np

        lowest = np.finfo(np.float32).min
        return np.where(mask, np.float32(0.0), lowest).astype(np.float32), np.zeros(len(obs), np.float32)


class Row(NamedTuple):
    """One pipeline's self-play: its label, the games' counts, the CPU seconds of the whole process tree and the
    wall seconds they took, and the server's mean leaf batch (0: no server)."""

    label: str
    positions: int
    simulations: int
    games: int
    cpu: float
    wall: float
    mean_batch: float = 0.0


def _descendants_cpu() -> float:
    """CPU seconds (user and system, all threads) of the live descendants of this process, read from /proc (0
    where there is none): the server and worker processes, and Ray's, while they run."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # ended meanwhile
            continue
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)  # fields[1]: the parent
        used[pid] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    total, todo = 0.0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def tree_cpu_seconds() -> float:
    """CPU seconds of the whole process tree so far: this process, its ended children (`resource`) and the
    live ones (/proc)."""
    return cpu_seconds() + _descendants_cpu()


def timed(run: Callable[[], Any]) -> tuple[Any, float, float]:
    """`run()`'s result, and the CPU seconds of the whole process tree and the wall seconds it took."""
    c0, w0 = tree_cpu_seconds(), time.perf_counter()
    out = run()
    return out, tree_cpu_seconds() - c0, time.perf_counter() - w0


FREE_NETWORK_SHAPE = {"blocks": 1, "channels": 8, "value_hidden": 8, "policy_channels": 2}
"""The shape of the network the rows' settings name: the smallest, since only its weights travel (once a call,
to a served pool's servers), its outputs never used."""


def _settings(args: argparse.Namespace, workers: int = 1) -> Any:
    """The workers' settings of the default run, with `--games` at once over `workers`, `--max-plies` and
    `--sims`."""
    from agents.alphazero.distributed.settings import WorkerSettings
    from agents.alphazero.net.network import NetworkConfig
    from agents.alphazero.training.config import Config

    conf = Config()
    mcts = dataclasses.replace(conf.mcts, num_simulations=args.sims or conf.mcts.num_simulations)
    return WorkerSettings(
        network=NetworkConfig(**FREE_NETWORK_SHAPE),  # never evaluated: the weights a served pool sends its servers
        mcts=mcts,
        rules=conf.rules.rule_set(),
        selfplay=dataclasses.replace(
            conf.train.selfplay, parallel=max(1, args.games // workers), max_plies=args.max_plies
        ),
        precision=conf.precision,
    )


def _in_process(label: str, evaluator: Any, args: argparse.Namespace) -> tuple[Row, Any]:
    """`--games` games in this process on `evaluator` (after a warm-up call), and the games' data."""
    from agents.alphazero.distributed.pools import make_selfplay_pool

    with make_selfplay_pool("inprocess", 0, _settings(args), evaluator=evaluator) as pool:
        pool.play({}, seed=1, num_games=2)  # load the numba cache (or compile)
        data, cpu, wall = timed(lambda: pool.play({}, seed=0, num_games=args.games))
    s = data.stats
    return Row(label, s.positions, s.simulations, s.games, cpu, wall), data


def free_network_row(args: argparse.Namespace) -> tuple[Row, Any]:
    """In this process, the free evaluator called once a leaf batch."""
    return _in_process("in process, free network", FreeEvaluator(), args)


def kernels_only_row(args: argparse.Namespace) -> tuple[Row, Any]:
    """In this process, the uniform evaluator that the search answers inside numba (no evaluator calls)."""
    from agents.alphazero.search import uniform_evaluator

    return _in_process("in process, uniform inside the search (no calls)", uniform_evaluator, args)


def _served(label: str, backend: str, workers: int, devices: int, args: argparse.Namespace) -> tuple[Row, Any]:
    """`--games` games over `workers` self-play processes or actors of `backend`, their leaves answered by
    servers with the free network (`InferenceSettings.free_network`; `devices` CPU servers, 0: one CPU server
    by `train.inference.server`), after a warm-up call; the pool's start and end are not timed."""
    import torch

    from agents.alphazero.distributed.pools import make_selfplay_pool
    from agents.alphazero.distributed.settings import InferenceSettings
    from agents.alphazero.net.network import build_network

    settings = _settings(args, workers)
    weights = build_network(settings.network).state_dict()
    cpu = torch.device("cpu")
    inference = InferenceSettings(devices=(cpu,) * devices, free_network=True)
    with make_selfplay_pool(backend, workers, settings, inference=inference) as pool:
        pool.play(weights, seed=1, num_games=2 * workers)  # every process loads the numba cache (or compiles)
        data, cpu_s, wall = timed(lambda: pool.play(weights, seed=0, num_games=args.games))
        mean_batch = float(getattr(pool, "server_counts", {}).get("mean_batch", 0.0))
    s = data.stats
    return Row(label, s.positions, s.simulations, s.games, cpu_s, wall, mean_batch), data


def one_server_row(args: argparse.Namespace) -> tuple[Row, Any]:
    """One self-play process and one server process (``train.inference.server``), the free network on it."""
    return _served("one server (process backend, 1 worker)", "process", 1, 0, args)


def two_servers_row(args: argparse.Namespace) -> tuple[Row, Any]:
    """Two self-play processes, each feeding its own CPU server (``train.inference.devices: [cpu, cpu]``)."""
    return _served("two servers (devices [cpu, cpu], 2 workers)", "process", 2, 2, args)


def ray_row(args: argparse.Namespace) -> tuple[Row, Any]:
    """One Ray self-play actor served by its node's CPU server (`RayPool`), on a local Ray started by this bench
    run again with `--ray-row` in a loopback-only network namespace (`agents.common.loopback`); its figures are
    that run's process tree's (Ray's own processes included). RuntimeError when it fails."""
    from agents.common.loopback import run_on_loopback

    argv = [sys.executable, __file__, "--ray-row", "--games", str(args.games), "--max-plies", str(args.max_plies)]
    argv += ["--sims", str(args.sims), "--threads", str(args.threads)]
    with tempfile.TemporaryDirectory(prefix="ray-") as temp:  # short: Ray's socket paths live under it
        # A Ray of its own: with RAY_TMPDIR it neither finds nor joins another local instance.
        env = dict(os.environ, RAY_TMPDIR=temp, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
        run = run_on_loopback(argv, timeout=RAY_SECONDS, env=env, cwd=str(Path(__file__).resolve().parent.parent))
    found = [line[len(RAY_ROW) :] for line in run.stdout.splitlines() if line.startswith(RAY_ROW)]
    if run.returncode != 0 or not found:
        last = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]
        raise RuntimeError(f"the Ray row failed: {last}")
    return Row(**json.loads(found[0])), None


def play_ray_row(args: argparse.Namespace) -> None:
    """The Ray row itself (`--ray-row`, inside the namespace): printed after `RAY_ROW` as JSON."""
    row, _ = _served("Ray-served (1 actor, its node's CPU server)", "ray", 1, 0, args)
    print(RAY_ROW + json.dumps(row._asdict()), flush=True)


PIPELINES: dict[str, Callable[[argparse.Namespace], tuple[Row, Any]]] = {
    "free": free_network_row,
    "kernels": kernels_only_row,
    "server": one_server_row,
    "servers": two_servers_row,
    "ray": ray_row,
}
"""Each pipeline's row function (its figures and the games' data, None where they stay in another process)."""


# --------------------------------------------------------------------------------------------
# Per-leaf costs
# --------------------------------------------------------------------------------------------
def best_micros(run: Callable[[], Any], leaves: int, seconds: float, clock: Callable[[], float]) -> float:
    """Microseconds per leaf of `run` (one batch of `leaves`) by `clock`: the best of three rounds of at least
    `seconds` each (a round repeats `run`)."""
    best = float("inf")
    for _ in range(3):
        calls, t0, w0 = 0, clock(), time.perf_counter()
        while calls == 0 or time.perf_counter() - w0 < seconds:
            run()
            calls += 1
        best = min(best, (clock() - t0) / (calls * leaves))
    return best * 1e6


def _echo(name: str, capacity: int, pipe: Any) -> None:
    """A server that costs nothing: answers each request on `pipe` by writing zeros into slot 0 of the leaf slots
    `name`; None ends it."""
    from agents.alphazero.distributed.slots import IDLE, LeafSlots

    slots = LeafSlots(1, capacity, name=name)
    slot = slots.slot(0)
    while (n := pipe.recv()) is not None:
        if n != IDLE:
            slot.logits[:n] = 0.0
            slot.value[:n] = 0.0
        pipe.send(n)
    del slot
    slots.close()


class SlotRoundTrip:
    """A `ServedEvaluator` on a slot of `capacity` positions, answered by `_echo` in a process of its own."""

    def __init__(self, capacity: int) -> None:
        from agents.alphazero.distributed.slots import LeafSlots, ServedEvaluator

        self.slots = LeafSlots(1, capacity)
        here, there = multiprocessing.Pipe()
        self.pipe = here
        self.server = multiprocessing.get_context("spawn").Process(
            target=_echo, args=(self.slots.name, capacity, there), daemon=True
        )
        self.server.start()
        there.close()
        self.evaluator = ServedEvaluator(self.slots.slot(0), here)

    def close(self) -> None:
        self.pipe.send(None)
        self.server.join(10)
        if self.server.is_alive():
            self.server.kill()
            self.server.join()
        del self.evaluator
        self.pipe.close()
        self.slots.unlink()


SERVER_IDLE = "server's batcher, an evaluator that does nothing (wall)"
SERVER_FREE = "server's batcher and the free network: masks unpacked, answers built (wall)"
"""The per-leaf rows that time the server's side of a batch (`LeafBatcher.evaluate` from one client, no wait),
also shown a batch."""


def batch_micros(obs: Any, mask: Any, device: Any, seconds: float) -> dict[str, float]:
    """Microseconds a leaf of each step of the served path for one batch `obs` [n, 32, 9, 7], `mask` [n, 252]."""
    import numpy as np
    import torch

    from agents.alphazero.distributed.batcher import LeafBatcher, free_packed_evaluator
    from agents.alphazero.net.packing import pack_masks, pack_observations, unpack_masks, unpack_observations
    from agents.alphazero.net.runtime import unpack_masks_on_device, unpack_on_device
    from envs.encoding import N_ACTIONS

    n = len(obs)
    bits, scalars = pack_observations(obs)
    mask_bits = pack_masks(mask)

    def on_device() -> None:
        unpack_on_device(torch.from_numpy(bits).to(device), torch.from_numpy(scalars).to(device))
        unpack_masks_on_device(torch.from_numpy(mask_bits).to(device))
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    answer = (np.zeros((n, N_ACTIONS), np.float32), np.zeros(n, np.float32))
    idle = LeafBatcher(lambda *packed: answer, max_wait=0.0)
    free = LeafBatcher(free_packed_evaluator, max_wait=0.0)
    trip = SlotRoundTrip(n)
    try:
        steps: dict[str, tuple[Callable[[], Any], Callable[[], float]]] = {
            "pack (numpy, CPU)": (lambda: (pack_observations(obs), pack_masks(mask)), cpu_seconds),
            "unpack (numpy, CPU)": (lambda: (unpack_observations(bits, scalars), unpack_masks(mask_bits)), cpu_seconds),
            f"copy to {device} and unpack there (torch, CPU)": (on_device, cpu_seconds),
            "slot round trip, packing included (wall)": (lambda: trip.evaluator(obs, mask), time.perf_counter),
            SERVER_IDLE: (lambda: idle.evaluate(0, bits, scalars, mask_bits), time.perf_counter),
            SERVER_FREE: (lambda: free.evaluate(0, bits, scalars, mask_bits), time.perf_counter),
        }
        with torch.inference_mode():
            return {label: best_micros(run, n, seconds, clock) for label, (run, clock) in steps.items()}
    finally:
        trip.close()


def leaf_costs(obs: Any, mask: Any, batches: list[int], device: Any, seconds: float) -> list[str]:
    """The per-leaf table: bytes, then microseconds a leaf of each step at each batch size, on `obs` and `mask`
    (positions tiled up to the largest batch)."""
    import numpy as np

    from agents.alphazero.distributed.slots import ROW_BYTES, SCALAR_PLANES
    from agents.alphazero.net.packing import PACKED_MASK_BYTES, PACKED_OBS_BYTES
    from envs.encoding import N_ACTIONS

    planes = obs[0].nbytes + mask[0].nbytes
    packed = PACKED_OBS_BYTES + 4 * SCALAR_PLANES + PACKED_MASK_BYTES
    answer = 4 * N_ACTIONS + 4
    lines = [
        f"bytes a leaf: {planes} as float32 planes and a bool mask, {packed} packed ({PACKED_OBS_BYTES} of bits, "
        f"{4 * SCALAR_PLANES} of constant planes, {PACKED_MASK_BYTES} of mask bits; {planes / packed:.0f}x fewer); "
        f"{answer} back (logits and value, float32); a slot holds {ROW_BYTES} a position",
        f"| microseconds a leaf | {' | '.join(f'batch {b}' for b in batches)} |",
        "| --- |" + " --- |" * len(batches),
    ]
    reps = -(-max(batches) // len(obs))
    obs, mask = np.concatenate([obs] * reps), np.concatenate([mask] * reps)
    rows: dict[str, list[float]] = {}
    for b in batches:
        for label, micros in batch_micros(obs[:b].copy(), mask[:b].copy(), device, seconds).items():
            rows.setdefault(label, []).append(micros)
    for label, figures in rows.items():
        lines.append(f"| {label} | {' | '.join(f'{u:.2f}' for u in figures)} |")
    lines += ["", f"| microseconds a batch | {' | '.join(f'batch {b}' for b in batches)} |"]
    lines.append("| --- |" + " --- |" * len(batches))
    for label in (SERVER_IDLE, SERVER_FREE):
        lines.append(f"| {label} | {' | '.join(f'{u * b:.0f}' for u, b in zip(rows[label], batches))} |")
    return lines


def main() -> None:
    from agents.common.cli import refuse

    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.error = lambda message: refuse(PROG, ValueError(message))  # type: ignore[method-assign]  # one line, no usage
    ap.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda (default: %(default)s)")
    ap.add_argument("--games", type=int, default=64, help="self-play games at once (default: %(default)s)")
    ap.add_argument("--max-plies", type=int, default=200, help="each game's cap (default: %(default)s, the run's)")
    ap.add_argument("--sims", type=int, default=0, help="simulations a move (0: the default run's, 32)")
    ap.add_argument(
        "--batches", default="64,1024", help="leaf batch sizes of the per-leaf costs (default: %(default)s)"
    )
    ap.add_argument("--seconds", type=float, default=0.2, help="least seconds a round (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: %(default)s, the run's)")
    ap.add_argument(
        "--rows", default=",".join(PIPELINES), help="the self-play rows, of %(default)s (default: all of them)"
    )
    ap.add_argument("--quick", action="store_true", help=f"tiny sizes for a smoke test ({QUICK})")
    ap.add_argument("--ray-row", action="store_true", help=argparse.SUPPRESS)  # the Ray row's own run
    args = ap.parse_args()
    if args.quick:  # the sizes left at their defaults
        for key, value in QUICK.items():
            if getattr(args, key) == ap.get_default(key):
                setattr(args, key, value)
    for key in ("games", "max_plies"):
        if getattr(args, key) < 1:
            ap.error(f"--{key.replace('_', '-')}={getattr(args, key)} must be at least 1")
    for key in ("sims", "threads"):
        if getattr(args, key) < 0:
            ap.error(f"--{key}={getattr(args, key)} must be at least 0")
    if not 0 < args.seconds <= 60:
        ap.error(f"--seconds={args.seconds:g} must be above 0 and at most 60")
    try:
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        batches = []
    if not batches or min(batches) < 1:
        ap.error(f"--batches={args.batches!r} must be batch sizes of at least 1, separated by commas")
    names = [name for name in args.rows.split(",") if name]
    if not names or set(names) - set(PIPELINES):
        ap.error(f"--rows={args.rows!r} must name rows of {','.join(PIPELINES)}, separated by commas")
    if args.device not in ("auto", "cpu", "cuda"):
        ap.error(f"--device={args.device!r} must be auto, cpu or cuda")
    import torch

    from agents.alphazero.net.device import resolve_device

    try:
        device = resolve_device(args.device)
    except ValueError as e:
        ap.error(str(e))
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.ray_row:
        return play_ray_row(args)
    rows, skipped, data = [], [], None
    for name in names:
        try:
            row, played = PIPELINES[name](args)
        except RuntimeError as e:  # the Ray row: no namespace, or Ray failed
            skipped.append(f"{name}: not measured ({e})")
            continue
        rows.append(row)
        data = played if data is None else data
    settings = _settings(args)
    print(
        f"self-play: {args.games} games at once, Gumbel {settings.mcts.num_simulations} simulations over "
        f"{settings.mcts.gumbel.max_actions} root actions, games capped at {args.max_plies} plies; "
        f"{torch.get_num_threads()} torch threads"
    )
    print(
        "| pipeline | positions per CPU s | simulations per CPU s | positions per wall s | CPU s | wall s "
        "| mean plies | mean leaf batch |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r.label} | {r.positions / max(r.cpu, 1e-9):.0f} | {r.simulations / max(r.cpu, 1e-9):.0f} "
            f"| {r.positions / max(r.wall, 1e-9):.0f} | {r.cpu:.2f} | {r.wall:.2f} "
            f"| {r.positions / max(r.games, 1):.0f} | {f'{r.mean_batch:.1f}' if r.mean_batch else '-'} |"
        )
    if skipped:
        print("\n".join(skipped))
    if data is None:
        data = free_network_row(args)[1]  # the positions of the per-leaf costs
    print("\n".join(leaf_costs(data.obs, data.mask, batches, device, args.seconds)))
    return None


if __name__ == "__main__":
    sys.exit(main())

"""The learner: one optimizer step of the AlphaZero loss on a replay batch.

Loss = policy cross-entropy against the search policy (positions searched
in full only; playout-cap cheap searches train the value alone)
+ ``value_weight`` x value loss (MSE of the tanh value against the final
outcome, or cross-entropy of WDL logits against the outcome class; over the
positions whose value target trains: not those kept for their policy alone,
`SelfPlayConfig.draw_policy`). Values and outcomes are from the side to move. A network with the survival head
(`NetworkConfig.survival_head`) adds ``survival_weight`` x the binary
cross-entropy of its 16 survival logits against which pieces are still on
the board at the game's end (mean over pieces and positions). Weight decay
is the optimizer's.

The learning rate is a pure function of the step (`lr_at`), so the schedule
needs no state of its own beyond the step counter in the checkpoint.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Generator, Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from agents.alphazero.net.device import autocast_dtype, cuda_defaults
from agents.alphazero.net.network import JungleNet, mask_logits
from agents.alphazero.training.replay import Batch, ReplayBuffer
from envs.config import ConfigError, check_choice, check_range, shown

OPTIMIZERS = ("sgd", "adamw")
SCHEDULES = ("constant", "cosine", "step")


class LearnerConfigError(ConfigError):
    """An unknown optimizer or schedule name, or a bad number."""


class LearnerDivergedError(ValueError):
    """Training diverged: too many learner steps in a row had a non-finite loss or gradient norm (each was
    skipped), or a step left a weight non-finite. The message names the learning rate, the likely cause."""


@dataclass
class LearnerConfig:
    """Optimizer and loss settings (plain values; read from `configs/train/`)."""

    optimizer: str = "adamw"
    """`sgd` (with Nesterov momentum) or `adamw`."""
    lr: float = 2e-3
    """Peak learning rate; > 0 and finite (a rate so high that the loss diverges is caught by the learner,
    `max_nonfinite_steps`)."""
    momentum: float = 0.9
    """SGD momentum (ignored by AdamW), in [0, 1]."""
    weight_decay: float = 1e-4
    """L2 / decoupled weight decay; >= 0."""
    schedule: str = "cosine"
    """`constant`, `cosine` (to `lr * final_lr_fraction` at `total_steps`) or `step` (x0.1 at 50% and 75%)."""
    warmup_steps: int = 100
    """Linear warm-up steps from 0 to `lr`; >= 0."""
    total_steps: int = 6000
    """Length of the schedule (steps beyond it keep the final rate); >= 0."""
    final_lr_fraction: float = 0.1
    """Cosine floor as a fraction of `lr`, in [0, 1]."""
    value_weight: float = 1.0
    """Weight of the value loss in the total; >= 0."""
    survival_weight: float = 1.0
    """Weight of the survival loss in the total (only for a network with `NetworkConfig.survival_head`); >= 0."""
    grad_clip: float = 5.0
    """Gradient-norm clip (0 switches it off); >= 0."""
    max_nonfinite_steps: int = 20
    """A step whose loss or gradient norm is not finite (NaN or infinity) is skipped: no weight, optimizer
    state or batch-norm statistic changes, and ``loss/nonfinite_steps`` counts it. This many such steps in a
    row stop the run with LearnerDivergedError (it has diverged: a learning rate too high is the usual
    cause); 1 to 1000000."""

    def __post_init__(self) -> None:
        check_choice(self, "train.learner", LearnerConfigError, optimizer=OPTIMIZERS, schedule=SCHEDULES)
        if isinstance(self.lr, bool) or not isinstance(self.lr, (int, float)) or not 0 < self.lr < math.inf:
            raise LearnerConfigError(f"train.learner.lr={shown(self.lr)}: the learning rate must be > 0 and finite")
        check_range(
            self,
            "train.learner",
            LearnerConfigError,
            momentum=(0, 1),
            weight_decay=(0, None),
            warmup_steps=(0, None),
            total_steps=(0, None),
            final_lr_fraction=(0, 1),
            value_weight=(0, None),
            survival_weight=(0, None),
            grad_clip=(0, None),
            max_nonfinite_steps=(1, 1_000_000),
        )


@dataclass(frozen=True)
class LossParts:
    """The loss of one batch in its parts (`alphazero_loss`), each a mean over the batch."""

    policy: float
    value: float
    total: float
    """The loss trained on: policy + value_weight x value (+ survival_weight x survival)."""
    policy_entropy: float
    """Entropy of the network's policy over the legal actions (not a loss term)."""
    survival: float | None = None
    """None for a network without the survival head."""

    @classmethod
    def of(cls, parts: dict[str, torch.Tensor]) -> LossParts:
        """From `alphazero_loss`'s parts."""
        survival = parts.get("survival")
        return cls(
            policy=float(parts["policy"]),
            value=float(parts["value"]),
            total=float(parts["total"]),
            policy_entropy=float(parts["policy_entropy"]),
            survival=None if survival is None else float(survival),
        )

    def tags(self) -> dict[str, float]:
        """The parts by TensorBoard tag: ``loss/policy``, ``loss/value``, ``loss/total``, ``loss/policy_entropy``
        and, with the survival head, ``loss/survival``."""
        out = {
            "loss/policy": self.policy,
            "loss/value": self.value,
            "loss/total": self.total,
            "loss/policy_entropy": self.policy_entropy,
        }
        if self.survival is not None:
            out["loss/survival"] = self.survival
        return out


@dataclass(frozen=True)
class StepMetrics(LossParts):
    """One learner step (`Learner.step`): the loss parts of its batch, the gradient norm and the learning rate.
    A step skipped for a non-finite loss or gradient (`nonfinite`) measured nothing: its loss parts and
    gradient norm are NaN."""

    grad_norm: float = 0.0
    """The gradient norm before clipping (0 with `LearnerConfig.grad_clip` off)."""
    lr: float = 0.0
    nonfinite: bool = False
    """The step was skipped: the model is left as it was."""

    @classmethod
    def skipped(cls, lr: float) -> StepMetrics:
        """A step skipped at learning rate `lr`."""
        nan = math.nan
        return cls(policy=nan, value=nan, total=nan, policy_entropy=nan, grad_norm=nan, lr=lr, nonfinite=True)

    def tags(self) -> dict[str, float]:
        """The step's figures by tag: the loss parts, ``loss/grad_norm``, ``loss/nonfinite_steps`` (0) and ``lr``;
        for a skipped step only ``loss/nonfinite_steps`` (1) and ``lr``."""
        if self.nonfinite:
            return {"loss/nonfinite_steps": 1.0, "lr": self.lr}
        return {**super().tags(), "loss/grad_norm": self.grad_norm, "loss/nonfinite_steps": 0.0, "lr": self.lr}


@dataclass(frozen=True)
class LearnMetrics:
    """Learner steps summed up (`Learner.learn`): the means of the steps taken, and how many were skipped."""

    steps: int = 0
    """Steps run, the skipped ones included."""
    nonfinite_steps: int = 0
    """Steps skipped for a non-finite loss or gradient."""
    policy: float | None = None
    """The loss parts and the gradient norm: means over the steps taken (None: no step was taken)."""
    value: float | None = None
    total: float | None = None
    policy_entropy: float | None = None
    grad_norm: float | None = None
    survival: float | None = None
    """Also None for a network without the survival head."""
    lr: float | None = None
    """The mean learning rate over all the steps run (None: none)."""

    @classmethod
    def of(cls, steps: Sequence[StepMetrics]) -> LearnMetrics:
        """The summary of `steps`."""
        taken = [m for m in steps if not m.nonfinite]

        def mean(name: str) -> float | None:
            values = [getattr(m, name) for m in taken if getattr(m, name) is not None]
            return float(np.mean(values)) if values else None

        parts = {f.name: mean(f.name) for f in fields(LossParts)}
        return cls(
            steps=len(steps),
            nonfinite_steps=len(steps) - len(taken),
            grad_norm=mean("grad_norm"),
            lr=float(np.mean([m.lr for m in steps])) if steps else None,
            **parts,
        )

    def tags(self) -> dict[str, float]:
        """The TensorBoard scalars of a learning phase: the means by `StepMetrics.tags`'s names, the learning
        rate as ``loss/lr``, ``loss/nonfinite_steps`` as a count; nothing for a phase of no steps."""
        if not self.steps:
            return {}
        out = {
            f"loss/{name}": value
            for name in ("policy", "value", "total", "policy_entropy", "grad_norm", "survival")
            if (value := getattr(self, name)) is not None
        }
        out["loss/nonfinite_steps"] = float(self.nonfinite_steps)
        out["loss/lr"] = float(self.lr) if self.lr is not None else math.nan
        return out


def _finite_flag(tensors: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Whether every entry of every floating-point tensor is finite, as a bool tensor on their device (one
    max-abs per tensor, then one check; no host sync)."""
    norms = [
        torch.linalg.vector_norm(t.detach(), ord=math.inf) for t in tensors if t.is_floating_point() and t.numel() > 0
    ]
    if not norms:
        return torch.ones((), dtype=torch.bool, device=device)
    return torch.isfinite(torch.stack(norms)).all()


_FIGURES = ("policy", "value", "total", "policy_entropy", "survival")
"""A step's figures in the order of `Learner._step`'s tensor (its gradient norm last; survival with the head only)."""


def host_tensors(batch: Batch, device: torch.device, *, survival: bool) -> tuple[torch.Tensor, ...]:
    """The batch as CPU tensors (obs, mask, policy, value, full search, trains value, and the survival targets
    when `survival`), in pinned memory when `device` is CUDA (so a non-blocking copy overlaps the device's work)."""
    arrays = [
        batch.obs,
        batch.mask,
        batch.policy,
        batch.value.astype(np.float32),
        batch.full_search,
        batch.trains_value,
    ]
    if survival:
        arrays.append(batch.survival.astype(np.float32))
    tensors = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)
    return tuple(t.pin_memory() for t in tensors) if device.type == "cuda" else tensors


DeviceBatch = tuple[tuple[torch.Tensor, ...], "torch.Tensor | None"]
"""A training batch on the device: (obs, mask, policy, value, full search, trains value), and the survival
targets or None."""


def on_device(host: tuple[torch.Tensor, ...], device: torch.device, *, survival: bool) -> DeviceBatch:
    """`host_tensors`'s batch copied to `device` (non-blocking: from pinned memory on CUDA it overlaps)."""
    moved = tuple(t.to(device, non_blocking=True) for t in host)
    return moved[:6], moved[6] if survival else None


def prefetched_batches(
    replay: ReplayBuffer, steps: int, batch_size: int, device: torch.device, *, survival: bool
) -> Generator[DeviceBatch, None, None]:
    """`steps` samples of `replay` on `device` (`DeviceBatch`), each drawn in a background thread while
    the one before trains.

    The samples are drawn one at a time in order, and exactly `steps` of them: the replay's generator
    ends where a loop of `replay.sample` calls would leave it."""
    if steps <= 0:
        return

    def draw(into: list[tuple[torch.Tensor, ...] | BaseException]) -> None:
        try:
            into.append(host_tensors(replay.sample(batch_size), device, survival=survival))
        except BaseException as e:  # raised in the caller's thread
            into.append(e)

    def drawing() -> tuple[threading.Thread, list[tuple[torch.Tensor, ...] | BaseException]]:
        into: list[tuple[torch.Tensor, ...] | BaseException] = []
        thread = threading.Thread(target=draw, args=(into,), name="replay-sample", daemon=True)
        thread.start()
        return thread, into

    nxt = drawing()
    for k in range(steps):
        thread, into = nxt
        thread.join()  # one draw at a time, in order: the next starts only once this one is done
        host = into[0]
        if isinstance(host, BaseException):
            raise host
        if k + 1 < steps:
            nxt = drawing()
        yield on_device(host, device, survival=survival)


def lr_at(step: int, cfg: LearnerConfig) -> float:
    """Learning rate for optimizer step `step` (0-based)."""
    if cfg.warmup_steps > 0 and step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    t = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.total_steps - cfg.warmup_steps))
    if cfg.schedule == "cosine":
        floor = cfg.final_lr_fraction
        return cfg.lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * t)))
    if cfg.schedule == "step":
        return cfg.lr * (0.01 if t >= 0.75 else 0.1 if t >= 0.5 else 1.0)
    return cfg.lr


def outcome_class(z: torch.Tensor) -> torch.Tensor:
    """Outcome [B] in {-1, 0, 1} (mover's view) -> WDL class [B]: 0 win, 1 draw, 2 loss."""
    return torch.where(z > 0.5, 0, torch.where(z < -0.5, 2, 1))


def alphazero_loss(
    model: nn.Module,
    obs: torch.Tensor,
    mask: torch.Tensor,
    policy: torch.Tensor,
    value: torch.Tensor,
    full_search: torch.Tensor,
    value_weight: float = 1.0,
    survival: torch.Tensor | None = None,
    survival_weight: float = 1.0,
    trains_value: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Total loss and its parts (detached) for one batch; see the module doc.

    `survival` [B, 16] (0/1 floats) trains the survival head of a model that has one (part
    ``survival``); it is ignored for a model without. `trains_value` [B] bool (default all True) marks the
    positions the value loss is averaged over."""
    survival_logits = None
    if survival is not None and isinstance(model, JungleNet) and model.config.survival_head:
        logits, v, survival_logits = model.forward_with_survival(obs)
    else:
        logits, v = model(obs)
    logits = mask_logits(logits.float(), mask)
    logp = F.log_softmax(logits, dim=-1)
    # Target is 0 on illegal actions, and masked log-probs are finite: 0 * finite = 0.
    ce = -(policy * logp).sum(-1)
    weight = full_search.float()
    policy_loss = (ce * weight).sum() / weight.sum().clamp_min(1.0)
    if v.dim() == 2:
        value_errors = F.cross_entropy(v.float(), outcome_class(value), reduction="none")
    else:
        value_errors = F.mse_loss(v.float(), value, reduction="none")
    if trains_value is None:
        value_loss = value_errors.mean()
    else:
        counted = trains_value.float()
        value_loss = (value_errors * counted).sum() / counted.sum().clamp_min(1.0)
    total = policy_loss + value_weight * value_loss
    survival_loss = None
    if survival_logits is not None and survival is not None:
        survival_loss = F.binary_cross_entropy_with_logits(survival_logits.float(), survival)
        total = total + survival_weight * survival_loss
    with torch.no_grad():
        p = logp.exp()
        entropy = -(p * logp).masked_fill(~mask, 0.0).sum(-1).mean()
    parts = {
        "policy": policy_loss.detach(),
        "value": value_loss.detach(),
        "total": total.detach(),
        "policy_entropy": entropy,
    }
    if survival_loss is not None:
        parts["survival"] = survival_loss.detach()
    return total, parts


class Learner:
    """Owns the optimizer; `step(batch)` trains `model` once and returns metrics.

    AMP (`amp=True`, see `device.autocast_dtype`): on CUDA bf16 autocast where
    supported, else fp16 autocast with a GradScaler; on a CPU with native bf16,
    bf16 autocast; otherwise float32. The weights and optimizer state stay float32.

    `compile=True`: the forward pass and loss (`alphazero_loss`) run through `torch.compile`, one graph for
    the training batch's shape (and one for `evaluate_loss`); the optimizer updates the weights in place,
    which compiles nothing again.
    """

    def __init__(
        self, model: nn.Module, config: LearnerConfig, *, device: torch.device, amp: bool = False, compile: bool = False
    ) -> None:
        self.model = model
        self._loss = torch.compile(alphazero_loss, dynamic=False) if compile else alphazero_loss
        self.config = config
        self.device = device
        self.step_count = 0
        decay: list[nn.Parameter] = []
        no_decay: list[nn.Parameter] = []
        for p in model.parameters():
            (no_decay if p.dim() <= 1 else decay).append(p)  # no decay on biases and norms
        groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        self.optimizer: torch.optim.Optimizer
        if config.optimizer == "sgd":
            self.optimizer = torch.optim.SGD(groups, lr=config.lr, momentum=config.momentum, nesterov=True)
        else:
            self.optimizer = torch.optim.AdamW(groups, lr=config.lr)
        self.amp_dtype = autocast_dtype(device, amp)
        cuda_defaults(device)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp_dtype == torch.float16)
        self.nonfinite_in_a_row = 0
        """Skipped steps (non-finite loss or gradient norm) since the last step taken."""
        self._params = [p for p in model.parameters()]
        self._buffers = [b for b in model.buffers()]
        self._weights_finite: tuple[torch.Tensor, float] | None = None
        """The last step's check that it left the weights finite (a device bool, its learning rate), not read yet."""

    def _tensors(self, batch: Batch) -> DeviceBatch:
        """The batch on the device (`DeviceBatch`)."""
        survival = self._trains_survival()
        return on_device(host_tensors(batch, self.device, survival=survival), self.device, survival=survival)

    def _trains_survival(self) -> bool:
        """Whether the model has the survival head (otherwise its targets are not copied to the device)."""
        return isinstance(self.model, JungleNet) and self.model.config.survival_head

    def step(self, batch: Batch) -> StepMetrics:
        """One optimizer step on `batch`; its loss parts (the survival loss for a network with the survival
        head), gradient norm and learning rate.

        A non-finite loss or gradient norm skips the step (the model is left as it was) and returns
        `StepMetrics.skipped`; `LearnerConfig.max_nonfinite_steps` of them in a row, or a step that
        leaves a weight non-finite, raise LearnerDivergedError. (With fp16's grad scaler, non-finite
        gradients of a finite loss are the scaler's to skip, as usual.)"""
        lr = lr_at(self.step_count, self.config)
        figures = self._step(*self._tensors(batch))
        self._check_weights()
        return self._metrics([(lr, figures)])[0]

    def _step(self, tensors: Sequence[torch.Tensor], survival: torch.Tensor | None) -> torch.Tensor | None:
        """One optimizer step on a batch already on the device (`DeviceBatch`); the step's figures as one
        device tensor (`_FIGURES`, then the gradient norm), or None for a skipped step.

        One host sync: whether the loss and the gradient norm are finite, read together with whether the
        previous step left the weights finite (that check waits for this step's read, or `_check_weights`)."""
        lr = lr_at(self.step_count, self.config)
        for g in self.optimizer.param_groups:
            g["lr"] = lr
        self.model.train()
        statistics = [b.detach().clone() for b in self._buffers]  # the forward pass updates batch-norm statistics
        ctx = torch.autocast(self.device.type, dtype=self.amp_dtype) if self.amp_dtype else nullcontext()
        with ctx:
            total, parts = self._batch_loss(tensors, survival)
        self.optimizer.zero_grad(set_to_none=True)
        loss_finite = torch.isfinite(total.detach())
        if self.scaler.is_enabled() and not self._read_flags(loss_finite)[0]:
            # fp16: a non-finite loss must not reach the scaler (its unscale_ would then wait for an update)
            flags = [False, True]
        else:
            grad_norm = torch.zeros((), device=self.device)
            grads_finite = torch.ones((), dtype=torch.bool, device=self.device)
            self.scaler.scale(total).backward()
            if self.config.grad_clip > 0:
                self.scaler.unscale_(self.optimizer)
                grad_norm = torch.nn.utils.clip_grad_norm_(self._params, self.config.grad_clip)
                grads_finite = torch.isfinite(grad_norm)
            elif not self.scaler.is_enabled():
                grads_finite = _finite_flag([p.grad for p in self._params if p.grad is not None], self.device)
            flags = self._read_flags(loss_finite, grads_finite)
        bad = "loss" if not flags[0] else "" if self.scaler.is_enabled() or flags[1] else "gradient"
        if bad == "gradient" and self.config.grad_clip > 0:
            bad = "gradient norm"
        if bad:
            self.optimizer.zero_grad(set_to_none=True)
            for b, saved in zip(self._buffers, statistics):
                b.copy_(saved)
            self.nonfinite_in_a_row += 1
            if self.nonfinite_in_a_row >= self.config.max_nonfinite_steps:
                raise LearnerDivergedError(
                    f"{self.nonfinite_in_a_row} learner steps in a row had a non-finite {bad} and were skipped "
                    f"(learning rate {lr:.3g}); the training has diverged: the learning rate "
                    f"(train.learner.lr={self.config.lr:g}) is the likely cause"
                )
            return None
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self._weights_finite = (_finite_flag([*self._params, *self._buffers], self.device), lr)
        self.nonfinite_in_a_row = 0
        self.step_count += 1
        names = [parts[name] for name in _FIGURES if name in parts]
        return torch.stack([*(t.float() for t in names), grad_norm.detach().float()])

    def _read_flags(self, *flags: torch.Tensor) -> list[bool]:
        """`flags` (device bools) read in one host sync, with the weight check of the step before (raised here)."""
        pending = self._weights_finite
        self._weights_finite = None
        read = torch.stack([*flags, *([pending[0]] if pending else [])]).tolist()
        if pending and not read[-1]:
            self._diverged(pending[1])
        return [bool(f) for f in read[: len(flags)]]

    def _check_weights(self) -> None:
        """Read the last step's weight check now (LearnerDivergedError when the step left a weight non-finite)."""
        if self._weights_finite is not None:
            self._read_flags()

    def _diverged(self, lr: float) -> None:
        raise LearnerDivergedError(
            f"a learner step at learning rate {lr:.3g} left weights or batch-norm statistics that are not finite; "
            "the training has diverged: the learning rate "
            f"(train.learner.lr={self.config.lr:g}) is the likely cause"
        )

    def _metrics(self, steps: list[tuple[float, torch.Tensor | None]]) -> list[StepMetrics]:
        """The steps' figures (learning rate, `_step`'s tensor or None for a skipped step) read in one host sync."""
        taken = [f for _, f in steps if f is not None]
        rows = iter(torch.stack(taken).tolist() if taken else [])
        out = []
        for lr, figures in steps:
            if figures is None:
                out.append(StepMetrics.skipped(lr))
                continue
            row = next(rows)
            out.append(StepMetrics(**dict(zip(_FIGURES, row[:-1])), grad_norm=row[-1], lr=lr))
        return out

    def learn(self, replay: ReplayBuffer, steps: int, batch_size: int, progress: bool = False) -> LearnMetrics:
        """`steps` steps on samples of `batch_size` positions of `replay`, summed up (a progress bar with
        `progress`).

        The sample of step k + 1 is drawn and copied (from pinned memory on CUDA) while step k runs, in
        the order of a loop drawing one sample a step: the batches, and so the weights, are the same. One
        host sync a step (`_step`); the figures stay on the device until the phase ends."""
        figures: list[tuple[float, torch.Tensor | None]] = []
        batches = prefetched_batches(replay, steps, batch_size, self.device, survival=self._trains_survival())
        with closing(batches):
            for tensors, survival in tqdm(
                batches, total=steps, desc="learn", unit="step", disable=not progress, leave=False
            ):
                lr = lr_at(self.step_count, self.config)
                figures.append((lr, self._step(tensors, survival)))
        self._check_weights()
        return LearnMetrics.of(self._metrics(figures))

    @torch.no_grad()
    def evaluate_loss(self, batch: Batch) -> LossParts:
        """The loss parts on `batch` without training (eval mode)."""
        self.model.eval()
        _, parts = self._batch_loss(*self._tensors(batch))
        return LossParts.of(parts)

    def _batch_loss(
        self, tensors: Sequence[torch.Tensor], survival: torch.Tensor | None
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """`alphazero_loss` of the model on a batch on the device (`DeviceBatch`), with the config's weights."""
        obs, mask, policy, value, full, trains_value = tensors
        return self._loss(
            self.model,
            obs,
            mask,
            policy,
            value,
            full,
            self.config.value_weight,
            survival,
            self.config.survival_weight,
            trains_value,
        )

    def state_dict(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "step_count": self.step_count,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore `state_dict`; ValueError when the optimizer state does not fit the model's parameters (torch
        itself would only fail at the next step)."""
        self.optimizer.load_state_dict(state["optimizer"])
        for param, entries in self.optimizer.state.items():
            for key, value in entries.items():
                if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != param.shape:
                    raise ValueError(
                        f"optimizer state {key!r} of shape {list(value.shape)} does not fit a parameter "
                        f"of shape {list(param.shape)}"
                    )
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        step_count = state["step_count"]
        if isinstance(step_count, bool) or not isinstance(step_count, int) or step_count < 0:
            raise ValueError(f"step_count={step_count!r} is not an integer >= 0")
        self.step_count = step_count

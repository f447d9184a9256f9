"""One training loop for every network the toolkit trains.

A network's training is a Job (the model kinds' in vc/training/trainer.py, the mel -> linear
network's, the post-filter's, the phone classifier's): it draws its batches, turns one into its
losses, evaluates, and says what a checkpoint of it holds. As ESPnet2's models return (loss, stats,
weight) and its trainer does the rest, a job yields one Update per optimizer it steps, in order (an
adversarial job yields the discriminator's before the generator's, whose loss reads the updated
discriminator), and the loop does everything else, so every network gets it:

- the budget: a step limit, a time limit, or both (vc/training/budget.py), and the fraction of it
  spent, which a job's learning-rate schedule may read; a stop file ends training early as the budget
  would (``vc train --stop-file``);
- mixed precision on CUDA (autocast around the job's forward passes, one gradient scaler);
- the update: zero the gradients, backward, unscale, clip (each job names its norm or none), skip an
  update whose loss or gradient is not finite (vc/training/nonfinite.py; all ranks agree), step;
- evaluation every ``eval_every`` steps and at the end, the lowest score kept (best.pt, or the best
  state in memory for a network saved once at the end), an evaluation that is not finite an error;
- checkpoints (stepNNNNNNN.pt, best.pt, the oldest pruned) and ``--resume`` from the newest readable one;
- DDP's agreement: every rank leaves at the same step and skips the same updates;
- the progress bar and TensorBoard's training scalars (``train/loss/...``, ``train/opt/...``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import distributed as dist

from vc.artifacts.checkpoint import (
    FORMAT,
    load_checkpoint,
    prune_checkpoints,
    rng_state,
    save_checkpoint,
    set_rng_state,
    step_checkpoints,
)
from vc.errors import CheckpointError, TrainingError
from vc.progress import progress as show_progress
from vc.training.budget import Budget
from vc.training.nonfinite import NonFiniteGuard, all_finite

log = logging.getLogger(__name__)


@dataclass
class Update:
    """One optimizer's step: the loss it lowers, which of the job's optimizers, the scalars to log."""

    loss: torch.Tensor
    optimizer: str = "model"
    stats: dict[str, torch.Tensor | float] = field(default_factory=dict)


class Job:
    """A network's training as the loop drives it; subclasses fill in what their network needs.

    ``optimizers``: name -> optimizer (the first one's state is a checkpoint's "optimizer");
    ``grad_clip``: name -> the gradient norm clipped to (None: not clipped, only checked).
    """

    name = "training"  # the progress bar's and the non-finite guard's name
    select_by = (
        "loss"  # what evaluate() returns (checkpoints remember it; a resumed run compares like with like)
    )
    score_label = "valid loss"  # the same, as the log says it
    select_best = True  # the lowest-scoring state is the result (else the last)
    restore_best = False  # end the run with the networks in that state (else best.pt holds it)
    marker = FORMAT  # what its checkpoints are (vc/artifacts/checkpoint.py)
    shown: tuple[tuple[str, str], ...] = (("loss", "loss/total"),)  # progress-bar label, stats key
    optimizers: dict[str, torch.optim.Optimizer]
    grad_clip: dict[str, float | None]
    writer = None  # TensorBoard (vc/training/monitor.py's EventWriter) on the main rank, or None

    def batches(self, step: int) -> Iterable[Any]:
        """Training batches from step ``step`` on (as many as the budget takes)."""
        raise NotImplementedError

    def updates(self, batch: Any, step: int) -> Iterator[Update]:
        """The step's updates, in order; the loop applies each before asking for the next."""
        raise NotImplementedError

    def learning_rate_factor(self, step: int, spent: float) -> float:
        """The learning rate of update ``step`` over the optimizers' own; ``spent``: the budget's spent
        fraction when the previous update began."""
        return 1.0

    def step_stats(self, step: int) -> dict[str, float]:
        """Scalars beside the losses (e.g. a schedule's weight), logged with them."""
        return {}

    def evaluate(self, step: int) -> float:
        """The score checkpoints are ranked by (lower wins); the job logs its own views."""
        raise NotImplementedError

    def done(self) -> bool:
        """Whether the job has reached its own end before the budget's (asked after each evaluation,
        on the main rank)."""
        return False

    def networks(self) -> dict[str, torch.nn.Module]:
        """The trained networks by name; the first is a checkpoint's "model"."""
        raise NotImplementedError

    def payload(self) -> dict[str, Any]:
        """What a checkpoint holds beside the networks and the loop's state (config, statistics, ...)."""
        return {}

    def advice(self) -> str:
        """What to change when training diverges (ends the error that stops it)."""
        return ""

    def restore(self, payload: dict[str, Any]) -> None:
        """Take back what payload() saved, on --resume."""


class Loop:
    """Runs a Job until its budget is spent. ``checkpoints``: the folder of stepNNNNNNN.pt and best.pt
    (None: none written, no resume)."""

    def __init__(
        self,
        job: Job,
        *,
        max_steps: int = 0,
        max_minutes: float = 0.0,
        eval_every: int = 0,
        log_every: int = 10,
        evaluate_first: bool = False,
        checkpoints: Path | None = None,
        keep_checkpoints: int = 0,
        max_nonfinite_steps: int | None = None,
        amp: bool = False,
        device: torch.device | None = None,
        rank: int = 0,
        world_size: int = 1,
        progress: bool = True,
        started: float | None = None,
        stop_file: Path | None = None,
    ):
        self.job = job
        # Once this file exists training ends at the next step, as a spent budget ends it (the recipe's
        # side lane: the attention model trains on while the foreground does not need its core).
        self.stop_file = Path(stop_file) if stop_file is not None else None
        self.max_steps, self.max_minutes = max_steps, max_minutes
        self.eval_every, self.log_every = eval_every, log_every
        self.evaluate_first = evaluate_first
        self.checkpoints, self.keep = checkpoints, keep_checkpoints
        self.device = device or torch.device("cpu")
        for name, network in job.networks().items():  # a network left elsewhere would train there unnoticed
            where = next(network.parameters()).device
            if where.type != self.device.type or self.device.index not in (None, where.index):
                raise TrainingError(
                    f"{job.name}: network '{name}' is on {where}, the loop runs on {self.device}"
                )
        self.rank, self.world_size = rank, world_size
        self.is_main = rank == 0
        self.progress = progress
        self.use_amp = amp and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.spent = 0.0  # the budget's spent fraction at the last check
        self.step = 0
        for optimizer in job.optimizers.values():  # each group's own rate, scaled by the job's schedule
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        self._set_learning_rates()
        limit = {} if max_nonfinite_steps is None else {"limit": max_nonfinite_steps}
        self.guard = NonFiniteGuard(what=job.name, **limit)
        self.best_score = math.inf
        self.best_state: dict[str, dict[str, torch.Tensor]] | None = None
        self.elapsed_before = 0.0
        # The time budget counts from here unless the caller began earlier (feature extraction).
        self.started = time.monotonic() if started is None else started

    # ------------------------------------------------------------ the loop
    def run(self) -> int:
        """Train until the budget is spent; returns the step reached. The networks end in their best
        state (the job's restore_best) or their last."""
        self.started -= self.elapsed_before  # time spent before a resume counts against the limit
        bar = show_progress(
            # With a time limit the step count is open-ended: the rate, not a bar to max_steps.
            total=None if self.max_minutes > 0 or self.max_steps <= 0 else self.max_steps,
            initial=self.step,
            disable=not (self.progress and self.is_main),
            desc=self.job.name,
            unit="step",
            dynamic_ncols=True,
        )
        if self.evaluate_first and self.step == 0:
            self._evaluate_and_keep()
        evaluated_at = self.step
        last = time.monotonic()
        ended = "the step limit"  # what ended training, said in the log with the steps it reached
        for batch in self.job.batches(self.step):
            if self._should_stop():
                break
            skipped_before = self.guard.skipped
            stats = self.train_step(batch)
            now = time.monotonic()
            stats["time/seconds_per_step"], last = now - last, now
            bar.update(1)
            shown = {label: f"{stats[key]:.3f}" for label, key in self.job.shown if key in stats}
            bar.set_postfix(**shown, s_step=f"{stats['time/seconds_per_step']:.2f}")
            logged = self.step % self.log_every == 0 or self.step == 1 or self.guard.skipped > skipped_before
            if self.is_main and logged and self.job.writer is not None:  # a skipped update shows at its step
                for name, value in stats.items():
                    self.job.writer.add_scalar(f"train/{name}", value, self.step)
            if self.eval_every and self.step % self.eval_every == 0:
                self._evaluate_and_keep()
                evaluated_at = self.step
                if self._job_done():
                    ended = "its own end"
                    break
        bar.close()
        minutes = (time.monotonic() - self.started) / 60.0
        if ended != "its own end" and self.max_minutes > 0 and minutes >= self.max_minutes:
            ended = f"the time limit of {self.max_minutes:.1f} min"
        elif ended != "its own end" and self._stop_asked():
            ended = f"the stop file {self.stop_file}"
        if self.is_main:
            log.info("%s: %d steps in %.1f min, ended by %s", self.job.name, self.step, minutes, ended)
        if evaluated_at != self.step or (self.step == 0 and not self.evaluate_first):
            self._evaluate_and_keep()
        if self.best_state is not None:
            for name, network in self.job.networks().items():
                network.load_state_dict(self.best_state[name])
        if self.world_size > 1:
            dist.barrier()
        return self.step

    def train_step(self, batch) -> dict[str, float]:
        """One step: each of the job's updates applied in turn; returns the step's scalars."""
        stats: dict[str, float] = {}
        finite_step = True
        updates = self.job.updates(batch, self.step)
        while True:
            with torch.autocast(self.device.type, enabled=self.use_amp):
                update = next(updates, None)
            if update is None:
                break
            optimizer = self.job.optimizers[update.optimizer]
            optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(update.loss).backward()
            self.scaler.unscale_(optimizer)
            parameters = [p for group in optimizer.param_groups for p in group["params"]]
            clip = self.job.grad_clip.get(update.optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(parameters, math.inf if clip is None else clip)
            finite = self._finite_on_every_rank(update.loss, grad_norm)
            if finite:  # a non-finite update changes no weight (under AMP the scaler also lowers its scale)
                self.scaler.step(optimizer)
            finite_step = finite_step and finite
            prefix = (
                "opt/" if update.optimizer == next(iter(self.job.optimizers)) else f"opt/{update.optimizer}/"
            )
            stats[prefix + "grad_norm"] = float(grad_norm)
            stats.update({f"loss/{name}": _number(value) for name, value in update.stats.items()})
        self.scaler.update()
        self.step += 1
        self._set_learning_rates()
        self.guard.skip(self.step, finite_step, self._divergence_advice)
        first = next(iter(self.job.optimizers.values()))
        stats.update({"opt/lr": first.param_groups[0]["lr"], "opt/skipped_updates": self.guard.skipped})
        stats.update(self.job.step_stats(self.step))
        return stats

    def _set_learning_rates(self) -> None:
        """The rates of update self.step: each group's initial rate x the job's factor."""
        factor = self.job.learning_rate_factor(self.step, self.spent)
        for optimizer in self.job.optimizers.values():
            for group in optimizer.param_groups:
                group["lr"] = group["initial_lr"] * factor

    def _finite_on_every_rank(self, loss: torch.Tensor, grad_norm: torch.Tensor) -> bool:
        """Whether this update's loss and gradient are finite on every rank (all skip it, or none)."""
        finite = all_finite(loss, grad_norm)
        if self.world_size > 1:
            shared = torch.tensor([float(finite)], device=self.device)
            dist.all_reduce(shared, op=dist.ReduceOp.MIN)
            finite = bool(shared.item())
        return finite

    def _should_stop(self) -> bool:
        """Whether the step or time budget is spent, or the stop file is there; also updates self.spent
        (the budget's fraction: a stop file leaves the learning-rate schedule where it was)."""
        seconds = 60 * self.max_minutes if self.max_minutes > 0 else math.inf
        spent = Budget(self.max_steps, seconds, self.started).spent(self.step)
        self.spent = min(spent, 1.0)
        stop = float(spent >= 1.0 or (self.is_main and self._stop_asked()))
        if self.world_size > 1:  # every rank must leave the loop at the same step, at the same rate
            shared = torch.tensor([self.spent, stop], dtype=torch.float64, device=self.device)
            dist.all_reduce(shared, op=dist.ReduceOp.MAX)
            self.spent, stop = shared.tolist()
        return stop > 0

    def _stop_asked(self) -> bool:
        return self.stop_file is not None and self.stop_file.exists()

    def _job_done(self) -> bool:
        """The main rank's job.done(), on every rank (all leave the loop at the same step)."""
        done = self.is_main and self.job.done()
        if self.world_size > 1:
            shared = torch.tensor([float(done)], device=self.device)
            dist.all_reduce(shared, op=dist.ReduceOp.MAX)
            done = bool(shared.item())
        return done

    def _divergence_advice(self) -> str:
        """Where a diverged run stands and what to change, for the error that stops it."""
        advice = self.job.advice()
        if self.checkpoints is None:
            return advice
        saved = step_checkpoints(self.checkpoints)
        if self.job.marker != FORMAT:  # a companion network's training state
            return f"the last good state is {saved[-1]}; {advice}" if saved else advice
        last = f"the last good checkpoint is {saved[-1]}" if saved else "no checkpoint was written"
        amp = " or train.amp=false (fp16 overflow)" if self.use_amp else ""
        restart = f"; start again from it with train.init_from={saved[-1]}" if saved else ""
        return f"{last}; {advice}{amp}{restart}"

    # --------------------------------------------------- evaluation, saving
    def _evaluate_and_keep(self) -> None:
        if self.is_main:
            score = self.job.evaluate(self.step)
            if not math.isfinite(score):  # the weights are finite but no longer a model: nothing is kept
                raise TrainingError(
                    f"{self.job.name} diverged: the dev score at step {self.step} is {score}; "
                    f"{self._divergence_advice()}"
                )
            improved = score < self.best_score
            if improved:
                self.best_score = score
            if self.checkpoints is not None:
                self._save(improved)
                log.info(
                    "step %d: %s %.4f%s",
                    self.step,
                    self.job.score_label,
                    score,
                    " (best)" if improved else "",
                )
            if improved and self.job.select_best and self.job.restore_best:
                self.best_state = {
                    name: {key: value.clone() for key, value in network.state_dict().items()}
                    for name, network in self.job.networks().items()
                }
        if self.world_size > 1:
            dist.barrier()

    def _payload(self) -> dict[str, Any]:
        networks = self.job.networks()
        first, *others = networks
        optimizer, *other_optimizers = self.job.optimizers
        payload = {
            "step": self.step,
            "model": networks[first].state_dict(),
            **{f"model_{name}": networks[name].state_dict() for name in others},
            "optimizer": self.job.optimizers[optimizer].state_dict(),
            **{f"optimizer_{name}": self.job.optimizers[name].state_dict() for name in other_optimizers},
            "scaler": self.scaler.state_dict(),
            "rng": rng_state(),
            **self.job.payload(),
            "best_score": {"select_by": self.job.select_by, "value": self.best_score},
            "elapsed_seconds": time.monotonic() - self.started,
        }
        return payload

    def _save(self, improved: bool) -> None:
        """Save this step; it becomes best.pt when its score is the lowest so far."""
        folder = self.checkpoints
        payload = self._payload()
        save_checkpoint(folder / f"step{self.step:07d}.pt", payload, self.job.marker)
        if improved and self.job.select_best:
            save_checkpoint(folder / "best.pt", payload, self.job.marker)
        prune_checkpoints(folder, self.keep)

    # --------------------------------------------------------------- resume
    def _newest_readable_checkpoint(self) -> tuple[Path, dict]:
        """The newest step checkpoint that loads; damaged newer ones are skipped and kept.

        A damaged file (a disk that filled, a copy cut short) is renamed to
        NAME.damaged, not deleted: the next save would otherwise overwrite it, and
        pruning would delete it, before anyone could look at it.
        """
        folder = self.checkpoints
        found = step_checkpoints(folder)
        if not found:
            raise CheckpointError(f"--resume: no stepNNNNNNN.pt checkpoint in {folder}")
        for path in reversed(found):
            try:
                # On the CPU: the RNG states must stay there; load_state_dict copies weights and optimizer
                # state onto the networks' device.
                return path, load_checkpoint(path, map_location="cpu", marker=self.job.marker)
            except CheckpointError as exc:
                kept = path.with_name(path.name + ".damaged")
                if self.is_main and path.exists():
                    path.rename(kept)
                log.warning("--resume: skipping damaged %s (kept as %s): %s", path.name, kept.name, exc)
        raise CheckpointError(f"--resume: every checkpoint in {folder} is damaged (kept as *.pt.damaged)")

    def resume(self) -> dict[str, Any]:
        """Continue from the newest readable checkpoint in the folder; returns its payload."""
        path, payload = self._newest_readable_checkpoint()
        networks = self.job.networks()
        first, *others = networks
        optimizer, *other_optimizers = self.job.optimizers
        try:
            networks[first].load_state_dict(payload["model"])
            for name in others:
                networks[name].load_state_dict(payload[f"model_{name}"])
            self.job.optimizers[optimizer].load_state_dict(payload["optimizer"])
            for name in other_optimizers:
                self.job.optimizers[name].load_state_dict(payload[f"optimizer_{name}"])
            self.scaler.load_state_dict(payload["scaler"])
        except (RuntimeError, KeyError, ValueError) as exc:
            raise CheckpointError(f"{path} does not fit this config: {str(exc).splitlines()[0]}") from None
        self.step = payload["step"]
        self.best_score = resumed_best_score(payload, self.job.select_by)
        self.elapsed_before = payload.get("elapsed_seconds", 0.0)
        set_rng_state(payload["rng"])
        self.job.restore(payload)
        best = self.checkpoints / "best.pt"
        if self.job.restore_best and best.is_file():  # the best state so far, to end in if none beats it
            kept = load_checkpoint(best, map_location="cpu", marker=self.job.marker)
            self.best_state = {
                name: kept["model" if k == 0 else f"model_{name}"] for k, name in enumerate(networks)
            }
        log.info("resumed from %s at step %d", path, self.step)
        return payload


def refuse_earlier_run(folder: Path) -> None:
    """A new run (not --resume) must not write into a folder of an earlier run's checkpoints: its step
    files and best.pt would replace the earlier ones, and pruning keeps the highest step numbers."""
    found = step_checkpoints(folder) if folder.is_dir() else []
    if found:
        raise CheckpointError(
            f"{folder} holds an earlier run's checkpoints ({found[-1].name}): --resume continues it; "
            "another output folder (or deleting them) starts a new run"
        )


def training_state_folder(out: str | Path) -> Path:
    """Where a network saved once at ``out`` keeps its training state while it trains (OUT_training/)."""
    out = Path(out)
    return out.with_name(f"{out.stem}_training")


def discard_training_state(folder: Path) -> None:
    """The training state of a network now saved: its step files and best.pt, and the folder if empty."""
    for path in [*step_checkpoints(folder), folder / "best.pt"]:
        path.unlink(missing_ok=True)
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


def _number(value: torch.Tensor | float) -> float:
    return value.item() if torch.is_tensor(value) else float(value)


def resumed_best_score(payload: dict, select_by: str) -> float:
    """The best score a resumed run has to beat: inf when the checkpoint ranked by another rule.

    Checkpoints written before train.select_by existed hold "best_valid_loss".
    """
    best = payload.get("best_score") or {
        "select_by": "loss",
        "value": payload.get("best_valid_loss", math.inf),
    }
    return best["value"] if best["select_by"] == select_by else math.inf

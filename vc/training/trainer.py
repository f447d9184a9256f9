"""Training: steps, evaluation, checkpoints, resume, DDP, mixed precision.

Launch one process with ``vc train`` or several with ``torchrun --nproc_per_node
N -m vc.cli train ...``; torch.distributed uses gloo on CPU and nccl on CUDA.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import time
from pathlib import Path

import torch
from torch import distributed as dist

from vc.artifacts.checkpoint import (
    load_checkpoint,
    prune_checkpoints,
    rng_state,
    save_checkpoint,
    set_rng_state,
    step_checkpoints,
)
from vc.artifacts.durations import check_durations, load_durations
from vc.audio.voice_warp import VoiceCodebook
from vc.config import Config, dump_config
from vc.errors import CheckpointError, DataError, TrainingError, VcError
from vc.fileio import atomic_write_text
from vc.kinds import get_kind
from vc.progress import progress
from vc.training.augment import SourceAugment
from vc.training.budget import Budget
from vc.training.data import (
    BucketBatchSampler,
    ParallelDataset,
    collate,
    feature_cache_dir,
    load_features,
    require_lists,
    speaker_list,
    speaker_stats,
)
from vc.training.monitor import Monitor
from vc.training.nonfinite import NonFiniteGuard, all_finite
from vc.training.phonetic import load_frame_labels, phone_critic

log = logging.getLogger(__name__)
# The progress bar's losses: (label, loss name), those the model kind has.
POSTFIX = (("loss", "total"), ("stop", "stop"), ("ga", "guided_attention"), ("dur", "duration"))


def learning_rate_factor(step: int, warmup_steps: int, decay: str, budget_spent: float = 0.0) -> float:
    """Linear warmup, then 1/sqrt decay (Noam), constant, or linear to zero at the end of the budget.

    budget_spent is the spent fraction of the budget (steps or minutes, whichever ends training
    first); only "linear" reads it.
    """
    step = step + 1
    warmup = max(1, warmup_steps)
    if step <= warmup:
        return step / warmup
    if decay == "noam":
        return math.sqrt(warmup / step)
    if decay == "linear":
        return max(0.0, 1.0 - budget_spent)
    return 1.0


def setup_distributed() -> tuple[int, int, torch.device]:
    """(rank, world size, device) from torchrun's environment; a single process otherwise."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{local_rank}" if cuda else "cpu")
    if world_size > 1 and not cuda and "OMP_NUM_THREADS" not in os.environ:
        # Processes on one CPU must split its cores: oversubscribed OpenMP threads
        # spin against each other and every small op slows down many times.
        local_processes = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_processes))
    if world_size > 1 and not dist.is_initialized():
        if cuda:
            torch.cuda.set_device(device)
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    return (dist.get_rank() if world_size > 1 else 0), world_size, device


class Trainer:
    def __init__(self, config: Config, out_dir: str | Path, resume: bool = False, progress: bool = True):
        self.config = config
        self.out_dir = Path(out_dir)
        self.progress = progress
        self.rank, self.world_size, self.device = setup_distributed()
        self.is_main = self.rank == 0
        self.kind = get_kind(config.model.kind)
        self.kind.check(config)
        # Ranks draw different dropout masks; DDP copies rank 0's initial weights to all.
        torch.manual_seed(config.train.seed + self.rank)
        self._load_data()
        self.model = self.kind.build(config.audio.n_mels, config.model).to(self.device)
        self.kind.initialise(self.model, self.durations)
        if config.train.init_from and not resume:
            self._init_weights(config.train.init_from)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=config.train.learning_rate, weight_decay=config.train.weight_decay
        )
        t = config.train
        self.budget_spent = 0.0  # fraction of the step or time budget, for decay "linear"
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            lambda step: learning_rate_factor(step, t.warmup_steps, t.decay, self.budget_spent),
        )
        self.use_amp = t.amp and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.step = 0
        self.guard = NonFiniteGuard(t.max_nonfinite_steps)
        self.best_score = math.inf  # lowest train.select_by score so far
        self.elapsed_before = 0.0
        if resume:
            self._resume()
        self.ddp = (
            torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device] if self.device.type == "cuda" else None
            )
            if self.world_size > 1
            else None
        )
        self.monitor = Monitor(config, self.out_dir, self.device, self.tgt_stats) if self.is_main else None

    # ----------------------------------------------------------------- data
    def _load_data(self) -> None:
        # The main process computes the feature caches and statistics first; the
        # other ranks wait, then read what it wrote.
        if self.is_main:
            train, dev = self._features_and_stats(self.progress)
        if self.world_size > 1:
            dist.barrier()
        if not self.is_main:
            train, dev = self._features_and_stats(progress=False)
        self.durations = self._durations(train, dev)
        # The phonetic loss's labels: the output frames' (the kind's side) and the target's (its critic's).
        labels = self._phone_labels({**train, **dev})
        phones = labels[self.kind.phonetic_labels] if labels else None
        self.train_set = ParallelDataset(train, self.src_stats, self.tgt_stats, self.durations, phones)
        self.dev_set = ParallelDataset(dev, self.src_stats, self.tgt_stats, self.durations, phones)
        self.loss_extras = {"critic": self._phone_critic(labels["target"])} if labels else {}
        augment = self.config.augment
        self.augment = (
            SourceAugment(augment, self.config.audio, self.src_stats) if augment.probability > 0 else None
        )

    def _durations(self, train, dev) -> dict[str, torch.Tensor] | None:
        """The durations a kind trains on (data.durations), checked against the features; else None."""
        if not self.kind.needs_durations:
            return None
        if not self.config.data.durations:
            raise DataError(
                f"model.kind {self.kind.name} needs data.durations (the file vc durations writes)"
            )
        factor = self.config.model.encoder_reduction_factor
        durations = load_durations(self.config.data.durations, factor)
        check_durations(durations, {**train, **dev}, factor)
        return durations

    def _phone_labels(self, features) -> dict[str, dict[str, torch.Tensor]] | None:
        """Both sides' frame labels of data.phones (load_frame_labels) when train.phonetic_weight > 0."""
        if self.config.train.phonetic_weight <= 0:
            return None
        audio = self.config.audio
        return load_frame_labels(self.config.data.phones, features, audio.hop_length / audio.sample_rate)

    def _phone_critic(self, target_labels: dict[str, torch.Tensor]):
        """The frozen phone classifier of the phonetic loss, trained on the datasets' normalised target
        frames (rank 0; the other ranks read the file it saved)."""
        pairs = {
            name: [
                (items[1], target_labels[utt]) for utt, items in zip(dataset.ids, dataset.items, strict=True)
            ]
            for name, dataset in (("train", self.train_set), ("dev", self.dev_set))
        }
        path = self.out_dir / "phone_classifier.pt"
        if self.is_main:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            critic = phone_critic(self.config, pairs["train"], pairs["dev"], path, self.device)
        if self.world_size > 1:
            dist.barrier()
        if not self.is_main:
            critic = phone_critic(self.config, [], [], path, self.device)
        return critic

    def _features_and_stats(self, progress: bool):
        audio, cache_dir = self.config.audio, feature_cache_dir(self.config, self.out_dir)
        train, dev = (load_features(path, audio, cache_dir, progress) for path in require_lists(self.config))
        # The source speaker's pairs: the training list's, or data.stats_list's when it holds other voices too.
        path = speaker_list(self.config)
        speaker = (
            train if path == self.config.data.train_list else load_features(path, audio, cache_dir, progress)
        )
        self.src_stats, self.tgt_stats = speaker_stats(self.config, self.out_dir, features=speaker)
        # What the source speaker's frames look like, for warping other voices at conversion.
        self.source_codebook = VoiceCodebook.fit(
            [speaker[key][0] for key in sorted(speaker)], audio, seed=self.config.train.seed
        )
        return train, dev

    def _loader(self) -> torch.utils.data.DataLoader:
        sampler = BucketBatchSampler(
            self.train_set.lengths(),
            self.config.data.batch_size,
            self.config.train.seed,
            start_step=self.step,
            rank=self.rank,
            world_size=self.world_size,
        )
        # A private generator: starting a DataLoader iterator draws a seed, which
        # must not come from the global RNG that a resumed run has just restored.
        generator = torch.Generator().manual_seed(self.config.train.seed + self.step)
        return torch.utils.data.DataLoader(
            self.train_set,
            batch_sampler=sampler,
            collate_fn=collate,
            num_workers=self.config.data.num_workers,
            generator=generator,
            pin_memory=self.device.type == "cuda",
        )

    # ------------------------------------------------------------ training
    def train_step(self, batch) -> dict[str, float]:
        t = self.config.train
        batch = batch.to(self.device)
        if self.augment is not None:  # training batches only: dev losses stay comparable across runs
            batch = dataclasses.replace(batch, src=self.augment(batch.src, batch.src_lens))
        model = self.ddp or self.model
        model.train()
        with torch.autocast(self.device.type, enabled=self.use_amp):
            losses = self.kind.losses(model, batch, self.config, self.step, **self.loss_extras)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(losses.total).backward()
        self.scaler.unscale_(self.optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.grad_clip)
        finite = self._finite_on_every_rank(losses.total, grad_norm)
        if finite:  # a non-finite step changes no weight (under AMP the scaler also lowers its scale)
            self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        self.step += 1
        self.guard.skip(self.step, finite, self._divergence_advice)
        stats = {
            f"loss/{name}": value.item() for name, value in losses._asdict().items() if value is not None
        }
        stats.update({"opt/grad_norm": float(grad_norm), "opt/lr": self.scheduler.get_last_lr()[0]})
        stats["opt/skipped_updates"] = self.guard.skipped
        stats.update(self.kind.step_stats(self.config, self.step))
        return stats

    def _finite_on_every_rank(self, loss: torch.Tensor, grad_norm: torch.Tensor) -> bool:
        """Whether this step's loss and gradient are finite on every rank (all skip the update, or none)."""
        finite = all_finite(loss, grad_norm)
        if self.world_size > 1:
            shared = torch.tensor([float(finite)], device=self.device)
            dist.all_reduce(shared, op=dist.ReduceOp.MIN)
            finite = bool(shared.item())
        return finite

    def _divergence_advice(self) -> str:
        """Where a diverged run stands and what to change, for the error that stops it."""
        saved = step_checkpoints(self.out_dir / "checkpoints")
        last = f"the last good checkpoint is {saved[-1]}" if saved else "no checkpoint was written"
        amp = " or train.amp=false (fp16 overflow)" if self.use_amp else ""
        restart = f"; start again from it with train.init_from={saved[-1]}" if saved else ""
        return f"{last}; lower train.learning_rate (now {self.config.train.learning_rate:g}){amp}{restart}"

    def _should_stop(self) -> bool:
        """Whether the step or time budget is spent; also updates self.budget_spent."""
        t = self.config.train
        seconds = 60 * t.max_minutes if t.max_minutes > 0 else math.inf
        spent = Budget(t.max_steps, seconds, self.started).spent(self.step)
        if self.world_size > 1:  # every rank must leave the loop at the same step, at the same rate
            shared = torch.tensor([spent], dtype=torch.float64, device=self.device)
            dist.all_reduce(shared, op=dist.ReduceOp.MAX)
            spent = shared.item()
        self.budget_spent = min(spent, 1.0)
        return spent >= 1.0

    def fit(self) -> Path | None:
        """Train until train.max_steps or train.max_minutes; returns the best checkpoint's path."""
        t = self.config.train
        # Time spent before a resume counts against train.max_minutes too.
        self.started = time.monotonic() - self.elapsed_before
        if self.is_main:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.out_dir / "config.yaml", dump_config(self.config))
            log.info("training on %s x %d from step %d", self.device, self.world_size, self.step)
        # With a time limit the step count is open-ended: show the rate, not a bar to max_steps.
        bar = progress(
            total=None if t.max_minutes > 0 else t.max_steps,
            initial=self.step,
            disable=not (self.progress and self.is_main),
            desc="training",
            unit="step",
            dynamic_ncols=True,
        )
        last = time.monotonic()
        for batch in self._loader():
            if self._should_stop():
                break
            skipped_before = self.guard.skipped
            stats = self.train_step(batch)
            now = time.monotonic()
            stats["time/seconds_per_step"], last = now - last, now
            bar.update(1)
            shown = {key: f"{stats['loss/' + name]:.3f}" for key, name in POSTFIX if "loss/" + name in stats}
            bar.set_postfix(**shown, s_step=f"{stats['time/seconds_per_step']:.2f}")
            logged = self.step % t.log_every == 0 or self.step == 1 or self.guard.skipped > skipped_before
            if self.is_main and logged:  # a skipped update shows in TensorBoard at its step
                self.monitor.log_train(self.step, stats)
            if self.step % t.eval_every == 0:
                self._evaluate_and_save()
        bar.close()
        if self.step % t.eval_every != 0:
            self._evaluate_and_save()
        if self.world_size > 1:
            dist.barrier()
        return self.out_dir / "checkpoints" / "best.pt" if self.is_main else None

    def _evaluate_and_save(self) -> None:
        if self.is_main:
            score = self.monitor.evaluate(self.model, self.dev_set, self.step)
            if not math.isfinite(score):  # the weights are finite but no longer a model: nothing is saved
                raise TrainingError(
                    f"training diverged: the dev score at step {self.step} is {score}; "
                    f"{self._divergence_advice()}"
                )
            self._save(score)
        if self.world_size > 1:
            dist.barrier()

    # -------------------------------------------------------- checkpoints
    def _payload(self) -> dict:
        return {
            "step": self.step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": rng_state(),
            "config": self.config.to_dict(),
            "stats": {
                "source": self.src_stats.to_dict(),
                "target": self.tgt_stats.to_dict(),
                "source_codebook": self.source_codebook.to_dict(),
            },
            "best_score": {"select_by": self.config.train.select_by, "value": self.best_score},
            "elapsed_seconds": time.monotonic() - self.started,
        }

    def _save(self, score: float) -> None:
        """Save this step; it becomes best.pt when its train.select_by score is the lowest so far."""
        folder = self.out_dir / "checkpoints"
        improved = score < self.best_score
        if improved:
            self.best_score = score
        payload = self._payload()
        save_checkpoint(folder / f"step{self.step:07d}.pt", payload)
        if improved:
            save_checkpoint(folder / "best.pt", payload)
        prune_checkpoints(folder, self.config.train.keep_checkpoints)
        label = (
            "free-running dev distance [dB]"
            if self.config.train.select_by == "free_running"
            else "valid loss"
        )
        log.info("step %d: %s %.4f%s", self.step, label, score, " (best)" if improved else "")

    def _newest_readable_checkpoint(self) -> tuple[Path, dict]:
        """The newest step checkpoint that loads; damaged newer ones are skipped and kept.

        A damaged file (a disk that filled, a copy cut short) is renamed to
        NAME.damaged, not deleted: the next save would otherwise overwrite it, and
        pruning would delete it, before anyone could look at it.
        """
        folder = self.out_dir / "checkpoints"
        found = step_checkpoints(folder)
        if not found:
            raise CheckpointError(f"--resume: no stepNNNNNNN.pt checkpoint in {folder}")
        for path in reversed(found):
            try:
                return path, load_checkpoint(path, map_location=self.device)
            except CheckpointError as exc:
                kept = path.with_name(path.name + ".damaged")
                if self.is_main and path.exists():
                    path.rename(kept)
                log.warning("--resume: skipping damaged %s (kept as %s): %s", path.name, kept.name, exc)
        raise CheckpointError(f"--resume: every checkpoint in {folder} is damaged (kept as *.pt.damaged)")

    def _init_weights(self, path: str) -> None:
        """train.init_from: start from another run's model weights (fine-tuning)."""
        payload = load_checkpoint(path, map_location=self.device)
        try:
            self.model.load_state_dict(payload["model"])
        except (RuntimeError, KeyError) as exc:
            raise CheckpointError(
                f"train.init_from {path} does not fit this config's model: {str(exc).splitlines()[0]}"
            ) from None
        log.info("starting from the model weights of %s (step %s)", path, payload.get("step", "?"))

    def _resume(self) -> None:
        path, payload = self._newest_readable_checkpoint()
        try:
            self.model.load_state_dict(payload["model"])
            self.optimizer.load_state_dict(payload["optimizer"])
            self.scheduler.load_state_dict(payload["scheduler"])
            self.scaler.load_state_dict(payload["scaler"])
        except (RuntimeError, KeyError, ValueError) as exc:
            raise CheckpointError(f"{path} does not fit this config: {str(exc).splitlines()[0]}") from None
        self.step = payload["step"]
        self.best_score = resumed_best_score(payload, self.config.train.select_by)
        self.elapsed_before = payload.get("elapsed_seconds", 0.0)
        set_rng_state(payload["rng"])
        log.info("resumed from %s at step %d", path, self.step)

    def close(self) -> None:
        if self.monitor is not None:
            self.monitor.close()


def resumed_best_score(payload: dict, select_by: str) -> float:
    """The best score a resumed run has to beat: inf when the checkpoint ranked by another rule.

    Checkpoints written before train.select_by existed hold "best_valid_loss".
    """
    best = payload.get("best_score") or {
        "select_by": "loss",
        "value": payload.get("best_valid_loss", math.inf),
    }
    return best["value"] if best["select_by"] == select_by else math.inf


def train(config: Config, out_dir: str | Path, resume: bool = False, progress: bool = True) -> Path | None:
    caller_group = dist.is_initialized()  # a caller's group is the caller's to free
    trainer = Trainer(config, out_dir, resume=resume, progress=progress)
    try:
        best = trainer.fit()
    except BaseException:
        # The error that stopped training is the one to report, not a second one from closing
        # TensorBoard's files on the same full disk.
        with contextlib.suppress(VcError, OSError):
            trainer.close()
        raise
    else:
        trainer.close()
        return best
    finally:
        if dist.is_initialized() and not caller_group:
            # torch asks each process to free its group before it exits; left to interpreter
            # exit, gloo's and nccl's threads are torn down in no fixed order.
            dist.destroy_process_group()

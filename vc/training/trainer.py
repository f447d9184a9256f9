"""The model kinds' training: their data, model and dev views as a job of the one loop (vc/training/loop.py).

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

from vc.artifacts.checkpoint import load_checkpoint
from vc.artifacts.durations import check_durations, load_durations
from vc.audio.pitch import log_f0_stats
from vc.audio.voice_warp import VoiceCodebook
from vc.config import Config, dump_config
from vc.errors import CheckpointError, ConfigError, DataError, VcError
from vc.fileio import atomic_write_text
from vc.kinds import get_kind
from vc.training.augment import SourceAugment
from vc.training.data import (
    BucketBatchSampler,
    ParallelDataset,
    collate,
    feature_cache_dir,
    load_f0,
    load_features,
    pitch_inputs,
    require_lists,
    speaker_list,
    speaker_stats,
)
from vc.training.loop import Job, Loop, Update, refuse_earlier_run
from vc.training.monitor import Monitor
from vc.training.phonetic import has_phone_recognizer, load_frame_labels, phone_critic

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


class ModelJob(Job):
    """A model kind's training (vc/kinds/): the parallel pairs, the model, its optimizer and its dev views.

    The kind turns a batch into its losses; the Loop (vc/training/loop.py) steps them. Built on every
    rank; the main one also writes TensorBoard and evaluates.
    """

    name = "training"

    def __init__(self, config: Config, out_dir: str | Path, progress: bool = True):
        self.config = config
        self.out_dir = Path(out_dir)
        self.progress = progress
        self.rank, self.world_size, self.device = setup_distributed()
        self.is_main = self.rank == 0
        self.kind = get_kind(config.model.kind)
        self.kind.check(config)
        t = config.train
        self.select_by = t.select_by
        self.score_label = "free-running dev distance [dB]" if t.select_by == "free_running" else "valid loss"
        self.shown = tuple((label, f"loss/{name}") for label, name in POSTFIX)
        # Ranks draw different dropout masks; DDP copies rank 0's initial weights to all.
        torch.manual_seed(t.seed + self.rank)
        self._load_data()
        self.model = self.kind.build(config.audio.n_mels, config.model).to(self.device)
        self.content = None  # the recognizer's content of the training recordings, read in start()
        self.kind.initialise(self.model, self.durations, self.recognizer)
        self.optimizers = {
            "model": torch.optim.AdamW(
                self.model.parameters(), lr=t.learning_rate, weight_decay=t.weight_decay
            )
        }
        self.grad_clip = {"model": t.grad_clip}
        self.ddp = None
        self.monitor = Monitor(config, self.out_dir, self.device, self.tgt_stats) if self.is_main else None
        self.writer = self.monitor.writer if self.monitor is not None else None

    def start(self, init_from: str | None) -> None:
        """After a resume (or none): train.init_from's weights for a new run, then DDP's wrapper."""
        if init_from:
            self._init_weights(init_from)
        self.content = self._fixed_content()
        if self.world_size > 1:
            self.ddp = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device] if self.device.type == "cuda" else None
            )

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
        # Both sides' phone labels: the recognizer's, and the phonetic loss's (the target's; batches carry
        # them only where the loss reads them).
        labels = self._phone_labels({**train, **dev})
        phones = labels["target"] if labels and self.config.train.phonetic_weight > 0 else None
        self.target_pitch: tuple[float, float] | None = None  # the target's log-F0 (mean, deviation)
        train_pitch, dev_pitch = self._pitch() if self.kind.needs_pitch(self.config.model) else (None, None)
        self.train_set = ParallelDataset(
            train, self.src_stats, self.tgt_stats, self.durations, phones, train_pitch
        )
        self.dev_set = ParallelDataset(dev, self.src_stats, self.tgt_stats, self.durations, phones, dev_pitch)
        self.recognizer = self._phone_recognizer(labels) if labels else None
        weight = self.config.train.phonetic_weight
        self.loss_extras = {"critic": self.recognizer} if weight > 0 else {}
        augment = self.config.augment
        self.augment = (
            SourceAugment(
                augment,
                self.config.audio,
                self.tgt_stats if self.kind.augments == "target" else self.src_stats,
            )
            if augment.probability > 0
            else None
        )
        # True where augmentation is on and changes what the recognizer hears of the target, not the source.
        self.augments_heard = self.augment is not None and self.kind.augments == "target"

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

    def _pitch(self):
        """The training and dev lists' pitch features (pitch_inputs), the target's in the range of the
        training targets' F0 (load_f0; rank 0 caches it first)."""
        cache_dir = feature_cache_dir(self.config, self.out_dir)
        lists = require_lists(self.config)
        if self.is_main:
            train, dev = (load_f0(path, self.config.audio, cache_dir, self.progress) for path in lists)
        if self.world_size > 1:
            dist.barrier()
        if not self.is_main:
            train, dev = (load_f0(path, self.config.audio, cache_dir, progress=False) for path in lists)
        target = log_f0_stats([tgt for _, tgt in train.values()])
        self.target_pitch = target  # in the checkpoint: the range its pitch inputs were read in
        log.info(
            "the target's log-F0: mean %.3f (%.0f Hz), deviation %.3f",
            target[0],
            math.exp(target[0]),
            target[1],
        )
        return pitch_inputs(train, target), pitch_inputs(dev, target)

    def _phone_labels(self, features) -> dict[str, dict[str, torch.Tensor]] | None:
        """Both sides' frame labels of data.phones (load_frame_labels) when the run has a phone
        recognizer: for the phonetic loss (train.phonetic_weight > 0) or a kind that reads content."""
        if not has_phone_recognizer(self.config):
            return None
        audio = self.config.audio
        return load_frame_labels(self.config.data.phones, features, audio.hop_length / audio.sample_rate)

    def _phone_recognizer(self, labels: dict[str, dict[str, torch.Tensor]]):
        """The run's frozen phone recognizer (the phonetic loss's critic, the content of a kind that reads
        it), trained on the datasets' normalised frames of both speakers, each by its own speaker's
        statistics, the training frames augmented with augment.recognizer_probability (rank 0; the other
        ranks read the file it saved)."""
        # (mels, labels, the index of the statistics they were normalised by: 0 the source's, 1 the target's)
        pairs = {
            name: [
                (items[side], labels[speaker][utt], side)
                for side, speaker in ((0, "source"), (1, "target"))
                for utt, items in zip(dataset.ids, dataset.items, strict=True)
            ]
            for name, dataset in (("train", self.train_set), ("dev", self.dev_set))
        }
        augment = None
        probability = self.config.augment.recognizer_probability
        if probability > 0:
            stats = [self.src_stats, self.tgt_stats]
            augment = SourceAugment(self.config.augment, self.config.audio, stats, probability=probability)
        path = self.out_dir / "phone_classifier.pt"
        if self.is_main:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            critic = phone_critic(
                self.config, pairs["train"], pairs["dev"], path, self.device, self.progress, augment
            )
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

    def _loader(self, step: int) -> torch.utils.data.DataLoader:
        sampler = BucketBatchSampler(
            self.train_set.lengths(),
            self.config.data.batch_size,
            self.config.train.seed,
            start_step=step,
            rank=self.rank,
            world_size=self.world_size,
        )
        # A private generator: starting a DataLoader iterator draws a seed, which
        # must not come from the global RNG that a resumed run has just restored.
        generator = torch.Generator().manual_seed(self.config.train.seed + step)
        return torch.utils.data.DataLoader(
            self.train_set,
            batch_sampler=sampler,
            collate_fn=collate,
            num_workers=self.config.data.num_workers,
            generator=generator,
            pin_memory=self.device.type == "cuda",
        )

    def _fixed_content(self) -> dict[str, dict[str, torch.Tensor]] | None:
        """Batch field ("tgt_content", "src_content") -> utt_id -> what the kind's frozen recognizer reads
        of each training recording (ModelKind.fixed_content), read once here in batches of similar
        lengths; None where the kind reads nothing frozen or augmentation changes what it hears every
        step. In memory beside the features: 4 bytes per channel and frame (ARCTIC's slt: 149 MB, 932
        recordings of 256 channels)."""
        if self.augment is not None and self.kind.needs_recognizer(self.config.model):
            return None
        began = time.monotonic()
        order = sorted(range(len(self.train_set)), key=lambda k: len(self.train_set.items[k][1]))
        size = self.config.data.batch_size
        content: dict[str, dict[str, torch.Tensor]] = {}
        self.model.eval()
        for start in range(0, len(order), size):
            batch = collate([self.train_set[k] for k in order[start : start + size]]).to(self.device)
            with torch.no_grad():
                read = self.kind.fixed_content(self.model, batch)
            if read is None:
                return None
            for field, features in read.items():
                lens = batch.src_lens if field == "src_content" else batch.tgt_lens
                for utt_id, item, length in zip(batch.utt_ids, features, lens.tolist(), strict=True):
                    content.setdefault(field, {})[utt_id] = item[:length].clone()
        items = [item for by_utt in content.values() for item in by_utt.values()]
        size_mb = sum(item.numel() * item.element_size() for item in items) / 2**20
        log.info(
            "the recognizer's content of %d training recordings, read once: %.0f MB in %.1f s",
            len(items), size_mb, time.monotonic() - began,
        )  # fmt: skip
        return content

    def batches(self, step: int):
        return map(self.prepare, self._loader(step))

    def prepare(self, batch):
        """A training batch on the device, augmented (training batches only: dev losses stay comparable
        across runs)."""
        batch = batch.to(self.device)
        for field, by_utt in (self.content or {}).items():
            content = [by_utt[utt_id] for utt_id in batch.utt_ids]
            batch = dataclasses.replace(
                batch, **{field: torch.nn.utils.rnn.pad_sequence(content, batch_first=True)}
            )
        if self.augments_heard:
            batch = dataclasses.replace(batch, heard=self.augment(batch.tgt, batch.tgt_lens))
        elif self.augment is not None:
            batch = dataclasses.replace(batch, src=self.augment(batch.src, batch.src_lens))
        return batch

    def updates(self, batch, step: int):
        model = self.ddp or self.model
        model.train()
        losses = self.kind.losses(model, batch, self.config, step, **self.loss_extras)
        yield Update(losses.total, stats={k: v for k, v in losses._asdict().items() if v is not None})

    def learning_rate_factor(self, step: int, spent: float) -> float:
        t = self.config.train
        return learning_rate_factor(step, t.warmup_steps, t.decay, spent)

    def step_stats(self, step: int) -> dict[str, float]:
        return self.kind.step_stats(self.config, step)

    def evaluate(self, step: int) -> float:
        return self.monitor.evaluate(self.model, self.dev_set, step)

    def done(self) -> bool:
        return self.monitor is not None and self.monitor.converts_at is not None

    def networks(self) -> dict[str, torch.nn.Module]:
        return {"model": self.model}

    def payload(self) -> dict:
        stats = {
            "source": self.src_stats.to_dict(),
            "target": self.tgt_stats.to_dict(),
            "source_codebook": self.source_codebook.to_dict(),
        }
        if self.target_pitch is not None:  # a timing's pitch is read in it (vc.inference.Converter)
            stats["target_pitch"] = list(self.target_pitch)
        return {"config": self.config.to_dict(), "stats": stats}

    def advice(self) -> str:
        return f"lower train.learning_rate (now {self.config.train.learning_rate:g})"

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

    def close(self) -> None:
        if self.monitor is not None:
            self.monitor.close()


def model_loop(
    config: Config,
    out_dir: str | Path,
    resume: bool = False,
    progress: bool = True,
    stop_file: str | Path | None = None,
) -> Loop:
    """The model kind's job in the one loop, at step 0 (train.init_from's weights) or resumed; training
    ends early once ``stop_file`` exists (Loop)."""
    if not resume:
        refuse_earlier_run(Path(out_dir) / "checkpoints")
    job = ModelJob(config, out_dir, progress)
    t = config.train
    loop = Loop(
        job,
        max_steps=t.max_steps, max_minutes=t.max_minutes, eval_every=t.eval_every, log_every=t.log_every,
        checkpoints=job.out_dir / "checkpoints", keep_checkpoints=t.keep_checkpoints,
        max_nonfinite_steps=t.max_nonfinite_steps, amp=t.amp, device=job.device, rank=job.rank,
        world_size=job.world_size, progress=progress, stop_file=stop_file,
    )  # fmt: skip
    try:
        if resume:
            loop.resume()
        job.start(None if resume else t.init_from)
    except BaseException:
        job.close()
        raise
    return loop


def train_recognizer(config: Config, out_dir: str | Path, progress: bool = True) -> Path:
    """Only the run's phone recognizer, as `vc train` trains it first (or reads it, when saved): its
    file, OUT/phone_classifier.pt, which a later `vc train` into the same folder reuses. The recipe trains
    it on both cores before the attention model takes one of them (recipes/vc1/vc.sh, --side_by_side)."""
    if not has_phone_recognizer(config):
        raise ConfigError(
            f"this run has no phone recognizer to train (model.kind {config.model.kind}, "
            f"train.phonetic_weight {config.train.phonetic_weight:g})"
        )
    job = ModelJob(config, out_dir, progress)
    job.close()
    return job.out_dir / "phone_classifier.pt"


def train(
    config: Config,
    out_dir: str | Path,
    resume: bool = False,
    progress: bool = True,
    stop_file: str | Path | None = None,
) -> Path | None:
    """Train model.kind on the config's data; returns best.pt's path (None on the other ranks). Training
    ends early, as its budget would, once ``stop_file`` exists."""
    caller_group = dist.is_initialized()  # a caller's group is the caller's to free
    try:
        loop = model_loop(config, out_dir, resume=resume, progress=progress, stop_file=stop_file)
        job = loop.job
        try:
            if job.is_main:
                job.out_dir.mkdir(parents=True, exist_ok=True)
                atomic_write_text(job.out_dir / "config.yaml", dump_config(config))
                log.info("training on %s x %d from step %d", job.device, job.world_size, loop.step)
            loop.run()
            if job.is_main and get_kind(config.model.kind).stops_when_converts(config) and not job.done():
                log.warning(
                    "the model did not pass its free-running dev check (model.until_converts) by step %d, "
                    "where its cap (or a stop file) ended training: its conversions may not carry the words "
                    "yet; a larger train.max_minutes lets it train on",
                    loop.step,
                )
        except BaseException:
            # The error that stopped training is the one to report, not a second one from closing
            # TensorBoard's files on the same full disk.
            with contextlib.suppress(VcError, OSError):
                job.close()
            raise
        job.close()
        return job.out_dir / "checkpoints" / "best.pt" if job.is_main else None
    finally:
        if dist.is_initialized() and not caller_group:
            # torch asks each process to free its group before it exits; left to interpreter
            # exit, gloo's and nccl's threads are torn down in no fixed order.
            dist.destroy_process_group()

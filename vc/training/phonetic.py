"""The phonetic loss: a frozen phone classifier's cross-entropy on the converter's output frames.

The word ladder (docs/ablation.md, "Where the student's words go") found most of the lost words in the
spectral envelope's content, not in its timing: frames regressed toward the mean of their neighbours
no longer tell one phone from another. The phone alignments of `vc durations --phones` label every frame
of both recordings (vc/training/phones.py). A small conv classifier (vc/model/phone_classifier.py) learns
the phones from both speakers' natural frames (each normalised by its own speaker's statistics) at the
start of `vc train` (train.phonetic_minutes, on the training pairs, accuracy on the dev pairs' frames
logged), is frozen, and the converter's loss adds train.phonetic_weight x its cross-entropy on the
converter's output: every output frame must be the phone its label says. The same classifier is the
recognizer of the recognition-synthesis converter (vc/kinds/recognition_synthesis.py): one recognizer
per run. It is saved as EXP/phone_classifier.pt and reused on --resume. It is our own acoustic model
(not the WER scorer's); the labels come from pocketsphinx's aligner.

The output's labels: every kind makes its training frames at the target's timing (the attention model
teacher-forced on them) and takes the target's phones.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from contextlib import closing
from pathlib import Path

import torch

from vc.artifacts.checkpoint import TRAINING_STATE, restore_random, step_checkpoints
from vc.artifacts.companion import network_from_payload, read_network_payload, save_network
from vc.config import Config
from vc.errors import ConfigError, DataError
from vc.kinds import get_kind
from vc.kinds.losses import IGNORE, phonetic_loss
from vc.model.phone_classifier import PHONES, PhoneClassifier
from vc.training.data import random_crops
from vc.training.loop import Job, Loop, Update, discard_training_state, training_state_folder
from vc.training.monitor import EventWriter

log = logging.getLogger(__name__)


def has_phone_recognizer(config: Config) -> bool:
    """Whether a run trains a phone recognizer first: the phonetic loss's critic (train.phonetic_weight
    > 0), or the content of a network that reads it (the recognition-synthesis converter, the attention
    model over content)."""
    return config.train.phonetic_weight > 0 or get_kind(config.model.kind).needs_recognizer(config.model)


def frame_labels(phones: list[list], frames: int, frame_seconds: float) -> torch.Tensor:
    """[[phone, start s, end s], ...] -> (frames,) phone indices (PHONES); frame k sits at k x
    frame_seconds; frames outside every phone (and phones outside PHONES) are silence, 0."""
    labels = torch.zeros(frames, dtype=torch.long)
    for name, start, end in phones:
        if name in PHONES:
            first, last = math.ceil(start / frame_seconds - 1e-6), math.ceil(end / frame_seconds - 1e-6)
            labels[max(first, 0) : min(last, frames)] = PHONES.index(name)
    return labels


def load_frame_labels(path: str | Path, features, frame_seconds: float) -> dict[str, dict[str, torch.Tensor]]:
    """ "source" and "target" -> utt id -> (frames,) labels, from the phone alignments file (`vc durations
    --phones`), for every pair of ``features`` (utt id -> (source, target) frames)."""
    try:
        alignments = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read the phone alignments {path}: {exc}") from None
    missing = sorted(set(features) - set(alignments))
    if missing:
        raise DataError(
            f"{path} has no phones of {missing[0]} ({len(missing)} utterances): align these lists with "
            "vc durations --phones"
        )
    return {
        side: {
            utt: frame_labels(alignments[utt][side], len(pair[k]), frame_seconds)
            for utt, pair in features.items()
        }
        for k, side in enumerate(("source", "target"))
    }


WARMUP_STEPS = 50  # the recognizer's learning-rate warmup (PhoneClassifierJob.learning_rate_factor)


class PhoneClassifierJob(Job):
    """Cross-entropy of the frame labels on random crops (labels IGNORE on padding), AdamW, its rate
    decaying linearly to zero at the end of the budget. With
    ``augment`` (a SourceAugment over each speaker's statistics) the training items are (mels, labels,
    speaker) triples, speaker the index of the statistics the mels were normalised by, and each batch is
    augmented before the loss; the dev frames never are."""

    name = "phone classifier training"
    select_by = "frame_error"
    select_best = False
    shown = (("loss", "loss/phonetic"),)
    marker = TRAINING_STATE

    def __init__(
        self, classifier, train, dev, seed: int, device, crop: int, batch_size: int, writer=None, augment=None
    ):
        self.classifier, self.train, self.dev, self.device = classifier, train, dev, device
        self.crop, self.batch_size, self.writer, self.augment = crop, batch_size, writer, augment
        self.rng = random.Random(seed)
        self.optimizers = {"model": torch.optim.AdamW(classifier.parameters(), lr=1e-3, weight_decay=1e-4)}
        self.grad_clip = {"model": None}
        self.accuracy = math.nan

    def learning_rate_factor(self, step: int, spent: float) -> float:
        """Linear warmup over WARMUP_STEPS, then linear decay to zero at the end of its budget (steps or
        minutes, whichever ends it): 74.8 % dev frame accuracy after 412 steps against 72.6 % at a
        constant rate (docs/ablation.md, "The recognizer's schedule and steps")."""
        return min((step + 1) / WARMUP_STEPS, max(0.0, 1.0 - spent))

    def batches(self, step: int):
        pad = torch.nn.utils.rnn.pad_sequence
        while True:
            crops = random_crops(self.train, self.batch_size, self.crop, self.rng)
            mels, labels, *speaker = zip(*crops, strict=True)
            batch = pad(mels, batch_first=True).to(self.device)
            if self.augment is not None:
                lens = torch.tensor([len(mel) for mel in mels])
                batch = self.augment(batch, lens, torch.tensor(speaker[0]))
            yield batch, pad(labels, batch_first=True, padding_value=IGNORE).to(self.device)

    def updates(self, batch, step: int):
        self.classifier.train()
        loss = phonetic_loss(self.classifier, *batch)
        yield Update(loss, stats={"phonetic": loss})

    def evaluate(self, step: int) -> float:
        self.classifier.eval()  # no dropout: the accuracy of the classifier as the loss will use it
        self.accuracy = frame_accuracy(self.classifier, self.dev, self.device)
        if self.writer is not None:
            self.writer.add_scalar("valid/frame_accuracy", self.accuracy, step)
        return 1.0 - self.accuracy

    def networks(self) -> dict[str, torch.nn.Module]:
        return {"model": self.classifier}

    def payload(self) -> dict:
        return {"crop_rng": self.rng.getstate()}

    def restore(self, payload: dict) -> None:
        restore_random(self.rng, payload["crop_rng"])


def train_phone_classifier(
    train: list[tuple[torch.Tensor, torch.Tensor]],
    dev: list[tuple[torch.Tensor, torch.Tensor]],
    max_minutes: float,
    seed: int,
    device: torch.device,
    crop: int = 128,
    batch_size: int = 32,
    max_steps: int = 20_000,
    amp: bool = False,
    writer=None,
    progress: bool = False,
    state: Path | None = None,
    save_every: int = 500,
    augment=None,
) -> tuple[PhoneClassifier, float]:
    """A classifier trained on (normalised mels (T, n_mels), labels (T,)) pairs for max_minutes (or
    max_steps) in the one loop, frozen; and its frame accuracy on ``dev``. ``state``: a folder for its
    training state (every ``save_every`` steps, with the dev accuracy), continued from when it holds one.
    ``augment``: PhoneClassifierJob's (then ``train`` holds (mels, labels, speaker) triples)."""
    torch.manual_seed(seed)
    classifier = PhoneClassifier(train[0][0].shape[1], len(PHONES)).to(device)
    job = PhoneClassifierJob(classifier, train, dev, seed, device, crop, batch_size, writer, augment)
    start = time.monotonic()
    loop = Loop(
        job,
        max_steps=max_steps,
        max_minutes=max_minutes,
        eval_every=save_every if state is not None else 0,
        log_every=50,
        checkpoints=state,
        keep_checkpoints=1,
        amp=amp,
        device=device,
        progress=progress,
    )
    if state is not None and step_checkpoints(state):
        loop.resume()
    step = loop.run()
    classifier.eval().requires_grad_(False)
    log.info(
        "phone classifier: %d steps in %.1f min, frame accuracy on the dev frames %.1f %%",
        step, (time.monotonic() - start) / 60, 100 * job.accuracy,
    )  # fmt: skip
    return classifier, job.accuracy


@torch.no_grad()
def frame_accuracy(classifier: PhoneClassifier, pairs, device: torch.device) -> float:
    """The share of frames whose most likely phone is their label."""
    right = total = 0
    for mel, label, *_ in pairs:  # (mels, labels) or (mels, labels, speaker)
        guess = classifier(mel[None].to(device)).argmax(dim=-1)[0].cpu()
        right += int((guess == label).sum())
        total += len(label)
    return right / max(total, 1)


MARKER = "vc-phone-classifier"


def phone_critic(
    config: Config,
    train_targets,
    dev_targets,
    path: Path,
    device: torch.device,
    progress: bool = False,
    augment=None,
) -> PhoneClassifier:
    """The frozen classifier of a run: the one saved at ``path`` (a resumed run), else one trained now
    on the (normalised target mels, labels) pairs and saved there (vc/artifacts/companion.py's format);
    an interrupted training of it continues from its state (PATH_training/). ``augment``:
    train_phone_classifier's."""
    if path.is_file():
        payload = read_network_payload(path, MARKER, "phone classifier", device)
        classifier = network_from_payload(
            payload, PhoneClassifier, "phone classifier", path, config.audio, device
        )
        log.info("phone classifier: %s (dev frame accuracy %.1f %%)", path, 100 * payload["info"]["accuracy"])
        return classifier.requires_grad_(False)
    if not train_targets:
        raise ConfigError("train.phonetic_weight needs training pairs with phone labels (data.phones)")
    # Its training state, until it is saved: an interrupted run's classifier continues from it.
    state = training_state_folder(path)
    with closing(EventWriter(path.parent / "tensorboard" / "phone_classifier")) as writer:
        classifier, accuracy = train_phone_classifier(
            train_targets, dev_targets, config.train.phonetic_minutes, config.train.seed, device,
            amp=config.train.amp, writer=writer, progress=progress, state=state, augment=augment,
        )  # fmt: skip
    hparams = {"n_mels": config.audio.n_mels, "n_phones": len(PHONES)}
    save_network(path, MARKER, classifier, hparams, config.audio, {"accuracy": accuracy, "phones": PHONES})
    discard_training_state(state)
    return classifier

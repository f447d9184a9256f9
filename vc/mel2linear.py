"""Train, save and find the mel -> linear magnitude network (vc.model.mel2linear).

Training needs only the target speaker's recordings: the log-mel and the STFT
magnitude of the same audio, with exactly LogMel's STFT. Features are computed
once and kept in memory; each step reads random fixed-length crops.

    vc vocoder-train --list data/bdl_slt/train.tsv --out exp/.../checkpoints/mel2linear.pt

The file is a small companion of the conversion checkpoint: `vc convert` and
Converter.from_checkpoint use ``mel2linear.pt`` beside the checkpoint when it
is there (COMPANION_NAME), and the filterbank pseudo-inverse otherwise.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import time
from pathlib import Path
from typing import Any

import torch

from vc.audio import AUDIO_FORMATS, LogMel, read_audio
from vc.checkpoint import private_rng
from vc.companion import (
    CompanionKind,
    find_companion,
    load_companion,
    network_from_payload,
    read_network_payload,
    save_network,
)
from vc.config import AudioConfig, Config
from vc.data import read_pair_list
from vc.durations import load_durations
from vc.errors import DataError
from vc.model.aligned_source import aligned_source
from vc.model.mel2linear import Mel2Linear, fit_linear
from vc.progress import progress as show_progress  # `progress` is a parameter name here
from vc.vocoder import GriffinLimVocoder

log = logging.getLogger(__name__)

FORMAT = "vc-mel2linear"
COMPANION_NAME = "mel2linear.pt"
EMBEDDED_VOCODER_KEY = "vocoder_net"  # where `vc export` puts the network inside a model file
KIND = CompanionKind(Mel2Linear, FORMAT, "mel2linear network", COMPANION_NAME, EMBEDDED_VOCODER_KEY)
# Target magnitudes are log10(max(|STFT|, MAGNITUDE_FLOOR)). Sixteen-bit
# recordings have their noise floor near 1e-3 on this scale; below 1e-5 nothing
# is audible, and a lower floor would let silent bins dominate an L1 loss.
MAGNITUDE_FLOOR = 1e-5


@dataclasses.dataclass
class TrainOptions:
    architecture: str = "resconv"
    channels: int = 128  # 256: 2x slower steps, validation 4.435 vs 4.44 dB after 8 min (docs/ablation.md)
    layers: int = 4
    kernel: int = 5
    batch_size: int = 16
    crop_frames: int = 96
    learning_rate: float = 1e-3
    max_steps: int = 100_000
    max_minutes: float = 8.0  # with feature extraction, under 10 minutes on 2 CPU cores
    valid_files: int = 10  # held out from the end of the (sorted) file list
    valid_every: int = 250
    # Weight of spectral_convergence_loss beside the log-magnitude L1. Measured after
    # Griffin-Lim on 10 slt utterances: 3.58 dB MCD with 1.0 (219 steps), 3.65 dB
    # without (156 steps): a weak signal, both runs short.
    spectral_convergence_weight: float = 1.0
    seed: int = 1


def audio_files(paths: list[str | Path]) -> list[Path]:
    """Target files of pair lists (.tsv), audio files, and audio files in folders, sorted."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix.lower() in AUDIO_FORMATS)
            if not files:
                raise DataError(f"no {'/'.join(AUDIO_FORMATS)} files in folder {path}")
            found += files
        elif path.suffix.lower() in (".tsv", ".txt", ".scp"):
            found += [pair.target for pair in read_pair_list(path)]
        elif path.is_file():
            found.append(path)
        else:
            raise DataError(f"input not found: {path}")
    return sorted(set(found), key=lambda p: (p.name, str(p)))


@torch.no_grad()
def extract(
    files: list[Path], audio: AudioConfig, progress: bool = True
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(log-mel (T, n_mels) float32, log10 magnitude (T, n_bins) float16) per file."""
    extractor = LogMel(audio)
    items = []
    for path in show_progress(files, desc="features", unit="file", disable=not progress):
        wave = torch.from_numpy(read_audio(path, audio))[None]
        logmel, _ = extractor(wave)
        magnitude = extractor.magnitude(wave)[0].T
        items.append((logmel[0], magnitude.clamp(min=MAGNITUDE_FLOOR).log10().half()))
    return items


def _crop_batch(items, batch_size: int, crop: int, rng: random.Random):
    """Random crops of ``crop`` frames (shorter items whole, padded): (mel, mag, lens)."""
    chosen = [items[rng.randrange(len(items))] for _ in range(batch_size)]
    mels, mags, lens = [], [], []
    for mel, mag in chosen:
        start = rng.randrange(max(1, len(mel) - crop + 1))
        mels.append(mel[start : start + crop])
        mags.append(mag[start : start + crop].float())
        lens.append(len(mels[-1]))
    pad = torch.nn.utils.rnn.pad_sequence
    return pad(mels, batch_first=True), pad(mags, batch_first=True), torch.tensor(lens)


def _keep(pred: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """(B, T, 1) 1 on valid frames, 0 on padding."""
    return (
        (torch.arange(pred.shape[1], device=lens.device)[None, :] < lens[:, None])
        .unsqueeze(-1)
        .to(pred.dtype)
    )


def masked_l1(pred: torch.Tensor, target: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """Mean |pred - target| over valid frames and all bins. Shapes: (B, T, bins), lens (B,)."""
    keep = _keep(pred, lens)
    return ((pred - target).abs() * keep).sum() / (keep.sum() * pred.shape[-1])


def spectral_convergence_loss(pred: torch.Tensor, target: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """Mean over items of || 10^pred - 10^target ||_F / || 10^target ||_F on valid frames.

    The log-domain L1 weighs every bin alike; this term weighs the loud ones
    (harmonic peaks, formants), which carry what Griffin-Lim rebuilds.
    Shapes: log10 magnitudes (B, T, bins), lens (B,).
    """
    keep = _keep(pred, lens)
    predicted = torch.pow(10.0, pred.clamp(max=target.max() + 1.0)) * keep  # no overflow early in training
    true = torch.pow(10.0, target) * keep
    return (
        torch.linalg.vector_norm(predicted - true, dim=(1, 2)) / torch.linalg.vector_norm(true, dim=(1, 2))
    ).mean()


@torch.no_grad()
def validation_db(net: Mel2Linear, items) -> float:
    """Mean absolute log-spectral difference in dB (20 |log10 pred - log10 true|) over held-out files."""
    net.eval()
    total, count = 0.0, 0
    for mel, mag in items:
        pred = net(mel[None])[0].clamp(min=math.log10(MAGNITUDE_FLOOR))
        total += float((pred - mag.float()).abs().sum())
        count += mag.numel()
    net.train()
    return 20.0 * total / max(count, 1)


def train_mel2linear(
    paths: list[str | Path],
    audio: AudioConfig,
    out: str | Path,
    options: TrainOptions,
    progress: bool = True,
    checkpoint: str | Path | None = None,
    init: str | Path | None = None,
) -> dict[str, Any]:
    """Train on the recordings in ``paths`` (see audio_files) and save the best network to ``out``.

    ``init``: start from this network file instead of a least-squares linear map.
    ``checkpoint``: a conversion model; its teacher-forced predicted mels of the
    pairs in ``paths`` (pair lists only) are added as inputs beside the natural
    ones, with the same target magnitudes, so the network learns to undo their blur.
    """
    started = time.monotonic()
    files = audio_files(paths)
    if len(files) < 2:
        raise DataError(f"need at least 2 audio files to train and validate, found {len(files)}")
    valid_count = min(options.valid_files, len(files) // 2)
    torch.manual_seed(options.seed)
    items = extract(files, audio, progress)
    train_items, valid_items = items[: len(items) - valid_count], items[len(items) - valid_count :]
    if checkpoint is not None:
        predicted = [
            (mel, mag)
            for mel, (_, mag) in zip(
                predicted_mels(checkpoint, paths, files, [mel for mel, _ in items], audio, progress),
                items,
                strict=True,
            )
        ]
        train_items += predicted[: len(items) - valid_count]
        valid_items += predicted[len(items) - valid_count :]
    if init is not None:
        net = load_mel2linear(init, audio).train()
    else:
        net = Mel2Linear(
            audio.n_mels,
            audio.n_fft // 2 + 1,
            options.architecture,
            options.channels,
            options.layers,
            options.kernel,
        )
        frames = torch.cat([mel for mel, _ in train_items])
        pick = torch.randperm(len(frames))[:200_000]
        fit_linear(net, frames[pick], torch.cat([mag for _, mag in train_items])[pick].float())
        del frames
    start_db = validation_db(net, valid_items)
    log.info(
        "%d training, %d validation items; before training: %.2f dB",
        len(train_items),
        len(valid_items),
        start_db,
    )
    # The time limit covers feature extraction too; what is left of it trains (at least a second).
    budget = (
        max(1.0, options.max_minutes * 60.0 - (time.monotonic() - started))
        if options.max_minutes > 0
        else math.inf
    )
    steps, best_db = _optimise(net, train_items, valid_items, options, budget, start_db, progress)
    info = dict(
        files=len(files) - valid_count, valid_files=valid_count, steps=steps, minutes=(time.monotonic() - started) / 60,
        valid_db=best_db, linear_db=start_db, predicted_mels=checkpoint is not None,
    )  # fmt: skip
    save_mel2linear(out, net, audio, info)
    log.info(
        "mel2linear: %d steps in %.1f min, validation %.2f dB (at start %.2f dB)",
        steps,
        info["minutes"],
        best_db,
        start_db,
    )
    return info


def _optimise(
    net, train_items, valid_items, options: TrainOptions, budget: float, best_db: float, progress: bool
):
    """AdamW on random crops until max_steps or ``budget`` seconds; leaves the best validated state in ``net``."""
    rng = random.Random(options.seed)
    best_state = {k: v.clone() for k, v in net.state_dict().items()}
    optimizer = torch.optim.AdamW(net.parameters(), lr=options.learning_rate, weight_decay=0.0)
    loop_start, step = time.monotonic(), 0
    # With a time limit the step count is not known in advance: no total, no misleading time left.
    total = options.max_steps if math.isinf(budget) else None
    bar = show_progress(total=total, desc="mel2linear", unit="step", disable=not progress)
    while (done := max(step / options.max_steps, (time.monotonic() - loop_start) / budget)) < 1.0:
        for group in optimizer.param_groups:  # short warmup, then cosine to zero over steps or time
            group["lr"] = (
                options.learning_rate * min(1.0, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * done))
            )
        mel, mag, lens = _crop_batch(train_items, options.batch_size, options.crop_frames, rng)
        pred = net(mel, lens)
        loss = masked_l1(pred, mag, lens)
        if options.spectral_convergence_weight > 0:
            loss = loss + options.spectral_convergence_weight * spectral_convergence_loss(pred, mag, lens)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        step += 1
        bar.update(1)
        if step % options.valid_every == 0 or step == options.max_steps:
            db = validation_db(net, valid_items)
            bar.set_postfix(loss=f"{loss.item():.3f}", valid_db=f"{db:.2f}")
            if db < best_db:
                best_db, best_state = db, {k: v.clone() for k, v in net.state_dict().items()}
    bar.close()
    db = validation_db(net, valid_items)
    if db < best_db:
        best_db, best_state = db, net.state_dict()
    net.load_state_dict(best_state)
    return step, best_db


def predicted_mels(
    checkpoint, paths, files: list[Path], target_mels, audio: AudioConfig, progress: bool = True
):
    """The conversion model's teacher-forced log-mels (target scale) of the pairs whose targets are ``files``.

    Frame k of each is the model's estimate of target frame k, so it pairs with
    the target's magnitude. Shapes: target_mels and the result, lists of (T, n_mels).
    """
    outputs = teacher_forced(checkpoint, paths, files, target_mels, audio, progress)
    return [mel for mel, _ in outputs]


@torch.no_grad()
def teacher_forced(
    checkpoint, paths, files: list[Path], target_mels, audio: AudioConfig, progress: bool = True
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per pair whose target is in ``files``: the model's teacher-forced log-mel (target scale) and
    its normalised input frames at that output's timing (vc.model.aligned_source).

    Runs in length-sorted batches of 16, in the order of ``files``.
    Shapes: target_mels, lists of (T, n_mels); returns [((T, n_mels), (T, n_mels))].
    """
    from vc.inference import Converter  # vc.inference imports this module

    lists = [p for p in map(Path, paths) if p.suffix.lower() in (".tsv", ".txt", ".scp")]
    by_target = {pair.target: pair for path in lists for pair in read_pair_list(path)}
    missing = [f for f in files if f not in by_target]
    if missing:
        raise DataError(f"--checkpoint needs pair lists: no source for {missing[0]}")
    converter = Converter.from_checkpoint(checkpoint, device="cpu", vocoder_net=False, postfilter=False)
    if converter.config.audio != audio:
        raise DataError(f"{checkpoint} uses other audio settings than --config; pass its config.yaml")
    model_config = converter.config.model
    durations = (
        load_durations(converter.config.data.durations, model_config.encoder_reduction_factor)
        if model_config.kind == "nonautoregressive"
        else None
    )
    pad = torch.nn.utils.rnn.pad_sequence
    order = sorted(range(len(files)), key=lambda k: len(target_mels[k]))
    outputs: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(files)
    with show_progress(total=len(files), desc="predicted mels", unit="file", disable=not progress) as bar:
        for start in range(0, len(order), 16):
            chunk = order[start : start + 16]
            waves = [torch.from_numpy(read_audio(by_target[files[k]].source, audio)) for k in chunk]
            src, src_lens = converter.features(
                pad(waves, batch_first=True), torch.tensor([len(w) for w in waves])
            )
            src = converter.src_stats.normalize(src)
            tgt = pad([target_mels[k] for k in chunk], batch_first=True)
            tgt_lens = torch.tensor([len(target_mels[k]) for k in chunk])
            with private_rng(0, converter.device):
                if durations is None:
                    out = converter.model(src, src_lens, converter.tgt_stats.normalize(tgt), tgt_lens)
                else:  # the non-autoregressive converter at the durations it trained on
                    utts = [by_target[files[k]].utt_id for k in chunk]
                    out = converter.model(src, src_lens, pad([durations[u] for u in utts], batch_first=True))
            after = converter.tgt_stats.denormalize(out.after).float()
            source = aligned_source(
                src, src_lens, out.alignments, out.enc_lens, tgt_lens,
                model_config.reduction_factor if durations is None else 1, model_config.encoder_reduction_factor,
            )  # fmt: skip
            for row, k in enumerate(chunk):
                length = int(tgt_lens[row])
                outputs[k] = (after[row, :length].clone(), source[row, :length].float().clone())
            bar.update(len(chunk))
    return outputs


def save_mel2linear(path: str | Path, net: Mel2Linear, audio: AudioConfig, info: dict | None = None) -> None:
    """Atomic torch.save of the network, its hyper-parameters and the audio settings it expects."""
    save_network(path, FORMAT, net, net.hparams, audio, info)


def read_mel2linear_payload(path: str | Path, map_location: str | torch.device = "cpu") -> dict:
    """The saved dict of a network file (format checked), for loading or for embedding elsewhere."""
    return read_network_payload(path, KIND.marker, KIND.what, map_location)


def mel2linear_from_payload(
    payload: dict,
    where: str | Path,
    audio: AudioConfig | None = None,
    map_location: str | torch.device = "cpu",
) -> Mel2Linear:
    """The network of a saved dict (a file's or one embedded in a model file) in eval mode, float32.

    With ``audio``, refuse one trained under other audio settings; ``where`` names it in errors.
    """
    return network_from_payload(payload, KIND.build, KIND.what, where, audio, map_location)


def load_mel2linear(
    path: str | Path, audio: AudioConfig | None = None, map_location: str | torch.device = "cpu"
) -> Mel2Linear:
    """The network in eval mode; with ``audio``, refuse one trained under other audio settings."""
    return mel2linear_from_payload(read_mel2linear_payload(path, map_location), path, audio, map_location)


def companion_path(checkpoint: str | Path) -> Path:
    """Where the network of a conversion checkpoint lives: beside it, named COMPANION_NAME."""
    return Path(checkpoint).parent / COMPANION_NAME


def find_mel2linear(checkpoint: str | Path | None, explicit: str | Path | bool | None = None) -> Path | None:
    """The network file to use: ``explicit`` when a path, none when False, else the companion if present."""
    return find_companion(checkpoint, COMPANION_NAME, explicit)


def load_vocoder_net(
    audio: AudioConfig,
    checkpoint: str | Path | None,
    vocoder_net: str | Path | bool | None = None,
    device: str | torch.device = "cpu",
    payload: dict | None = None,
) -> Mel2Linear | None:
    """The network `vc convert` uses with ``checkpoint``, or None (the pseudo-inverse); logs which.

    ``vocoder_net``: a network file; False: none; None: the one inside an exported
    or bundled model file, else the companion beside the checkpoint (see
    vc.companion.load_companion). ``payload``: the checkpoint when already loaded,
    so it is not read twice.
    """
    net, where = load_companion(KIND, audio, checkpoint, vocoder_net, device, payload)
    # debug, not info: vc convert's stderr on bad input must stay one error line (vc -v shows it)
    if net is None:
        log.debug("vocoder: mel -> linear by filterbank pseudo-inverse (%s)", where)
    else:
        log.debug("vocoder: mel -> linear by the network %s", where)
    return net


def build_vocoder(
    config: Config,
    checkpoint: str | Path | None = None,
    vocoder_net: str | Path | bool | None = None,
    device: str | torch.device = "cpu",
) -> GriffinLimVocoder:
    """The Griffin-Lim vocoder `vc convert` uses with ``checkpoint`` (same network, same fallback).

    ``vocoder_net=False`` gives the pseudo-inverse path whatever lies beside the checkpoint.
    """
    net = load_vocoder_net(config.audio, checkpoint, vocoder_net, device)
    return GriffinLimVocoder(config.audio, config.vocoder, net).to(device)

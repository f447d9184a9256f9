"""Durations: how many target frames each encoder step becomes, from the attention model or DTW.

The trained attention model runs teacher-forced over every pair. Its alignment
(decoder steps x encoder steps) is spread to output frames: frame t sits at the
fractional decoder step (t - (r - 1) / 2) / r, between two rows, so it reads
their linear mix (decoder step d emits frames d*r .. d*r + r - 1). The centroid
of each frame's weights, held monotonic and rounded, is the one encoder step the
frame reads; counting the frames of each step gives integer durations that sum
to the target length exactly. Steps the path passes over get 0 frames (where
the source pauses longer than the target). The non-autoregressive converter
(vc/model/nonautoregressive.py) trains on them; FastSpeech (Ren et al. 2019)
and Hayashi et al. (ICASSP 2021) take durations from a teacher's attention the
same way.

    vc durations --checkpoint EXP/checkpoints/averaged.pt --features-dir EXP/features \\
        --out EXP/durations.pt data/bdl_slt/train.tsv data/bdl_slt/dev.tsv

The comparison source needs no model: dynamic time warping of the two recordings'
mel-cepstra (the DCT of each speaker's normalised log-mels, c1..c24), the
alignment a classical GMM converter trains on. Each target frame reads the mean
source frame the path pairs it with, and the encoder step that holds that frame.

    vc durations --dtw --config conf/student.yaml --features-dir EXP/features \\
        --out EXP/durations_dtw.pt data/bdl_slt/train.tsv data/bdl_slt/dev.tsv
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from vc.artifacts.checkpoint import load_checkpoint, private_rng
from vc.artifacts.durations import DurationReport, empty_step_share, save_durations
from vc.audio import FeatureStats
from vc.config import Config, load_config
from vc.errors import CheckpointError, ConfigError
from vc.evaluation.metrics import dtw
from vc.fileio import refuse_overwrite
from vc.kinds import build_model, get_kind
from vc.progress import progress as show_progress  # `progress` is a parameter name here
from vc.settings.audio import AudioConfig
from vc.training.data import compute_stats, load_features
from vc.training.selection import log_mel_cepstrum

log = logging.getLogger(__name__)


def frame_alignment(alignment: np.ndarray, frames: int, reduction_factor: int) -> np.ndarray:
    """(decoder steps, N) attention weights -> (frames, N), each frame between its two nearest steps."""
    steps = alignment.shape[0]
    position = (np.arange(frames) - (reduction_factor - 1) / 2) / reduction_factor
    position = np.clip(position, 0, steps - 1)
    lower = np.floor(position).astype(np.int64)
    upper = np.minimum(lower + 1, steps - 1)
    weight = (position - lower)[:, None]
    return alignment[lower] * (1 - weight) + alignment[upper] * weight


def frame_positions(weights: np.ndarray) -> np.ndarray:
    """(frames, N) frame weights (frame_alignment) -> (frames,) encoder step each frame reads, monotonic.

    Each frame's position is the centroid sum_n w[t, n] n of its weights, a running maximum
    keeps the path from going back, and rounding picks one step per frame.
    The attention is too peaked per decoder step for its argmax: with r = 3 output frames
    per decoder step and about 1.5 encoder steps read per decoder step, the peak jumps
    over every other encoder step (durations 3, 0, 3, 0, ...), where the centroid moves
    half a step per frame.
    """
    steps = weights.shape[1]
    centroid = weights @ np.arange(steps, dtype=np.float64) / np.maximum(weights.sum(axis=1), 1e-8)
    return np.clip(np.round(np.maximum.accumulate(centroid)), 0, steps - 1).astype(np.int64)


def durations_from_alignment(
    alignment: np.ndarray, frames: int, enc_steps: int, reduction_factor: int
) -> tuple[np.ndarray, float]:
    """(decoder steps, >= enc_steps) attention -> (durations (enc_steps,) summing to frames, sharpness).

    Sharpness is the mean attention weight at the encoder step each frame reads (1.0: every
    frame reads one step alone); it says how sure the teacher was of the timing.
    """
    weights = frame_alignment(alignment[:, :enc_steps].astype(np.float64), frames, reduction_factor)
    path = frame_positions(weights)
    sharpness = float(weights[np.arange(frames), path].mean())
    return np.bincount(path, minlength=enc_steps), sharpness


def durations_from_dtw(
    source: np.ndarray, target: np.ndarray, encoder_reduction_factor: int, audio: AudioConfig
) -> np.ndarray:
    """(T_src, n_mels), (T_tgt, n_mels) normalised log-mels -> (ceil(T_src / factor),) durations
    summing to T_tgt: each target frame goes to the encoder step holding the mean source frame
    the DTW path pairs it with (monotonic, as the path is). The cepstra are the checkpoint
    selection's (c1..c24 of the log-mels); their scale, one constant, leaves the path as it is."""
    factor = encoder_reduction_factor
    steps = -(-len(source) // factor)
    path_src, path_tgt, _ = dtw(log_mel_cepstrum(source, audio), log_mel_cepstrum(target, audio))
    mean_source = np.bincount(path_tgt, weights=path_src) / np.bincount(path_tgt)
    # Encoder step j stacks source frames j*f .. j*f + f - 1: centres in [j*f - 0.5, j*f + f - 0.5).
    step = np.clip(np.floor((mean_source + 0.5) / factor).astype(np.int64), 0, steps - 1)
    return np.bincount(step, minlength=steps)


@torch.no_grad()
def extract_durations(
    checkpoint: str | Path,
    lists: list[str | Path],
    features_dir: str | Path,
    out: str | Path,
    batch_size: int = 16,
    progress: bool = True,
) -> DurationReport:
    """Teacher-forced alignments of the attention model ``checkpoint`` on every pair of ``lists``
    (their cached features in ``features_dir``, computed when missing) -> durations file ``out``."""
    payload = load_checkpoint(checkpoint)
    config = Config.from_dict(payload["config"], stored=True)
    kind = get_kind(config.model.kind)
    if not kind.teaches_durations:
        raise CheckpointError(
            f"{checkpoint} is a {config.model.kind} model; durations come from an attention model"
        )
    if kind.needs_recognizer(config.model):
        raise CheckpointError(
            f"{checkpoint} is an attention model over {config.model.encoder_input}; durations come from "
            "an attention model over mels (model.encoder_input mels)"
        )
    model = build_model(config.audio.n_mels, config.model)
    try:
        model.load_state_dict(payload["model"])
    except RuntimeError as exc:
        raise CheckpointError(f"{checkpoint} is not a usable model: {str(exc).splitlines()[0]}") from None
    model.eval()
    src_stats = FeatureStats.from_dict(payload["stats"]["source"])
    tgt_stats = FeatureStats.from_dict(payload["stats"]["target"])
    features = {}
    for path in lists:
        features.update(load_features(path, config.audio, features_dir, progress))
    r = config.model.reduction_factor
    order = sorted(features, key=lambda utt: len(features[utt][1]))
    durations, sharpness = {}, []
    pad = torch.nn.utils.rnn.pad_sequence
    with show_progress(total=len(order), desc="durations", unit="utt", disable=not progress) as bar:
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            src = [torch.from_numpy(src_stats.normalize(features[u][0])) for u in chunk]
            tgt = [torch.from_numpy(tgt_stats.normalize(features[u][1])) for u in chunk]
            src_lens, tgt_lens = torch.tensor([len(s) for s in src]), torch.tensor([len(t) for t in tgt])
            with private_rng(0, torch.device("cpu")):  # the prenet's dropout, as in training
                out_ = model(pad(src, batch_first=True), src_lens, pad(tgt, batch_first=True), tgt_lens)
            for row, utt in enumerate(chunk):
                frames, enc_steps = int(tgt_lens[row]), int(out_.enc_lens[row])
                steps = (frames + r - 1) // r
                alignment = out_.alignments[row, :steps].float().numpy()
                found, sharp = durations_from_alignment(alignment, frames, enc_steps, r)
                durations[utt] = torch.from_numpy(found.astype(np.int32))
                sharpness.append(sharp)
            bar.update(len(chunk))
    report = DurationReport(
        utterances=len(durations),
        sharpness=float(np.mean(sharpness)),
        zero_fraction=empty_step_share(durations),
    )
    save_durations(out, durations, config, str(checkpoint), report)
    if report.zero_fraction > 0.3:  # an aligned teacher leaves very few
        log.warning(
            "%.0f %% of encoder steps get no frame: %s has not aligned source and target; "
            "a student will learn little timing from it (train it longer)",
            100 * report.zero_fraction,
            checkpoint,
        )
    log.info(
        "durations of %d utterances -> %s: sharpness %.3f, %.1f %% of encoder steps get no frame",
        report.utterances,
        out,
        report.sharpness,
        100 * report.zero_fraction,
    )
    return report


def extract_dtw_durations(
    config: Config, lists: list[str | Path], features_dir: str | Path, out: str | Path, progress: bool = True
) -> DurationReport:
    """DTW durations (durations_from_dtw) of every pair of ``lists`` -> durations file ``out``.

    Each speaker's log-mels are normalised by its statistics over the first list (the training
    set) before the cepstra, so the path pairs content rather than the two voices' mean spectra."""
    per_list = [load_features(path, config.audio, features_dir, progress) for path in lists]
    src_stats, tgt_stats = compute_stats(per_list[0])
    features = {utt: pair for found in per_list for utt, pair in found.items()}
    factor = config.model.encoder_reduction_factor
    durations = {}
    for utt in show_progress(features, desc="durations", unit="utt", disable=not progress):
        src, tgt = features[utt]
        found = durations_from_dtw(src_stats.normalize(src), tgt_stats.normalize(tgt), factor, config.audio)
        durations[utt] = torch.from_numpy(found.astype(np.int32))
    report = DurationReport(
        utterances=len(durations),
        sharpness=None,
        zero_fraction=empty_step_share(durations),
    )
    save_durations(out, durations, config, "dtw", report)
    log.info(
        "DTW durations of %d utterances -> %s: %.1f %% of encoder steps get no frame",
        report.utterances,
        out,
        100 * report.zero_fraction,
    )
    return report


def check_durations_request(
    checkpoint: str | Path | None,
    dtw: bool,
    config: str | Path | None,
    overrides: list[str],
    phones: bool = False,
) -> None:
    """One source of durations, and what it needs: an attention ``checkpoint``, or ``dtw`` or ``phones``
    with the converter's ``config`` (``overrides`` apply to that config only). Checked before any work."""
    if (checkpoint is not None) + dtw + phones != 1:
        raise ConfigError("vc durations needs one of --checkpoint (an attention model), --dtw or --phones")
    if (dtw or phones) and config is None:
        how = "--dtw" if dtw else "--phones"
        raise ConfigError(
            f"vc durations {how} needs --config (the converter's audio settings and frame stacking)"
        )
    if overrides and checkpoint is not None:
        raise ConfigError(
            "vc durations: --set goes with --dtw or --phones (an attention model's config is its own)"
        )


def write_durations(
    lists: list[str | Path],
    features_dir: str | Path,
    out: str | Path,
    checkpoint: str | Path | None = None,
    dtw: bool = False,
    config: str | Path | None = None,
    overrides: list[str] | None = None,
    overwrite: bool = False,
    progress: bool = True,
    phones: bool = False,
    text: str | Path | None = None,
    alignments: str | Path | None = None,
    workers: int = 1,
) -> DurationReport:
    """`vc durations`: the request checked (check_durations_request), an existing ``out`` refused
    unless ``overwrite``, then the durations of every pair of ``lists`` from the attention model
    ``checkpoint`` (extract_durations), from DTW (extract_dtw_durations, with ``config``) or from the
    phones of both recordings (vc.training.phones, with ``config``, the transcripts ``text`` and the
    phone ``alignments`` file written, by default OUT's name with .phones.json)."""
    overrides = list(overrides or [])
    check_durations_request(checkpoint, dtw, config, overrides, phones)
    if phones:
        from vc.training.phones import extract_phone_durations

        alignments = Path(alignments) if alignments else Path(out).with_suffix(".phones.json")
        refuse_overwrite([out, alignments], overwrite)
        return extract_phone_durations(
            load_config(config, overrides), lists, features_dir, out, alignments, text, workers, progress
        )
    refuse_overwrite([out], overwrite)
    if dtw:
        return extract_dtw_durations(
            load_config(config, overrides), lists, features_dir, out, progress=progress
        )
    return extract_durations(checkpoint, lists, features_dir, out, progress=progress)

"""The durations file: target frames per encoder step for every training utterance, as
vc.training.durations reads them from the attention model's alignments or DTW, and vc.training.phones
from the phones of both recordings. The non-autoregressive
converter trains on it, and teacher forcing replays it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from vc import __version__
from vc.config import Config
from vc.errors import DataError
from vc.fileio import atomic_save, load_marked

FORMAT = "vc-durations"


def empty_step_share(durations: dict[str, torch.Tensor]) -> float:
    """The share of encoder steps, over all utterances, that get no frame."""
    return float(np.mean(np.concatenate([(d == 0).numpy() for d in durations.values()])))


@dataclass
class DurationReport:
    utterances: int
    sharpness: float | None  # mean attention weight on the hard path (None: from DTW or phones)
    zero_fraction: float  # encoder steps given no frame


def save_durations(path, durations: dict[str, torch.Tensor], config: Config, teacher: str, report) -> None:
    payload = {
        "format": FORMAT,
        "vc_version": __version__,
        "teacher": teacher,
        "encoder_reduction_factor": config.model.encoder_reduction_factor,
        "report": dict(vars(report)),
        "durations": durations,
    }
    atomic_save(path, payload)


def load_durations(path: str | Path, encoder_reduction_factor: int) -> dict[str, torch.Tensor]:
    """utt_id -> (N,) int durations; refuses a file made for another encoder frame stacking."""
    payload = load_marked(path, FORMAT, "vc durations file", DataError)
    if payload["encoder_reduction_factor"] != encoder_reduction_factor:
        raise DataError(
            f"{path} counts frames per {payload['encoder_reduction_factor']} stacked source frames, "
            f"the model stacks {encoder_reduction_factor} (model.encoder_reduction_factor)"
        )
    return payload["durations"]


def check_durations(durations: dict[str, torch.Tensor], features, encoder_reduction_factor: int) -> None:
    """Every utterance has durations with one entry per encoder step, summing to its target frames."""
    for utt, (src, tgt) in features.items():
        if utt not in durations:
            raise DataError(f"no durations for utterance {utt}: run vc durations on its list")
        found = durations[utt]
        steps = -(-len(src) // encoder_reduction_factor)
        if len(found) != steps or int(found.sum()) != len(tgt):
            raise DataError(
                f"durations of {utt} do not fit its features ({len(found)} steps summing to "
                f"{int(found.sum())}, expected {steps} summing to {len(tgt)}): run vc durations again"
            )

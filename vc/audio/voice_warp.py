"""Warp an unseen voice toward the source speaker before conversion.

A bdl -> slt model hears bdl's vocal tract in training. A higher voice (a
woman's, a child's) puts its formants and harmonics higher on the frequency
axis, and the encoder loses the words. Vocal tract length normalisation
(VTLN; Lee and Rose 1998) takes out much of that difference with a single
frequency-warp factor per utterance, chosen as the one under which the
input's frames look most like the source speaker's:

- training keeps a codebook of the source speaker's frames (k-means over
  log-mel frames, each frame's mean removed so that level does not count);
- at conversion, for every factor a of a grid the codewords are warped by
  1/a (``warp_table`` below, the warp the augmentation draws), which is
  the same as warping the input by a, and the factor whose codewords lie
  closest to the input's loud frames (bands above ``MIN_HZ``) wins.

The codewords are warped, not the input: interpolating between bands
smooths a frame, and smoothed input frames look closer to the (averaged,
smooth) codewords under every factor but 1, which biased the estimate away
from 1 for the source speaker's own speech.

The source speaker's own speech gets a factor near 1, taken as exactly 1
(``NO_WARP_WITHIN``), so the seen case converts as it did without the warp;
slt's recordings through a bdl model get 0.75-0.92, mostly under 0.85.
All of it is batched tensor work: one (batch, frames, codewords) distance per grid factor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vc.audio.dsp import hz_to_mel, mel_frequencies
from vc.masks import make_pad_mask
from vc.settings.audio import AudioConfig

MIN_HZ = 200.0  # bands below carry F0 and hum, not the vocal tract
CODEBOOK_SIZE = 64
KMEANS_ITERS = 20
MAX_FRAMES = 50_000  # k-means sample: more frames do not move 64 centroids
LOUD_QUANTILE = 0.3  # frames quieter than this quantile of their utterance are pauses
# Warp factors tried at conversion: 41 from 0.75 to 1/0.75, 1.45 % apart, geometric and
# symmetric so that 1.0 (no warp) is on the grid and every factor's inverse is too.
WARP_MIN, WARP_MAX, WARP_STEPS = 0.75, 1 / 0.75, 41
# Estimates this close to 1 are taken as 1: on the source speaker's own eval speech they spread
# over 0.96..1.03 (bdl, ARCTIC), and a voice that near the source's needs no warp.
NO_WARP_WITHIN = 1.035


def kept_bands(audio: AudioConfig) -> np.ndarray:
    """Bool (n_mels,): the bands the codebook compares."""
    centers = mel_frequencies(audio.n_mels + 2, fmin=audio.fmin, fmax=audio.fmax)[1:-1]
    return centers > MIN_HZ


def frame_shapes(mels: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """(..., n_mels) log-mels -> (..., kept bands) with each frame's mean removed: level does not count."""
    shapes = mels[..., keep]
    return shapes - shapes.mean(dim=-1, keepdim=True)


def loud_frames(mels: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """(B, T) bool: valid frames at or above their utterance's LOUD_QUANTILE of mean log-mel."""
    valid = ~make_pad_mask(lens.to(mels.device), mels.shape[1])
    energy = mels.mean(dim=-1).masked_fill(~valid, float("nan"))
    threshold = torch.nanquantile(energy.float(), LOUD_QUANTILE, dim=1, keepdim=True)
    return valid & (energy >= threshold)


def warp_table(audio: AudioConfig, factors: np.ndarray) -> torch.Tensor:
    """(len(factors), n_mels) fractional input bin that each output bin reads under each warp.

    A voice scaled by factor a has at frequency f what the original had at f / a.
    """
    centers_hz = mel_frequencies(audio.n_mels + 2, fmin=audio.fmin, fmax=audio.fmax)[1:-1]
    centers_mel = hz_to_mel(centers_hz)
    bins = np.arange(audio.n_mels, dtype=np.float64)
    rows = [np.interp(hz_to_mel(centers_hz / factor), centers_mel, bins) for factor in factors]
    return torch.tensor(np.stack(rows), dtype=torch.float32)


@dataclass
class VoiceCodebook:
    """The source speaker's frames: (codewords, n_mels) log-mels, each with its mean removed."""

    centroids: np.ndarray

    @classmethod
    def fit(cls, features: list[np.ndarray], audio: AudioConfig, seed: int = 0) -> VoiceCodebook:
        """k-means over the loud frames of the source speaker's training utterances (log-mels)."""
        frames = []
        for feat in features:
            mels = torch.from_numpy(np.asarray(feat, dtype=np.float32))[None]
            loud = loud_frames(mels, torch.tensor([mels.shape[1]]))
            frame = mels[loud]
            frames.append(frame - frame.mean(dim=-1, keepdim=True))
        data = torch.cat(frames)
        # A private generator: fitting must not move the global RNG that training seeds from.
        generator = torch.Generator().manual_seed(seed)
        if len(data) > MAX_FRAMES:
            data = data[torch.randperm(len(data), generator=generator)[:MAX_FRAMES]]
        size = min(CODEBOOK_SIZE, len(data))
        centroids = data[torch.randperm(len(data), generator=generator)[:size]].clone()
        for _ in range(KMEANS_ITERS):
            nearest = torch.cdist(data, centroids).argmin(dim=1)
            sums = torch.zeros_like(centroids).index_add_(0, nearest, data)
            counts = torch.bincount(nearest, minlength=size).unsqueeze(1)
            # An empty cluster keeps its old centroid.
            centroids = torch.where(counts > 0, sums / counts.clamp(min=1), centroids)
        return cls(centroids.numpy())

    def check(self, audio: AudioConfig) -> None:
        """ValueError unless the codewords are log-mel frames of these audio settings."""
        if self.centroids.ndim != 2 or self.centroids.shape[1] != audio.n_mels:
            raise ValueError(
                f"voice codebook has shape {self.centroids.shape}, "
                f"expected (codewords, {audio.n_mels}) for these audio settings"
            )

    def to_dict(self) -> dict[str, list[list[float]]]:
        return {"centroids": self.centroids.tolist()}

    @classmethod
    def from_dict(cls, data: dict) -> VoiceCodebook:
        return cls(np.asarray(data["centroids"], dtype=np.float32))


class VoiceWarp(torch.nn.Module):
    """Estimates each input's warp factor toward the source speaker and applies it to the log-mels."""

    def __init__(self, codebook: VoiceCodebook, audio: AudioConfig):
        super().__init__()
        codebook.check(audio)
        self.factors = np.geomspace(WARP_MIN, WARP_MAX, WARP_STEPS)
        count = len(self.factors)
        table = warp_table(audio, self.factors)  # (F, n_mels) fractional input bins
        low = table.floor().long().clamp(max=audio.n_mels - 2)
        self.register_buffer("low", low, persistent=False)
        self.register_buffer("weight", table - low, persistent=False)
        self.register_buffer("keep", torch.from_numpy(kept_bands(audio)), persistent=False)
        # The codewords warped by 1/a for every factor a, once: the grid is geometric and symmetric
        # around 1, so 1/factors[i] is factors[count - 1 - i].
        centroids = torch.from_numpy(codebook.centroids)[None].expand(count, -1, -1)  # (F, K, n_mels)
        warped = frame_shapes(self.warp(centroids, torch.arange(count - 1, -1, -1)), self.keep)
        self.register_buffer("codewords", warped, persistent=False)  # (F, K, kept)
        near_one = torch.from_numpy(np.abs(np.log(self.factors)) < np.log(NO_WARP_WITHIN))
        self.register_buffer("near_one", near_one, persistent=False)

    def warp(self, mels: torch.Tensor, choice: torch.Tensor) -> torch.Tensor:
        """(B, T, n_mels) log-mels, (B,) grid indices -> the warped log-mels."""
        low = self.low[choice][:, None, :].expand_as(mels)
        weight = self.weight[choice][:, None, :].to(mels.dtype)
        return mels.gather(2, low) * (1 - weight) + mels.gather(2, low + 1) * weight

    def estimate(self, mels: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        """(B, T, n_mels) log-mels, (B,) lengths -> (B,) grid index of each input's best factor."""
        loud = loud_frames(mels, lens).to(mels.dtype)  # (B, T)
        frames = frame_shapes(mels, self.keep).flatten(0, 1)  # (B * T, kept)
        codewords = self.codewords.to(mels.dtype)
        per_factor = []
        for index in range(len(codewords)):  # one batched distance per factor: memory stays the input's
            nearest = torch.cdist(frames, codewords[index]).min(dim=-1).values.view(loud.shape)
            per_factor.append((nearest * loud).sum(dim=1) / loud.sum(dim=1).clamp(min=1))
        best = torch.stack(per_factor).argmin(dim=0)  # (F, B) mean distances -> (B,)
        return torch.where(self.near_one[best], torch.full_like(best, len(codewords) // 2), best)

    def forward(self, mels: torch.Tensor, lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Warp each input toward the source speaker: (warped log-mels, (B,) factors applied)."""
        choice = self.estimate(mels, lens)
        factors = torch.as_tensor(self.factors, device=mels.device)[choice]
        return self.warp(mels, choice), factors

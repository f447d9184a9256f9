"""Source-side augmentation: voices and channels the training pair never had.

A bdl -> slt model only ever hears bdl, so a voice with shorter vocal tract,
higher pitch or another microphone reaches the encoder as inputs it never saw,
and the decoder loses the words. During training each source
utterance is, with probability ``augment.probability``, changed on its log-mel
the way such voices differ, all as batched tensor ops:

- frequency warp: every frequency scaled by a factor drawn log-uniformly in
  [warp_min, warp_max], which moves formants and harmonics together, as a
  longer or shorter vocal tract and another pitch do (VTLP, Jaitly and Hinton
  2013; here on the mel axis, with the warp computed in Hz);
- level and channel: a gain and a linear spectral tilt across the band;
- SpecAugment masks (Park et al. 2019): a few bands and frame spans set to the
  speaker mean, so no single region carries the content alone.

The target side is never touched: the model must still produce slt. A kind whose input is the
target's own frames (the recognition-synthesis converter: ModelKind.augments "target") has what it
hears of them augmented instead (Batch.heard), the frames it must predict kept: it learns to make the
target's voice from content read in other-sounding voices (docs/ablation.md, "The recognizer hears
the target augmented"). The phone recognizer itself (vc/training/phonetic.py) hears a share of its
training crops, both speakers', augmented the same way (augment.recognizer_probability), each through
its own speaker's statistics (docs/ablation.md, "The recognizer hears other voices").
"""

from __future__ import annotations

import numpy as np
import torch

from vc.audio import FeatureStats
from vc.audio.voice_warp import warp_table
from vc.masks import make_pad_mask
from vc.settings.audio import AudioConfig
from vc.settings.training import AugmentConfig

WARP_GRID = 64  # warp factors are drawn from this many log-spaced values: one gather table


class SourceAugment:
    """Augments a batch of normalised source log-mels (B, T, n_mels) in place of the originals.

    ``src_stats``: the statistics the batch was normalised by; several (one per speaker) when rows of
    several speakers share a batch (the phone recognizer's: both speakers', augment.recognizer_probability),
    each row's named by ``speakers`` at the call. ``probability`` overrides augment.probability."""

    def __init__(
        self,
        augment: AugmentConfig,
        audio: AudioConfig,
        src_stats: FeatureStats | list[FeatureStats],
        probability: float | None = None,
    ):
        self.config = augment
        self.probability = augment.probability if probability is None else probability
        factors = np.geomspace(augment.warp_min, augment.warp_max, WARP_GRID)
        self.table = warp_table(audio, factors)
        speakers = src_stats if isinstance(src_stats, list) else [src_stats]
        self.mean = torch.from_numpy(np.stack([stats.mean for stats in speakers]))  # (speakers, n_mels)
        self.std = torch.from_numpy(np.stack([stats.std for stats in speakers]))
        # A dB change of the magnitude is this much in log_base units.
        self.per_db = 1.0 / (20.0 * np.log10(audio.log_base))

    def __call__(
        self, src: torch.Tensor, src_lens: torch.Tensor, speakers: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(B, T, n_mels) normalised source, (B,) lengths, (B,) each row's statistics (an index into
        src_stats; None: the first) -> the augmented batch, padding kept at 0."""
        c = self.config
        batch, frames, n_mels = src.shape
        device = src.device
        chosen = torch.rand(batch, device=device) < self.probability
        if not chosen.any():
            return src
        which = torch.zeros(batch, dtype=torch.long) if speakers is None else speakers.long().cpu()
        mean = self.mean[which, None, :].to(device)  # (B, 1, n_mels)
        std = self.std[which, None, :].to(device)
        raw = src * std + mean  # back to log-mel: warps and gains act on the real spectrum

        # Frequency warp: linear interpolation between the two input bins each output bin reads.
        rows = self.table.to(device)[torch.randint(WARP_GRID, (batch,), device=device)]  # (B, n_mels)
        low = rows.floor().long().clamp(max=n_mels - 2)
        weight = (rows - low).unsqueeze(1)  # (B, 1, n_mels)
        low = low.unsqueeze(1).expand(batch, frames, n_mels)
        warped = raw.gather(2, low) * (1 - weight) + raw.gather(2, low + 1) * weight

        # Level and channel: gain plus a tilt from -tilt/2 at the lowest band to +tilt/2 at the highest.
        gain = (torch.rand(batch, 1, 1, device=device) * 2 - 1) * c.gain_db
        tilt = (torch.rand(batch, 1, 1, device=device) * 2 - 1) * c.tilt_db
        slope = torch.linspace(-0.5, 0.5, n_mels, device=device)
        warped = warped + (gain + tilt * slope) * self.per_db

        augmented = (warped - mean) / std
        augmented = augmented.masked_fill(self._masks(src_lens, frames, n_mels, device), 0.0)
        valid = ~make_pad_mask(src_lens.to(device), frames)
        augmented = augmented * valid.unsqueeze(-1)  # padding stays zero, as collate left it
        return torch.where(chosen[:, None, None], augmented, src)

    def _masks(self, src_lens: torch.Tensor, frames: int, n_mels: int, device) -> torch.Tensor:
        """(B, T, n_mels) True where a SpecAugment band or frame span is masked."""
        c = self.config
        lens = src_lens.to(device)
        batch = len(lens)

        def spans(count: int, max_width: int, extent: torch.Tensor, size: int) -> torch.Tensor:
            # (B, size): True inside any of `count` spans of width < max_width starting in [0, extent).
            if count == 0 or max_width == 0:
                return torch.zeros(batch, size, dtype=torch.bool, device=device)
            width = torch.randint(max_width + 1, (batch, count), device=device)
            start = (torch.rand(batch, count, device=device) * (extent[:, None] - width).clamp(min=1)).long()
            index = torch.arange(size, device=device)[None, None, :]
            inside = (index >= start[..., None]) & (index < (start + width)[..., None])
            return inside.any(dim=1)

        bands = spans(c.freq_masks, c.freq_mask_width, torch.full_like(lens, n_mels), n_mels)
        times = spans(c.time_masks, c.time_mask_width, lens, frames)
        return bands[:, None, :] | times[:, :, None]

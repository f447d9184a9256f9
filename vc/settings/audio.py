"""The audio section: the signal's features (vc/audio/), stored in every checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from vc.errors import ConfigError
from vc.settings.section import Section


@dataclass
class AudioConfig(Section):
    sample_rate: int = 16000
    n_fft: int = 1024  # STFT size (64 ms), as ESPnet's and seq2seq-vc's ARCTIC recipes
    # The analysis window (Hann), 46 ms: the HiFi-GAN generator's. Through HiFi-GAN it kept more words and
    # more of the voice than the design's 1024 (64 ms), at a little of Griffin-Lim's sound; adopted with the
    # recognition-synthesis converter (docs/ablation.md, "Adopted settings").
    win_length: int = 736
    hop_length: int = 256  # 16 ms frame shift
    n_mels: int = 80
    fmin: float = 80.0
    fmax: float = 7600.0
    # Magnitude (1.0) or power (2.0) spectrogram under the mel filterbank.
    spectrogram_power: float = 1.0
    # log_base(max(mel, log_floor)); both stored in every checkpoint.
    log_base: float = 10.0
    log_floor: float = 1e-10
    # Leading/trailing silence quieter than peak - trim_top_db is cut (0 = off).
    trim_top_db: float = 30.0
    # Inputs longer than this are refused with a clear error (seconds).
    max_duration: float = 60.0

    NAME: ClassVar[str] = "audio"
    POSITIVE: ClassVar[tuple[str, ...]] = (
        "sample_rate", "n_fft", "win_length", "hop_length", "n_mels", "max_duration"
    )  # fmt: skip

    def check(self) -> None:
        if self.win_length > self.n_fft:
            raise ConfigError(f"audio.win_length ({self.win_length}) must not exceed audio.n_fft")

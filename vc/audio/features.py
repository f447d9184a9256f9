"""Audio I/O and features: read, mono, resample, trim, log-mel, normalisation.

The log-mel follows the ARCTIC recipes of ESPnet and seq2seq-vc so numbers
compare: magnitude STFT (zero-padded, centred frames), Slaney mel filterbank
(`librosa.filters.mel` defaults, computed in vc/audio/dsp.py), log_base(max(mel, log_floor)).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import torch

from vc.audio.dsp import mel_filterbank, speech_bounds
from vc.errors import AudioError
from vc.fileio import atomic_open
from vc.masks import make_pad_mask
from vc.settings.audio import AudioConfig

SILENCE_PEAK = 1e-4  # a signal whose peak is below this (about -80 dBFS) is silent


def read_audio(path: str | Path, config: AudioConfig) -> np.ndarray:
    """Read any file soundfile reads, mix to mono, resample, trim silence.

    Returns float32 samples at ``config.sample_rate``. Every way a file can be
    unusable raises AudioError with a one-line message naming the file.
    """
    return read_speech(path, config).wave


@dataclass(frozen=True)
class Speech:
    """A recording at the model's rate cut to its speech (audio.trim_top_db), and how many samples of
    silence were cut before (``lead``) and after it (``tail``): a conversion puts them back."""

    wave: np.ndarray
    lead: int = 0
    tail: int = 0


def read_speech(path: str | Path, config: AudioConfig) -> Speech:
    """read_audio's speech with the silence it cut; errors as read_audio's."""
    wave, sample_rate = read_samples(path, config)
    return prepare_speech(wave, sample_rate, config, name=str(path))


def read_samples(
    path: str | Path, config: AudioConfig, check_duration: bool = True
) -> tuple[np.ndarray, int]:
    """A file's mono float32 samples at its own rate, untrimmed; errors as read_audio's.
    ``check_duration``: refuse one longer than audio.max_duration before reading it."""
    path = Path(path)
    if not path.exists():
        raise AudioError(f"input not found: {path}")
    if path.is_dir():
        raise AudioError(f"{path} is a folder, expected an audio file")
    try:
        info = sf.info(str(path))
    except Exception as exc:  # soundfile raises several types for non-audio
        raise AudioError(f"cannot read {path} as audio: {_first_line(exc)}") from None
    if info.frames == 0:
        raise AudioError(f"{path} has no samples")
    if check_duration:
        _check_duration(info.frames / info.samplerate, config, str(path))  # before reading a huge file
    try:
        wave, sample_rate = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:
        raise AudioError(f"cannot read {path} as audio: {_first_line(exc)}") from None
    return wave.mean(axis=1), sample_rate


def duration_seconds(path: str | Path) -> float:
    """A readable audio file's length in seconds (0 when soundfile cannot tell)."""
    try:
        info = sf.info(str(path))
    except Exception:
        return 0.0
    return info.frames / info.samplerate if info.samplerate else 0.0


def prepare_wave(
    wave: np.ndarray, sample_rate: int, config: AudioConfig, name: str = "input", whole: bool = False
) -> np.ndarray:
    """Validate a mono or (samples, channels) array, resample and trim it.

    ``whole``: a long recording for vc.inference.long_form, resampled but neither trimmed nor held
    to audio.max_duration.
    """
    if not whole:
        return prepare_speech(wave, sample_rate, config, name).wave
    wave = _resampled(wave, sample_rate, config, name, whole=True)
    _require_sound(wave.size, config, name)
    return wave


def prepare_speech(wave: np.ndarray, sample_rate: int, config: AudioConfig, name: str = "input") -> Speech:
    """prepare_wave's trimmed samples with the silence cut before and after them."""
    wave = _resampled(wave, sample_rate, config, name, whole=False)
    start, end = 0, wave.size
    if config.trim_top_db > 0:
        start, end = speech_bounds(
            wave, top_db=config.trim_top_db, frame_length=config.win_length, hop_length=config.hop_length
        )
    _require_sound(end - start, config, name)
    return Speech(wave[start:end], start, wave.size - end)


def _require_sound(samples: int, config: AudioConfig, name: str) -> None:
    """At least one analysis window of sound, or one AudioError line."""
    if samples < config.win_length:
        raise AudioError(
            f"{name} is too short: {samples} samples of sound, at least {config.win_length} needed"
        )


def _resampled(wave: np.ndarray, sample_rate: int, config: AudioConfig, name: str, whole: bool) -> np.ndarray:
    """Checked float32 mono samples at the model's rate (a non-whole one held to audio.max_duration)."""
    wave = np.asarray(wave, dtype=np.float32)
    if wave.ndim == 2:
        wave = wave.mean(axis=1)
    if wave.ndim != 1:
        raise AudioError(f"{name}: expected a 1-D or (samples, channels) array, got shape {wave.shape}")
    if wave.size == 0:
        raise AudioError(f"{name} has no samples")
    if not np.isfinite(wave).all():
        raise AudioError(f"{name} contains NaN or infinite samples")
    if np.abs(wave).max() < SILENCE_PEAK:
        raise AudioError(f"{name} is silent")
    if not whole:
        _check_duration(wave.size / sample_rate, config, name)
    if sample_rate != config.sample_rate:
        import librosa  # only here: importing it costs a conversion's cold start about a second

        wave = librosa.resample(wave, orig_sr=sample_rate, target_sr=config.sample_rate)
    return wave.astype(np.float32)


def _check_duration(seconds: float, config: AudioConfig, name: str) -> None:
    if seconds > config.max_duration:
        raise AudioError(
            f"{name} lasts {seconds:.0f} s, more than audio.max_duration={config.max_duration:.0f} s; "
            "split it at pauses first"
        )


AUDIO_FORMATS = {".wav": ("WAV", "PCM_16"), ".flac": ("FLAC", "PCM_16"), ".ogg": ("OGG", "VORBIS")}


def audio_files(folder: str | Path) -> list[Path]:
    """The audio files (AUDIO_FORMATS suffixes, any case) directly in a folder, sorted by name.

    The one folder lister: conversion inputs, scoring folders and training recordings all use it.
    """
    return sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in AUDIO_FORMATS and p.is_file())


def encode_audio(wave: np.ndarray, sample_rate: int, suffix: str = ".wav", name: str = "audio") -> bytes:
    """The bytes of a wav, flac or ogg file (by ``suffix``) holding ``wave`` clipped to [-1, 1]."""
    if suffix.lower() not in AUDIO_FORMATS:
        raise AudioError(f"cannot write {name}: the name must end in {', '.join(AUDIO_FORMATS)}")
    audio_format, subtype = AUDIO_FORMATS[suffix.lower()]
    encoded = io.BytesIO()
    try:
        sf.write(encoded, np.clip(wave, -1.0, 1.0), sample_rate, format=audio_format, subtype=subtype)
    except Exception as exc:  # soundfile raises several types
        raise AudioError(f"cannot encode {name}: {_first_line(exc)}") from None
    return encoded.getvalue()


def write_audio(path: str | Path, wave: np.ndarray, sample_rate: int) -> None:
    """Write wav, flac or ogg (by the suffix) atomically.

    The file is encoded in memory first and then written as plain bytes: soundfile
    writing to a Python file goes through cffi callbacks, where a full disk prints
    "Exception ignored from cffi callback" tracebacks and ends in a bare
    AssertionError. Plain bytes fail with one OSError, which atomic_open turns into a WriteError.
    """
    path = Path(path)
    encoded = encode_audio(wave, sample_rate, path.suffix, str(path))
    with atomic_open(path) as out:
        out.write(encoded)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def mel_basis(config: AudioConfig) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) Slaney-scale, Slaney-normalised filterbank."""
    return mel_filterbank(
        config.sample_rate, n_fft=config.n_fft, n_mels=config.n_mels, fmin=config.fmin, fmax=config.fmax
    )


class LogMel(torch.nn.Module):
    """Batched log-mel spectrogram with torch.stft; runs wherever its buffers are.

    Shapes:
        waves: (B, samples), zero-padded; wave_lens: (B,)
        returns: (B, frames, n_mels) and frame lengths (B,)
    """

    def __init__(self, config: AudioConfig):
        super().__init__()
        self.config = config
        self.register_buffer("window", torch.hann_window(config.win_length), persistent=False)
        self.register_buffer("basis", torch.from_numpy(mel_basis(config)), persistent=False)

    def magnitude(self, waves: torch.Tensor) -> torch.Tensor:
        """(B, samples) -> (B, n_fft // 2 + 1, frames) magnitude (power 1)."""
        c = self.config
        spec = torch.stft(
            waves,
            n_fft=c.n_fft,
            hop_length=c.hop_length,
            win_length=c.win_length,
            window=self.window,
            center=True,
            pad_mode="constant",
            return_complex=True,
        )
        return spec.abs()

    def forward(self, waves: torch.Tensor, wave_lens: torch.Tensor | None = None):
        c = self.config
        spec = self.magnitude(waves) ** c.spectrogram_power
        mel = torch.matmul(self.basis, spec).transpose(1, 2)  # (B, frames, n_mels)
        logmel = torch.log(mel.clamp(min=c.log_floor)) / np.log(c.log_base)
        if wave_lens is None:
            wave_lens = torch.full((waves.shape[0],), waves.shape[1], device=waves.device)
        frame_lens = wave_lens // c.hop_length + 1
        return logmel, frame_lens


def logmel_numpy(wave: np.ndarray, config: AudioConfig, extractor: LogMel | None = None) -> np.ndarray:
    """One utterance -> (frames, n_mels) float32 log-mel on the CPU."""
    extractor = extractor or LogMel(config)
    with torch.no_grad():
        mel, _ = extractor(torch.from_numpy(wave)[None])
    return mel[0].numpy()


@dataclass
class FeatureStats:
    """Per-speaker mean and standard deviation of log-mel bands (training set only).

    ``utterance_spread``: how far one utterance's mean strays from the speaker's, on the
    speaker's own utterances (the mean over bands of its variance, in units of each band's
    deviation); what ``normalize_source``'s "auto" mode expects of the source speaker's speech.
    None in statistics from before it existed.
    """

    mean: np.ndarray
    std: np.ndarray
    utterance_spread: float | None = None

    @classmethod
    def from_features(cls, features: list[np.ndarray]) -> FeatureStats:
        if not features:
            raise AudioError("cannot compute statistics from zero utterances")
        total = np.zeros(features[0].shape[1], dtype=np.float64)
        total_sq = np.zeros_like(total)
        count = 0
        for feat in features:
            total += feat.sum(axis=0)
            total_sq += np.square(feat, dtype=np.float64).sum(axis=0)
            count += feat.shape[0]
        mean = total / count
        std = np.sqrt(np.maximum(total_sq / count - mean**2, 1e-8))
        deviations = np.stack([(feat.mean(axis=0, dtype=np.float64) - mean) / std for feat in features])
        spread = float(np.mean(np.square(deviations), axis=0).mean())
        return cls(mean.astype(np.float32), std.astype(np.float32), spread)

    def normalize(self, feat):
        mean, std = self._like(feat)
        return (feat - mean) / std

    def normalize_source(
        self, feats: torch.Tensor, lens: torch.Tensor, mode: str = "speaker"
    ) -> torch.Tensor:
        """(B, T, n_mels) log-mels padded, (B,) lengths -> an encoder's input (padding 0), by
        inference.source_normalization's ``mode``:

        - "speaker": ``normalize``, the source speaker's mean and deviation;
        - "utterance": each utterance's own per-band mean instead of the speaker's, so a voice or
          microphone with another average spectrum arrives centred as the speaker's speech does;
        - "auto": the speaker's mean moved toward the utterance's by the share of the utterance's
          deviation that exceeds ``utterance_spread`` (positive-part James-Stein shrinkage): the
          source speaker's own speech stays about as "speaker" has it, a voice whose mean lies far
          off is centred nearly as "utterance" would. Statistics without a spread: "speaker".
        """
        valid = (~make_pad_mask(lens.to(feats.device), feats.shape[1])).unsqueeze(-1)
        normed = self.normalize(feats)
        if mode == "speaker" or (mode == "auto" and self.utterance_spread is None):
            return normed * valid
        deviation = (normed * valid).sum(dim=1, keepdim=True) / lens[:, None, None].to(feats.dtype)
        if mode == "auto":
            strays = deviation.square().mean(dim=-1, keepdim=True).clamp(min=1e-12)
            deviation = deviation * (1 - self.utterance_spread / strays).clamp(min=0)
        return (normed - deviation) * valid

    def denormalize(self, feat):
        mean, std = self._like(feat)
        return feat * std + mean

    def _like(self, feat):
        if isinstance(feat, torch.Tensor):
            return (
                torch.as_tensor(self.mean, dtype=feat.dtype, device=feat.device),
                torch.as_tensor(self.std, dtype=feat.dtype, device=feat.device),
            )
        return self.mean, self.std

    def to_dict(self) -> dict:
        spread = {} if self.utterance_spread is None else {"utterance_spread": self.utterance_spread}
        return {"mean": self.mean.tolist(), "std": self.std.tolist(), **spread}

    @classmethod
    def from_dict(cls, data: dict) -> FeatureStats:
        return cls(
            np.asarray(data["mean"], dtype=np.float32),
            np.asarray(data["std"], dtype=np.float32),
            data.get("utterance_spread"),
        )

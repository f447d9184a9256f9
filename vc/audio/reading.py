"""Decoding with bounded memory: a file's samples, mixed to mono block by block, never more than a limit.

A compressed file can be small and decode to hours (a 1 MB FLAC of silence holds two hours at 48 kHz,
1.3 GB as float32), and a header can lie or say nothing about the length. So the duration the header
gives is checked before any sample is decoded, and decoding then stops one frame past the limit whatever
the header said: at most max_seconds x rate + 1 frames, each block mixed to mono as it arrives.
"""

from __future__ import annotations

import numpy as np
import soundfile as sf

from vc.errors import AudioError, AudioTooLong

MAX_SAMPLE_RATE = 192_000  # the highest rate of common audio; above it a header is lying or not speech
MAX_CHANNELS = 8  # FLAC's most; more would multiply the decoding work of every frame
UNKNOWN_FRAMES = 2**63 - 1  # what libsndfile reports when the header does not give the length
BLOCK_SAMPLES = 1 << 18  # samples (frames x channels) decoded at a time: 1 MB of float32


def read_bounded(
    source, max_seconds: float | None = None, name: str = "the recording"
) -> tuple[np.ndarray, int]:
    """A file's (path or binary file object) mono float32 samples and rate, decoding at most
    ``max_seconds`` of it (None: no limit).

    AudioTooLong when it lasts longer (from the header when it says, else after limit + 1 frames);
    AudioError when soundfile cannot read it or its rate or channel count is beyond any recording's.
    """
    try:
        with sf.SoundFile(source) as f:
            rate, channels, frames = f.samplerate, f.channels, f.frames
            _check_layout(rate, channels, name)
            limit = None if max_seconds is None else int(max_seconds * rate)
            if limit is not None and UNKNOWN_FRAMES > frames > limit:
                raise AudioTooLong(f"{name} is {frames / rate:.0f} s long; the limit is {max_seconds:g} s")
            return _decode(f, limit, max_seconds, name), rate
    except AudioError:
        raise
    except Exception:  # soundfile and libsndfile raise several types for what they cannot decode
        raise AudioError(f"{name} is not a readable audio file (wav, flac, ogg, mp3, ...)") from None


def _check_layout(rate: int, channels: int, name: str) -> None:
    if not 0 < rate <= MAX_SAMPLE_RATE:
        raise AudioError(f"{name} has a sample rate of {rate} Hz; at most {MAX_SAMPLE_RATE} Hz is read")
    if not 0 < channels <= MAX_CHANNELS:
        raise AudioError(f"{name} has {channels} channels; at most {MAX_CHANNELS} are read")


def _decode(f: sf.SoundFile, limit: int | None, max_seconds: float | None, name: str) -> np.ndarray:
    """Mono blocks until the end, or AudioTooLong once more than ``limit`` frames came."""
    block = max(1, BLOCK_SAMPLES // f.channels)
    parts, count = [], 0
    while True:
        want = block if limit is None else min(block, limit + 1 - count)
        samples = f.read(want, dtype="float32", always_2d=True)
        if len(samples) == 0:
            break
        parts.append(samples.mean(axis=1) if f.channels > 1 else samples[:, 0])
        count += len(samples)
        if limit is not None and count > limit:
            raise AudioTooLong(f"{name} is longer than the limit of {max_seconds:g} s")
        if len(samples) < want:
            break
    return np.concatenate(parts) if parts else np.zeros(0, np.float32)

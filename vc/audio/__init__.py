"""The signal path's ends: audio in and out, log-mel features and their statistics, DSP helpers and
the voice warp (voice_warp.py). The way back from log-mels to audio is the vocoders' (vc/vocoders/)."""

from vc.audio.features import (
    AUDIO_FORMATS,
    FeatureStats,
    LogMel,
    Speech,
    audio_files,
    encode_audio,
    logmel_numpy,
    mel_basis,
    prepare_speech,
    prepare_wave,
    read_audio,
    read_speech,
    write_audio,
)

__all__ = [
    "AUDIO_FORMATS",
    "FeatureStats",
    "LogMel",
    "audio_files",
    "encode_audio",
    "logmel_numpy",
    "mel_basis",
    "Speech",
    "prepare_speech",
    "prepare_wave",
    "read_audio",
    "read_speech",
    "write_audio",
]

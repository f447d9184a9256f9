"""The examples a HiFi-GAN generator is fine-tuned on (vc.training.hifigan): one NPZ per target recording.

``wave``: the recording at the model's sample rate (int16; ``sample_rate``), which the trainer resamples
to the generator's;
``mel``: what the HiFi-GAN vocoder path (vc/vocoders/hifigan.py: the checkpoint's mel -> linear network
and the bridge) makes of the model's teacher-forced prediction of that recording, after its post-filter,
at the generator's frames (float16). With ``natural`` no ``mel``: the trainer reads the wave's own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from vc.audio import LogMel, read_audio
from vc.config import Config
from vc.errors import DataError
from vc.fileio import atomic_open
from vc.inference.converter import Converter
from vc.inference.teacher_forcing import teacher_forced
from vc.pairs import read_pair_list
from vc.progress import progress as show_progress  # `progress` is a parameter name here


def write_examples(
    pair_lists: list[str | Path],
    checkpoint: str | Path | None,
    out_dir: str | Path,
    natural: bool = False,
    vocoder_checkpoint: str | Path | None = None,
    progress: bool = True,
) -> int:
    """One example per pair of ``pair_lists`` (its target) in ``out_dir``, named by utterance; returns the count.
    ``checkpoint``: the conversion model (None only with ``natural``: the default audio settings);
    ``vocoder_checkpoint``: the generator whose mel the model's are bridged to (default: the bundled one)."""
    pairs = [pair for path in pair_lists for pair in read_pair_list(path)]
    if not pairs:
        raise DataError("no pairs to make HiFi-GAN examples of")
    if checkpoint is None and not natural:
        raise DataError("HiFi-GAN examples of the model's predictions need its checkpoint")
    converter = None
    if checkpoint is not None:
        converter = Converter.from_checkpoint(
            checkpoint, device="cpu", vocoder="hifigan", vocoder_checkpoint=vocoder_checkpoint
        )
    audio = Config().audio if converter is None else converter.config.audio
    files = [pair.target for pair in pairs]
    waves = [read_audio(path, audio) for path in files]
    mels = None
    if not natural:
        extractor = LogMel(audio)
        natural_mels = [extractor(torch.from_numpy(w)[None])[0][0] for w in waves]
        mels = teacher_forced(converter, pair_lists, files, natural_mels, audio, progress)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for k in show_progress(range(len(pairs)), desc="HiFi-GAN examples", unit="file", disable=not progress):
        entries = {"sample_rate": np.int32(audio.sample_rate)}
        if mels is not None:
            mel, source = mels[k]
            lens = torch.tensor([len(mel)])
            with torch.no_grad():
                assert converter is not None
                if converter.postfilter is not None:
                    mel = converter.postfilter(mel[None], lens, None if source is None else source[None])[0]
                theirs = converter.vocoder.hifigan_mel(mel[None], lens)[0]
            entries["mel"] = theirs.numpy().astype(np.float16)
        entries["wave"] = np.round(np.clip(waves[k], -1, 1) * 32767).astype(np.int16)
        with atomic_open(out_dir / f"{pairs[k].utt_id}.npz") as handle:
            np.savez_compressed(handle, **entries)
    return len(pairs)

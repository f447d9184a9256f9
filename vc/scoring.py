"""The Griffin-Lim ceiling for `vc score`: references through our own mel + Griffin-Lim path.

Scoring these resynthesised references against the originals shows the best
MCD any model can reach with this vocoder, printed beside the model's score.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from tqdm import tqdm

from vc.audio import LogMel, read_audio, write_audio
from vc.config import Config
from vc.metrics import _audio_files
from vc.vocoder import GriffinLimVocoder


@contextlib.contextmanager
def resynthesize_folder(
    reference_dir: str | Path, utt_ids: Iterable[str], config: Config, progress: bool = True
) -> Iterator[Path]:
    """Yield a temporary folder holding <utt>.wav = Griffin-Lim(log-mel(reference <utt>))."""
    references = _audio_files(Path(reference_dir), "reference")
    features = LogMel(config.audio)
    vocoder = GriffinLimVocoder(config.audio, config.vocoder)
    generator = torch.Generator().manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="vc-ceiling-") as folder:
        for utt in tqdm(sorted(utt_ids), desc="Griffin-Lim ceiling", unit="utt", disable=not progress):
            wave = torch.from_numpy(read_audio(references[utt], config.audio))[None]
            with torch.no_grad():
                mel, mel_lens = features(wave)
                out, out_lens = vocoder(mel, mel_lens, generator=generator)
            write_audio(
                Path(folder) / f"{utt}.wav", out[0, : int(out_lens[0])].numpy(), config.audio.sample_rate
            )
        yield Path(folder)

"""The hifigan vocoder: a pretrained HiFi-GAN V1 generator (Kong, Kim and Bae, NeurIPS 2020) behind a
bridge from our magnitude to its mel. Its settings are the vocoder.hifigan section (HifiganConfig in
vc/settings/vocoders.py).

generator.py       the generator network, written from the paper (weight norm folded on loading)
weights.py         generator checkpoints in jik876/hifi-gan's format; the [neural] extra's universal one
onnx_generator.py  the generator as an ONNX graph for onnxruntime, written from its modules
vocoder.py         the bridge, chunked generation in torch or onnxruntime, resampling to our rate
"""

from __future__ import annotations

import torch

from vc.settings.audio import AudioConfig
from vc.settings.vocoders import VocoderConfig
from vc.vocoders.hifigan.vocoder import HifiganVocoder
from vc.vocoders.hifigan.weights import load_generator


def build(
    audio: AudioConfig, vocoder: VocoderConfig, mel2linear: torch.nn.Module | None, device
) -> HifiganVocoder:
    """The registry's builder (vc.vocoders.VOCODERS): vocoder.hifigan.checkpoint's generator (empty: the
    weights package's universal one) on ``device``."""
    generator, signal = load_generator(vocoder.hifigan.checkpoint or None, device)
    return HifiganVocoder(audio, vocoder.hifigan, generator, signal, mel2linear)


__all__ = ["HifiganVocoder", "build"]

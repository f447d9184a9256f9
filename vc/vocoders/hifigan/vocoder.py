"""The HiFi-GAN vocoder: our log-mel -> linear magnitude -> HiFi-GAN's mel -> its generator -> our rate.

The bridge needs no training. A generator hears the natural-log mel of its own STFT (for the bundled
V1 generators: 22.05 kHz, n_fft 1024, hop 256, 80 bands from 0 to 8 kHz, floor 1e-5). Our magnitude
(the same network or filterbank inverse Griffin-Lim reads, vc.vocoders.magnitude.Magnitude) covers 0 to
sample_rate / 2 at our frame rate; HiFi-GAN's filterbank, read off at our bins' frequencies (linear
interpolation between its bins), gives its mel at our frames, and a linear interpolation in time of
the log-mel moves them onto its frame times. No gain is applied (see bridge_basis). The generator's
wave is resampled to ours.

Where vocoder.hifigan.precision says so ("auto": on a CPU with bfloat16 arithmetic in hardware, see
use_bfloat16) the generator computes in bfloat16 up to its last level: that level, at the output's
rate, stays in float32, as in bfloat16 it lays a noise floor over the spectrum (+1 dB on the log
spectrum's mean, MCD +0.29 dB on the eval set; docs/ablation.md, "The HiFi-GAN generator in bfloat16").

Where vocoder.hifigan.runtime says so ("auto": in float32 on a CPU, with onnxruntime installed)
onnxruntime runs the same generator (onnx_generator.py), faster there.

Every input is vocoded in chunks with the generator's receptive field as context on each side
(generator.receptive_frames): memory is bounded and the samples are the whole input's between
silences. With torch, chunks of vocoder.hifigan.chunk_frames, all through one window shape (its
convolutions reuse what their first call set up); with onnxruntime, as few equal chunks of at most
vocoder.hifigan.onnx_chunk_frames as fit (it reads less context so).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from scipy.signal import resample_poly

from vc.audio.features import mel_filterbank
from vc.errors import ConfigError
from vc.packages import missing
from vc.settings.audio import AudioConfig
from vc.settings.vocoders import HifiganConfig
from vc.vocoders.hifigan.generator import HifiganGenerator, receptive_frames
from vc.vocoders.hifigan.onnx_generator import RUNTIME_PACKAGE, OnnxGenerator
from vc.vocoders.hifigan.weights import HifiganSignal
from vc.vocoders.magnitude import Magnitude

LOG_FLOOR = 1e-5  # HiFi-GAN's: log(clamp(mel, min=1e-5))


def bridge_basis(audio: AudioConfig, signal: HifiganSignal) -> np.ndarray:
    """(signal.n_mels, audio.n_fft // 2 + 1): HiFi-GAN's filterbank applied to our magnitude's bins.

    Its filters over its own bins, re-read at our bins' frequencies by linear interpolation; a
    filter reaching above our Nyquist frequency sees nothing there (we have no energy there). With
    windows of equal length in samples a harmonic's peak spans as many bins at either rate with the
    same magnitudes, so the weights are not rescaled for our narrower bins; noise, spread over more
    of them, reads higher. On slt's speech the bridged mel sits 0.22 nats above HiFi-GAN's own, and a
    gain removing it moved DNSMOS by +0.007 (docs/ablation.md, "A neural vocoder"): none is applied.
    """
    theirs = mel_filterbank(
        signal.sample_rate, n_fft=signal.n_fft, n_mels=signal.n_mels, fmin=signal.fmin, fmax=signal.fmax
    )
    their_freqs = np.linspace(0, signal.sample_rate / 2, signal.n_fft // 2 + 1)
    our_freqs = np.linspace(0, audio.sample_rate / 2, audio.n_fft // 2 + 1)
    return np.stack([np.interp(our_freqs, their_freqs, row, right=0.0) for row in theirs]).astype(np.float32)


def frame_positions(frames: int, audio: AudioConfig, signal: HifiganSignal) -> torch.Tensor:
    """Where each of HiFi-GAN's frames covering ``frames`` of ours lies on our frame axis (its count: HiFi-GAN's frames).

    Our frame t is centred on sample t * hop (LogMel: centred STFT); HiFi-GAN's frame u, whose
    samples are u * hop' .. (u + 1) * hop', on the middle of them.
    """
    seconds = frames * audio.hop_length / audio.sample_rate
    count = max(1, math.ceil(seconds * signal.sample_rate / signal.hop_length))
    centres = (torch.arange(count, dtype=torch.float64) + 0.5) * signal.hop_length / signal.sample_rate
    return (centres * audio.sample_rate / audio.hop_length).clamp(max=frames - 1).float()


def interpolate_frames(values: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """(frames, F) values read at fractional frame ``positions`` (U,) by linear interpolation -> (U, F)."""
    low = positions.floor().long().clamp(max=values.shape[0] - 1)
    high = (low + 1).clamp(max=values.shape[0] - 1)
    weight = (positions - low.to(positions.dtype)).unsqueeze(1).to(values.dtype)
    return values[low] * (1 - weight) + values[high] * weight


def bfloat16_hardware() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AMX tiles or AVX512-BF16), as oneDNN's
    bfloat16 convolutions need to be fast; elsewhere they are emulated, slower than float32."""
    checks = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")  # torch.cpu's own probes
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def use_bfloat16(precision: str, runtime: str, device: torch.device) -> bool:
    """vocoder.hifigan.precision on ``device``: bfloat16 when asked, or "auto" on a CPU with the hardware
    unless vocoder.hifigan.runtime names onnxruntime (which computes in float32: the named choice wins)."""
    if precision == "bfloat16":
        return True
    return precision == "auto" and runtime != "onnxruntime" and device.type == "cpu" and bfloat16_hardware()


def use_onnxruntime(runtime: str, bfloat16: bool, device: torch.device) -> bool:
    """vocoder.hifigan.runtime for a generator computing on ``device`` (in bfloat16 or not): onnxruntime
    when asked (a CPU in float32 only: a ConfigError elsewhere), or "auto" where it can run it."""
    if runtime == "onnxruntime":
        if bfloat16 or device.type != "cpu":
            where = "in bfloat16" if bfloat16 else f"on {device.type}"
            raise ConfigError(
                f"vocoder.hifigan.runtime onnxruntime runs the generator on a CPU in float32, not {where}"
            )
        return True
    return runtime == "auto" and not bfloat16 and device.type == "cpu" and not missing(RUNTIME_PACKAGE)


class HifiganVocoder(torch.nn.Module):
    """Log-mel (as made by vc.audio.LogMel) to waveform with a HiFi-GAN generator.

    Shapes:
        logmel: (B, frames, n_mels); frame_lens: (B,)
        returns: waves (B, frames * hop_length) at audio.sample_rate, zero past each item, and wave_lens (B,)
    """

    def __init__(
        self,
        audio: AudioConfig,
        settings: HifiganConfig,
        generator: HifiganGenerator,
        signal: HifiganSignal,
        mel2linear: torch.nn.Module | None = None,
    ):
        super().__init__()
        if generator.hop_length != signal.hop_length:
            raise ConfigError(
                f"the HiFi-GAN generator makes {generator.hop_length} samples per frame, its settings say "
                f"hop_size {signal.hop_length}"
            )
        self.audio = audio
        self.settings = settings
        self.signal = signal
        self.magnitude = Magnitude(audio, mel2linear)
        self.generator = generator.eval()
        self.context = receptive_frames(generator)
        self.register_buffer("bridge", torch.from_numpy(bridge_basis(audio, signal)), persistent=False)
        ratio = math.gcd(audio.sample_rate, signal.sample_rate)
        self.resample = (audio.sample_rate // ratio, signal.sample_rate // ratio)  # (up, down)
        self._onnx: OnnxGenerator | None = None  # made on the first call that uses it

    def onnx_generator(self) -> OnnxGenerator:
        """The generator in an onnxruntime session with torch's thread count, made once per count."""
        threads = torch.get_num_threads()
        if self._onnx is None or self._onnx.threads != threads:
            self._onnx = OnnxGenerator(self.generator, threads)
        return self._onnx

    @property
    def mel2linear(self) -> torch.nn.Module | None:
        return self.magnitude.mel2linear

    @torch.no_grad()
    def hifigan_mel(self, logmel: torch.Tensor, frame_lens: torch.Tensor) -> list[torch.Tensor]:
        """Our log-mel (B, frames, n_mels) -> HiFi-GAN's natural-log mel per item, (its frames, its n_mels)."""
        magnitude = self.magnitude(logmel, frame_lens)  # (B, bins, frames)
        mel = torch.matmul(self.bridge, magnitude).clamp(min=LOG_FLOOR).log().transpose(1, 2)
        mels = []
        for item, length in zip(mel, frame_lens.tolist(), strict=True):
            positions = frame_positions(int(length), self.audio, self.signal)
            mels.append(interpolate_frames(item[: int(length)], positions.to(item.device)))
        return mels

    @torch.no_grad()
    def generate(self, mel: torch.Tensor) -> torch.Tensor:
        """One item's HiFi-GAN mel (frames, n_mels) -> its samples (frames * hop,) at the generator's rate.

        In chunks, each read with the receptive field as context on either side; the input is framed
        by silence (the mel's floor), so the first window has its left context and the last its
        chunk's length. With torch, chunks of vocoder.hifigan.chunk_frames, all through one window
        shape: the generator's convolutions reuse what their first call set up (a new shape costs
        about half a call again in bfloat16). With onnxruntime, whose time per frame is flat in the
        window's length, as few equal chunks of at most vocoder.hifigan.onnx_chunk_frames as fit.
        Either way the samples are those of the whole input between the receptive field's silence
        on either side (tested).
        """
        frames, hop, context = mel.shape[0], self.signal.hop_length, self.context
        bfloat16 = use_bfloat16(self.settings.precision, self.settings.runtime, mel.device)
        if use_onnxruntime(self.settings.runtime, bfloat16, mel.device):
            run = self.onnx_generator()
            count = -(-frames // self.settings.onnx_chunk_frames)
            chunk = -(-frames // count)
        else:
            levels = len(self.generator.ups) - 1 if bfloat16 else 0  # the last level in float32
            run = functools.partial(self.generator, bfloat16_levels=levels)
            chunk = self.settings.chunk_frames
            count = -(-frames // chunk)
        # (n_mels, context + frames + the last chunk's rest + context), the silence being the mel's floor
        after = count * chunk - frames + context
        padded = torch.nn.functional.pad(mel.T.float(), (context, after), value=math.log(LOG_FLOOR))
        width = chunk + 2 * context
        pieces = [
            run(padded[None, :, k * chunk : k * chunk + width])[0, 0, context * hop : (context + chunk) * hop]
            for k in range(count)
        ]
        return torch.cat(pieces)[: frames * hop]

    @torch.no_grad()
    def forward(
        self,
        logmel: torch.Tensor,
        frame_lens: torch.Tensor | None = None,
        generator: torch.Generator | None = None,  # unused: HiFi-GAN is deterministic
    ) -> tuple[torch.Tensor, torch.Tensor]:
        batch, frames, _ = logmel.shape
        if frame_lens is None:
            frame_lens = torch.full((batch,), frames, dtype=torch.long, device=logmel.device)
        hop = self.audio.hop_length
        waves = torch.zeros(batch, frames * hop, device=logmel.device)
        for k, mel in enumerate(self.hifigan_mel(logmel, frame_lens)):
            theirs = self.generate(mel).cpu().numpy()
            ours = resample_poly(theirs, *self.resample).astype(np.float32)
            length = min(len(ours), int(frame_lens[k]) * hop)
            waves[k, :length] = torch.from_numpy(ours[:length]).to(logmel.device)
        return waves, frame_lens * hop

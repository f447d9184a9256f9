"""Griffin-Lim vocoder: log-mel -> linear magnitude -> waveform, batched in torch.

Phase is recovered with the fast Griffin-Lim algorithm (Perraudin, Balazs and
Sondergaard, "A fast Griffin-Lim algorithm", WASPAA 2013), which adds a momentum
term to the alternating projections of Griffin and Lim ("Signal estimation from
modified short-time Fourier transform", IEEE Trans. ASSP 32(2), 1984). The STFT
convention is the one of vc.audio.LogMel (centred frames, zero padding), so a
magnitude taken from LogMel.magnitude goes back to the signal it came from.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from vc.audio import mel_basis
from vc.config import AudioConfig, VocoderConfig
from vc.errors import ConfigError

# Smallest linear magnitude mel_to_linear returns. LogMel clamps mels at its
# log_floor (1e-10 by default) before the log, so nothing quieter survives in the
# features; a floor at the same level is inaudible (-200 dB) yet strictly positive.
MAGNITUDE_FLOOR = 1e-10
# Projected-gradient NNLS steps after the pseudo-inverse (see mel_to_linear):
# about 7 ms per 3 s utterance on a CPU, against about 35 ms for 32 Griffin-Lim iterations.
NNLS_STEPS = 30


def griffin_lim(
    magnitude: torch.Tensor,
    *,
    n_fft: int,
    hop_length: int,
    win_length: int,
    window: torch.Tensor,
    n_iter: int = 32,
    momentum: float = 0.99,
    length: int | None = None,
    generator: torch.Generator | None = None,
    init: str | torch.Tensor = "random",
    frame_lens: torch.Tensor | None = None,
) -> torch.Tensor:
    """Recover a waveform from an STFT magnitude with fast Griffin-Lim.

    Perraudin, Balazs, Sondergaard, "A fast Griffin-Lim algorithm", WASPAA 2013:
    each iteration projects onto consistent spectrograms (iSTFT then STFT), then
    extrapolates along the last step by ``momentum`` before re-imposing the
    magnitude. ``momentum=0`` is the original Griffin-Lim algorithm.

    ``init`` is "random" (phase uniform in [0, 2 pi), drawn from ``generator``;
    librosa's init="random"), "zero" (librosa's init=None) or a tensor of initial
    phases in radians that broadcasts to ``magnitude``. ``frame_lens`` marks
    padded batches: item b owns its first frame_lens[b] frames, and its output
    has ``length - (frames - frame_lens[b]) * hop_length`` samples followed by
    zeros, exactly what the item alone would give.

    Measured on six ARCTIC utterances after 32 iterations, a phase-gradient
    initial phase (PGHI; Prusa, Balazs, Sondergaard, IEEE/ACM TASLP 2017) takes
    spectral convergence from 0.049-0.061 to 0.011-0.025 on true STFT
    magnitudes, but only 3-10 % lower (0.105-0.131 -> 0.095-0.127) on
    magnitudes rebuilt from mels, which are far from consistent; zero phase is
    no better than random. PGHI's heap-ordered integration is sequential and
    slower than the iterations themselves, so it is not offered here.

    Shapes:
        magnitude: (B, n_fft // 2 + 1, frames) or (n_fft // 2 + 1, frames)
        frame_lens: (B,)
        returns: (B, samples) or (samples,), samples = length or (frames - 1) * hop_length
    """
    single = magnitude.dim() == 2
    if single:
        magnitude = magnitude.unsqueeze(0)
    if magnitude.dim() != 3 or magnitude.shape[1] != n_fft // 2 + 1:
        raise ValueError(f"magnitude must be (B, {n_fft // 2 + 1}, frames), got {tuple(magnitude.shape)}")
    if momentum < 0:
        raise ValueError(f"momentum must be >= 0, got {momentum}")
    if magnitude.dtype not in (torch.float32, torch.float64):
        magnitude = magnitude.float()  # the FFTs need single or double precision
    window = window.to(device=magnitude.device, dtype=magnitude.dtype)
    frames = magnitude.shape[-1]
    natural = (frames - 1) * hop_length  # what iSTFT gives with centred frames
    length = natural if length is None else length
    if natural == 0:
        n_iter = 0  # one frame overlaps nothing: every phase is consistent, iSTFT is the answer

    stft_args = dict(n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, center=True)
    loop_scale = out_scale = None
    if frame_lens is not None:
        frame_lens = frame_lens.to(magnitude.device)
        magnitude = magnitude * _frame_mask(frame_lens, frames, magnitude.dtype).unsqueeze(1)
        loop_scale = _envelope_correction(frame_lens, frames, natural, window, n_fft, hop_length)
        out_scale = _envelope_correction(frame_lens, frames, length, window, n_fft, hop_length)

    angles = magnitude * _initial_phasor(magnitude, init, generator)
    # A one-frame item has nothing to iterate on alone (see above); in a batch it
    # keeps its initial phase so that it still gives what it would give alone.
    frozen = None if frame_lens is None or bool((frame_lens > 1).all()) else (frame_lens < 2)[:, None, None]
    start = angles
    # Librosa's form of the update: rebuilt - m / (1 + m) * previous is the paper's
    # (1 + m) * rebuilt - m * previous divided by 1 + m, and the scale is lost
    # anyway when the magnitude is re-imposed.
    keep = momentum / (1.0 + momentum)
    previous = None
    for _ in range(n_iter):
        wave = torch.istft(angles, length=natural, **stft_args)
        if loop_scale is not None:
            wave = wave * loop_scale
        rebuilt = torch.stft(wave, pad_mode="constant", return_complex=True, **stft_args)
        update = rebuilt if previous is None else torch.sub(rebuilt, previous, alpha=keep)
        angles = magnitude * torch.sgn(update)
        if frozen is not None:
            angles = torch.where(frozen, start, angles)
        previous = rebuilt
    wave = torch.istft(angles, length=length, **stft_args)
    if out_scale is not None:
        wave = wave * out_scale
    return wave[0] if single else wave


def _initial_phasor(magnitude: torch.Tensor, init: str | torch.Tensor, generator) -> torch.Tensor:
    """Unit complex numbers exp(i phase) shaped like ``magnitude``."""
    if isinstance(init, torch.Tensor):
        phase = init.to(device=magnitude.device, dtype=magnitude.dtype).expand_as(magnitude)
    elif init == "random":
        # Drawn where the generator lives, so a CPU generator seeds a CUDA run too.
        device = generator.device if generator is not None else magnitude.device
        phase = torch.rand(magnitude.shape, generator=generator, device=device, dtype=magnitude.dtype)
        phase = phase.to(magnitude.device) * (2 * math.pi)
    elif init == "zero":
        phase = torch.zeros_like(magnitude)
    else:
        raise ValueError(f"init must be 'random', 'zero' or a tensor of phases, got {init!r}")
    return torch.polar(torch.ones_like(phase), phase)


def _frame_mask(frame_lens: torch.Tensor, frames: int, dtype: torch.dtype) -> torch.Tensor:
    """(B, frames) 1 for an item's own frames, 0 for padding."""
    steps = torch.arange(frames, device=frame_lens.device)
    return (steps[None, :] < frame_lens[:, None]).to(dtype)


def _window_envelope(frame_mask, window, n_fft, hop_length, length):
    """Overlap-added squared window that iSTFT divides by, for the given frames.

    Shapes:
        frame_mask: (B, frames); returns: (B, length), centred-frame coordinates
    """
    left = (n_fft - window.shape[0]) // 2  # torch.stft centres a short window in n_fft
    kernel = torch.nn.functional.pad(window.square(), (left, n_fft - window.shape[0] - left))
    summed = torch.nn.functional.conv_transpose1d(frame_mask[:, None], kernel[None, None], stride=hop_length)
    summed = summed[:, 0, n_fft // 2 : n_fft // 2 + length]
    return torch.nn.functional.pad(summed, (0, length - summed.shape[-1]))


def _envelope_correction(frame_lens, frames, length, window, n_fft, hop_length):
    """Per-sample factor that turns a padded-batch iSTFT into each item's own iSTFT.

    torch.istft divides the overlap-add by the window envelope of all ``frames``
    frames; near the end of a short item that envelope includes padding frames,
    so the item alone would have been divided by less. Multiplying by
    envelope(all frames) / envelope(own frames) undoes that, and zeros every
    sample past the item's length.

    Shapes:
        frame_lens: (B,); returns: (B, length)
    """
    dtype = window.dtype
    full = _window_envelope(
        torch.ones(1, frames, dtype=dtype, device=window.device), window, n_fft, hop_length, length
    )
    own = _window_envelope(_frame_mask(frame_lens, frames, dtype), window, n_fft, hop_length, length)
    item_lens = length - (frames - frame_lens) * hop_length
    inside = torch.arange(length, device=window.device)[None, :] < item_lens[:, None]
    return torch.where(inside, full / own.clamp(min=torch.finfo(dtype).tiny), torch.zeros_like(own))


def mel_to_linear(
    mel: torch.Tensor,
    basis_pinv: torch.Tensor,
    *,
    basis: torch.Tensor | None = None,
    nnls_steps: int = 0,
    step: float | None = None,
    floor: float = MAGNITUDE_FLOOR,
) -> torch.Tensor:
    """Linear-amplitude mel back to a linear-frequency magnitude.

    Starts from the minimum-norm least-squares inverse of the filterbank (the
    Griffin-Lim path of Tacotron; Wang et al., Interspeech 2017). That inverse
    goes negative between filter peaks, and a magnitude cannot: it is clamped
    at a small positive floor rather than at zero, so that logs of the result
    (dB plots, log-spectral distances) and gradients of its powers stay finite.
    With ``basis`` and ``nnls_steps`` > 0 it then runs
    projected gradient on min ||basis x - mel||^2 subject to x >= floor, the
    non-negative least squares the clamp only approximates (Lawson and Hanson,
    "Solving Least Squares Problems", 1974, ch. 23, solve the same problem
    exactly). On ten ARCTIC utterances, 30 steps cut the mean of
    || x - |STFT| ||_F / || |STFT| ||_F from 0.312 to 0.269, and the spectral
    convergence of the Griffin-Lim output against the true magnitude from 0.336
    to 0.285 (10 steps: 0.302, 100 steps: 0.277). ``step`` defaults to
    nnls_step(basis); pass it to skip recomputing it.

    Shapes:
        mel: (B, frames, n_mels), linear amplitude
        basis_pinv: (n_fft // 2 + 1, n_mels); basis: (n_mels, n_fft // 2 + 1)
        returns: (B, n_fft // 2 + 1, frames)
    """
    target = mel.transpose(-1, -2)
    linear = torch.matmul(basis_pinv, target).clamp(min=floor)
    if nnls_steps <= 0:
        return linear
    if basis is None:
        raise ValueError("nnls_steps > 0 needs the mel basis itself")
    step = nnls_step(basis) if step is None else step
    for _ in range(nnls_steps):
        residual = torch.matmul(basis, linear) - target
        linear = (linear - step * torch.matmul(basis.T, residual)).clamp(min=floor)
    return linear


def nnls_step(basis: torch.Tensor | np.ndarray) -> float:
    """Projected-gradient step for min ||basis x - mel||^2: 1 / ||basis||_2^2.

    ||basis||_2^2 is the Lipschitz constant of the gradient, and its inverse the
    largest fixed step that always decreases the residual (Beck and Teboulle,
    SIAM J. Imaging Sciences 2(1), 2009).

    Shapes:
        basis: (n_mels, n_fft // 2 + 1)
    """
    if isinstance(basis, torch.Tensor):
        basis = basis.detach().cpu().numpy()
    return 1.0 / float(np.linalg.norm(np.asarray(basis, dtype=np.float64), ord=2)) ** 2


def spectral_convergence(
    reference_magnitude: torch.Tensor,
    wave: torch.Tensor,
    *,
    n_fft: int,
    hop_length: int,
    win_length: int,
    window: torch.Tensor,
) -> torch.Tensor:
    """|| |STFT(wave)| - S ||_F / || S ||_F per item (Sturmel and Daudet, DAFx 2011).

    The STFT is LogMel's (centred, zero padded). Frames of the wave past the
    reference's last frame are ignored, missing ones count as zero magnitude.

    Shapes:
        reference_magnitude: (B, n_fft // 2 + 1, frames) or (n_fft // 2 + 1, frames)
        wave: (B, samples) or (samples,); returns: (B,) or a scalar
    """
    window = window.to(device=wave.device, dtype=wave.dtype)
    spec = torch.stft(
        wave,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=True,
        pad_mode="constant",
        return_complex=True,
    ).abs()
    frames = reference_magnitude.shape[-1]
    spec = spec[..., :frames]
    spec = torch.nn.functional.pad(spec, (0, frames - spec.shape[-1]))
    reference = reference_magnitude.to(spec.dtype)
    return torch.linalg.vector_norm(spec - reference, dim=(-2, -1)) / torch.linalg.vector_norm(
        reference, dim=(-2, -1)
    )


class GriffinLimVocoder(torch.nn.Module):
    """Log-mel (as made by vc.audio.LogMel) to waveform with Griffin-Lim.

    Mel -> linear through the filterbank pseudo-inverse refined by NNLS_STEPS
    projected-gradient steps of non-negative least squares, magnitude sharpened by ``vocoder.magnitude_power``
    (Tacotron, Wang et al. 2017, uses 1.2-1.5), then fast Griffin-Lim (Perraudin
    et al. 2013) from a random phase. Runs wherever its buffers are; a padded
    batch gives each item exactly what it would give alone with the same phase.

    Shapes:
        logmel: (B, frames, n_mels); frame_lens: (B,)
        returns: waves (B, frames * hop_length), zero past each item, and wave_lens (B,)
    """

    def __init__(self, audio: AudioConfig, vocoder: VocoderConfig):
        super().__init__()
        if 2 * audio.hop_length > audio.win_length:
            # The last hop of the frames x hop_length output lies under the last
            # window only when windows overlap by at least half.
            raise ConfigError(
                f"the Griffin-Lim vocoder needs audio.hop_length <= audio.win_length / 2, got "
                f"hop_length={audio.hop_length}, win_length={audio.win_length}"
            )
        self.audio = audio
        self.vocoder = vocoder
        self.register_buffer("window", torch.hann_window(audio.win_length), persistent=False)
        basis = mel_basis(audio)
        pinv = np.linalg.pinv(basis.astype(np.float64)).astype(np.float32)
        self.register_buffer("basis", torch.from_numpy(basis), persistent=False)
        self.register_buffer("basis_pinv", torch.from_numpy(pinv), persistent=False)
        self.nnls_step = nnls_step(basis)

    @torch.no_grad()
    def forward(
        self,
        logmel: torch.Tensor,
        frame_lens: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        a, v = self.audio, self.vocoder
        batch, frames, _ = logmel.shape
        if frame_lens is None:
            frame_lens = torch.full((batch,), frames, dtype=torch.long, device=logmel.device)
        mel = torch.pow(a.log_base, logmel.float())  # LogMel stored log_base(max(mel, floor))
        linear = mel_to_linear(
            mel, self.basis_pinv, basis=self.basis, nnls_steps=NNLS_STEPS, step=self.nnls_step
        )
        # A power spectrogram under the filterbank comes back as power: the root
        # gives the magnitude, and both exponents fold into one.
        magnitude = linear.pow(v.magnitude_power / a.spectrogram_power)
        waves = griffin_lim(
            magnitude,
            n_fft=a.n_fft,
            hop_length=a.hop_length,
            win_length=a.win_length,
            window=self.window,
            n_iter=v.griffin_lim_iters,
            momentum=v.momentum,
            length=frames * a.hop_length,
            generator=generator,
            frame_lens=frame_lens,
        )
        return waves, frame_lens * a.hop_length

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

import torch

from vc.errors import ConfigError
from vc.settings.audio import AudioConfig
from vc.settings.vocoders import GriffinLimConfig, VocoderConfig
from vc.vocoders.harmonics import deepen_harmonics, lift_harmonics
from vc.vocoders.magnitude import Magnitude
from vc.vocoders.pghi import pghi_start


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

    Several times faster than librosa's (`python bench/run.py --sections
    griffinlim` measures it; bench/README.md). The
    iterations run on signals, not spectrograms: momentum is linear and a
    consistent spectrogram is the STFT of a signal, so the extrapolation is
    taken on the overlap-added signal (a quarter of the spectrogram's size at
    n_fft = 4 hop); torch.istft's overlap-add (unfold_backward, and an envelope
    rebuilt on every call) becomes adds of hop-shifted frame views and one
    multiplication by a precomputed inverse envelope; the magnitude is imposed
    by one complex-by-real multiply with rsqrt(re^2 + im^2) (complex abs and sgn cost more
    than the FFTs). On a CPU a padded batch runs item by item on each item's
    own frames: the same result, and a batch stays in cache (faster per
    utterance than as one batch).

    A phase-gradient initial phase (PGHI; Prusa, Balazs, Sondergaard, IEEE/ACM
    TASLP 2017; vc/vocoders/pghi.py, passed as ``init``) lowers MCD little on
    magnitudes rebuilt from mels but lifts the predicted MOS (docs/ablation.md,
    "Griffin-Lim from PGHI's phase"); integrated along a spanning tree in numpy
    it costs about a third of the 32 iterations' time ("PGHI along a spanning
    tree"). GriffinLimVocoder uses it where vocoder.griffin_lim.init says pghi;
    zero phase is no better than random.

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
    batch, _, frames = magnitude.shape
    length = (frames - 1) * hop_length if length is None else length
    if frame_lens is None:
        frame_lens = torch.full((batch,), frames, dtype=torch.long, device=magnitude.device)
    else:
        frame_lens = frame_lens.to(magnitude.device)
        magnitude = magnitude * _frame_mask(frame_lens, frames, magnitude.dtype).unsqueeze(1)
    # Drawn for the whole batch at once, so that the generator gives the same
    # phases however the items are then grouped.
    start = _with_phase(magnitude, _initial_phase(magnitude, init, generator))
    stft = _Stft(n_fft, hop_length, window, magnitude.dtype, magnitude.device)
    iterations = dict(n_iter=n_iter, momentum=momentum)
    if magnitude.device.type != "cpu" or batch == 1 or not _ITEM_BY_ITEM_ON_CPU:
        wave = _griffin_lim_batch(magnitude, start, frame_lens, length, stft, **iterations)
        return wave[0] if single else wave
    wave = magnitude.new_zeros(batch, length)
    for item, own in enumerate(frame_lens.tolist()):
        own_length = max(length - (frames - own) * hop_length, 0)
        mine = slice(item, item + 1), slice(None), slice(0, own)
        alone = _griffin_lim_batch(
            magnitude[mine], start[mine], frame_lens[item : item + 1], own_length, stft, **iterations
        )
        wave[item, :own_length] = alone[0]
    return wave


# A padded batch on a CPU runs item by item (see griffin_lim); tests switch it off
# to check the batched path, which other devices use.
_ITEM_BY_ITEM_ON_CPU = True


def _griffin_lim_batch(magnitude, start, frame_lens, length, stft, *, n_iter, momentum):
    """The iterations of griffin_lim on one padded batch, on overlap-added signals.

    Shapes:
        magnitude, start: (B, n_fft // 2 + 1, frames), real and complex, zero past each item's frames
        frame_lens: (B,); returns: (B, length)
    """
    frames = start.shape[-1]
    spec = start.transpose(1, 2).contiguous()  # (B, frames, bins): frames of contiguous bins for the FFTs
    magnitude = magnitude.transpose(1, 2).contiguous()
    # A one-frame item has nothing to iterate on alone: every phase is consistent,
    # and the iSTFT of the start is the answer (its interior is empty).
    natural_lens = (frame_lens - 1) * stft.hop_length
    loop_scale = stft.inverse_envelope(frame_lens, frames, natural_lens)
    if int(frame_lens.max()) < 2:
        n_iter = 0
    if n_iter > 0:
        previous = current = stft.overlap_add(spec).mul_(loop_scale)
    for step in range(n_iter):
        spec = stft.impose(current, magnitude)
        if step == n_iter - 1:
            break
        projected = stft.overlap_add(spec).mul_(loop_scale)
        # c = t + momentum (t - t') in one lerp (one pass, where a sub and an add are two).
        current = projected if momentum == 0 else torch.lerp(previous, projected, 1.0 + momentum)
        previous = projected
    if bool((frame_lens < 2).any()):
        spec = torch.where((frame_lens < 2)[:, None, None], start.transpose(1, 2), spec)
    item_lens = length - (frames - frame_lens) * stft.hop_length
    buffer = stft.overlap_add(spec)
    if buffer.shape[-1] < stft.n_fft // 2 + length:  # asked for more than the frames cover
        buffer = torch.nn.functional.pad(buffer, (0, stft.n_fft // 2 + length - buffer.shape[-1]))
    out_scale = stft.inverse_envelope(frame_lens, frames, item_lens, size=buffer.shape[-1])
    return buffer.mul_(out_scale)[:, stft.n_fft // 2 : stft.n_fft // 2 + length]


class _Stft:
    """Centred, zero-padded STFT and iSTFT (torch.stft / torch.istft's) on overlap-add buffers.

    A buffer holds a signal with the n_fft // 2 centring pad on both sides:
    buffer[n_fft // 2 + s] is sample s. The STFT of a buffer is rfft of its
    hop-strided windowed frames (an unfold view); the iSTFT's overlap-add adds
    the frames cut into n_fft / hop hop-long pieces onto shifted views of the
    buffer, and the division by the window envelope is one multiplication by
    inverse_envelope, which also zeros the centring pad as torch.stft's zero
    padding would.
    """

    def __init__(self, n_fft, hop_length, window, dtype, device):
        self.n_fft, self.hop_length = n_fft, hop_length
        self.pieces = -(-n_fft // hop_length)  # frames overlapping one hop
        window = window.to(device=device, dtype=dtype)
        left = (n_fft - window.shape[0]) // 2  # torch.stft centres a short window in n_fft
        self.window = torch.nn.functional.pad(window, (left, n_fft - window.shape[0] - left))
        self.tiny = torch.tensor(torch.finfo(dtype).tiny, dtype=dtype, device=device)

    def overlap_add(self, spec: torch.Tensor) -> torch.Tensor:
        """(B, frames, bins) spectrogram -> (B, (frames + pieces - 1) * hop) windowed overlap-add."""
        batch, frames, _ = spec.shape
        hop, pieces = self.hop_length, self.pieces
        chunks = torch.fft.irfft(spec, n=self.n_fft, dim=-1).mul_(self.window)
        if pieces * hop != self.n_fft:
            chunks = torch.nn.functional.pad(chunks, (0, pieces * hop - self.n_fft))
        chunks = chunks.view(batch, frames, pieces, hop)
        buffer = chunks.new_empty(batch, frames + pieces - 1, hop)
        buffer[:, :frames] = chunks[:, :, 0]
        buffer[:, frames:] = 0
        for piece in range(1, pieces):
            buffer[:, piece : piece + frames] += chunks[:, :, piece]
        return buffer.view(batch, -1)

    def impose(self, buffer: torch.Tensor, magnitude: torch.Tensor) -> torch.Tensor:
        """STFT of a buffer with ``magnitude`` imposed: magnitude * X / |X| (0 where X is 0).

        Shapes:
            buffer: (B, samples); magnitude: (B, frames, bins); returns: (B, frames, bins)
        """
        frames = magnitude.shape[1]
        spec = torch.fft.rfft(
            buffer.unfold(-1, self.n_fft, self.hop_length)[:, :frames] * self.window, dim=-1
        )
        # magnitude / sqrt(tiny + re^2 + im^2), then one complex-by-real multiply in
        # place. Complex abs (hypot) costs more than the FFTs. Squaring the whole
        # contiguous real view, one add of its two halves, and scaling the complex
        # tensor itself is faster than two addcmuls on the real and imaginary views
        # plus a multiply of the real view (bench/run.py --sections griffinlim).
        squares = torch.view_as_real(spec).square()
        scale = torch.add(squares[..., 0], squares[..., 1]).add_(self.tiny).rsqrt_().mul_(magnitude)
        return spec.mul_(scale)

    def inverse_envelope(self, frame_lens, frames, lens, size=None):
        """Per-buffer-sample 1 / (overlap-added squared window of each item's own frames).

        Nonzero only on samples 0 .. lens[b] - 1 of item b (buffer positions
        n_fft // 2 onwards): what torch.istft divides by, for the item alone,
        and zero elsewhere.

        Shapes:
            frame_lens, lens: (B,); returns: (B, size), size defaults to the overlap-add buffer's
        """
        hop, pieces = self.hop_length, self.pieces
        own = _frame_mask(frame_lens, frames, self.window.dtype)
        squares = torch.nn.functional.pad(self.window.square(), (0, pieces * hop - self.n_fft)).view(
            pieces, hop
        )
        envelope = own.new_zeros(own.shape[0], frames + pieces - 1, hop)
        for piece in range(pieces):
            envelope[:, piece : piece + frames] += own[:, :, None] * squares[piece]
        envelope = envelope.view(own.shape[0], -1)
        size = envelope.shape[-1] if size is None else size
        envelope = torch.nn.functional.pad(envelope, (0, size - envelope.shape[-1]))
        position = torch.arange(size, device=envelope.device)[None, :] - self.n_fft // 2
        inside = (position >= 0) & (position < lens[:, None])
        # torch.istft's nonzero overlap-add condition, checked where it divides.
        if bool(
            (
                inside
                & (envelope.abs() < 1e-11)
                & (position < (frame_lens[:, None] - 1) * hop + self.n_fft // 2)
            ).any()
        ):
            raise ValueError(
                "window overlap-add is zero somewhere: the window and hop_length cannot be inverted"
            )
        inverse = 1.0 / envelope.clamp(min=torch.finfo(envelope.dtype).tiny)
        return torch.where(inside, inverse, torch.zeros_like(inverse))


def _initial_phase(magnitude: torch.Tensor, init: str | torch.Tensor, generator) -> torch.Tensor:
    """Phases in radians shaped like ``magnitude``."""
    if isinstance(init, torch.Tensor):
        return init.to(device=magnitude.device, dtype=magnitude.dtype).expand_as(magnitude)
    if init == "random":
        # Drawn where the generator lives, so a CPU generator seeds a CUDA run too.
        device = generator.device if generator is not None else magnitude.device
        phase = torch.rand(magnitude.shape, generator=generator, device=device, dtype=magnitude.dtype)
        return phase.to(magnitude.device) * (2 * math.pi)
    if init == "zero":
        return torch.zeros_like(magnitude)
    raise ValueError(f"init must be 'random', 'zero' or a tensor of phases, got {init!r}")


def _with_phase(magnitude: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
    """magnitude * exp(i phase); torch.polar and a complex multiply cost more on a CPU."""
    return torch.complex(magnitude * torch.cos(phase), magnitude * torch.sin(phase))


def _frame_mask(frame_lens: torch.Tensor, frames: int, dtype: torch.dtype) -> torch.Tensor:
    """(B, frames) 1 for an item's own frames, 0 for padding."""
    steps = torch.arange(frames, device=frame_lens.device)
    return (steps[None, :] < frame_lens[:, None]).to(dtype)


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

    Mel -> linear magnitude by ``Magnitude`` (the network ``mel2linear`` when given, else the
    filterbank inverse), sharpened by ``settings.magnitude_power``, its harmonics deepened by
    ``settings.harmonic_depth`` and lifted where a converter smeared them by ``settings.harmonic_lift``
    (vc.vocoders.harmonics), then fast Griffin-Lim (Perraudin et al. 2013) from a random phase, or from
    PGHI's (``settings.init``); its settings are the vocoder.griffin_lim section. Runs wherever its
    buffers are; a padded batch gives each item what it would give alone with the same phase, up to the
    FFTs' float32 rounding of the harmonics' envelope (about 2e-6 of the magnitude, which PGHI's start
    can carry to about 1e-3 of the waveform).

    Shapes:
        logmel: (B, frames, n_mels); frame_lens: (B,)
        returns: waves (B, frames * hop_length), zero past each item, and wave_lens (B,)
    """

    def __init__(
        self, audio: AudioConfig, settings: GriffinLimConfig, mel2linear: torch.nn.Module | None = None
    ):
        super().__init__()
        if 2 * audio.hop_length > audio.win_length:
            # The last hop of the frames x hop_length output lies under the last
            # window only when windows overlap by at least half.
            raise ConfigError(
                f"the Griffin-Lim vocoder needs audio.hop_length <= audio.win_length / 2, got "
                f"hop_length={audio.hop_length}, win_length={audio.win_length}"
            )
        self.audio = audio
        self.settings = settings
        self.register_buffer("window", torch.hann_window(audio.win_length), persistent=False)
        self.magnitude = Magnitude(audio, mel2linear)

    @property
    def mel2linear(self) -> torch.nn.Module | None:
        return self.magnitude.mel2linear

    @torch.no_grad()
    def forward(
        self,
        logmel: torch.Tensor,
        frame_lens: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        a, s = self.audio, self.settings
        batch, frames, _ = logmel.shape
        if frame_lens is None:
            frame_lens = torch.full((batch,), frames, dtype=torch.long, device=logmel.device)
        magnitude = self.magnitude(logmel, frame_lens, s.magnitude_power)
        if s.harmonic_depth != 1.0:
            magnitude = deepen_harmonics(magnitude, s.harmonic_depth, a.sample_rate)
        if s.harmonic_lift > 0:
            magnitude = lift_harmonics(magnitude, s.harmonic_lift, a.sample_rate, a.n_fft, frame_lens)
        init = "random"
        if s.init == "pghi":
            init = pghi_start(
                magnitude,
                frame_lens,
                hop_length=a.hop_length,
                n_fft=a.n_fft,
                win_length=a.win_length,
                generator=generator,
            )
        waves = griffin_lim(
            magnitude,
            n_fft=a.n_fft,
            hop_length=a.hop_length,
            win_length=a.win_length,
            window=self.window,
            n_iter=s.iters,
            momentum=s.momentum,
            length=frames * a.hop_length,
            generator=generator,
            init=init,
            frame_lens=frame_lens,
        )
        return waves, frame_lens * a.hop_length


def build(
    audio: AudioConfig, vocoder: VocoderConfig, mel2linear: torch.nn.Module | None, device
) -> GriffinLimVocoder:
    """The registry's builder (vc.vocoders.VOCODERS): vocoder.griffin_lim's settings; Griffin-Lim needs
    no weights, so ``device`` only receives it."""
    return GriffinLimVocoder(audio, vocoder.griffin_lim, mel2linear)

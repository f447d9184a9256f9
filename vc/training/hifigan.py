"""Fine-tune a HiFi-GAN generator on the target speaker (the HiFi-GAN paper's section 4.4).

The generator starts from a checkpoint (by default the universal V1 one of the [neural] extra) and
learns against fresh discriminators (vc.model.hifigan_discriminator) with the paper's losses: least
squares adversarial, feature matching (x2) and the L1 of the log-mel (x45) over the whole band, so a
target recorded at 16 kHz teaches it to leave the band above 8 kHz empty. Weight normalisation, a
training device the loaded generator has folded away, is put back on every convolution while it
trains and folded again on saving.

Examples are a folder of NPZ files, one per target recording (vc.training.hifigan_examples writes
them): ``wave``, the recording (int16) at ``sample_rate`` (resampled here to the generator's), and
``mel``, the generator's input at its frames (float16, (frames, n_mels)): the mel the HiFi-GAN path
(vc/vocoders/hifigan.py) makes of the model's teacher-forced prediction of that recording, so the
generator learns on what it will hear. An example without ``mel`` is read from its wave's own mel
(what the generator was first trained on: it learns the voice alone). The last ``valid_files``
examples (in name order) are held out: the kept generator is the one with the lowest log-mel L1 on
them, whole.

The examples can be made on one machine (they need the model and the recordings) and trained on
another (a GPU's: they need nothing else).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import time
import zipfile
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.utils.parametrizations import weight_norm

from vc.artifacts.checkpoint import TRAINING_STATE
from vc.artifacts.hifigan import HifiganSignal, load_generator, save_generator
from vc.audio.dsp import mel_filterbank
from vc.errors import ConfigError, DataError
from vc.model.hifigan import HifiganGenerator
from vc.model.hifigan_discriminator import (
    MultiPeriodDiscriminator,
    MultiScaleDiscriminator,
    discriminator_loss,
    feature_loss,
    generator_loss,
)
from vc.training.loop import (
    Job,
    Loop,
    Update,
    discard_training_state,
    refuse_earlier_run,
    training_state_folder,
)
from vc.training.monitor import LOG_EVERY, companion_writer

log = logging.getLogger(__name__)

LOG_FLOOR = 1e-5  # HiFi-GAN's: log(clamp(mel, min=1e-5))


@dataclasses.dataclass(frozen=True)
class HifiganTrainOptions:
    """The fine-tuning's settings (the HiFi-GAN paper's, but the learning rate, the warm-up and the budget;
    docs/ablation.md, "HiFi-GAN fine-tuned on slt")."""

    batch_size: int = 16
    segment_frames: int = 32  # frames per training segment (V1: 32 x 256 = 8192 samples)
    learning_rate: float = (
        1e-4  # the paper trains from scratch at 2e-4; a fine-tuning at 2e-4 strayed at once
    )
    betas: tuple[float, float] = (0.8, 0.99)
    weight_decay: float = 0.01
    mel_weight: float = 45.0
    feature_weight: float = 2.0
    # Steps on which only the fresh discriminators learn, the generator held, so that its first updates
    # read discriminators that tell its output from speech, not random ones.
    discriminator_warmup: int = 200
    discriminator_width: float = 1.0  # their channels over the paper's (tests make them small)
    valid_files: int = 8
    eval_every: int = 500
    max_steps: int = 0
    max_minutes: float = 0.0
    seed: int = 1


class HifiganLogMel(torch.nn.Module):
    """HiFi-GAN's log-mel of a waveform: (B, samples) -> (B, samples / hop, n_mels).

    Its STFT (Hann window, reflection padding of (n_fft - hop) / 2 on each side, not centred), so
    frame u of a wave frames * hop samples long covers samples u * hop - (n_fft - hop) / 2 onwards.
    """

    def __init__(self, signal: HifiganSignal, fmax: float | None = None):
        super().__init__()
        self.signal = signal
        basis = mel_filterbank(
            signal.sample_rate, n_fft=signal.n_fft, n_mels=signal.n_mels, fmin=signal.fmin,
            fmax=signal.fmax if fmax is None else fmax,
        )  # fmt: skip
        self.register_buffer("basis", torch.from_numpy(basis).float(), persistent=False)
        self.register_buffer("window", torch.hann_window(signal.win_length), persistent=False)

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        s = self.signal
        pad = (s.n_fft - s.hop_length) // 2
        with torch.autocast(wave.device.type, enabled=False):  # float32 under mixed precision too
            padded = torch.nn.functional.pad(wave.float()[:, None], (pad, pad), mode="reflect")[:, 0]
            spec = torch.stft(
                padded, s.n_fft, s.hop_length, s.win_length, self.window, center=False, return_complex=True
            )
            magnitude = (spec.real**2 + spec.imag**2 + 1e-9).sqrt()
            return torch.matmul(self.basis, magnitude).clamp(min=LOG_FLOOR).log().transpose(1, 2)


def read_examples(
    folder: str | Path, signal: HifiganSignal
) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """The NPZ examples of ``folder`` in name order: (wave (frames * hop,) at the generator's rate,
    float, mel (frames, n_mels) or None). A wave stored at another rate is resampled; it is cut or
    padded with silence to its mel's frames (a natural one: to whole frames)."""
    from scipy.signal import resample_poly

    paths = sorted(Path(folder).glob("*.npz"))
    if not paths:
        raise DataError(f"{folder} holds no .npz examples (vc.training.hifigan_examples writes them)")
    examples = []
    for path in paths:
        try:
            with np.load(path) as data:
                wave = data["wave"].astype(np.float32) / 32768.0
                rate = int(data["sample_rate"])
                mel = torch.from_numpy(data["mel"].astype(np.float32)) if "mel" in data else None
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise DataError(f"{path} is not a HiFi-GAN example: {exc}") from None
        if mel is not None and mel.shape[1] != signal.n_mels:
            raise DataError(f"{path}: its mel has {mel.shape[1]} bands, the generator hears {signal.n_mels}")
        if rate != signal.sample_rate:
            ratio = math.gcd(rate, signal.sample_rate)
            wave = resample_poly(wave, signal.sample_rate // ratio, rate // ratio).astype(np.float32)
        frames = len(mel) if mel is not None else math.ceil(len(wave) / signal.hop_length)
        wave = np.pad(wave, (0, max(0, frames * signal.hop_length - len(wave))))[: frames * signal.hop_length]
        examples.append((torch.from_numpy(wave), mel))
    return examples


def with_weight_norm(generator: HifiganGenerator) -> HifiganGenerator:
    """Weight normalisation on every convolution of ``generator`` (the same function: g = ||v||)."""
    for module in generator.modules():
        if isinstance(module, (torch.nn.Conv1d, torch.nn.ConvTranspose1d)):
            weight_norm(module)
    return generator


class HifiganJob(Job):
    """AdamW on both sides (the paper's betas), a discriminator update then a generator update per step."""

    name = "HiFi-GAN fine-tuning"
    select_by = "mel_l1"
    score_label = "validation log-mel L1"
    restore_best = True
    marker = TRAINING_STATE
    shown = (("mel", "loss/mel"), ("disc", "loss/discriminator"))

    def __init__(
        self,
        generator,
        examples,
        valid,
        signal: HifiganSignal,
        options: HifiganTrainOptions,
        writer,
        amp=False,
    ):
        self.generator, self.examples, self.valid = generator, examples, valid
        self.options, self.writer = options, writer
        self.device = next(generator.parameters()).device
        self.mixed_precision = amp and self.device.type == "cuda"  # as the loop's
        self.mpd = MultiPeriodDiscriminator(width=options.discriminator_width).to(self.device)
        self.msd = MultiScaleDiscriminator(width=options.discriminator_width).to(self.device)
        self.input_mel = HifiganLogMel(signal).to(self.device)  # what the generator hears of a natural wave
        self.loss_mel = HifiganLogMel(signal, fmax=signal.sample_rate / 2).to(self.device)  # the whole band
        self.hop = signal.hop_length
        adamw = dict(lr=options.learning_rate, betas=options.betas, weight_decay=options.weight_decay)
        discriminators = [*self.mpd.parameters(), *self.msd.parameters()]
        self.optimizers = {
            "generator": torch.optim.AdamW(generator.parameters(), **adamw),
            "discriminator": torch.optim.AdamW(discriminators, **adamw),
        }
        self.grad_clip = {"generator": None, "discriminator": None}
        self.rng = random.Random(options.seed)
        self.scores: dict[int, float] = {}

    def _segment(
        self, wave: torch.Tensor, mel: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        frames, hop = len(wave) // self.hop, self.hop
        length = self.options.segment_frames
        if frames < length:  # a short one whole, padded with silence
            wave = torch.nn.functional.pad(wave, (0, (length - frames) * hop))
            if mel is not None:
                mel = torch.nn.functional.pad(mel.T, (0, length - frames), value=math.log(LOG_FLOOR)).T
            frames = length
        start = self.rng.randrange(frames - length + 1)
        return wave[start * hop : (start + length) * hop], None if mel is None else mel[
            start : start + length
        ]

    def batches(self, step: int):
        while True:
            segments = [
                self._segment(*item) for item in self.rng.choices(self.examples, k=self.options.batch_size)
            ]
            waves = torch.stack([wave for wave, _ in segments]).to(self.device, non_blocking=True)
            # a natural segment's input is its wave's own mel, computed for those segments alone
            natural = [k for k, (_, mel) in enumerate(segments) if mel is None]
            own = iter(self.input_mel(waves[natural]) if natural else ())
            mels = torch.stack([next(own) if mel is None else mel.to(self.device) for _, mel in segments])
            yield mels.transpose(1, 2), waves

    def updates(self, batch, step: int):
        mel, wave = batch  # (B, n_mels, frames), (B, samples)
        # mixed precision: the generator in bfloat16 but its last level (as vc/vocoders/hifigan.py's)
        levels = len(self.generator.ups) - 1 if self.mixed_precision else 0
        warming = step < self.options.discriminator_warmup
        with torch.set_grad_enabled(not warming):
            fake = self.generator(mel, bfloat16_levels=levels)  # (B, 1, samples)
        real = wave[:, None]
        real_p, _ = self.mpd(real)
        fake_p, _ = self.mpd(fake.detach())
        real_s, _ = self.msd(real)
        fake_s, _ = self.msd(fake.detach())
        disc = discriminator_loss(real_p, fake_p) + discriminator_loss(real_s, fake_s)
        yield Update(disc, "discriminator", {"discriminator": disc})
        if warming:
            return
        with torch.no_grad():
            _, real_pf = self.mpd(real)
            _, real_sf = self.msd(real)
        fake_p, fake_pf = self.mpd(fake)
        fake_s, fake_sf = self.msd(fake)
        mel_l1 = (self.loss_mel(fake[:, 0]) - self.loss_mel(wave)).abs().mean()
        adversarial = generator_loss(fake_p) + generator_loss(fake_s)
        features = feature_loss(real_pf, fake_pf) + feature_loss(real_sf, fake_sf)
        total = adversarial + self.options.feature_weight * features + self.options.mel_weight * mel_l1
        yield Update(
            total, "generator",
            {"total": total, "mel": mel_l1, "adversarial": adversarial, "features": features},
        )  # fmt: skip

    @torch.no_grad()
    def evaluate(self, step: int) -> float:
        self.generator.eval()
        errors = []
        for wave, mel in self.valid:
            wave = wave.to(self.device)[None]
            mel = self.input_mel(wave) if mel is None else mel.to(self.device)[None]
            fake = self.generator(mel.transpose(1, 2))[:, 0]
            errors.append(float((self.loss_mel(fake) - self.loss_mel(wave)).abs().mean()))
        self.generator.train()
        score = self.scores[step] = sum(errors) / len(errors)
        self.writer.add_scalar("valid/mel_l1", score, step)
        if step == 0:
            log.info("%d training, %d validation examples; before fine-tuning: log-mel L1 %.4f",
                     len(self.examples), len(self.valid), score)  # fmt: skip
        return score

    def networks(self) -> dict[str, torch.nn.Module]:
        return {"generator": self.generator, "mpd": self.mpd, "msd": self.msd}

    def payload(self) -> dict:
        return {"segment_rng": self.rng.getstate(), "scores": self.scores}

    def restore(self, payload: dict) -> None:
        self.rng.setstate(payload["segment_rng"])
        self.scores.update(payload["scores"])

    def advice(self) -> str:
        return "lower the learning rate (--learning-rate) or fine-tune from another generator"


def train_hifigan(
    examples: str | Path,
    out: str | Path,
    options: HifiganTrainOptions,
    start: str | Path | None = None,
    device: str | torch.device | None = None,
    amp: bool = False,
    resume: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune the generator of ``start`` (default: the bundled universal one) on the examples in
    ``examples``; save the best (lowest validation log-mel L1, the start included) to ``out`` in jik876's
    format, its settings in config.json beside. The training state is kept in OUT_training/ until then
    (``resume`` continues from it)."""
    if options.max_minutes <= 0 and options.max_steps <= 0:
        raise ConfigError(
            "HiFi-GAN fine-tuning needs a time limit (--max-minutes) or a step limit (--max-steps)"
        )
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # every step has the same shapes
    state = training_state_folder(out)
    if not resume:
        refuse_earlier_run(state)
    started = time.monotonic()
    torch.manual_seed(options.seed)
    generator, signal = load_generator(start, "cpu")
    items = read_examples(examples, signal)
    valid_count = min(options.valid_files, len(items) // 2)
    if len(items) - valid_count < 1:
        raise DataError(f"{examples}: need at least 2 examples to train and validate, found {len(items)}")
    train_items, valid_items = items[: len(items) - valid_count], items[len(items) - valid_count :]
    generator = with_weight_norm(generator).to(device).train()
    job = HifiganJob(
        generator, train_items, valid_items, signal, options, companion_writer(out, "hifigan"), amp=amp
    )
    loop = Loop(
        job, max_steps=options.max_steps, max_minutes=options.max_minutes, eval_every=options.eval_every,
        log_every=LOG_EVERY, evaluate_first=True, checkpoints=state, keep_checkpoints=1, amp=amp,
        device=device, progress=progress, started=started,
    )  # fmt: skip
    with closing(job.writer):
        if resume:
            loop.resume()
        steps = loop.run()
    info = dict(
        examples=len(train_items), valid_examples=valid_count, steps=steps,
        minutes=(time.monotonic() - started) / 60, valid_mel_l1_before=job.scores[0],
        valid_mel_l1=loop.best_score, natural=all(mel is None for _, mel in items),
        options=dataclasses.asdict(options), start=str(start or "universal"),
    )  # fmt: skip
    save_generator(out, generator.cpu().eval(), signal, info)
    discard_training_state(state)
    log.info("hifigan: %d steps in %.1f min; validation log-mel L1 %.4f -> %.4f",
             steps, info["minutes"], info["valid_mel_l1_before"], info["valid_mel_l1"])  # fmt: skip
    return info

"""Conversion with a trained checkpoint: waveform in, waveform out.

from vc import Converter
converter = Converter.from_checkpoint("exp/checkpoints/averaged.pt")
wave, sample_rate = converter.convert(wave, sample_rate)

The recipe converts with averaged.pt (the mean of the last snapshots, `vc average`);
best.pt and any step file load the same way.
"""

from __future__ import annotations

import copy
import logging
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch.profiler import record_function

from vc.artifacts.checkpoint import load_checkpoint, private_rng
from vc.artifacts.companion import MEL2LINEAR, POSTFILTER
from vc.audio import FeatureStats, LogMel, Speech, prepare_speech, prepare_wave, read_speech
from vc.audio.dsp import with_silence
from vc.audio.pitch import pitch_of
from vc.audio.voice_warp import VoiceCodebook, VoiceWarp
from vc.config import Config
from vc.errors import CheckpointError, ConfigError
from vc.inference.long_form import convert_long
from vc.kinds import build_model, get_kind
from vc.masks import make_pad_mask
from vc.model.aligned_source import Timing, aligned_source
from vc.settings.vocoders import VocoderConfig
from vc.vocoders import VOCODERS, make_vocoder, vocoder_name, vocoder_overrides

log = logging.getLogger(__name__)


@dataclass
class Conversion:
    wave: np.ndarray  # float32 samples at sample_rate
    sample_rate: int
    # (decoder steps, encoder steps) attention, cropped to true lengths; for the non-autoregressive
    # converter (output frames, encoder steps), one-hot at the encoder step each frame reads
    alignment: np.ndarray
    mel: np.ndarray  # (frames, n_mels) converted log-mel (target speaker's scale)


def pick_device(name: str | None = None) -> torch.device:
    """'cuda' when there is one, else 'cpu'; or exactly what the user asked for."""
    if name in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device '{name}' requested but CUDA is not available")
    try:
        return torch.device(name)
    except RuntimeError:
        raise ConfigError(f"unknown device '{name}'; use cpu, cuda or cuda:N") from None


class Converter:
    """A trained model plus everything around it: features, statistics, vocoder.

    ``vocoder``: a name of vc.vocoders.VOCODERS; None: the config's vocoder.kind (the built-in
    Griffin-Lim unless a --set changed it). ``timing``: an attention model's converter whose timing and
    pitch this one speaks at (a recognition-synthesis converter only; vc.model.aligned_source.Timing).
    ``target_pitch``: the log-F0 (mean, deviation) of the target's training recordings, the range this
    model's pitch inputs were read in; a timing's pitch is read in it (else in each output's own range).
    """

    def __init__(
        self,
        model: torch.nn.Module,  # the network of config.model.kind
        config: Config,
        src_stats: FeatureStats,
        tgt_stats: FeatureStats,
        device: torch.device,
        seed: int = 0,
        mel2linear: torch.nn.Module | None = None,
        source_codebook: VoiceCodebook | None = None,
        postfilter: torch.nn.Module | None = None,
        vocoder: str | None = None,
        timing: Converter | None = None,
        target_pitch: tuple[float, float] | None = None,
    ):
        if vocoder is not None:
            config = config.with_overrides([f"vocoder.kind={vocoder_name(vocoder)}"])
        self.config = config
        self.device = device
        self.seed = seed
        self.model = model.to(device).eval()
        self.kind = get_kind(config.model.kind)
        self.kind.prepare_for_conversion(self.model, config.inference)
        self.src_stats = src_stats
        self.tgt_stats = tgt_stats
        self.features = LogMel(config.audio).to(device)
        self.mel2linear = mel2linear
        # One vocoder per vocoder settings, shared with its with_options variants (vc serve).
        self._vocoders: dict[tuple, torch.nn.Module] = {}
        self._vocoders_lock = threading.Lock()  # vc serve's threads may ask for one at once
        self.vocoder = self._vocoder(config.vocoder)
        # (B, T, n_mels) log-mel -> the same, sharpened in time (vc.training.postfilter), or None.
        self.postfilter = postfilter.to(device).eval() if postfilter is not None else None
        # Checkpoints from before vc/audio/voice_warp.py hold no codebook: their inputs are not warped.
        self.voice_warp = (
            VoiceWarp(source_codebook, config.audio).to(device)
            if source_codebook is not None and config.inference.source_warp == "auto"
            else None
        )
        if timing is not None:
            _check_timing(self, timing)
        self.timing = timing
        self.target_pitch = target_pitch

    @classmethod
    def from_checkpoint(
        cls,
        path: str | Path,
        device: str | None = None,
        overrides: list[str] | None = None,
        mel2linear: str | Path | bool | None = None,
        postfilter: str | Path | bool | None = None,
        vocoder: str | None = None,
        vocoder_checkpoint: str | Path | None = None,
        timing: str | Path | None = None,
    ):
        """Everything needed is inside the checkpoint; overrides may change inference/vocoder settings.

        ``vocoder``: a name of vc.vocoders.VOCODERS (None: the config's vocoder.kind);
        ``vocoder_checkpoint``: the weights of the vocoder that takes a file (vc.vocoders.Vocoder.checkpoint:
        a HiFi-GAN generator in jik876's format) instead of its bundled ones; it implies that vocoder.

        ``mel2linear``: the mel -> linear network file for Griffin-Lim; None uses
        the one inside an exported model file, else mel2linear.pt beside the
        checkpoint when it exists; False the pseudo-inverse. ``postfilter``: the
        same choice for the GAN post-filter (vc.training.postfilter, postfilter.pt); False: none.
        ``timing``: an attention model's checkpoint (with its companions beside it, as it converts alone)
        whose timing and pitch a recognition-synthesis converter speaks at.
        """
        for item in overrides or []:
            if not item.startswith(("inference.", "vocoder.")):
                raise ConfigError(
                    f"'{item}': only inference.* and vocoder.* settings can change after training"
                )
        overrides = [*(overrides or []), *vocoder_overrides(vocoder, vocoder_checkpoint)]
        device = pick_device(device)
        payload = load_checkpoint(path, map_location=device)
        try:
            config = Config.from_dict(payload["config"], stored=True).with_overrides(overrides)
            model = build_model(config.audio.n_mels, config.model)
            model.load_state_dict(payload["model"])
            stats = payload["stats"]
            src_stats, tgt_stats = (
                FeatureStats.from_dict(stats["source"]),
                FeatureStats.from_dict(stats["target"]),
            )
            codebook = (
                VoiceCodebook.from_dict(stats["source_codebook"]) if "source_codebook" in stats else None
            )
            if codebook is not None:  # one that does not fit the audio settings fails here, not later
                codebook.check(config.audio)
            # the target's pitch range, in the checkpoints of 2026-12-07 on of the kinds that read pitch
            target_pitch = tuple(float(v) for v in stats["target_pitch"]) if "target_pitch" in stats else None
        except (RuntimeError, KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(
                f"{path} is not a usable vc model checkpoint: {str(exc).splitlines()[0]}"
            ) from None
        mel2linear = MEL2LINEAR.load(config.audio, path, mel2linear, device, payload=payload)
        postfilter_net = POSTFILTER.load(config.audio, path, postfilter, device, payload=payload)
        return cls(
            model,
            config,
            src_stats,
            tgt_stats,
            device,
            mel2linear=mel2linear,
            source_codebook=codebook,
            postfilter=postfilter_net,
            timing=None if timing is None else cls.from_checkpoint(timing, device=str(device)),
            target_pitch=target_pitch,
        )

    @classmethod
    def from_pretrained(cls, name: str | None = None, device: str | None = None, **kwargs):
        """A model bundled with the package (`vc models` lists them); None: the default one."""
        from vc.artifacts.pretrained import model_path

        return cls.from_checkpoint(model_path(name), device=device, **kwargs)

    def with_options(
        self,
        speed: float | None = None,
        griffin_lim_iters: int | None = None,
        postfilter: bool = True,
        vocoder: str | None = None,
    ) -> Converter:
        """A converter sharing this one's networks with other conversion settings: ``speed``
        (inference.speed, the non-autoregressive model's speaking rate), ``griffin_lim_iters``
        (vocoder.griffin_lim.iters), ``postfilter=False`` to skip the post-filter, and ``vocoder``
        (vocoder.kind, a name of vc.vocoders.VOCODERS; each vocoder settings built once and kept)."""
        overrides = [f"inference.speed={speed}"] if speed is not None else []
        if griffin_lim_iters is not None:
            overrides.append(f"vocoder.griffin_lim.iters={griffin_lim_iters}")
        if vocoder is not None:
            overrides.append(f"vocoder.kind={vocoder_name(vocoder)}")
        variant = copy.copy(self)
        variant.config = self.config.with_overrides(overrides)
        variant.vocoder = self._vocoder(variant.config.vocoder)
        if not postfilter:
            variant.postfilter = None
        return variant

    def _vocoder(self, settings: VocoderConfig) -> torch.nn.Module:
        """The vocoder ``settings`` names, built once per value of the settings it reads
        (vc.vocoders.Vocoder.settings) and kept."""
        kind = vocoder_name(settings.kind)
        key = (kind, repr(VOCODERS[kind].settings(settings)))
        with self._vocoders_lock:
            if key not in self._vocoders:
                self._vocoders[key] = make_vocoder(self.config.audio, settings, self.mel2linear, self.device)
            return self._vocoders[key]

    def convert(self, wave: np.ndarray, sample_rate: int) -> tuple[np.ndarray, int]:
        """Mono or (samples, channels) float samples at any rate -> (converted wave, sample rate).

        The silence around the speech is kept (convert_speech). A recording longer than
        audio.max_duration is split at its pauses (vc.inference.long_form).
        """
        audio = self.config.audio
        if len(wave) / sample_rate > audio.max_duration:
            result = self.convert_long(prepare_wave(wave, sample_rate, audio, whole=True))
        else:
            result = self.convert_speech([prepare_speech(wave, sample_rate, audio)])[0]
        return result.wave, result.sample_rate

    def convert_long(self, wave: np.ndarray, batch_size: int = 8) -> Conversion:
        """A long recording at the model's rate, untrimmed -> its conversion, cut at its pauses and joined
        with them kept (vc.inference.long_form)."""
        joined, mel, alignment = convert_long(self.convert_batch, wave, self.config.audio, batch_size)
        return Conversion(joined, self.config.audio.sample_rate, alignment, mel)

    def convert_file(self, path: str | Path) -> Conversion:
        return self.convert_speech([read_speech(path, self.config.audio)])[0]

    def convert_speech(self, recordings: list[Speech]) -> list[Conversion]:
        """Recordings cut to their speech -> conversions in one batch, each wave with the silence cut
        before and after its speech put back (zeros of the same length), so the output keeps the
        input's pauses at its ends, as a long recording's (convert_long) keeps all of them; a
        recognizer loses the first words of speech that starts at sample 0. The mel and the
        alignment are the speech's."""
        conversions = self.convert_batch([recording.wave for recording in recordings])
        return [
            replace(conversion, wave=with_silence(conversion.wave, recording.lead, recording.tail))
            for conversion, recording in zip(conversions, recordings, strict=True)
        ]

    def normalize_source(self, mels: torch.Tensor, mel_lens: torch.Tensor) -> torch.Tensor:
        """(B, T, n_mels) log-mels, padded -> the encoder's input, per inference.source_warp and
        inference.source_normalization."""
        if self.voice_warp is not None:
            mels, factors = self.voice_warp(mels, mel_lens)
            log.debug("source warp factors: %s", [round(float(f), 3) for f in factors])
        return self.src_stats.normalize_source(mels, mel_lens, self.config.inference.source_normalization)

    def aligned_source(self, src, src_lens, alignments, enc_lens, out_lens) -> torch.Tensor | None:
        """The encoder's input frames at the output's timing, for a post-filter that reads them; else None."""
        if self.postfilter is None or not self.postfilter.source_dim:
            return None
        model = self.config.model
        return aligned_source(
            src,
            src_lens,
            alignments,
            enc_lens,
            out_lens,
            self.kind.frames_per_row(model),
            model.encoder_reduction_factor,
        )

    def _converted(self, padded: torch.Tensor, wave_lens: torch.Tensor, timing: Timing | None = None):
        """Prepared waves, padded on the device -> (the model's output, its converted log-mels: the
        target's scale, post-filtered)."""
        # Stage labels for torch.profiler (bench/convert_rtf.py); the models label encoder, decoder, postnet.
        with record_function("features"):
            mels, mel_lens = self.features(padded, wave_lens.to(self.device))
            src = self.normalize_source(mels, mel_lens)
        extras = (
            {"pitch": pitch_of(padded, wave_lens, self.config.audio)}
            if self.kind.needs_pitch(self.config.model)
            else {}
        )
        if timing is not None:
            extras["timing"] = timing
        # Seeded: the prenet's dropout (on at inference) and Griffin-Lim's initial
        # phase are random, and the same input should give the same output.
        with private_rng(self.seed, self.device):
            out = self.model.inference(src, mel_lens, self.config.inference, **extras)
        converted = self.tgt_stats.denormalize(out.after)
        if self.postfilter is not None:
            with record_function("postfilter"):
                converted = self.postfilter(
                    converted,
                    out.lens,
                    self.aligned_source(src, mel_lens, out.alignments, out.enc_lens, out.lens),
                )
        return out, converted

    def _vocoded(self, converted: torch.Tensor, lens: torch.Tensor):
        # A CPU generator: Griffin-Lim starts from the same phases on every device, so a GPU's audio
        # matches the CPU's (CUDA's generator draws another sequence from the same seed).
        generator = torch.Generator().manual_seed(self.seed)
        with record_function("vocoder"):
            return self.vocoder(converted, lens, generator=generator)

    @torch.no_grad()
    def timing_of(
        self, padded: torch.Tensor, wave_lens: torch.Tensor, pitch_range: tuple[float, float] | None = None
    ) -> Timing:
        """This attention model's conversion of a batch as another converter speaks at it: its
        alignment, and the pitch features of its own output (vocoded, then read by YIN) in
        ``pitch_range``, the log-F0 (mean, deviation) the other converter learned its target's pitch in
        (its output is the target's voice: its level and range carry over), else in each output's own."""
        out, converted = self._converted(padded, wave_lens)
        audio, audio_lens = self._vocoded(converted, out.lens)
        pitch = pitch_of(audio.float(), audio_lens, self.config.audio, pitch_range)
        frames = int(out.lens.max())
        pitch = torch.nn.functional.pad(pitch[:, :frames], (0, 0, 0, max(0, frames - pitch.shape[1])))
        pitch = pitch * ~make_pad_mask(out.lens, frames).unsqueeze(-1)
        model = self.config.model
        return Timing(
            out.alignments,
            out.enc_lens,
            out.lens,
            self.kind.frames_per_row(model),
            model.encoder_reduction_factor,
            pitch,
        )

    @torch.no_grad()
    def convert_batch(self, waves: list[np.ndarray]) -> list[Conversion]:
        """Prepared waves (at the model's rate, trimmed) -> conversions, one batch on the device."""
        wave_lens = torch.tensor([len(w) for w in waves])
        padded = torch.nn.utils.rnn.pad_sequence([torch.from_numpy(w) for w in waves], batch_first=True)
        padded = padded.to(self.device)
        timing = None if self.timing is None else self.timing.timing_of(padded, wave_lens, self.target_pitch)
        out, converted = self._converted(padded, wave_lens, timing)
        audio, audio_lens = self._vocoded(converted, out.lens)
        # The alignment shown: the timing's where it times the output, else the model's. Its rows: decoder
        # steps of the attention model, output frames of the non-autoregressive one.
        shown, aligner = (out, self) if timing is None else (timing, self.timing)
        steps = aligner.kind.alignment_rows(shown.lens, aligner.config.model)
        results = []
        for k in range(len(waves)):
            results.append(
                Conversion(
                    wave=audio[k, : int(audio_lens[k])].float().cpu().numpy(),
                    sample_rate=self.config.audio.sample_rate,
                    alignment=shown.alignments[k, : int(steps[k]), : int(shown.enc_lens[k])]
                    .float()
                    .cpu()
                    .numpy(),
                    mel=converted[k, : int(out.lens[k])].float().cpu().numpy(),
                )
            )
        return results


def _check_timing(converter: Converter, timing: Converter) -> None:
    """A timing the converter can speak at: an attention model's, on the same frames; else ConfigError."""
    kind = converter.config.model.kind
    if not converter.kind.speaks_at_timing:
        raise ConfigError(
            f"a timing model re-times a recognition-synthesis converter's content; this model is {kind}"
        )
    if timing.config.model.kind != "attention":
        raise ConfigError(f"the timing model must be an attention model; it is {timing.config.model.kind}")
    mine, its = converter.config.audio, timing.config.audio
    if (mine.sample_rate, mine.hop_length) != (its.sample_rate, its.hop_length):
        raise ConfigError(
            f"the timing model's frames ({its.sample_rate} Hz, hop {its.hop_length}) are not the model's "
            f"({mine.sample_rate} Hz, hop {mine.hop_length})"
        )

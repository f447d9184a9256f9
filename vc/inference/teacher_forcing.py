"""Teacher forcing as an inference mode: a loaded model's predictions at the target's own timing.

The companion networks learn from them: frame k of the prediction estimates
target frame k, so it pairs with the target's magnitude (vc.training.mel2linear)
or natural log-mel (vc.training.postfilter).
"""

from __future__ import annotations

from pathlib import Path

import torch

from vc.artifacts.checkpoint import private_rng
from vc.artifacts.durations import load_durations
from vc.audio import read_audio
from vc.audio.pitch import pitch_of
from vc.errors import DataError
from vc.inference.converter import Converter
from vc.kinds import get_kind
from vc.model.aligned_source import aligned_source
from vc.pairs import read_pair_list
from vc.progress import progress as show_progress  # `progress` is a parameter name here
from vc.settings.audio import AudioConfig


def for_teacher_forcing(checkpoint: str | Path) -> Converter:
    """The model of ``checkpoint`` on the CPU, without the networks that follow it."""
    return Converter.from_checkpoint(checkpoint, device="cpu", mel2linear=False, postfilter=False)


@torch.no_grad()
def teacher_forced(
    converter: Converter, paths, files: list[Path], target_mels, audio: AudioConfig, progress: bool = True
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per pair whose target is in ``files``: the model's teacher-forced log-mel (target scale) and
    its normalised input frames at that output's timing (vc.model.aligned_source; None for a kind whose
    post-filter must not read them, ModelKind.postfilter_reads_input).

    ``converter``: a loaded model (for_teacher_forcing); ``paths``: the pair lists that name each
    target's source. The non-autoregressive converter runs at the durations it trained on
    (data.durations), the attention model at the target's frames.
    Runs in length-sorted batches of 16, in the order of ``files``.
    Shapes: target_mels, lists of (T, n_mels); returns [((T, n_mels), (T, n_mels))].
    """
    lists = [p for p in map(Path, paths) if p.suffix.lower() in (".tsv", ".txt", ".scp")]
    by_target = {pair.target: pair for path in lists for pair in read_pair_list(path)}
    missing = [f for f in files if f not in by_target]
    if missing:
        raise DataError(f"--checkpoint needs pair lists: no source for {missing[0]}")
    if converter.config.audio != audio:
        raise DataError("the model uses other audio settings than --config; pass its config.yaml")
    model_config = converter.config.model
    kind = get_kind(model_config.kind)
    durations = (
        load_durations(converter.config.data.durations, model_config.encoder_reduction_factor)
        if kind.needs_durations
        else None
    )
    pad = torch.nn.utils.rnn.pad_sequence
    order = sorted(range(len(files)), key=lambda k: len(target_mels[k]))
    outputs: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(files)
    with show_progress(total=len(files), desc="predicted mels", unit="file", disable=not progress) as bar:
        for start in range(0, len(order), 16):
            chunk = order[start : start + 16]
            waves = [torch.from_numpy(read_audio(by_target[files[k]].source, audio)) for k in chunk]
            sources, source_lens = pad(waves, batch_first=True), torch.tensor([len(w) for w in waves])
            src, src_lens = converter.features(sources, source_lens)
            src = converter.src_stats.normalize(src)
            tgt = converter.tgt_stats.normalize(pad([target_mels[k] for k in chunk], batch_first=True))
            tgt_lens = torch.tensor([len(target_mels[k]) for k in chunk])
            taught = None
            if durations is not None:  # the durations it trained on
                taught = pad([durations[by_target[files[k]].utt_id] for k in chunk], batch_first=True)
            extras = {}
            if kind.needs_pitch(model_config):  # each side's own pitch, read from its recording
                targets = [torch.from_numpy(read_audio(files[k], audio)) for k in chunk]
                lens = torch.tensor([len(w) for w in targets])
                extras["tgt_pitch"] = pitch_of(pad(targets, batch_first=True), lens, audio)
                extras["src_pitch"] = pitch_of(sources, source_lens, audio)
            with private_rng(0, converter.device):
                out = kind.teacher_forced(converter.model, src, src_lens, tgt, tgt_lens, taught, **extras)
            after = converter.tgt_stats.denormalize(out.after).float()
            source = None
            if kind.postfilter_reads_input:
                source = aligned_source(
                    src, src_lens, out.alignments, out.enc_lens, tgt_lens,
                    kind.frames_per_row(model_config), model_config.encoder_reduction_factor,
                )  # fmt: skip
            for row, k in enumerate(chunk):
                length = int(tgt_lens[row])
                read = None if source is None else source[row, :length].float().clone()
                outputs[k] = (after[row, :length].clone(), read)
            bar.update(len(chunk))
    return outputs

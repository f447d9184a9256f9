"""Files and folders in, files out: what `vc convert` does around the Converter.

Outputs are checked before any work (never an input, never an existing file
unless asked, never unwritable), each is written atomically, and a batch that
meets an unreadable file converts the rest and lists the failure.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vc.audio import AUDIO_FORMATS, audio_files, prepare_wave, read_speech, write_audio
from vc.audio.features import duration_seconds, read_samples
from vc.errors import AudioError, ConfigError, VcError
from vc.fileio import atomic_open, refuse_overwrite
from vc.inference.converter import Conversion, Converter
from vc.progress import progress as show_progress  # `progress` is a parameter name here

log = logging.getLogger(__name__)

# Torch threads for a conversion unless the caller or VC_THREADS says otherwise: one. The
# recurrent decoder runs many small steps; beside other busy processes a second thread made
# conversion slower, and on an idle machine no faster (bench/cold_start.py measures it).
# vc/cli/convert.py names this default in its --help.
DEFAULT_CONVERT_THREADS = 1


def convert_threads(given: int | None = None) -> int:
    """``given`` (--threads), else a positive VC_THREADS, else DEFAULT_CONVERT_THREADS."""
    if given is not None:
        return given
    value = os.environ.get("VC_THREADS", "")
    if not value:
        return DEFAULT_CONVERT_THREADS
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"VC_THREADS must be a positive whole number, got {value!r}")
    return int(value)


def collect_inputs(paths: list[str | Path]) -> list[Path]:
    """Files as given; folders expand to their audio files (sorted). Missing paths are errors."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files = audio_files(path)
            if not files:
                raise AudioError(f"no {'/'.join(AUDIO_FORMATS)} files in folder {path}")
            found += files
        elif not path.exists():
            raise AudioError(f"input not found: {path}")
        else:
            found.append(path)
    return found


def check_writable(path: Path) -> None:
    """Fail before any work if the output cannot be written."""
    folder = path.parent
    existing = folder
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        raise AudioError(f"cannot write {path}: {existing} is not a writable folder")
    if path.is_dir():
        raise AudioError(f"cannot write {path}: it is a folder")


def check_outputs(inputs: list[Path], outputs: list[Path]) -> None:
    """Refuse, before any work, an output that is an input or that two inputs would share.

    Writing over an input would replace the user's recording with its conversion.
    The same file can hide behind another spelling, a symlink or a hard link, so
    compare resolved paths and, for outputs that exist, device and inode.
    """
    by_path = {path.resolve(): path for path in inputs}
    by_inode = {(st.st_dev, st.st_ino): path for path in inputs if (st := _stat(path))}
    claimed: dict[Path, Path] = {}
    for output in outputs:
        st = _stat(output)
        source = by_path.get(output.resolve()) or (st and by_inode.get((st.st_dev, st.st_ino)))
        if source:
            raise AudioError(f"output {output} is the input {source}; refusing to overwrite a source file")
        if output.resolve() in claimed:
            raise AudioError(f"two outputs would both be written to {output}; give distinct output names")
        claimed[output.resolve()] = output


@dataclass
class ConversionPlan:
    """Which inputs convert to which outputs (and alignment files), checked before any model loads."""

    inputs: list[Path]
    outputs: list[Path]
    alignments: list[Path] | None


def plan_conversion(
    paths: list[str | Path],
    out_dir: str | Path | None = None,
    save_alignment: str | None = None,
    overwrite: bool = False,
) -> ConversionPlan:
    """`vc convert`'s paths -> the files it reads and writes, refused now rather than after the work.

    Without ``out_dir``, ``paths`` are IN OUT and ``save_alignment`` a FILE.png or FILE.npy;
    with it, ``paths`` are inputs (files or folders), each written to out_dir/<name>.wav, and
    ``save_alignment`` a format, png or npy. No output may be an input or shared by two inputs,
    and none may exist unless ``overwrite``.
    """
    if out_dir is None:
        plan = _single_output(paths, save_alignment)
    else:
        plan = _outputs_in_folder(paths, Path(out_dir), save_alignment)
    if plan.alignments and plan.alignments[0].suffix not in (".png", ".npy"):
        raise AudioError(f"--save-alignment must end in .png or .npy, got {plan.alignments[0]}")
    check_outputs(plan.inputs, plan.outputs + (plan.alignments or []))
    refuse_existing_outputs(plan, single=out_dir is None, overwrite=overwrite)
    return plan


def _single_output(paths: list[str | Path], save_alignment: str | None) -> ConversionPlan:
    if len(paths) != 2:
        raise AudioError("give IN OUT, or several inputs (files or folders) with --out-dir DIR")
    if Path(paths[0]).is_dir():
        raise AudioError(f"{paths[0]} is a folder; use --out-dir DIR to convert a folder")
    alignments = [Path(save_alignment)] if save_alignment else None
    return ConversionPlan(collect_inputs(paths[:1]), [Path(paths[1])], alignments)


def _outputs_in_folder(paths: list[str | Path], out_dir: Path, suffix: str | None) -> ConversionPlan:
    inputs = collect_inputs(paths)
    outputs = [out_dir / f"{path.stem}.wav" for path in inputs]
    if len({o.name for o in outputs}) != len(outputs):
        raise AudioError("two inputs share a file name; their outputs in --out-dir would collide")
    if suffix and suffix not in ("png", "npy"):
        raise AudioError("with --out-dir, --save-alignment takes a format: png or npy")
    alignments = [o.with_name(f"{o.stem}_alignment.{suffix}") for o in outputs] if suffix else None
    return ConversionPlan(inputs, outputs, alignments)


def refuse_existing_outputs(plan: ConversionPlan, single: bool, overwrite: bool) -> None:
    """Existing outputs only with ``overwrite``; IN OUT with OUT an existing recording may mean two inputs."""
    out = plan.outputs[0]
    if single and out.is_dir():
        raise AudioError(f"{out} is a folder; use --out-dir {out} to convert into it")
    if single and not overwrite and out.exists() and out.suffix.lower() in AUDIO_FORMATS:
        raise AudioError(
            f"{out} already exists: to convert both files give --out-dir DIR; "
            f"to replace it with the conversion of {plan.inputs[0]} add --overwrite"
        )
    refuse_overwrite(plan.outputs + (plan.alignments or []), overwrite)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def save_alignment(path: Path, alignment: np.ndarray, title: str) -> None:
    if path.suffix == ".npy":
        with atomic_open(path) as out:
            np.save(out, alignment)
    else:
        from vc.plotting import alignment_figure, save_figure  # matplotlib: slow to import, PNGs only

        save_figure(alignment_figure(alignment, title), path)


@dataclass
class Failure:
    """An input that was not converted, and why (a one-line message naming the file)."""

    path: Path
    reason: str


def convert_files(
    converter: Converter,
    inputs: list[Path],
    outputs: list[Path],
    batch_size: int = 8,
    alignments: list[Path] | None = None,
    progress: bool = True,
    strict: bool = True,
) -> list[Failure]:
    """Convert inputs[k] to outputs[k] in length-sorted batches, each output written atomically.

    Outputs are checked first: none may be an input, none may be unwritable.
    strict: the first unusable input raises before anything is written.
    Otherwise every readable file is converted and the failures are returned.
    A file longer than audio.max_duration is cut at its pauses and converted piece by piece
    (Converter.convert_long); the others go in length-sorted batches (Converter.convert_speech:
    the silence around each one's speech is kept).
    """
    check_outputs(inputs, outputs + (alignments or []))
    for path in outputs + (alignments or []):
        check_writable(path)
    audio = converter.config.audio
    waves, long_waves, failures = {}, {}, []
    reading = show_progress(inputs, desc="reading", unit="file", disable=not progress or len(inputs) < 2)
    for k, path in enumerate(reading):
        try:
            if duration_seconds(path) > audio.max_duration:
                samples, rate = read_samples(path, audio, check_duration=False)
                long_waves[k] = prepare_wave(samples, rate, audio, name=str(path), whole=True)
            else:
                waves[k] = read_speech(path, audio)
        except VcError as exc:
            if strict:
                raise
            failures.append(Failure(path, str(exc)))
    for k, wave in long_waves.items():
        log.info(
            "%s lasts %.0f s: converting it in pieces cut at its pauses",
            inputs[k],
            len(wave) / audio.sample_rate,
        )
        try:
            _write_result(
                converter.convert_long(wave, batch_size),
                outputs[k],
                alignments[k] if alignments else None,
                inputs[k].stem,
            )
        except VcError as exc:
            if strict:
                raise
            failures.append(Failure(inputs[k], str(exc)))
    order = sorted(waves, key=lambda k: len(waves[k].wave))
    with show_progress(total=len(order), desc="converting", unit="file", disable=not progress) as bar:
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            for k, result in zip(chunk, converter.convert_speech([waves[k] for k in chunk]), strict=True):
                try:
                    _write_result(result, outputs[k], alignments[k] if alignments else None, inputs[k].stem)
                except VcError as exc:
                    if strict:
                        raise
                    failures.append(Failure(inputs[k], str(exc)))
            bar.update(len(chunk))
    return sorted(failures, key=lambda failure: inputs.index(failure.path))


def _write_result(result: Conversion, output: Path, alignment: Path | None, title: str) -> None:
    write_audio(output, result.wave, result.sample_rate)
    if alignment is not None:
        save_alignment(alignment, result.alignment, title)

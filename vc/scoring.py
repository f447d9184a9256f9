"""`vc score`: objective scores over folders, and the table beside the two references.

The model's row is printed beside the floor (source speaker against the target,
no conversion) and the Griffin-Lim ceiling: the references through our own
log-mel + Griffin-Lim path, the best MCD any model can reach with this vocoder.
The per-utterance analysis and distances live in vc.metrics.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import torch

from vc.audio import LogMel, read_audio, write_audio
from vc.config import AudioConfig, Config
from vc.errors import DataError, VcError
from vc.metrics import score_pair
from vc.progress import progress as show_progress  # `progress` is a parameter name here
from vc.vocoder import GriffinLimVocoder

AUDIO_SUFFIXES = (".wav", ".flac")
TABLE_COLUMNS = (
    ("MCD [dB]", "mcd", "{:.2f}"),
    ("F0 RMSE [Hz]", "f0_rmse", "{:.1f}"),
    ("F0 corr", "f0_corr", "{:.3f}"),
    ("duration ratio", "duration_ratio", "{:.3f}"),
    ("utterances", "utterances", "{:d}"),
)


def _audio_files(folder: Path, role: str) -> dict[str, Path]:
    """Utterance id (file stem) -> path of the .wav/.flac files in a folder."""
    if not folder.is_dir():
        raise DataError(f"{role} folder not found: {folder}")
    files: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() not in AUDIO_SUFFIXES or not path.is_file():
            continue
        if path.stem in files:
            raise DataError(
                f"two {role} files for utterance {path.stem}: {files[path.stem].name}, {path.name}"
            )
        files[path.stem] = path
    return files


def _match_files(converted_dir: Path, reference_dir: Path, only=None) -> list[tuple[str, Path, Path]]:
    """(utt id, converted path, reference path) for every converted file (or those in ``only``), sorted by id."""
    converted = _audio_files(converted_dir, "converted")
    if only is not None:
        wanted = set(only)
        converted = {utt: path for utt, path in converted.items() if utt in wanted}
    if not converted:
        raise DataError(f"no .wav or .flac files in {converted_dir}")
    references = _audio_files(reference_dir, "reference")
    missing = [utt for utt in converted if utt not in references]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise DataError(f"no reference for {missing[0]}{more} in {reference_dir}")
    return [(utt, converted[utt], references[utt]) for utt in converted]


def _score_files(job: tuple[str, Path, Path, int, str]) -> dict:
    """Worker: read and score one pair; errors name the utterance."""
    utt, converted_path, reference_path, sample_rate, f0_method = job
    config = AudioConfig(sample_rate=sample_rate, trim_top_db=0.0)
    try:
        converted = read_audio(converted_path, config)
        reference = read_audio(reference_path, config)
        return score_pair(converted, reference, sample_rate, f0_method)
    except VcError as exc:
        raise type(exc)(f"{utt}: {exc}") from None


def _mean(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def score_directories(
    converted_dir: str | Path,
    reference_dir: str | Path,
    sample_rate: int = 16000,
    progress: bool = True,
    workers: int = 2,
    f0_method: str = "dio",
    only=None,
) -> dict:
    """Score every .wav/.flac of ``converted_dir`` (or those whose id is in ``only``)
    against the same stem in ``reference_dir``.

    Files are resampled to ``sample_rate`` when needed. Returns the means over
    utterances of mcd, f0_rmse, f0_corr and duration_ratio (NaNs skipped),
    ``utterances`` (count) and ``per_utterance`` {utt id: score_pair dict}.
    Raises DataError for a missing folder, an empty converted folder or a
    converted file without reference. ``workers`` > 1 analyses in parallel.
    """
    pairs = _match_files(Path(converted_dir), Path(reference_dir), only)
    jobs = [(utt, conv, ref, sample_rate, f0_method) for utt, conv, ref in pairs]
    workers = max(1, min(workers, len(jobs)))
    rows = []
    with show_progress(total=len(jobs), desc="scoring", unit="utt", disable=not progress) as bar:
        if workers == 1:
            results = map(_score_files, jobs)
            pool = None
        else:
            pool = multiprocessing.get_context().Pool(workers)
            results = pool.imap(_score_files, jobs)  # keeps the order of jobs
        try:
            for row in results:
                rows.append(row)
                bar.update(1)
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
    per_utterance = {job[0]: row for job, row in zip(jobs, rows, strict=True)}
    summary = {
        key: _mean([row[key] for row in rows]) for key in ("mcd", "f0_rmse", "f0_corr", "duration_ratio")
    }
    return {**summary, "utterances": len(rows), "per_utterance": per_utterance}


def format_table(rows: dict[str, dict]) -> str:
    """Plain-text table, one line per system (e.g. "model", "no conversion (source)",
    "Griffin-Lim ceiling (reference resynthesised)"), from ``score_directories`` results.

    Columns: MCD [dB], F0 RMSE [Hz], F0 corr, duration ratio, utterances; a
    missing or NaN value prints as "-".
    """
    header = ["system"] + [title for title, _, _ in TABLE_COLUMNS]
    body = [
        [name] + [_cell(scores.get(key), fmt) for _, key, fmt in TABLE_COLUMNS]
        for name, scores in rows.items()
    ]
    widths = [max(len(line[col]) for line in [header, *body]) for col in range(len(header))]

    def render(line: list[str]) -> str:
        cells = [line[0].ljust(widths[0])] + [
            cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True)
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([render(header), rule, *[render(line) for line in body]])


def _cell(value, fmt: str) -> str:
    if value is None or not math.isfinite(float(value)):
        return "-"
    return fmt.format(int(value) if fmt == "{:d}" else float(value))


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
        for utt in show_progress(
            sorted(utt_ids), desc="Griffin-Lim ceiling", unit="utt", disable=not progress
        ):
            wave = torch.from_numpy(read_audio(references[utt], config.audio))[None]
            with torch.no_grad():
                mel, mel_lens = features(wave)
                out, out_lens = vocoder(mel, mel_lens, generator=generator)
            write_audio(
                Path(folder) / f"{utt}.wav", out[0, : int(out_lens[0])].numpy(), config.audio.sample_rate
            )
        yield Path(folder)

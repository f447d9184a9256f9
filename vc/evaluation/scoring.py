"""`vc score`: what listeners judge and how far the spectra are, over folders, as one table.

Each system (a row: the model, the source speaker unconverted, the Griffin-Lim
ceiling, the natural target...) is a folder of files named by utterance id.
Every file is scored in a pool of worker processes, one job per file:

* spectral and prosodic distances to the same utterance of the target speaker
  (MCD, F0 RMSE and correlation, duration ratio, DDUR; vc.evaluation.metrics);
* intelligibility: Whisper's word and character error rates against the
  transcript (vc.evaluation.whisper, .transcripts); pocketsphinx's beside them
  when asked for (families, `vc score --families`; vc.evaluation.sphinx);
* speaker similarity: cosine of a speaker embedding to the target speaker's
  and the source speaker's centroids (vc.evaluation.speaker), the centroids
  embedded from training utterances in the same pool;
* naturalness: DNSMOS P.835 predicted MOS (vc.evaluation.naturalness).

A metric family whose package is missing is left out, and the result says
which and how to get it; the other columns are still computed.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from vc.audio import AUDIO_FORMATS, LogMel, audio_files, read_audio, read_speech, write_audio
from vc.audio.dsp import with_silence
from vc.config import Config
from vc.errors import ConfigError, DataError, VcError
from vc.evaluation import registry
from vc.evaluation.metric import FileJob
from vc.evaluation.score_cache import ScoreCache
from vc.parallel import process_map
from vc.progress import progress as show_progress  # `progress` is a parameter name here
from vc.settings.audio import AudioConfig
from vc.vocoders import built_in, make_vocoder

# The row of the files a family scores once per run (Metric.run_files): RUN_FILES + family + ":" + role.
RUN_FILES = "run files:"


@dataclass
class System:
    """A row of the table: a folder of files named <utt id>.wav/.flac."""

    name: str
    folder: Path
    distances: bool = True  # MCD/F0/duration against the reference (pointless for the reference itself)
    families: tuple[str, ...] | None = None  # the metric families its files get; None: every one the run has

    def __post_init__(self) -> None:
        known = registry.families()
        unknown = [name for name in self.families or () if name not in known]
        if unknown:  # a misspelt name would leave the row without its scores, silently
            raise ConfigError(f"{self.name}: no metric family {unknown[0]!r} (one of {', '.join(known)})")


@dataclass
class _Models:
    """Per-process evaluation models, loaded on first use."""

    loaded: dict = field(default_factory=dict)

    def get(self, family: str):
        if family not in self.loaded:
            self.loaded[family] = registry.families()[family].load()
        return self.loaded[family]


_MODELS = _Models()


def _worker_init() -> None:
    # One process per core: more threads per process only contend. Library
    # warnings inside workers are not the user's business.
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")


def _run_job(job: FileJob) -> dict[str, dict]:
    """Worker: family -> its scores of one file, for every family the job asks for; errors name the
    utterance."""
    config = AudioConfig(sample_rate=job.sample_rate, trim_top_db=0.0)
    try:
        wave = read_audio(job.path, config)
        return {name: registry.families()[name].score(_MODELS.get(name), wave, job) for name in job.families}
    except VcError as exc:
        raise type(exc)(f"{job.utt} ({job.path}): {exc}") from None


def files_by_utterance(folder: Path, role: str) -> dict[str, Path]:
    """Utterance id (file stem) -> path of the audio files in a folder (vc.audio.audio_files)."""
    if not folder.is_dir():
        raise DataError(f"{role} folder not found: {folder}")
    files: dict[str, Path] = {}
    for path in audio_files(folder):
        if path.stem in files:
            raise DataError(
                f"two {role} files for utterance {path.stem}: {files[path.stem].name}, {path.name}"
            )
        files[path.stem] = path
    return files


def _match_files(converted_dir: Path, reference_dir: Path, only=None) -> list[tuple[str, Path, Path]]:
    """(utt id, converted path, reference path) for every converted file (or those in ``only``), sorted by id."""
    converted = files_by_utterance(converted_dir, "converted")
    if only is not None:
        wanted = set(only)
        converted = {utt: path for utt, path in converted.items() if utt in wanted}
    if not converted:
        raise DataError(f"no {'/'.join(AUDIO_FORMATS)} files in {converted_dir}")
    references = files_by_utterance(reference_dir, "reference")
    missing = [utt for utt in converted if utt not in references]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise DataError(f"no reference for {missing[0]}{more} in {reference_dir}")
    return [(utt, converted[utt], references[utt]) for utt in converted]


def available_families(wanted: Iterable[str] | None = None) -> tuple[list[str], list[str]]:
    """(families that can run here, one line for each that cannot); ``wanted``: optional families
    (default: registry.default_families()), in the registry's order, after those always computed."""
    wanted = registry.default_families() if wanted is None else tuple(wanted)
    ready, missing = [], []
    for metric in registry.METRICS:
        if metric.optional and metric.name not in wanted:
            continue
        reason = metric.unavailable()
        (missing if reason else ready).append(reason or metric.name)
    return ready, missing


def _run_pool(jobs: list[FileJob], workers: int, progress: bool) -> list[dict[str, dict]]:
    if workers == 1 or len(jobs) <= 1:
        # In this process, as a worker would: its library warnings silenced, one torch thread (two
        # threads on two busy cores ran the speaker encoder's LSTM at 1 s a file, one at 0.04), then
        # the caller's threads back.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return process_map(_run_job, jobs, 1, desc="scoring", unit="file", progress=progress)
        finally:
            torch.set_num_threads(threads)
    return process_map(
        _run_job, jobs, workers, desc="scoring", unit="file", progress=progress, initializer=_worker_init
    )


def score_systems(
    systems: list[System],
    reference_dir: str | Path,
    *,
    sample_rate: int = 16000,
    transcripts: dict[str, str] | None = None,
    speakers: dict[str, list[Path]] | None = None,
    families: Iterable[str] | None = None,
    workers: int = 2,
    progress: bool = True,
    f0_method: str = "dio",
    cache_dir: Path | None = None,
) -> dict:
    """Score every system's files for the utterances of the first system.

    ``transcripts`` (utt -> text) enables WER/CER; ``speakers`` ({"target": [...],
    "source": [...]}, training files) enables speaker similarity; both also need
    their packages, as does the predicted MOS. Returns {"rows": {name: means and
    "per_utterance"}, "missing": [why a family is absent], "files": {utt: {row:
    path}}, "transcripts": {utt: text}} (see ``summarize`` for the row keys).
    A family may score files of its own once per run (Metric.run_files: the training files that
    give the speaker centroids). ``cache_dir``: a score cache
    (vc/evaluation/score_cache.py): files scored before with everything their scores depend on unchanged
    are read from it, the others scored and kept there; "from_cache" says, per row, how many files the
    cache held whole.
    """
    reference_dir = Path(reference_dir)
    ready, missing = available_families(families)
    for name in list(ready):
        reason = registry.families()[name].missing_input(transcripts, speakers)
        if reason:
            ready.remove(name)
            missing.append(reason)
    first = _match_files(systems[0].folder, reference_dir)
    utts = [utt for utt, _, _ in first]
    references = {utt: ref for utt, _, ref in first}
    jobs, files = [], {utt: {} for utt in utts}
    for system in systems:
        found = files_by_utterance(system.folder, system.name)
        absent = [utt for utt in utts if utt not in found]
        if absent:
            raise DataError(f"{system.name}: no file for {absent[0]} in {system.folder}")
        for utt in utts:
            files[utt][system.name] = str(found[utt])
            jobs.append(
                FileJob(
                    system.name,
                    utt,
                    found[utt],
                    sample_rate,
                    reference=references[utt] if system.distances else None,
                    text=(transcripts or {}).get(utt),
                    families=tuple(f for f in ready if system.families is None or f in system.families),
                    f0_method=f0_method,
                )
            )
    # Files a family scores once per run besides the rows' (the speaker centroids' training files).
    metrics = registry.families()
    for name in ready:
        for role, paths in metrics[name].run_files(transcripts, speakers).items():
            jobs += [
                FileJob(f"{RUN_FILES}{name}:{role}", p.stem, p, sample_rate, families=(name,)) for p in paths
            ]
    results, held = _scores(jobs, workers, progress, ScoreCache(cache_dir) if cache_dir else None)
    found: dict = {}
    for name in ready:
        scored: dict[str, list[dict]] = {}
        for job, result in zip(jobs, results, strict=True):
            if job.row.startswith(f"{RUN_FILES}{name}:"):
                scored.setdefault(job.row.rsplit(":", 1)[1], []).append(result)
        found.update(metrics[name].run_found(scored))
    rows = {}
    for system in systems:
        per_utt = {job.utt: res for job, res in zip(jobs, results, strict=True) if job.row == system.name}
        rows[system.name] = summarize(per_utt, found)
    used = {utt: transcripts[utt] for utt in utts if utt in (transcripts or {})}
    from_cache = {
        system.name: sum(whole for job, whole in zip(jobs, held, strict=True) if job.row == system.name)
        for system in systems
    }
    return {"rows": rows, "missing": missing, "files": files, "transcripts": used, "from_cache": from_cache}


def _scores(
    jobs: list[FileJob], workers: int, progress: bool, cache: ScoreCache | None
) -> tuple[list[dict], list[bool]]:
    """(each job's scores, its families' values merged; whether the cache held all of them): what the
    cache holds is read, the rest scored in the pool and kept."""
    metrics = registry.families()
    found: list[dict[str, dict]] = [{} for _ in jobs]
    keys: list[dict[str, str]] = [{} for _ in jobs]
    if cache is not None:
        for index, job in enumerate(jobs):
            for name in job.families:
                keys[index][name] = cache.key(metrics[name], job)
                values = cache.read(keys[index][name])
                if values is not None:
                    found[index][name] = values
    todo = [
        (index, replace(job, families=tuple(name for name in job.families if name not in found[index])))
        for index, job in enumerate(jobs)
    ]
    todo = [(index, job) for index, job in todo if job.families]
    scored = _run_pool([job for _, job in todo], workers, progress)
    for (index, _), per_family in zip(todo, scored, strict=True):
        for name, values in per_family.items():
            if cache is not None:
                cache.write(keys[index][name], values)
            found[index][name] = values
    fresh = {index for index, _ in todo}
    merged = [
        {key: value for name in job.families for key, value in found[index][name].items()}
        for index, job in enumerate(jobs)
    ]
    return merged, [index not in fresh for index in range(len(jobs))]


def summarize(per_utt: dict[str, dict], found: dict) -> dict:
    """Each family's per-utterance values finished (vc/evaluation/metric.py) with what the run's own files
    gave (``found``, Metric.run_found), then each column summed up over utterances: means (NaNs
    skipped), error rates pooled over words and characters.

    Keys: the registry's columns (vc/evaluation/registry.py) that any utterance has, utterances, and
    per_utterance (the same per file, with the recognised text as hypothesis).
    """
    for row in per_utt.values():
        for metric in registry.METRICS:
            metric.finish(row, found)
    rows = list(per_utt.values())
    summary: dict = {"utterances": len(rows)}
    for column in registry.columns():
        if column.pooled is not None:
            if any(column.pooled[1] in row for row in rows):
                summary[column.key] = _pooled(rows, *column.pooled)
        elif column.key != "utterances" and any(column.key in row for row in rows):
            summary[column.key] = _mean([row.get(column.key, math.nan) for row in rows])
    summary["per_utterance"] = per_utt
    return summary


def _pooled(rows: list[dict], edits: str, total: str) -> float:
    count = sum(row.get(total, 0) for row in rows)
    return 100.0 * sum(row.get(edits, 0) for row in rows) / count if count else math.nan


def _mean(values: list[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def format_table(rows: dict[str, dict], columns=None, first: str = "system") -> str:
    """Plain-text table, one line per row, one column per metric (title, key, format; default: the
    registry's) that any row has. A missing or NaN value prints as "-".
    """
    columns = registry.table_columns() if columns is None else columns
    columns = [c for c in columns if any(c[1] in scores for scores in rows.values())]
    header = [first] + [title for title, _, _ in columns]
    body = [
        [name] + [_cell(scores.get(key), fmt) for _, key, fmt in columns] for name, scores in rows.items()
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
    reference_dir: str | Path,
    utt_ids: Iterable[str],
    config: Config,
    progress: bool = True,
    out_dir: str | Path | None = None,
    vocoder: torch.nn.Module | None = None,
    title: str = "ceiling",
) -> Iterator[Path]:
    """Yield a folder holding <utt>.wav = vocoder(log-mel(reference <utt>)).

    The folder is ``out_dir`` when given (kept, e.g. for the listening report),
    else a temporary one. ``vocoder`` defaults to the built-in vocoder's pseudo-inverse
    path with the config's settings; pass the one `vc convert` uses so the ceiling moves with it. ``title``
    names the row in the progress bar.
    """
    references = files_by_utterance(Path(reference_dir), "reference")
    features = LogMel(config.audio)
    vocoder = vocoder or make_vocoder(config.audio, replace(config.vocoder, kind=built_in()))
    generator = torch.Generator().manual_seed(0)
    with contextlib.ExitStack() as stack:
        if out_dir is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vc-ceiling-")))
        else:
            folder = Path(out_dir)
            folder.mkdir(parents=True, exist_ok=True)
        for utt in show_progress(sorted(utt_ids), desc=title, unit="utt", disable=not progress):
            speech = read_speech(references[utt], config.audio)
            with torch.no_grad():
                mel, mel_lens = features(torch.from_numpy(speech.wave)[None])
                out, out_lens = vocoder(mel, mel_lens, generator=generator)
            wave = with_silence(out[0, : int(out_lens[0])].numpy(), speech.lead, speech.tail)
            write_audio(folder / f"{utt}.wav", wave, config.audio.sample_rate)
        yield folder

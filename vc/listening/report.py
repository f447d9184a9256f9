"""`vc report EXP`: build the listening report folder (index.html, audio/, img/).

Every file the page needs is copied or drawn into the folder and linked
relatively, so the folder opens from disk, can be zipped or served as is, and
needs no network. Audio is rewritten as 16-bit PCM WAV (every browser decodes
it; the model's own artefacts are heard, not a codec's) or, with
``audio_format="ogg"``, as Ogg Vorbis (about a fifth of the size).
"""

from __future__ import annotations

import datetime
import logging
import re
import shutil
from pathlib import Path

import soundfile as sf

from vc.audio import LogMel, write_audio
from vc.errors import AudioError, DataError
from vc.fileio import atomic_open, atomic_write_text
from vc.listening.figures import curves_figure, evolution_strip, logmel_of, mel_comparison_figure
from vc.listening.gather import Experiment, gather, load_audio_for_report, sort_keys, worst_first
from vc.listening.page import Assets, render
from vc.plotting import save_figure
from vc.progress import progress as show_progress

log = logging.getLogger(__name__)

AUDIO_WRITERS = ("wav", "ogg")  # the players' files: 16-bit WAV, or Ogg Vorbis (a fifth the size)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def build_report(
    exp_dir: str | Path,
    scores: str | Path | None = None,
    out: str | Path | None = None,
    audio_format: str = "wav",
    progress: bool = True,
) -> Path:
    """Write OUT/index.html (default EXP/report) with everything it links; returns its path."""
    if audio_format not in AUDIO_WRITERS:
        raise DataError(f"audio format must be one of {', '.join(AUDIO_WRITERS)}, got {audio_format!r}")
    exp = gather(exp_dir, scores)
    out_dir = Path(out) if out else Path(exp_dir) / "report"
    # Old audio/ and img/ may hold files of utterances no longer in the run: start clean.
    for sub in ("audio", "img"):
        shutil.rmtree(out_dir / sub, ignore_errors=True)
    columns = sort_keys(exp)
    exp.utterances = worst_first(exp.utterances, columns[0] if columns else None)
    assets = Assets()
    _training_figures(exp, out_dir, assets)
    extractor = LogMel(exp.audio)
    for utt in show_progress(exp.utterances, desc="report", unit="utt", disable=not progress):
        name = _UNSAFE.sub("_", utt.utt_id)
        waves = {}
        for role, path in utt.files.items():
            link = f"audio/{_UNSAFE.sub('_', role)}/{name}.{audio_format}"
            try:
                waves[role] = load_audio_for_report(path)
                write_audio(out_dir / link, *waves[role])
            except (RuntimeError, sf.LibsndfileError, OSError, AudioError) as exc:
                log.warning("%s: cannot copy %s audio %s: %s", utt.utt_id, role, path, exc)
                continue
            assets.audio[(utt.utt_id, role)] = link
        if utt.alignment_png is not None:
            link = f"img/alignment/{name}.png"
            png = utt.alignment_png.read_bytes()
            with atomic_open(out_dir / link) as handle:
                handle.write(png)
            assets.alignment[utt.utt_id] = link
        if "converted" in waves:
            converted = logmel_of(*waves["converted"], exp.audio, extractor)
            target = logmel_of(*waves["target"], exp.audio, extractor) if "target" in waves else None
            link = f"img/mel/{name}.png"
            save_figure(mel_comparison_figure(converted, target, exp.audio, utt.utt_id), out_dir / link)
            assets.mel[utt.utt_id] = link
    generated = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    index = out_dir / "index.html"
    atomic_write_text(index, render(exp, assets, columns, generated))
    return index


def _training_figures(exp: Experiment, out_dir: Path, assets: Assets) -> None:
    fig = curves_figure(exp.scalars)
    if fig is not None:
        assets.curves = "img/training_curves.png"
        save_figure(fig, out_dir / assets.curves)
    for utt_id, folder in exp.evolution.items():
        link = f"img/evolution_{_UNSAFE.sub('_', utt_id)}.png"
        save_figure(evolution_strip(folder, exp.evolution_columns), out_dir / link)
        assets.evolution[utt_id] = link

"""What the listening report shows, read from an experiment folder; nothing is drawn or written here.

Every piece is optional: a run without scores.json still gets players and
figures, a run without TensorBoard events still gets its scores, and the
report says what it could not find.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vc.config import load_config
from vc.errors import DataError, VcError
from vc.evaluation import registry
from vc.settings.audio import AudioConfig

log = logging.getLogger(__name__)

ROLES = ("source", "converted", "target", "ceiling")
# The names scores.json's "files" may give each role: vc score's row names or the role's own.
ROLE_KEYS = {
    "source": ("source", "no conversion (source)"),
    "converted": ("converted", "model"),
    "target": ("reference", "target", "natural target"),
    "ceiling": ("ceiling", "Griffin-Lim ceiling"),
}
ROLE_TITLES = {
    "source": "source (input)",
    "converted": "converted",
    "target": "target (natural)",
    "ceiling": "Griffin-Lim ceiling",
}
MODEL_ROW = "model"
# vc/training/monitor.py's line when model.until_converts ends training
_CONVERTS = re.compile(r"(step \d+: the model converts \(.*\))")
_LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


@dataclass
class Column:
    title: str
    key: str
    fmt: str
    lower: bool | None = None  # scores.json's fourth entry; older files: what the metric registry says

    @property
    def lower_is_better(self) -> bool:
        if self.lower is not None:
            return bool(self.lower)
        return any(c.key == self.key and c.lower_is_better for c in registry.columns())

    def cell(self, value) -> str:
        number = as_number(value)
        if number is None:
            return "-"
        try:
            return self.fmt.format(int(number) if self.fmt == "{:d}" else number)
        except (ValueError, TypeError):
            return f"{number:g}"


@dataclass
class Utterance:
    utt_id: str
    files: dict[str, Path] = field(default_factory=dict)  # role (or another system's row name) -> file
    scores: dict[str, dict] = field(default_factory=dict)  # row name -> this utterance's metrics
    transcript: str | None = None
    alignment_png: Path | None = None
    model_row: str = MODEL_ROW  # scores.json's "model_row" (vc score --name), else "model"

    @property
    def model_scores(self) -> dict:
        return self.scores.get(self.model_row, {})


@dataclass
class Experiment:
    folder: Path
    audio: AudioConfig
    # The run that trained the model which made the converted audio: its config, steps and curves are the
    # Training section's. The recipe's student lives in EXP/student; scores.json's checkpoint names it.
    run: Path | None = None
    config_text: str | None = None
    evolution_columns: int = 8  # train.evolution_columns of the run
    select_by: str = "loss"  # train.select_by of the run: what chose its best.pt
    training: dict[str, str] = field(default_factory=dict)  # label -> value, in display order
    scalars: dict = field(default_factory=dict)  # tag -> [vc.evaluation.curve.Scalar]
    rows: dict[str, dict] = field(default_factory=dict)  # vc score's rows, per_utterance dropped
    columns: list[Column] = field(default_factory=list)  # the score table's, in vc score's order
    titles: dict[str, Column] = field(default_factory=dict)  # every column scores.json declares, by key
    missing: list[str] = field(default_factory=list)  # metric families vc score could not compute
    utterances: list[Utterance] = field(default_factory=list)
    evolution: dict[str, Path] = field(default_factory=dict)  # fixed dev utterance -> folder of step*.npy
    evolution_of_teacher: bool = False  # EXP's attention model taught the model (another run)
    notes: list[str] = field(default_factory=list)  # what the report could not find


def as_number(value) -> float | None:
    """A finite float, or None for missing / NaN / text values."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def gather(exp_dir: str | Path, scores_path: str | Path | None = None) -> Experiment:
    """Read what EXP holds: config, training time and curves of the model's run, scores, files per
    utterance, the attention model's alignment evolution."""
    folder = Path(exp_dir)
    if not folder.is_dir():
        raise DataError(f"experiment folder not found: {folder}")
    scores_path = Path(scores_path) if scores_path else folder / "scores.json"
    exp = Experiment(folder=folder, audio=AudioConfig(), run=_model_run(folder, scores_path))
    _read_config(exp)
    _read_training(exp)
    scores = _read_scores(exp, scores_path)
    _collect_utterances(exp, scores)
    exp.evolution_of_teacher = exp.run != folder
    exp.evolution = {
        path.name: path
        for path in sorted((folder / "alignments").glob("*"))
        if path.is_dir() and any(path.glob("step*.npy"))
    }
    if not exp.evolution:
        exp.notes.append("no stored alignments (EXP/alignments/<utt>/step*.npy): no evolution strip")
    return exp


def _model_run(folder: Path, scores_path: Path) -> Path:
    """The run folder of the checkpoint scores.json names (vc score --checkpoint: the model), when it
    holds a run (config.yaml); else EXP itself."""
    try:
        checkpoint = json.loads(scores_path.read_text()).get("checkpoint")
    except (OSError, ValueError, AttributeError):
        return folder
    if not checkpoint:
        return folder
    for base in (Path.cwd(), folder):
        run = (base / checkpoint).parent.parent
        if (run / "config.yaml").is_file():
            return run
    return folder


def _read_config(exp: Experiment) -> None:
    path = exp.run / "config.yaml"
    if not path.is_file():
        exp.notes.append("no config.yaml: default audio settings used for the mel figures")
        return
    exp.config_text = path.read_text()
    try:
        config = load_config(path, stored=True)
        exp.audio, exp.evolution_columns = config.audio, config.train.evolution_columns
        exp.select_by = config.train.select_by
        if exp.run != exp.folder and (exp.folder / "config.yaml").is_file():  # the strip is EXP's run's
            exp.evolution_columns = load_config(
                exp.folder / "config.yaml", stored=True
            ).train.evolution_columns
    except VcError as exc:
        exp.notes.append(f"config.yaml unreadable ({exc}): default audio settings used")


def _read_training(exp: Experiment) -> None:
    from vc.evaluation.curve import read_scalars

    try:
        exp.scalars = read_scalars(exp.run)
    except DataError:
        exp.notes.append("no TensorBoard events: no training curves")
    info = exp.training
    info["run"] = str(exp.run)
    steps = [s.step for series in exp.scalars.values() for s in series]
    minutes = [s.minutes for series in exp.scalars.values() for s in series]
    if steps:
        info["steps trained"] = str(max(steps))
        info["training time"] = f"{max(minutes):.1f} min (TensorBoard wall time)"
    valid = exp.scalars.get("valid/loss/total", [])
    if valid:
        best = min(valid, key=lambda s: s.value)
        info["best validation loss"] = f"{best.value:.4f} at step {best.step}"
    distance = exp.scalars.get("valid/free_running/mel_cepstral_distance", [])
    if distance and exp.select_by == "free_running":  # best.pt by this, not by the loss
        best = min(distance, key=lambda s: s.value)
        info["best.pt chosen by"] = f"free-running dev distance, {best.value:.3f} dB at step {best.step}"
    train_log = exp.run / "train.log"
    if train_log.is_file():
        lines = train_log.read_text(errors="replace").splitlines()
        stamps = [m.group(1) for m in map(_LOG_TIME.match, lines) if m]
        if stamps:
            info["train.log"] = f"{stamps[0]} .. {stamps[-1]}"
        devices = [line.split(": training on ", 1)[1] for line in lines if ": training on " in line]
        if devices:
            info["device"] = devices[0].split(" from step")[0]
        ended = [m.group(1) for m in map(_CONVERTS.search, lines) if m]
        if ended:  # model.until_converts ended it (vc/training/converts.py)
            info["ended by"] = ended[-1]
    checkpoints = sorted((exp.run / "checkpoints").glob("*.pt"))
    if checkpoints:
        info["checkpoints"] = ", ".join(path.name for path in checkpoints)
    averaged = exp.run / "checkpoints" / "averaged.pt"
    if averaged.is_file():  # the model the recipe's later stages use (vc average), not best.pt
        info["averaged.pt"] = _averaged_from(averaged)


def _averaged_from(path: Path) -> str:
    from vc.artifacts.checkpoint import load_checkpoint

    try:
        steps = load_checkpoint(path).get("info", {}).get("averaged_steps")
    except VcError as exc:
        return f"unreadable ({exc})"
    if not steps:
        return "not written by vc average (no averaged steps recorded)"
    return f"mean weights of steps {', '.join(map(str, steps))}; the recipe converts with it"


def _read_scores(exp: Experiment, path: Path) -> dict:
    if not path.is_file():
        exp.notes.append(f"no scores ({path} not found; write it with vc score --json): players only")
        return {}
    try:
        scores = json.loads(path.read_text())
        rows = scores["rows"]
        if not isinstance(rows, dict):
            raise TypeError("rows is not an object")
    except (ValueError, KeyError, TypeError) as exc:
        exp.notes.append(f"{path} is not a vc score JSON file ({exc}): players only")
        return {}
    exp.rows = {name: {k: v for k, v in row.items() if k != "per_utterance"} for name, row in rows.items()}
    # The registry's columns (vc/evaluation/registry.py) for runs whose scores.json has none.
    known = [Column(c.title, c.key, c.fmt, c.lower_is_better) for c in registry.columns()]
    declared = [Column(*column) for column in scores["columns"]] if scores.get("columns") else known
    exp.titles = {c.key: c for c in [*known, *declared]}
    present = {key for row in rows.values() for key in row}
    exp.columns = [c for c in declared if c.key in present]
    exp.missing = [str(line) for line in scores.get("missing", [])]
    return scores


def _collect_utterances(exp: Experiment, scores: dict) -> None:
    converted_dir = exp.folder / "converted" / "eval"
    listed = dict(scores.get("files") or {})
    if not listed and not converted_dir.is_dir():
        exp.notes.append(f"no converted audio ({converted_dir}) and no file list in the scores")
    ids = list(listed) or sorted(path.stem for path in converted_dir.glob("*.wav"))
    pairs = _eval_pairs(exp)
    transcripts = scores.get("transcripts") or {}
    rows = scores.get("rows") or {}
    model_row = str(scores.get("model_row") or MODEL_ROW)
    for utt_id in ids:
        utt = Utterance(utt_id, transcript=transcripts.get(utt_id), model_row=model_row)
        given = listed.get(utt_id) or {}
        candidates = {role: [given.get(key) for key in keys] for role, keys in ROLE_KEYS.items()}
        candidates["converted"].insert(0, given.get(model_row))
        candidates["source"].append(pairs.get(utt_id, (None, None))[0])
        candidates["converted"].append(converted_dir / f"{utt_id}.wav")
        candidates["target"].append(pairs.get(utt_id, (None, None))[1])
        known = {model_row, *(key for keys in ROLE_KEYS.values() for key in keys)}
        candidates.update({name: [path] for name, path in given.items() if name not in known})  # more systems
        for role, paths in candidates.items():
            found = next((p for p in map(lambda p: _resolve(exp.folder, p), paths) if p), None)
            if found is not None:
                utt.files[role] = found
        utt.scores = {
            name: row["per_utterance"][utt_id]
            for name, row in rows.items()
            if isinstance(row.get("per_utterance"), dict) and utt_id in row["per_utterance"]
        }
        png = converted_dir / f"{utt_id}_alignment.png"
        utt.alignment_png = png if png.is_file() else None
        exp.utterances.append(utt)
    lost = sorted({role for utt in exp.utterances for role in ROLES if role not in utt.files} - {"ceiling"})
    if lost:
        exp.notes.append(f"some utterances have no {', '.join(lost)} audio")


def _resolve(exp_dir: Path, path) -> Path | None:
    """An existing file: as given (absolute or from the working folder), else relative to EXP or a
    folder above it (vc score may have run from the recipe folder)."""
    if not path:
        return None
    path = Path(path)
    for candidate in (path, *(folder / path for folder in [exp_dir, *exp_dir.resolve().parents][:4])):
        if candidate.is_file():
            return candidate
    return None


def _eval_pairs(exp: Experiment) -> dict[str, tuple[str, str]]:
    """utt_id -> (source, target) from the recipe's eval.tsv beside the config's dev list, if any."""
    if exp.config_text is None:
        return {}
    try:
        dev_list = load_config(exp.folder / "config.yaml", stored=True).data.dev_list
    except VcError:
        return {}
    if not dev_list:
        return {}
    eval_list = _resolve(exp.folder, Path(dev_list).with_name("eval.tsv"))
    if eval_list is None:
        return {}
    pairs = {}
    for line in eval_list.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) >= 3:
            pairs[fields[0]] = (fields[1], fields[2])
    return pairs


def sort_keys(exp: Experiment) -> list[Column]:
    """Per-utterance metrics the page can sort by (numeric in some model row), the default first."""
    shown = {c.key for c in exp.columns}
    keys = [
        *exp.columns,
        *(c for key, c in exp.titles.items() if key not in shown),
    ]  # CER: per utterance only
    keys = [c for c in keys if c.key != "utterances"]
    keys = [c for c in keys if any(as_number(u.model_scores.get(c.key)) is not None for u in exp.utterances)]
    ranks = {c.key: c.report_rank for c in registry.columns() if c.report_rank is not None}
    default = min((c for c in keys if c.key in ranks), key=lambda c: ranks[c.key], default=None)
    if default is not None:
        keys.remove(default)
        keys.insert(0, default)
    return keys


def worst_first(utterances: list[Utterance], column: Column | None) -> list[Utterance]:
    """Worst score first; utterances without the score last, in id order."""
    if column is None:
        return sorted(utterances, key=lambda u: u.utt_id)

    def key(utt: Utterance):
        value = as_number(utt.model_scores.get(column.key))
        if value is None:
            return (1, 0.0, utt.utt_id)
        return (0, -value if column.lower_is_better else value, utt.utt_id)

    return sorted(utterances, key=key)


def load_audio_for_report(path: Path) -> tuple[np.ndarray, int]:
    """Samples as float32 (frames, channels) and the rate, exactly as stored (no trim, no resampling)."""
    import soundfile as sf

    wave, rate = sf.read(str(path), dtype="float32", always_2d=True)
    return wave, rate

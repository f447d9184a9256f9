"""A tiny experiment folder as `vc train`, `vc convert` and `vc score --json` leave it, for report tests.

Utterances are short tones (a fraction of a second); alignments go from a blur
to a diagonal over the stored evaluations, so the evolution strip has a story.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from vc.audio import write_audio
from vc.config import Config, dump_config
from vc.plotting import alignment_figure, save_figure

UTTS = ("arctic_b0001", "arctic_b0002", "arctic_b0003")
RATE = 16000
# Per-utterance model scores: b0002 has the worst WER, b0003 the worst MCD.
MODEL = {
    "arctic_b0001": {"mcd": 6.1, "f0_rmse": 12.0, "wer": 10.0, "cer": 4.0, "hypothesis": "author of the"},
    "arctic_b0002": {"mcd": 6.5, "f0_rmse": 15.0, "wer": 55.0, "cer": 30.0, "hypothesis": "the danger"},
    "arctic_b0003": {"mcd": 7.9, "f0_rmse": 20.0, "wer": 20.0, "cer": None, "hypothesis": ""},
}
COLUMNS = [["MCD [dB]", "mcd", "{:.2f}"], ["F0 RMSE [Hz]", "f0_rmse", "{:.1f}"], ["WER [%]", "wer", "{:.1f}"]]
COLUMNS += [["CER [%]", "cer", "{:.1f}"], ["utterances", "utterances", "{:d}"]]


def tone(seconds: float, frequency: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * frequency * t) * np.hanning(t.size)).astype(np.float32)


def alignment(decoder_steps: int, encoder_steps: int, sharpness: float) -> np.ndarray:
    """Blur (sharpness 0) to diagonal (sharpness 1), rows summing to one."""
    i = np.arange(decoder_steps)[:, None] / decoder_steps
    j = np.arange(encoder_steps)[None, :] / encoder_steps
    width = 0.5 - 0.45 * sharpness
    weights = np.exp(-((j - i) ** 2) / (2 * width**2))
    return (weights / weights.sum(axis=1, keepdims=True)).astype(np.float32)


def make_experiment(root: Path, with_scores: bool = True, evaluations: int = 12) -> Path:
    """ROOT/exp (returned), ROOT/data/{dev,eval}.tsv and ROOT/audio/{source,target,ceiling}/."""
    exp = root / "exp"
    data = root / "data"
    data.mkdir(parents=True)
    config = Config.from_dict(
        {"data": {"dev_list": str(data / "dev.tsv")}, "train": {"evolution_columns": 5}}
    )
    (exp / "converted" / "eval").mkdir(parents=True)
    (exp / "config.yaml").write_text(dump_config(config))
    (exp / "train.log").write_text(
        "2025-01-01 10:00:00,000 INFO vc.training.trainer: training on cpu x 1 from step 0\n"
        "2025-01-01 10:05:00,000 INFO vc.training.trainer: step 120: valid loss 0.5000 (best)\n"
    )
    files, pairs = {}, []
    for k, utt in enumerate(UTTS):
        paths = {role: root / "audio" / role / f"{utt}.wav" for role in ("source", "target", "ceiling")}
        paths["converted"] = exp / "converted" / "eval" / f"{utt}.wav"
        for n, path in enumerate(paths.values()):
            write_audio(path, tone(0.25 + 0.05 * k, 200.0 + 50 * n), RATE)
        save_figure(
            alignment_figure(alignment(20, 16, 1.0), utt), exp / "converted" / "eval" / f"{utt}_alignment.png"
        )
        files[utt] = {  # by vc score's row names
            "model": str(paths["converted"]),
            "no conversion (source)": str(paths["source"]),
            "Griffin-Lim ceiling": str(paths["ceiling"]) if k != 2 else None,  # one without a ceiling file
            "natural target": str(paths["target"]),
        }
        pairs.append(f"{utt}\t{paths['source']}\t{paths['target']}")
    (data / "dev.tsv").write_text(pairs[0] + "\n")
    (data / "eval.tsv").write_text("\n".join(pairs) + "\n")
    _tensorboard(exp, evaluations)
    if with_scores:
        write_scores(exp / "scores.json", files)
    return exp


def write_scores(path: Path, files: dict, drop: tuple[str, ...] = ()) -> None:
    def row(scale: float) -> dict:
        per = {u: {k: (v * scale if isinstance(v, float) else v) for k, v in MODEL[u].items()} for u in UTTS}
        per = {u: {k: v for k, v in scores.items() if k not in drop} for u, scores in per.items()}
        means = {
            k: float(np.mean([per[u][k] for u in UTTS if per[u][k] is not None])) for k in ("mcd", "f0_rmse")
        }
        if "wer" not in drop:
            means["wer"] = float(np.mean([per[u]["wer"] for u in UTTS]))
        return {**means, "utterances": len(UTTS), "per_utterance": per}

    scores = {
        "rows": {
            "model": row(1.0),
            "no conversion (source)": row(1.5),
            "Griffin-Lim ceiling": row(0.5),
            "natural target": {"wer": 5.0, "utterances": 3, "per_utterance": {u: {"wer": 5.0} for u in UTTS}}
            if "wer" not in drop
            else {"utterances": 3, "per_utterance": {}},
        },
        "columns": [c for c in COLUMNS if c[1] not in drop],
        "missing": ["speaker similarity: install vc[eval] (resemblyzer)"],
        "files": files,
        "transcripts": {u: f"sentence number {k}" for k, u in enumerate(UTTS)},
    }
    path.write_text(json.dumps(scores, indent=1))


def _tensorboard(exp: Path, evaluations: int) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(exp / "tensorboard"))
    for step in range(10, 10 * evaluations + 1, 10):
        progress = step / (10 * evaluations)
        writer.add_scalar("train/loss/total", 2.0 - progress, step)
        writer.add_scalar("train/loss/spectral", 1.5 - progress, step)
        writer.add_scalar("valid/loss/total", 2.1 - progress, step)
        writer.add_scalar("valid/align/focus_rate", 0.2 + 0.6 * progress, step)
        writer.add_scalar("valid/align/diagonal", min(1.0, 2 * progress), step)
        writer.add_scalar("valid/align/length_ratio", 0.5 + 0.5 * progress, step)
        folder = exp / "alignments" / UTTS[0]
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / f"step{step:07d}.npy", alignment(20, 16, progress))
    writer.close()

"""The report's figures: training curves, converted vs target log-mel, the evolution strip.

matplotlib.figure.Figure only (no pyplot state), as vc.plotting.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from vc.audio import LogMel, logmel_numpy
from vc.plotting import evolution_figure, load_evolution
from vc.settings.audio import AudioConfig

# (panel title, [(tag, label)], log scale)
CURVE_PANELS = (
    (
        "losses",
        [
            ("train/loss/total", "train total"),
            ("train/loss/spectral", "train spectral"),
            ("train/loss/stop", "train stop"),
            ("train/loss/guided_attention", "train guided attention"),
            ("valid/loss/total", "valid total"),
            ("valid/loss/spectral", "valid spectral"),
        ],
        True,
    ),
    (
        "free-running alignment (fixed dev utterances)",
        [("valid/align/focus_rate", "focus rate"), ("valid/align/diagonal", "diagonal")],
        False,
    ),
    ("free-running length / target length", [("valid/align/length_ratio", "length ratio")], False),
)


def curves_figure(scalars: dict) -> Figure | None:
    """Loss, focus rate / diagonal and length-ratio curves against the step; None without any."""
    panels = [
        (title, [(t, n) for t, n in lines if scalars.get(t)], log) for title, lines, log in CURVE_PANELS
    ]
    panels = [panel for panel in panels if panel[1]]
    if not panels:
        return None
    fig = Figure(figsize=(5 * len(panels), 3.6), dpi=100)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (title, lines, log) in zip(axes, panels, strict=True):
        for tag, label in lines:
            series = scalars[tag]
            style = "--" if tag.startswith("valid/loss") else "-"
            ax.plot([s.step for s in series], [s.value for s in series], style, label=label, linewidth=1.2)
        if log and all(s.value > 0 for tag, _ in lines for s in scalars[tag]):
            ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def mel_comparison_figure(
    converted: np.ndarray, target: np.ndarray | None, audio: AudioConfig, title: str = ""
) -> Figure:
    """Log-mels (frames, n_mels) analysed from the converted file and the target recording, one
    colour scale and one time axis, so length and spectral detail compare at a glance."""
    mels = [("converted audio (log-mel analysed from the file)", converted)]
    if target is not None:
        mels.insert(0, ("target recording (log-mel)", target))
    fig = Figure(figsize=(7, 1.9 * len(mels) + 0.5), dpi=90)
    axes = fig.subplots(len(mels), 1, squeeze=False, sharex=True)[:, 0]
    seconds = audio.hop_length / audio.sample_rate
    low = min(float(np.percentile(mel, 1)) for _, mel in mels)
    high = max(float(mel.max()) for _, mel in mels)
    for ax, (name, mel) in zip(axes, mels, strict=True):
        ax.imshow(
            mel.T,
            aspect="auto",
            origin="lower",
            interpolation="none",
            vmin=low,
            vmax=high,
            extent=(0, mel.shape[0] * seconds, 0, mel.shape[1]),
        )
        ax.set_title(f"{title} {name}".strip(), fontsize=9)
        ax.set_ylabel("mel band")
    axes[-1].set_xlabel("time [s]")
    # Fixed margins: tight_layout would measure every label, a third of the report's time.
    fig.subplots_adjust(
        left=0.09,
        right=0.98,
        top=1 - 0.35 / fig.get_figheight(),
        bottom=0.5 / fig.get_figheight(),
        hspace=0.35,
    )
    return fig


def logmel_of(wave: np.ndarray, rate: int, audio: AudioConfig, extractor: LogMel) -> np.ndarray:
    """(frames, n_mels) log-mel of a (samples, channels) file's samples, as vc.audio computes it."""
    import librosa

    mono = wave.mean(axis=1).astype(np.float32)
    if rate != audio.sample_rate:
        mono = librosa.resample(mono, orig_sr=rate, target_sr=audio.sample_rate).astype(np.float32)
    return logmel_numpy(mono, audio, extractor)


def evolution_strip(folder: Path, count: int) -> Figure:
    """The alignment-evolution strip of one fixed dev utterance from its stored step*.npy files."""
    return evolution_figure(
        load_evolution(folder, count), f"{folder.name}: free-running alignment during training"
    )

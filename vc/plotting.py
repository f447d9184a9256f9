"""Figures for TensorBoard and PNG files, built on matplotlib.figure.Figure.

No pyplot: pyplot keeps global state (and leaks figures in long runs). Every
alignment is drawn cropped to its true lengths, x = decoder step, y = encoder
step, origin lower, so a good alignment is a rising diagonal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from vc.fileio import atomic_open


def _draw_alignment(ax, alignment: np.ndarray, title: str) -> None:
    ax.imshow(
        alignment.T, aspect="auto", origin="lower", interpolation="none", vmin=0.0, vmax=1.0, cmap="viridis"
    )
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("decoder step")


def alignment_figure(alignment: np.ndarray, title: str = "") -> Figure:
    """alignment: (decoder steps, encoder steps), already cropped."""
    fig = Figure(figsize=(5, 4), dpi=100)
    ax = fig.add_subplot()
    _draw_alignment(ax, alignment, title)
    ax.set_ylabel("encoder step")
    fig.tight_layout()
    return fig


def evolution_figure(alignments: list[tuple[int, np.ndarray]], title: str = "") -> Figure:
    """The same utterance's alignment at successive evaluations, side by side, labelled with the step."""
    columns = max(1, len(alignments))
    fig = Figure(figsize=(2.2 * columns, 2.6), dpi=100)
    axes = fig.subplots(1, columns, squeeze=False)[0]
    for ax, (step, alignment) in zip(axes, alignments, strict=False):
        _draw_alignment(ax, alignment, f"step {step}")
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0].set_ylabel("encoder step")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def mel_figure(target: np.ndarray, predicted: np.ndarray, title: str = "") -> Figure:
    """Target above predicted, each (frames, n_mels), on one colour scale."""
    fig = Figure(figsize=(7, 5), dpi=100)
    axes = fig.subplots(2, 1)
    low = min(target.min(), predicted.min())
    high = max(target.max(), predicted.max())
    for ax, mel, name in ((axes[0], target, "target"), (axes[1], predicted, "predicted (free-running)")):
        ax.imshow(mel.T, aspect="auto", origin="lower", interpolation="none", vmin=low, vmax=high)
        ax.set_title(f"{title} {name}".strip(), fontsize=9)
        ax.set_ylabel("mel band")
    axes[1].set_xlabel("frame")
    fig.tight_layout()
    return fig


def durations_figure(extracted: np.ndarray, predicted: np.ndarray, title: str = "") -> Figure:
    """Frames per encoder step: the durations taught by the attention model and the predicted ones."""
    fig = Figure(figsize=(7, 2.5), dpi=100)
    ax = fig.add_subplot()
    ax.step(np.arange(len(extracted)), extracted, where="mid", label="from the attention model")
    ax.step(np.arange(len(predicted)), predicted, where="mid", label="predicted", alpha=0.8)
    ax.set_xlabel("encoder step")
    ax.set_ylabel("frames")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def stop_figure(probabilities: np.ndarray, target_frames: int, threshold: float = 0.5) -> Figure:
    fig = Figure(figsize=(6, 2.5), dpi=100)
    ax = fig.add_subplot()
    ax.plot(probabilities, label="stop probability")
    ax.axhline(threshold, color="grey", linestyle=":")
    ax.axvline(target_frames - 1, color="red", linestyle="--", label="target's last frame")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("frame")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def save_figure(fig: Figure, path: str | Path) -> None:
    """Write a PNG atomically (temp name, then rename)."""
    with atomic_open(path) as out:
        fig.savefig(out, format="png")


def evolution_steps(steps: list[int], count: int) -> list[int]:
    """Which of the stored evaluations the evolution strip shows: ``count`` of them, in order.

    The first two always (the blur), the last always (the curve as it is now), and
    log-spaced evaluations between, so the early minutes in which the alignment forms
    get most of the columns however long the run. Keeping only the last K instead
    would show K already-sharp diagonals after a normal run.
    """
    steps = sorted(set(steps))
    if count >= len(steps):
        return steps
    if count <= 1:
        return steps[-count:] if count == 1 else []
    head = min(2, count - 1)
    # 1-based evaluation numbers head+1 .. len(steps), log-spaced, then nudged apart.
    targets = np.geomspace(head + 1, len(steps), count - head) if count - head > 1 else [len(steps)]
    chosen = list(range(head))
    for k, target in enumerate(targets):
        room = len(steps) - (len(targets) - k)  # leave one index for each later column
        chosen.append(min(max(int(round(target)) - 1, chosen[-1] + 1), room))
    return [steps[index] for index in chosen]


def load_evolution(folder: Path, count: int) -> list[tuple[int, np.ndarray]]:
    """(step, alignment) of the evaluations evolution_steps picks from FOLDER/stepNNNNNNN.npy."""
    paths = {int(path.stem[4:]): path for path in folder.glob("step*.npy") if path.stem[4:].isdigit()}
    return [(step, np.load(paths[step])) for step in evolution_steps(list(paths), count)]

"""Recordings longer than audio.max_duration: split at pauses, convert the pieces, join them.

A lecture or a podcast is many sentences. The models were trained on single
sentences, so a long recording is cut at its pauses into pieces of at most
PIECE_SECONDS, the pieces are converted in batches like separate files, and
the converted pieces are joined with every pause kept at its original length.

Pauses follow the trimming rule (vc.audio.dsp.trim_silence): a frame is
silent when its level is more than audio.trim_top_db below the loudest frame
of the whole recording. A piece ends in the middle of a pause of at least
MIN_PAUSE_SECONDS; a stretch of speech longer than PIECE_SECONDS without such
a pause is cut at its quietest frame.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vc.audio.dsp import frame_levels_db, with_silence
from vc.settings.audio import AudioConfig

MIN_PAUSE_SECONDS = 0.3
PIECE_SECONDS = 10.0  # ARCTIC sentences, what the models learned from, last 2-5 s


def pieces(
    wave: np.ndarray, audio: AudioConfig, piece_seconds: float = PIECE_SECONDS
) -> list[tuple[int, int]]:
    """(start, end) sample ranges that tile ``wave`` in order, each at most piece_seconds long
    (to the frame), cut in the middle of pauses where there are any."""
    hop = audio.hop_length
    levels = frame_levels_db(wave, frame_length=audio.win_length, hop_length=hop)
    frames = len(levels)
    silent = np.concatenate([[False], levels <= -audio.trim_top_db, [False]])
    runs = np.flatnonzero(np.diff(silent.astype(np.int8))).reshape(-1, 2)  # [start, end) of silent runs
    long_runs = runs[(runs[:, 1] - runs[:, 0]) * hop >= MIN_PAUSE_SECONDS * audio.sample_rate]
    pauses = sorted({int(c) for c in (long_runs[:, 0] + long_runs[:, 1]) // 2 if 0 < c < frames})
    limit = max(1, int(piece_seconds * audio.sample_rate) // hop)  # frames per piece at most
    # Every place a piece may end, no two further apart than the limit: the pauses, and the quietest
    # frame of each stretch that has none for longer.
    candidates, points = [], [0, *pauses, frames]
    for start, end in zip(points[:-1], points[1:], strict=True):
        while end - start > limit:
            low = start + limit // 2
            start = low + int(np.argmin(levels[low : start + limit + 1]))
            candidates.append(start)
        candidates.append(end)
    # Fewest pieces: each one runs to the furthest place within the limit.
    chosen = [0]
    while chosen[-1] < frames:
        chosen.append(max(c for c in candidates if chosen[-1] < c <= chosen[-1] + limit))
    samples = [min(len(wave), c * hop) for c in chosen[:-1]] + [len(wave)]
    return [(a, b) for a, b in zip(samples[:-1], samples[1:], strict=True) if b > a]


def convert_long(
    convert_batch: Callable[[list[np.ndarray]], list],
    wave: np.ndarray,
    audio: AudioConfig,
    batch_size: int = 8,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A long recording at the model's rate (untrimmed) -> (converted wave, mel, alignment), the pauses kept.

    ``convert_batch``: Converter.convert_batch. Each piece's speech (its frames louder than the
    recording's loudest frame minus audio.trim_top_db) is converted; what lies around it stays
    silence of the same length. A piece with no speech, or too little for one analysis window,
    stays silence. The alignment is the first converted piece's (a whole recording's would not fit
    a picture).
    """
    hop = audio.hop_length
    levels = frame_levels_db(wave, frame_length=audio.win_length, hop_length=hop)
    speech: list[tuple[int, int, int]] = []  # (piece index, speech start, speech end) in samples
    spans = pieces(wave, audio)
    for index, (start, end) in enumerate(spans):
        inside = -(-start // hop)  # the first frame whose centre lies in the piece
        loud = np.flatnonzero(levels[inside : -(-end // hop)] > -audio.trim_top_db)
        if loud.size == 0:
            continue
        first = max(
            start, (inside + int(loud[0])) * hop
        )  # trim_silence's bounds, on the whole recording's levels
        last = min(end, (inside + int(loud[-1]) + 1) * hop)
        if last - first >= audio.win_length:
            speech.append((index, first, last))
    converted: dict = {}
    order = sorted(range(len(speech)), key=lambda k: speech[k][2] - speech[k][1])
    for begin in range(0, len(order), batch_size):
        chunk = order[begin : begin + batch_size]
        results = convert_batch([wave[speech[k][1] : speech[k][2]] for k in chunk])
        converted.update({speech[k][0]: result for k, result in zip(chunk, results, strict=True)})
    parts, mels = [], []
    by_piece = {index: (first, last) for index, first, last in speech}
    for index, (start, end) in enumerate(spans):
        if index not in converted:
            parts.append(np.zeros(end - start, np.float32))
            continue
        first, last = by_piece[index]
        parts.append(with_silence(converted[index].wave, first - start, end - last))
        mels.append(converted[index].mel)
    alignment = converted[min(converted)].alignment if converted else np.zeros((0, 0), np.float32)
    joined = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    return joined, np.concatenate(mels) if mels else np.zeros((0, audio.n_mels), np.float32), alignment

"""Long recordings: cut at pauses into pieces the model handles, converted, joined with the pauses kept."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import arctic_file
from tests.helpers import speech_like
from vc import Converter
from vc.audio import read_audio
from vc.cli import main
from vc.inference.long_form import PIECE_SECONDS, pieces
from vc.settings.audio import AudioConfig

SR = 16000


def tone_with_pauses(spans: list[tuple[float, float]]) -> np.ndarray:
    """Speech-like sound for each (start, end) in seconds, silence elsewhere (digital zero plus a hiss)."""
    total = max(end for _, end in spans) + 0.5
    wave = 1e-5 * np.random.default_rng(0).standard_normal(int(total * SR))
    for start, end in spans:
        wave[int(start * SR) : int(end * SR)] += speech_like(end - start, seed=int(start))[
            : int(end * SR) - int(start * SR)
        ]
    return wave.astype(np.float32)


def test_pieces_tile_the_recording_and_cut_in_pauses():
    audio = AudioConfig()
    sentences = [(0.5 + 4.0 * k, 3.5 + 4.0 * k) for k in range(8)]  # 3 s of speech, 1 s of pause, 8 times
    wave = tone_with_pauses(sentences)
    found = pieces(wave, audio)
    assert found[0][0] == 0 and found[-1][1] == len(wave)
    assert all(a[1] == b[0] for a, b in zip(found[:-1], found[1:], strict=True))  # contiguous, in order
    assert all(end - start <= PIECE_SECONDS * SR + audio.hop_length for start, end in found)
    for _, end in found[:-1]:  # every cut lies in a pause, not in a sentence
        assert not any(start * SR < end < stop * SR for start, stop in sentences), end / SR
    assert len(found) < len(sentences)  # short sentences are merged up to the piece length


def test_speech_without_a_pause_is_cut_at_its_quietest_frame():
    audio = AudioConfig()
    wave = tone_with_pauses([(0.2, 25.0)])
    found = pieces(wave, audio)
    assert len(found) >= 3 and found[-1][1] == len(wave)
    assert all(end - start <= PIECE_SECONDS * SR + audio.hop_length for start, end in found)


def lecture(folder, seconds: float):
    """bdl's ARCTIC sentences read one after another with 0.6 s pauses, at least this long."""
    audio, parts, k = AudioConfig(), [], 1
    while sum(len(p) for p in parts) < seconds * SR:
        parts += [
            read_audio(arctic_file("bdl", f"arctic_a{k:04d}"), audio),
            np.zeros(int(0.6 * SR), np.float32),
        ]
        k += 1
    path = folder / "lecture.flac"
    sf.write(path, np.concatenate(parts), SR)
    return path, k - 1


@pytest.fixture(scope="module")
def three_minutes(tmp_path_factory):
    return lecture(tmp_path_factory.mktemp("long"), 180)


def test_a_three_minute_recording_converts_whole_with_no_piece_dropped(checkpoint, three_minutes, tmp_path):
    path, sentences = three_minutes
    converter = Converter.from_checkpoint(checkpoint, device="cpu")
    converted_in, converted_out = [], []
    convert_batch = converter.convert_batch

    def spy(waves):
        results = convert_batch(waves)
        converted_in.extend(len(w) for w in waves)
        converted_out.extend(len(r.wave) for r in results)
        return results

    converter.convert_batch = spy
    wave, rate = sf.read(path, dtype="float32")
    out, out_rate = converter.convert(wave, rate)
    assert rate == out_rate == SR and len(wave) > 180 * SR
    # Every sample is either speech handed to the model or a pause kept as it was.
    assert len(out) == len(wave) - sum(converted_in) + sum(converted_out)
    # No piece dropped: the speech handed over covers all of the sentences' sound.
    assert sum(converted_in) >= 0.9 * (len(wave) - sentences * 0.6 * SR)
    assert len(converted_in) >= 180 / PIECE_SECONDS


def test_vc_convert_takes_a_long_file(checkpoint, tmp_path, capsys):
    path, sentences = lecture(tmp_path, 70)  # just past what one piece of conversion takes
    assert sf.info(path).duration > AudioConfig().max_duration
    out = tmp_path / "lecture_slt.wav"
    assert main(["convert", "--checkpoint", str(checkpoint), str(path), str(out), "--no-progress"]) == 0
    assert sf.info(out).duration > sentences * 0.6  # the pauses alone (the untrained model's speech is short)

"""Durations from the words: phone alignments of both recordings, matched phone by phone."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import arctic_file
from tests.helpers import needs
from vc.artifacts.durations import check_durations, load_durations
from vc.cli import main
from vc.config import load_config
from vc.training.data import load_features
from vc.training.phones import Phone, PhoneAligner, durations_from_phones


def phones(spec: str, scale: float = 1.0) -> list[Phone]:
    """'AO:2 TH:1' -> consecutive phones lasting 2 and 1 tenths of a second (x scale)."""
    found, start = [], 0.0
    for item in spec.split():
        name, length = item.split(":")
        end = start + float(length) * 0.1 * scale
        found.append(Phone(name, start, end))
        start = end
    return found


def test_the_same_timing_gives_the_source_frames_per_step():
    same = phones("AO:2 TH:1 ER:3 AH:2")
    durations = durations_from_phones(same, same, 80, 80, 2, 0.01)
    assert durations.sum() == 80 and len(durations) == 40 and set(durations.tolist()) == {2}


def test_a_slower_phone_gets_more_target_frames_and_the_sum_is_the_target_length():
    source = phones("AO:2 TH:2 ER:2")  # 0.6 s
    target = phones("AO:2 TH:4 ER:2")  # TH twice as long: 0.8 s
    durations = durations_from_phones(source, target, 60, 80, 2, 0.01)
    assert durations.sum() == 80 and len(durations) == 30
    # TH: source frames 20-39 (steps 10-19) take target frames 20-59, 4 per step give or take a rounding
    assert durations[10:20].sum() == 40 and set(durations[10:20].tolist()) <= {3, 4, 5}
    assert set(durations[:10].tolist()) == {2} and set(durations[20:].tolist()) == {2}


def test_an_extra_or_another_phone_costs_only_itself():
    source = phones("AO:2 TH:2 ER:2")
    target = phones("AO:2 T:2 ER:2")  # another phone where TH was: the map is linear across it
    durations = durations_from_phones(source, target, 60, 60, 2, 0.01)
    assert durations.sum() == 60 and set(durations.tolist()) == {2}
    nothing = durations_from_phones([], [], 60, 90, 2, 0.01)  # no alignment: linear
    assert nothing.sum() == 90 and set(nothing.tolist()) <= {2, 3, 4}


def test_words_outside_the_dictionary_get_a_pronunciation_from_the_ones_inside():
    needs("pocketsphinx")
    aligner = PhoneAligner()
    assert aligner.pronounce("thorpe's") == aligner.pronounce("thorpe") + ["S"]
    assert aligner.pronounce("brodie's")[-1] == "Z"
    assert aligner.pronounce("nightglow") == aligner.pronounce("night") + aligner.pronounce("glow")
    assert aligner.pronounce("xqzvbnm") is None
    assert aligner.words("Author of the 29th xqzvbnm, etc.") == [
        "author",
        "of",
        "the",
        "twenty",
        "ninth",
        "etc",
    ]
    assert aligner.unpronounced == {"xqzvbnm"}


def test_a_real_recording_is_aligned_to_its_phones_in_order():
    needs("pocketsphinx")
    from vc.audio import read_audio

    audio = load_config("student").audio
    wave = read_audio(arctic_file("slt", "arctic_a0001"), audio)
    found = PhoneAligner()(wave, "Author of the danger trail, Philip Steels, etc.")
    assert [p.name for p in found[:5]] == ["AO", "TH", "ER", "AH", "V"]
    starts = [p.start for p in found]
    assert starts == sorted(starts) and all(p.end > p.start for p in found)
    assert found[-1].end <= len(wave) / audio.sample_rate + 0.02


def test_vc_durations_phones_writes_durations_and_the_alignments(tmp_path, capsys):
    needs("pocketsphinx")
    pairs = tmp_path / "pairs.tsv"
    ids = ("arctic_a0001", "arctic_a0002")
    pairs.write_text("".join(f"{u}\t{arctic_file('bdl', u)}\t{arctic_file('slt', u)}\n" for u in ids))
    out = tmp_path / "durations.pt"
    argv = ["durations", "--phones", "--workers", "2", "--config", "student"]
    argv += ["--features-dir", str(tmp_path / "features")]
    assert main([*argv, "--out", str(out), "--no-progress", str(pairs)]) == 0
    assert "the phones of both recordings" in capsys.readouterr().out
    config = load_config("student")
    durations = load_durations(out, config.model.encoder_reduction_factor)
    features = load_features(pairs, config.audio, tmp_path / "features", progress=False)
    check_durations(durations, features, config.model.encoder_reduction_factor)  # raises on a mismatch
    alignments = json.loads((tmp_path / "durations.phones.json").read_text())
    assert set(alignments) == set(ids) and alignments["arctic_a0001"]["target"][0][0] == "AO"
    assert np.mean([(d == 0).float().mean() for d in durations.values()]) < 0.2
    # the same again is refused (both files exist), without a traceback
    assert main([*argv, "--out", str(out), "--no-progress", str(pairs)]) == 1
    assert "already exist" in capsys.readouterr().err


def test_a_pair_without_a_transcript_is_one_clear_error(tmp_path, capsys):
    needs("pocketsphinx")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"nope\t{arctic_file('bdl', 'arctic_a0001')}\t{arctic_file('slt', 'arctic_a0001')}\n")
    argv = ["durations", "--phones", "--config", "student", "--features-dir", str(tmp_path / "f")]
    assert main([*argv, "--out", str(tmp_path / "d.pt"), "--no-progress", str(pairs)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no transcript of nope" in err, err
    assert not (tmp_path / "d.pt").exists()


def test_a_recording_too_short_for_its_words_gets_no_alignment_instead_of_an_error():
    needs("pocketsphinx")
    text = "author of the danger trail philip steels etc and many more words here"
    assert PhoneAligner()(np.zeros(800, dtype=np.float32), text) == []

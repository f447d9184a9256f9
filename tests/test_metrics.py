from __future__ import annotations

import math

import numpy as np
import pytest
import soundfile as sf
import torch
from scipy.signal import lfilter
from scipy.spatial.distance import cdist

from tests.conftest import arctic_file
from vc.errors import AudioError, DataError
from vc.evaluation import metrics
from vc.evaluation.metrics import dtw, score_pair
from vc.evaluation.scoring import System, format_table, score_systems
from vc.kinds.alignment import diagonal_ratio, focus_rate

SR = 16000


# ---------------------------------------------------------------------------
# Attention health
# ---------------------------------------------------------------------------


def diagonal_alignment(t_dec: int, n_enc: int) -> torch.Tensor:
    """(t_dec, n_enc) one-hot alignment on the diagonal: step i attends to floor(i * N / T)."""
    align = torch.zeros(t_dec, n_enc)
    align[torch.arange(t_dec), torch.arange(t_dec) * n_enc // t_dec] = 1.0
    return align


def pad_batch(alignments: list[torch.Tensor], fill: float = 0.0) -> torch.Tensor:
    t_max = max(a.shape[0] for a in alignments)
    n_max = max(a.shape[1] for a in alignments)
    batch = torch.full((len(alignments), t_max, n_max), fill)
    for b, align in enumerate(alignments):
        batch[b, : align.shape[0], : align.shape[1]] = align
    return batch


@pytest.mark.parametrize("t_dec, n_enc", [(10, 10), (20, 10), (37, 12)])
def test_perfect_diagonal_scores_one(t_dec, n_enc):
    align = diagonal_alignment(t_dec, n_enc)[None]
    assert focus_rate(align, [t_dec], [n_enc]).tolist() == [1.0]
    assert diagonal_ratio(align, [t_dec], [n_enc]).tolist() == [1.0]


def test_uniform_blur_focus_is_one_over_n():
    t_dec, n_enc = 12, 8
    align = torch.full((1, t_dec, n_enc), 1.0 / n_enc)
    assert focus_rate(align, [t_dec], [n_enc]).item() == pytest.approx(1.0 / n_enc)
    # Ties resolve to encoder step 0, which is near the diagonal only for i/T <= 0.15.
    assert diagonal_ratio(align, [t_dec], [n_enc]).item() == pytest.approx(2 / 12)


def test_reversed_diagonal_is_far_from_diagonal():
    align = diagonal_alignment(20, 20).flip(-1)[None]
    assert focus_rate(align, [20], [20]).item() == 1.0
    # |(19 - i)/20 - i/20| <= 0.15 only for i in 8..11.
    assert diagonal_ratio(align, [20], [20]).item() == pytest.approx(4 / 20)


def test_tolerance_boundary_uses_zero_based_index_over_length():
    t = n = 20
    for shift, inside in [(3, True), (4, False)]:  # 3/20 == 0.15 exactly, 4/20 > 0.15
        align = torch.zeros(1, t, n)
        align[0, torch.arange(t), (torch.arange(t) + shift).clamp(max=n - 1)] = 1.0
        ratio = diagonal_ratio(align, [t], [n], tolerance=0.15).item()
        assert ratio == (1.0 if inside else pytest.approx(shift / t)), (shift, ratio)


def test_padding_is_ignored():
    torch.manual_seed(0)
    align = torch.softmax(torch.randn(6, 4) * 3, dim=-1)
    alone_focus = focus_rate(align[None], [6], [4])
    alone_diag = diagonal_ratio(align[None], [6], [4])
    # Garbage everywhere outside the valid 6 x 4 block must not change anything.
    padded = torch.full((1, 10, 9), 5.0)
    padded[0, :6, :4] = align
    assert torch.equal(focus_rate(padded, [6], [4]), alone_focus)
    assert torch.equal(diagonal_ratio(padded, [6], [4]), alone_diag)


def test_batch_equals_each_item_alone():
    torch.manual_seed(1)
    items = [torch.softmax(torch.randn(t, n) * 2, dim=-1) for t, n in [(30, 11), (17, 25)]]
    batch = pad_batch(items)
    dec_lens, enc_lens = torch.tensor([30, 17]), torch.tensor([11, 25])
    batched_focus = focus_rate(batch, dec_lens, enc_lens)
    batched_diag = diagonal_ratio(batch, dec_lens, enc_lens, tolerance=0.2)
    for b, item in enumerate(items):
        t, n = item.shape
        assert batched_focus[b].item() == pytest.approx(focus_rate(item[None], [t], [n]).item(), abs=1e-6)
        assert batched_diag[b].item() == diagonal_ratio(item[None], [t], [n], tolerance=0.2).item()
    assert batched_focus.shape == batched_diag.shape == (2,)


def test_attention_metrics_reject_wrong_shapes():
    with pytest.raises(ValueError):
        focus_rate(torch.zeros(3, 4), [3], [4])
    with pytest.raises(ValueError):
        diagonal_ratio(torch.zeros(1, 3, 4), [5], [4])


# ---------------------------------------------------------------------------
# DTW and mel-cepstrum
# ---------------------------------------------------------------------------


def brute_force_dtw_cost(x: np.ndarray, y: np.ndarray) -> float:
    dist = cdist(x, y)
    acc = np.full((len(x) + 1, len(y) + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(len(x)):
        for j in range(len(y)):
            acc[i + 1, j + 1] = dist[i, j] + min(acc[i, j], acc[i, j + 1], acc[i + 1, j])
    return float(acc[-1, -1])


def test_dtw_matches_brute_force_and_returns_a_valid_path():
    rng = np.random.default_rng(0)
    for _ in range(25):
        x = rng.normal(size=(rng.integers(1, 25), 3))
        y = rng.normal(size=(rng.integers(1, 25), 3))
        path_x, path_y, cost = dtw(x, y)
        assert cost == pytest.approx(brute_force_dtw_cost(x, y), rel=1e-9)
        assert (path_x[0], path_y[0], path_x[-1], path_y[-1]) == (0, 0, len(x) - 1, len(y) - 1)
        steps = set(zip(np.diff(path_x).tolist(), np.diff(path_y).tolist(), strict=True))
        assert steps <= {(1, 0), (0, 1), (1, 1)}
        assert np.linalg.norm(x[path_x] - y[path_y], axis=1).sum() == pytest.approx(cost, rel=1e-9)


def test_dtw_absorbs_a_time_stretch():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 24))
    repeats = rng.integers(1, 4, size=len(x))  # non-uniform stretch, 1x to 3x per frame
    stretched = np.repeat(x, repeats, axis=0)
    path_x, path_y, cost = dtw(stretched, x)
    assert cost == pytest.approx(0.0, abs=1e-9)
    assert np.array_equal(path_y, np.repeat(np.arange(len(x)), repeats))
    # Misaligning by even one frame costs: a shifted copy is far from zero.
    assert dtw(x[1:], x[:-1])[2] > 10.0


def test_dtw_refuses_huge_inputs(monkeypatch):
    monkeypatch.setattr(metrics, "MAX_DTW_CELLS", 100)
    with pytest.raises(DataError, match="too long for DTW"):
        dtw(np.zeros((11, 2)), np.zeros((10, 2)))


def test_vectorised_sp2mc_equals_pysptk():
    _, pysptk = metrics.analysis_libraries()
    wave, sr = sf.read(arctic_file("bdl", "arctic_a0001"))
    envelope = np.exp(np.random.default_rng(2).normal(size=(40, 513)))
    envelope[:20] = np.abs(np.fft.rfft(wave[:20480].reshape(20, 1024), axis=1)) ** 2 + 1e-10
    ours = metrics.sp2mc(envelope, 24, 0.42)
    assert ours.shape == (40, 25)
    assert np.abs(ours - pysptk.sp2mc(envelope, 24, 0.42)).max() < 1e-9


# ---------------------------------------------------------------------------
# Objective scores on real and synthetic audio
# ---------------------------------------------------------------------------


def read(speaker: str, utt_id: str = "arctic_a0001") -> np.ndarray:
    wave, sr = sf.read(arctic_file(speaker, utt_id))
    assert sr == SR
    return wave


@pytest.fixture(scope="module")
def world_bdl():
    """bdl arctic_a0001 and its WORLD parameters, for resynthesised variants."""
    pyworld, _ = metrics.analysis_libraries()
    wave = read("bdl")
    f0, times = pyworld.dio(wave, SR, f0_floor=70.0, f0_ceil=500.0, frame_period=5.0)
    f0 = pyworld.stonemask(wave, f0, times, SR)
    envelope = pyworld.cheaptrick(wave, f0, times, SR)
    aperiodicity = pyworld.d4c(wave, f0, times, SR)
    return wave, f0, envelope, aperiodicity


def test_a_signal_against_itself_scores_perfectly():
    wave = read("bdl")
    scores = score_pair(wave, wave, SR)
    assert scores["mcd"] == pytest.approx(0.0, abs=1e-9)
    assert scores["f0_rmse"] == pytest.approx(0.0, abs=1e-9)
    assert scores["f0_corr"] == pytest.approx(1.0)
    assert scores["duration_ratio"] == 1.0
    assert scores["voiced_frames"] > 200


def test_gain_changes_only_c0_which_is_excluded():
    wave = read("bdl")
    assert score_pair(0.3 * wave, wave, SR)["mcd"] < 0.01


@pytest.mark.parametrize("pole", [0.5, 0.9])
def test_mcd_of_a_known_spectral_tilt(pole):
    """Filtering by 1 - a z^-1 adds log |H|^2 to every envelope; its mel-cepstrum predicts the MCD."""
    _, pysptk = metrics.analysis_libraries()
    wave = read("bdl")
    filtered = lfilter([1.0, -pole], [1.0], wave)
    power_response = np.abs(1.0 - pole * np.exp(-1j * np.linspace(0.0, np.pi, 513))) ** 2
    tilt_mcep = pysptk.sp2mc(power_response[None], 24, 0.42)[0]
    expected = metrics.MCD_SCALE * np.sqrt(np.sum(tilt_mcep[1:] ** 2))
    scores = score_pair(0.5 * filtered / np.abs(filtered).max(), wave, SR)
    assert scores["mcd"] == pytest.approx(expected, rel=0.15)
    assert scores["duration_ratio"] == pytest.approx(1.0, abs=0.02)


def test_time_stretch_is_absorbed_by_dtw_but_not_by_duration(world_bdl):
    pyworld, _ = metrics.analysis_libraries()
    wave, f0, envelope, aperiodicity = world_bdl
    resynth = pyworld.synthesize(f0, envelope, aperiodicity, SR, 5.0)
    frames = np.floor(np.arange(0, len(f0), 1 / 1.5)).astype(int)  # 1.5x slower, same spectra
    stretched = pyworld.synthesize(f0[frames], envelope[frames], aperiodicity[frames], SR, 5.0)
    plain = score_pair(resynth, wave, SR)
    slow = score_pair(stretched, wave, SR)
    assert plain["mcd"] < 5.0
    assert slow["mcd"] < plain["mcd"] + 0.5
    assert slow["duration_ratio"] == pytest.approx(1.5, abs=0.05)
    assert plain["duration_ratio"] == pytest.approx(1.0, abs=0.02)


def test_pitch_raised_by_ten_percent_in_real_speech(world_bdl):
    pyworld, _ = metrics.analysis_libraries()
    wave, f0, envelope, aperiodicity = world_bdl
    raised = pyworld.synthesize(1.1 * f0, envelope, aperiodicity, SR, 5.0)
    scores = score_pair(raised, wave, SR)
    ten_percent = 0.1 * np.sqrt(np.mean(f0[f0 > 0] ** 2))
    assert scores["f0_rmse"] == pytest.approx(ten_percent, rel=0.2)
    assert scores["f0_corr"] > 0.95


def harmonic(f0: float, seconds: float = 1.0) -> np.ndarray:
    """Sawtooth-like sum of harmonics below Nyquist (amplitude 1/k)."""
    t = np.arange(int(seconds * SR)) / SR
    wave = sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, int(SR / 2 / f0)))
    return 0.3 * wave / np.abs(wave).max()


def test_f0_rmse_of_a_harmonic_tone_ten_percent_higher():
    scores = score_pair(harmonic(132.0), harmonic(120.0), SR)
    assert scores["f0_rmse"] == pytest.approx(12.0, abs=1.0)
    assert scores["voiced_frames"] > 150
    assert scores["duration_ratio"] == pytest.approx(1.0, abs=0.01)


def test_different_speakers_score_far_apart():
    scores = score_pair(read("bdl"), read("slt"), SR)
    assert 7.0 < scores["mcd"] < 12.0  # no conversion, male vs female: about 9-10 dB
    assert scores["f0_rmse"] > 40.0  # bdl about 110 Hz, slt about 180 Hz


def test_silent_or_empty_input_is_an_audio_error():
    with pytest.raises(AudioError, match="converted wave is silent"):
        score_pair(np.zeros(SR), read("bdl"), SR)
    with pytest.raises(AudioError, match="reference wave has no samples"):
        score_pair(read("bdl"), np.zeros(0), SR)


# ---------------------------------------------------------------------------
# Folders and table
# ---------------------------------------------------------------------------


def _distances_only(converted, reference, workers=1):
    """MCD, F0 and duration of one folder against the references (no listener proxies)."""
    result = score_systems(
        [System("converted", converted)], reference, families=(), workers=workers, progress=False
    )
    return result["rows"]["converted"]


def test_scoring_matches_files_by_stem(tmp_path):
    converted, reference = tmp_path / "converted", tmp_path / "reference"
    converted.mkdir()
    reference.mkdir()
    for utt in ["arctic_a0001", "arctic_a0002"]:
        sf.write(converted / f"{utt}.wav", read("bdl", utt), SR)
        sf.write(reference / f"{utt}.flac", read("slt", utt), SR)
    sf.write(reference / "arctic_a0003.wav", read("slt", "arctic_a0003"), SR)  # unused extra
    (converted / "notes.txt").write_text("not audio")
    result = _distances_only(converted, reference)
    assert result["utterances"] == 2
    assert sorted(result["per_utterance"]) == ["arctic_a0001", "arctic_a0002"]
    mcds = [row["mcd"] for row in result["per_utterance"].values()]
    assert result["mcd"] == pytest.approx(np.mean(mcds))
    assert 7.0 < result["mcd"] < 12.0
    # The same files through two worker processes give the same numbers.
    assert _distances_only(converted, reference, workers=2)["per_utterance"] == result["per_utterance"]


def test_scoring_names_a_missing_reference(tmp_path):
    converted, reference = tmp_path / "converted", tmp_path / "reference"
    converted.mkdir()
    reference.mkdir()
    sf.write(converted / "utt_x.wav", harmonic(120.0), SR)
    with pytest.raises(DataError, match="no reference for utt_x"):
        _distances_only(converted, reference)
    with pytest.raises(DataError, match="no .wav/.flac/.ogg files"):
        _distances_only(reference, converted)
    with pytest.raises(DataError, match="folder not found"):
        _distances_only(tmp_path / "absent", reference)


def test_format_table_has_one_row_per_system():
    rows = {
        "model": {"mcd": 7.123, "f0_rmse": 20.04, "f0_corr": 0.71, "duration_ratio": 1.02, "utterances": 100},
        "no conversion (source)": {"mcd": 9.4, "f0_rmse": 63.5, "f0_corr": math.nan, "duration_ratio": 0.9},
        "Griffin-Lim ceiling (reference resynthesised)": {"mcd": 2.5, "utterances": 100},
    }
    lines = format_table(rows).splitlines()
    assert len(lines) == 2 + len(rows)
    assert lines[0].split()[:3] == ["system", "MCD", "[dB]"]
    for name in ["F0 RMSE [Hz]", "F0 corr", "duration ratio", "utterances"]:
        assert name in lines[0]
    assert lines[2].startswith("model") and "7.12" in lines[2] and "20.0" in lines[2] and "100" in lines[2]
    assert "-" in lines[3].split()  # NaN correlation and missing count print as "-"
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule line up


def test_score_cli_prints_the_model_beside_floor_and_ceiling(tmp_path, capsys):
    from vc.cli import main

    folders = {name: tmp_path / name for name in ("converted", "reference", "source")}
    for folder in folders.values():
        folder.mkdir()
    for utt in ("arctic_a0001", "arctic_a0002"):
        slt, bdl = arctic_file("slt", utt), arctic_file("bdl", utt)
        (folders["converted"] / slt.name).write_bytes(slt.read_bytes())  # a perfect "conversion"
        (folders["reference"] / slt.name).write_bytes(slt.read_bytes())
        (folders["source"] / bdl.name).write_bytes(bdl.read_bytes())
    out = tmp_path / "scores.txt"
    code = main(
        [
            "score",
            "--no-progress",
            "--converted",
            str(folders["converted"]),
            "--reference",
            str(folders["reference"]),
            "--source",
            str(folders["source"]),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    rows = {line.split("  ")[0]: line.split() for line in out.read_text().splitlines()[2:]}
    assert float(rows["model"][1]) < 0.01
    assert float(rows["no conversion (source)"][3]) > 5.0  # MCD column after the 3-word name
    assert 2.0 < float(rows["Griffin-Lim ceiling"][2]) < 6.0
    assert out.read_text() in capsys.readouterr().out


def test_score_cli_replaces_its_out_and_json_files_only_when_asked(tmp_path, capsys):
    from vc.cli import main

    folder = tmp_path / "same"
    folder.mkdir()
    sf.write(folder / "a.wav", np.zeros(1600), 16000)
    table, scores = tmp_path / "scores.txt", tmp_path / "scores.json"
    table.write_text("the user's table")
    scores.write_text("{}")
    argv = ["score", "--no-progress", "--no-ceiling", "--no-natural", "--converted", str(folder)]
    argv += ["--reference", str(tmp_path / "absent"), "--out", str(table), "--json", str(scores)]
    assert main(argv) == 1  # refused before the (missing) reference folder is read
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(table) in err and str(scores) in err and "--overwrite" in err
    assert table.read_text() == "the user's table" and scores.read_text() == "{}"
    assert main([*argv, "--overwrite"]) == 1
    assert "absent" in capsys.readouterr().err


def test_the_ceiling_keeps_the_silence_around_the_reference_speech(tmp_path):
    """The Griffin-Lim ceiling is the target through `vc convert`'s path, the trimmed silence put back:
    as long as the recording (to a frame), silent where the recording is."""
    from vc.audio.features import prepare_speech, read_samples
    from vc.config import Config
    from vc.evaluation.scoring import resynthesize_folder

    config = Config()
    slt = arctic_file("slt", "arctic_a0001")
    recording, _ = read_samples(slt, config.audio)
    with resynthesize_folder(
        slt.parent, ["arctic_a0001"], config, progress=False, out_dir=tmp_path
    ) as folder:
        ceiling, _ = sf.read(folder / "arctic_a0001.wav", dtype="float32")
    assert abs(len(ceiling) - len(recording)) <= config.audio.hop_length
    speech = prepare_speech(recording, config.audio.sample_rate, config.audio)
    assert speech.lead > 1600 and speech.tail > 1600  # ARCTIC: a pause before and after the sentence
    assert not ceiling[: speech.lead].any() and not ceiling[len(ceiling) - speech.tail :].any()

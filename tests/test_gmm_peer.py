"""The classical peer (`vc gmm-peer`, vc.evaluation.gmm_peer): MLPG, the joint-density GMM, the
global-variance post-filter, and the subcommand end to end on a few ARCTIC pairs."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from tests.conftest import arctic_file
from tests.helpers import needs
from vc.cli import main
from vc.evaluation import gmm_peer
from vc.evaluation.gmm_peer import (
    JointDensityGMM,
    global_variance,
    gv_postfilter,
    mlpg,
    with_deltas,
)
from vc.evaluation.optional import INSTALL_HINT


def test_mlpg_follows_the_deltas_where_they_are_certain():
    """Statics of zero held loosely and deltas of +0.5 per frame held tightly give a rising ramp
    of slope 0.5 (a flipped delta sign gives a falling one); a static-only problem returns its means."""
    frames = 40
    mean = np.zeros((frames, 2))
    mean[:, 1] = 0.5
    mean[[0, -1], 1] = 0.25  # a ramp's one-sided delta at the ends: half of 0.5 (y[1] - y[0])
    variance = np.ones((frames, 2))
    variance[:, 0], variance[:, 1] = 1e4, 1e-4
    trajectory = mlpg(mean, variance)[:, 0]
    np.testing.assert_allclose(np.diff(trajectory), 0.5, atol=0.02)
    assert abs(trajectory.mean()) < 0.5  # the loose statics centre the ramp on zero

    statics = np.random.default_rng(0).normal(size=(frames, 3))
    loose_deltas = np.concatenate([statics, np.zeros_like(statics)], axis=1)
    spread = np.concatenate([np.full_like(statics, 1e-4), np.full_like(statics, 1e4)], axis=1)
    np.testing.assert_allclose(mlpg(loose_deltas, spread), statics, atol=1e-3)


def test_the_joint_density_gmm_learns_a_linear_voice_mapping():
    """Target = A source + b with little noise: the converted statics of unseen source frames
    come within the noise of the truth, far closer than the source itself."""
    needs("sklearn")
    rng = np.random.default_rng(1)
    dims, frames = 3, 4000
    gain, bias = rng.normal(size=(dims, dims)), rng.normal(size=dims)

    def smooth_walk(n):
        return np.cumsum(rng.normal(scale=0.1, size=(n, dims)), axis=0)

    source = smooth_walk(frames)
    target = source @ gain.T + bias + rng.normal(scale=0.01, size=(frames, dims))
    model = JointDensityGMM(mixtures=2).fit(
        np.concatenate([with_deltas(source), with_deltas(target)], axis=1)
    )
    unseen = smooth_walk(200)
    truth = unseen @ gain.T + bias
    error = np.sqrt(np.mean((model.convert(unseen) - truth) ** 2))
    assert error < 0.05, error
    assert np.sqrt(np.mean((unseen - truth) ** 2)) > 10 * error


def test_global_variance_is_the_mean_of_per_utterance_variances():
    short, long = np.array([[0.0, 1.0], [2.0, 1.0]]), np.array([[0.0, 0.0], [0.0, 4.0], [0.0, 8.0]])
    np.testing.assert_allclose(global_variance([short, long]), [(1.0 + 0.0) / 2, (0.0 + 32 / 3) / 2])


def test_gv_postfilter_gives_the_target_variance_and_keeps_c0():
    rng = np.random.default_rng(0)
    smooth = rng.normal(size=(200, 6)) * [3.0, 0.1, 0.2, 0.05, 0.3, 0.1] + 1.0  # over-smoothed dims 1..
    target_gv = np.array([0.5, 0.4, 0.9, 0.2, 0.1, 0.3])
    out = gv_postfilter(smooth, target_gv)
    assert out.shape == smooth.shape
    np.testing.assert_array_equal(out[:, 0], smooth[:, 0])  # c0 untouched
    np.testing.assert_allclose(out[:, 1:].var(axis=0), target_gv[1:], rtol=1e-9)
    np.testing.assert_allclose(out.mean(axis=0), smooth.mean(axis=0), atol=1e-12)  # scaled about the mean
    np.testing.assert_array_equal(gv_postfilter(smooth, target_gv, weight=0.0), smooth)
    halfway = gv_postfilter(smooth, target_gv, weight=0.5)[:, 1:].std(axis=0)
    np.testing.assert_allclose(halfway, (smooth[:, 1:].std(axis=0) + np.sqrt(target_gv[1:])) / 2)
    # measured on some frames (speech), applied to all: those frames get the target's variance
    speech = np.arange(200) % 3 != 0
    masked = gv_postfilter(smooth, target_gv, frames=speech)
    np.testing.assert_allclose(masked[speech, 1:].var(axis=0), target_gv[1:], rtol=1e-9)
    assert masked.shape == smooth.shape


def _pair_list(path, utts):
    lines = [f"{utt}\t{arctic_file('bdl', utt)}\t{arctic_file('slt', utt)}" for utt in utts]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_gmm_peer_cli_trains_and_converts_a_few_pairs(tmp_path, capsys):
    needs(*gmm_peer.MODULES)
    train = _pair_list(tmp_path / "train.tsv", ["arctic_a0001", "arctic_a0002", "arctic_a0003"])
    evaluation = _pair_list(tmp_path / "eval.tsv", ["arctic_b0440"])
    out = tmp_path / "gmm"
    code = main(
        [
            "gmm-peer",
            "--no-progress",
            "--train-list",
            str(train),
            "--eval-list",
            str(evaluation),
            "--out-dir",
            str(out),
            "--pairs",
            "2",
            "--mixtures",
            "2",
        ]
    )
    assert code == 0
    assert "1 conversions" in capsys.readouterr().out
    wave, rate = sf.read(out / "arctic_b0440.wav")
    source, _ = sf.read(arctic_file("bdl", "arctic_b0440"))
    assert rate == 16000 and abs(len(wave) - len(source)) < 0.01 * rate and np.isfinite(wave).all()
    assert 0.01 < np.abs(wave).max() <= 1.0


def test_gmm_peer_gives_the_same_files_on_one_or_two_processes(tmp_path):
    needs(*gmm_peer.MODULES)
    train = _pair_list(tmp_path / "train.tsv", ["arctic_a0001", "arctic_a0002", "arctic_a0003"])
    evaluation = _pair_list(tmp_path / "eval.tsv", ["arctic_b0440", "arctic_b0441"])
    for workers in (1, 2):
        summary = gmm_peer.run_gmm_peer(
            train, evaluation, tmp_path / str(workers), pairs=3, mixtures=2, workers=workers, progress=False
        )
        assert summary["files"] == 2
    for utt in ("arctic_b0440", "arctic_b0441"):
        assert (tmp_path / "1" / f"{utt}.wav").read_bytes() == (tmp_path / "2" / f"{utt}.wav").read_bytes()


def test_gmm_peer_without_scikit_learn_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gmm_peer, "missing", lambda *names: list(names))
    train = _pair_list(tmp_path / "train.tsv", ["arctic_a0001"])
    code = main(
        ["gmm-peer", "--train-list", str(train), "--eval-list", str(train), "--out-dir", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "scikit-learn" in err and INSTALL_HINT in err

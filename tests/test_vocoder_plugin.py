"""A vocoder is a plug-in: a toy one in this module and one registry line reach `vc convert --vocoder`,
`vc score --vocoders` (its ceiling row) and the serving page's choices, with nothing else edited."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
import torch

from vc.cli import build_parser, main
from vc.config import Config
from vc.evaluation.systems import ceiling_vocoders
from vc.vocoders import VOCODERS, Vocoder

TONE_HZ = 440.0


class ToyVocoder(torch.nn.Module):
    """Any log-mel -> a 440 Hz tone as long as the frames: the contract of every vocoder, and no more."""

    def __init__(self, audio):
        super().__init__()
        self.audio = audio
        self.mel2linear = None

    @torch.no_grad()
    def forward(self, logmel, frame_lens=None, generator=None):
        batch, frames, _ = logmel.shape
        if frame_lens is None:
            frame_lens = torch.full((batch,), frames, dtype=torch.long)
        time = torch.arange(frames * self.audio.hop_length) / self.audio.sample_rate
        waves = 0.1 * torch.sin(2 * torch.pi * TONE_HZ * time).repeat(batch, 1)
        return waves, frame_lens * self.audio.hop_length


def build(audio, vocoder, mel2linear, device) -> ToyVocoder:
    return ToyVocoder(audio)


@pytest.fixture()
def toy(monkeypatch):
    monkeypatch.setitem(VOCODERS, "toy", Vocoder("toy", "Toy", build))  # the one registry line


def test_vc_convert_vocodes_through_the_toy(toy, checkpoint, tmp_path):
    source = tmp_path / "in.wav"
    sf.write(source, np.random.default_rng(0).standard_normal(8000).astype(np.float32) * 0.1, 16000)
    out = tmp_path / "out.wav"
    args = ["convert", "--checkpoint", str(checkpoint), "--vocoder", "toy", "--no-progress", str(source)]
    assert main([*args, str(out)]) == 0
    wave, rate = sf.read(out, dtype="float32")
    spectrum = np.abs(np.fft.rfft(wave))
    assert np.fft.rfftfreq(len(wave), 1 / rate)[spectrum.argmax()] == pytest.approx(
        TONE_HZ, abs=rate / len(wave)
    )


def test_vc_score_takes_the_toy_and_gives_it_a_ceiling_row(toy):
    args = build_parser().parse_args(
        ["score", "--converted", "c", "--reference", "r", "--vocoders", "griffin-lim,toy"]
    )
    assert args.vocoders == ["griffin-lim", "toy"]
    rows = ceiling_vocoders(Config(), None, ["toy"])
    assert list(rows) == ["Toy ceiling"] and isinstance(rows["Toy ceiling"], ToyVocoder)


def test_vc_convert_and_score_refuse_a_vocoder_not_in_the_registry(capsys):
    for args in (
        ["convert", "--vocoder", "toy", "a.wav", "b.wav"],
        ["score", "--converted", "c", "--vocoders", "toy"],
    ):
        with pytest.raises(SystemExit):
            build_parser().parse_args(args)
        assert "toy" in capsys.readouterr().err


def test_the_serving_page_offers_the_toy(toy, catalog):
    pytest.importorskip("flask", reason="vc serve needs the serve extra: pip install -e '.[serve]'")
    from vc.serving.app import create_app

    page = create_app(catalog).test_client().get("/").get_data(as_text=True)
    assert '<option value="griffin-lim" selected>Griffin-Lim</option>' in page
    assert '<option value="toy">Toy</option>' in page

#!/usr/bin/env python3
"""Experiment (issue 55, step 1): does a converter trained on the target's own recordings escape the blur?

Recognition-synthesis: a frame-level phone recognizer trained on both speakers turns any speech into
content features (phone posteriors, or the recognizer's last hidden layer); a synthesizer trained on
the target's recordings alone maps content + log-F0 (moved to the target's range) + voicing back to the
target's log-mels. Input and output come from the same recording, so no alignment pairs the frames.

Rows written, each a folder of eval conversions for `vc score` (the command is printed at the end):
    a_slt_resynth   held-out target utterances resynthesised from their own recognized content + F0:
                    does the synthesizer itself blur?
    b_oracle        source utterances' forced-alignment phones (one-hot) + the source's F0 moved to the
                    target's range, through a synthesizer trained on the target's one-hot phones: the
                    bound before recognition errors
    c_recognized    the source's recognized content + moved F0: the real system
and OUT/measures.json: the recognizer's frame accuracy on held-out source and target frames, and a
speaker probe (a linear classifier telling source from target frames by their content features, on
held-out frames: near 50 % means speaker-independent). Mels go through the bundled model's vocoder
(its mel -> linear network, trained on slt, then Griffin-Lim), with each recording's silence put back.

    local/recognition_synthesis.py --exp EXP --data DATA --phones PHONES.json --out OUT
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from vc.audio import read_speech, write_audio
from vc.audio.features import FeatureStats
from vc.config import load_config
from vc.evaluation.optional import pkg_resources_stand_in
from vc.inference.converter import Converter
from vc.pairs import read_pair_list
from vc.training.data import load_features
from vc.training.phonetic import PHONES, frame_accuracy, load_frame_labels, train_phone_classifier

with pkg_resources_stand_in():
    import pyworld

log = logging.getLogger("recognition_synthesis")


class Synthesizer(nn.Module):
    """content + F0 features (B, T, n_in) -> normalised log-mels (B, T, n_mels): residual convs, a BLSTM."""

    def __init__(self, n_in: int, n_mels: int, channels: int = 256, layers: int = 3):
        super().__init__()
        self.inp = nn.Linear(n_in, channels)
        self.convs = nn.ModuleList(nn.Conv1d(channels, channels, 5, padding=2) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(channels) for _ in range(layers))
        self.rnn = nn.LSTM(channels, channels // 2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(channels, n_mels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inp(x))
        for conv, norm in zip(self.convs, self.norms, strict=True):
            h = h + nn.functional.dropout(
                norm(torch.relu(conv(h.transpose(1, 2)).transpose(1, 2))), 0.1, self.training
            )
        return self.out(self.rnn(h)[0])


def log_f0(wave: np.ndarray, sample_rate: int, hop_length: int, frames: int) -> np.ndarray:
    """(frames,) natural-log F0 per mel frame, 0 where unvoiced (WORLD's DIO + StoneMask)."""
    x = wave.astype(np.float64)
    period = 1000 * hop_length / sample_rate
    f0, times = pyworld.dio(x, sample_rate, frame_period=period)
    f0 = pyworld.stonemask(x, f0, times, sample_rate)
    out = np.zeros(frames, dtype=np.float32)
    n = min(frames, len(f0))
    out[:n] = np.where(f0[:n] > 0, np.log(np.maximum(f0[:n], 1e-3)), 0.0)
    return out


def f0_stats(curves: list[np.ndarray]) -> tuple[float, float]:
    voiced = np.concatenate([c[c > 0] for c in curves])
    return float(voiced.mean()), float(voiced.std())


def f0_input(lf0: np.ndarray, own: tuple[float, float]) -> torch.Tensor:
    """(T, 2): log-F0 moved from its speaker's range to the target's, in the target's units (0 unvoiced),
    and the voicing flag. Moving (z-score in the own range, then the target's mean and deviation) and
    measuring in the target's units cancel: the input is the pitch's z-score in its own speaker's range."""
    voiced = lf0 > 0
    moved = np.where(voiced, (lf0 - own[0]) / own[1], 0.0)
    return torch.from_numpy(np.stack([moved, voiced.astype(np.float32)], axis=1).astype(np.float32))


def train_crops(net, inputs, targets, minutes: float, seed: int, crop: int = 128, batch: int = 32):
    """L1 on random crops for ``minutes``; returns the steps made."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-4)
    start, step = time.monotonic(), 0
    net.train()
    while time.monotonic() - start < minutes * 60:
        xs, ys = [], []
        for k in torch.randint(len(inputs), (batch,), generator=generator).tolist():
            offset = int(torch.randint(max(1, len(inputs[k]) - crop + 1), (1,), generator=generator))
            xs.append(inputs[k][offset : offset + crop])
            ys.append(targets[k][offset : offset + crop])
        x = nn.utils.rnn.pad_sequence(xs, batch_first=True)
        y = nn.utils.rnn.pad_sequence(ys, batch_first=True)
        mask = nn.utils.rnn.pad_sequence([torch.ones(len(t)) for t in ys], batch_first=True)[..., None]
        loss = ((net(x) - y).abs() * mask).sum() / (mask.sum() * y.shape[-1])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        step += 1
        if step % 200 == 0:
            log.info(
                "synthesizer step %d: L1 %.3f (%.1f min)", step, loss.item(), (time.monotonic() - start) / 60
            )
    return net.eval(), step


@torch.no_grad()
def content(recognizer, mel: torch.Tensor, kind: str) -> torch.Tensor:
    """(T, n_mels) normalised -> (T, D) posteriors or the last hidden layer."""
    hidden = recognizer.hidden(mel[None])
    return (hidden if kind == "bottleneck" else recognizer.out(hidden).softmax(-1))[0]


def speaker_probe(
    train: list[tuple[torch.Tensor, int]], test: list[tuple[torch.Tensor, int]], seed: int
) -> float:
    """Held-out frame accuracy of a logistic regression telling the speakers apart by content features."""
    torch.manual_seed(seed)
    x = torch.cat([f for f, _ in train])
    y = torch.cat([torch.full((len(f),), s, dtype=torch.float32) for f, s in train])
    mean, std = x.mean(0), x.std(0) + 1e-5
    probe = nn.Linear(x.shape[1], 1)
    optimizer = torch.optim.Adam(probe.parameters(), lr=1e-2)
    for _ in range(300):
        loss = nn.functional.binary_cross_entropy_with_logits(probe((x - mean) / std)[:, 0], y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    right = total = 0
    with torch.no_grad():
        for f, s in test:
            right += int(((probe((f - mean) / std)[:, 0] > 0).float() == s).sum())
            total += len(f)
    return right / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exp", required=True, help="the recipe's EXP (features/, stats.json)")
    parser.add_argument("--data", required=True, help="the recipe's data folder (train/dev/eval.tsv)")
    parser.add_argument(
        "--phones", required=True, help="vc durations --phones' alignments of all three lists"
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--content", choices=("posteriors", "bottleneck"), default="posteriors")
    parser.add_argument("--recognizer_minutes", type=float, default=3.0)
    parser.add_argument("--synth_minutes", type=float, default=6.0)
    parser.add_argument(
        "--pitch",
        choices=("source", "none"),
        default="source",
        help="source: the input's log-F0 moved to the target's range + voicing; none: content alone "
        "(the synthesizer speaks the target's own prosody)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--no_oracle", action="store_true", help="skip row b (it does not depend on --content)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(2)
    config = load_config("student")
    audio = config.audio
    exp, data, out = Path(args.exp), Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stats = json.loads((exp / "stats.json").read_text())
    norm = {side: FeatureStats.from_dict(stats[side]) for side in ("source", "target")}
    features = {
        split: load_features(data / f"{split}.tsv", audio, exp / "features")
        for split in ("train", "dev", "eval")
    }
    frame_seconds = audio.hop_length / audio.sample_rate
    labels = {split: load_frame_labels(args.phones, features[split], frame_seconds) for split in features}
    mels = {  # split -> side -> utt -> normalised (T, n_mels)
        split: {
            side: {
                utt: torch.from_numpy(norm[side].normalize(pair[k])) for utt, pair in features[split].items()
            }
            for k, side in enumerate(("source", "target"))
        }
        for split in features
    }

    def frames(split, sides=("source", "target")):
        return [(mels[split][s][u], labels[split][s][u]) for s in sides for u in sorted(features[split])]

    recognizer, _ = train_phone_classifier(
        frames("train"), frames("dev"), args.recognizer_minutes, args.seed, torch.device("cpu")
    )
    measures = {
        "recognizer_minutes": args.recognizer_minutes,
        "accuracy_dev_source": frame_accuracy(recognizer, frames("dev", ("source",)), torch.device("cpu")),
        "accuracy_dev_target": frame_accuracy(recognizer, frames("dev", ("target",)), torch.device("cpu")),
        "accuracy_eval_source": frame_accuracy(recognizer, frames("eval", ("source",)), torch.device("cpu")),
    }
    feats = {
        split: {
            side: {u: content(recognizer, m, args.content) for u, m in mels[split][side].items()}
            for side in mels[split]
        }
        for split in mels
    }
    probe_train = [
        (feats["train"][s][u][::4], k)
        for k, s in enumerate(("source", "target"))
        for u in sorted(features["train"])
    ]
    probe_test = [
        (feats["dev"][s][u], k) for k, s in enumerate(("source", "target")) for u in sorted(features["dev"])
    ]
    measures["speaker_probe_dev"] = speaker_probe(probe_train, probe_test, args.seed)
    log.info("measures: %s", measures)

    pairs = {
        split: {p.utt_id: p for p in read_pair_list(data / f"{split}.tsv")} for split in ("train", "eval")
    }
    speech = {}  # (split, side, utt) -> trimmed Speech
    lf0 = {}
    for split in ("train", "eval"):
        for side in ("source", "target"):
            for utt, pair in pairs[split].items():
                s = read_speech(pair.source if side == "source" else pair.target, audio)
                speech[split, side, utt] = s
                lf0[split, side, utt] = log_f0(
                    s.wave, audio.sample_rate, audio.hop_length, len(mels[split][side][utt])
                )
    f0 = {side: f0_stats([lf0["train", side, u] for u in pairs["train"]]) for side in ("source", "target")}
    measures["log_f0_mean_std"] = f0
    # Every pitch input is in the target's units: the target's own z-score, or the source's moved there.
    pitch = {key: f0_input(curve, f0[key[1]]) for key, curve in lf0.items()}
    if args.pitch == "none":
        pitch = {key: p[:, :0] for key, p in pitch.items()}

    def onehot(lab):
        return nn.functional.one_hot(lab, len(PHONES)).float()

    train_utts = sorted(pairs["train"])
    targets = [mels["train"]["target"][u] for u in train_utts]
    results = {}
    for row in ("content", *(() if args.no_oracle else ("onehot",))):
        if row == "content":
            inputs = [
                torch.cat([feats["train"]["target"][u], pitch["train", "target", u]], 1) for u in train_utts
            ]
        else:
            inputs = [
                torch.cat([onehot(labels["train"]["target"][u]), pitch["train", "target", u]], 1)
                for u in train_utts
            ]
        net, steps = train_crops(
            Synthesizer(inputs[0].shape[1], audio.n_mels), inputs, targets, args.synth_minutes, args.seed
        )
        measures[f"synth_steps_{row}"] = steps
        results[row] = net
    vocoder = Converter.from_pretrained().vocoder

    def write(folder: str, net, side: str, make_input):
        (out / folder).mkdir(exist_ok=True)
        for utt in sorted(pairs["eval"]):
            with torch.no_grad():
                mel = norm["target"].denormalize(net(make_input(utt)[None]))
                wave, _ = vocoder(mel, generator=torch.Generator().manual_seed(0))
            s = speech["eval", side, utt]
            wave = np.concatenate(
                [np.zeros(s.lead, np.float32), wave[0].numpy(), np.zeros(s.tail, np.float32)]
            )
            write_audio(out / folder / f"{utt}.wav", wave, audio.sample_rate)

    posterior = results["content"]
    write(
        "a_slt_resynth",
        posterior,
        "target",
        lambda u: torch.cat([feats["eval"]["target"][u], pitch["eval", "target", u]], 1),
    )
    if not args.no_oracle:
        write(
            "b_oracle",
            results["onehot"],
            "source",
            lambda u: torch.cat([onehot(labels["eval"]["source"][u]), pitch["eval", "source", u]], 1),
        )
    write(
        "c_recognized",
        posterior,
        "source",
        lambda u: torch.cat([feats["eval"]["source"][u], pitch["eval", "source", u]], 1),
    )
    (out / "measures.json").write_text(json.dumps(measures, indent=1))
    log.info("measures: %s", json.dumps(measures))


if __name__ == "__main__":
    main()

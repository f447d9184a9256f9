"""Durations from the words: each recording aligned to its transcript's phones, the pair timed by them.

Both recordings of a pair read the same sentence. Each is force-aligned to the phones of its transcript
by pocketsphinx 5 (Huggins-Daines et al., ICASSP 2006), whose en-us acoustic model and CMU
pronouncing dictionary ship inside its wheel: no download. The pocketsphinx WER scorer
(vc/evaluation/sphinx.py) uses the same acoustic model, so every pocketsphinx WER of a model timed by
these alignments says so beside it.

The transcript's words are those of its normalisation (vc/evaluation/transcripts.py), numbers spelt as
read ("1908" -> "nineteen oh eight"). Words the dictionary lacks get a pronunciation from the words it
has: a possessive from its stem ("thorpe's" -> "thorpe" + Z), a compound from two entries ("nightglow"
-> "night" + "glow"); a word none of these covers is left out of the alignment (its sound joins its
neighbours') and counted.

The pair's timing: the two phone sequences are matched (equal names, in order, difflib's longest
matching blocks, so a different pronunciation variant or an optional pause costs only its own phones);
each matched phone's start and end in both recordings are anchor points of a monotonic map from target
time to source time, linear between anchors (inside a phone pair). Each target frame reads the source
frame at its mapped time; counting the target frames per encoder step gives the durations every
converter trains on (the same file as `vc durations --dtw` writes).

    vc durations --phones --config conf/student.yaml --features-dir EXP/features \\
        --out EXP/durations_phones.pt data/bdl_slt/train.tsv data/bdl_slt/dev.tsv
"""

from __future__ import annotations

import difflib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from vc.artifacts.durations import DurationReport, empty_step_share, save_durations
from vc.audio import read_audio
from vc.config import Config
from vc.errors import DataError
from vc.evaluation.optional import INSTALL_HINT, pkg_resources_stand_in
from vc.evaluation.transcripts import find_transcripts, normalize_text, read_transcripts
from vc.fileio import atomic_write_text
from vc.packages import missing
from vc.pairs import read_pair_list
from vc.parallel import process_map
from vc.settings.audio import AudioConfig
from vc.training.data import load_features

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000  # the acoustic model's
FRAME_SECONDS = 0.01  # pocketsphinx's frame shift
SILENCES = {"<sil>", "sil", "<s>", "</s>", "SIL"}


@dataclass
class Phone:
    name: str
    start: float  # seconds from the start of the (trimmed) recording
    end: float


class PhoneAligner:
    """16 kHz mono float wave + its text -> its phones with their times (pocketsphinx's aligner)."""

    def __init__(self):
        if missing("pocketsphinx"):
            raise DataError(f"phone alignment needs pocketsphinx ({INSTALL_HINT})")
        with pkg_resources_stand_in():
            from pocketsphinx import Decoder, get_model_path
        self.decoder = Decoder(samprate=SAMPLE_RATE, bestpath=False, loglevel="FATAL")
        self.dictionary: dict[str, list[str]] = {}
        with open(Path(get_model_path()) / "en-us" / "cmudict-en-us.dict", encoding="utf-8") as lines:
            for line in lines:
                word, *phones = line.split()
                if "(" not in word:  # the first pronunciation of each word
                    self.dictionary[word] = phones
        self.unpronounced: set[str] = set()

    def pronounce(self, word: str) -> list[str] | None:
        """The word's phones: the dictionary's, or from entries it has (see the module docstring)."""
        if word in self.dictionary:
            return self.dictionary[word]
        if word.endswith("'s") and word[:-2] in self.dictionary:
            stem = self.dictionary[word[:-2]]
            last = stem[-1].rstrip("012")
            ending = ["IH", "Z"] if last in {"S", "Z", "SH", "ZH", "CH", "JH"} else (
                ["S"] if last in {"P", "T", "K", "F", "TH"} else ["Z"]
            )  # fmt: skip
            return stem + ending
        for cut in range(2, len(word) - 1):  # a compound of two entries, the longer first part first
            head, tail = word[: len(word) - cut], word[len(word) - cut :]
            if head in self.dictionary and tail in self.dictionary and min(len(head), len(tail)) >= 3:
                return self.dictionary[head] + self.dictionary[tail]
        return None

    def words(self, text: str) -> list[str]:
        """The transcript's words the aligner can say; the others are left out (and remembered)."""
        found = []
        for word in normalize_text(text).split():  # numbers already spelt as read
            phones = self.pronounce(word)
            if phones is None:
                self.unpronounced.add(word)
                continue
            if word not in self.dictionary:
                self.decoder.add_word(word, " ".join(phones), True)
                self.dictionary[word] = phones
            found.append(word)
        return found

    def __call__(self, wave: np.ndarray, text: str) -> list[Phone]:
        words = self.words(text)
        if not words:
            return []
        pcm = (np.clip(wave, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
        self.decoder.reinit_feat()
        self.decoder.set_align_text(" ".join(words))
        try:
            for second_pass in (False, True):  # the word alignment, then the phones inside it
                if second_pass:
                    self.decoder.set_alignment()
                self.decoder.start_utt()
                self.decoder.process_raw(pcm, full_utt=True)
                self.decoder.end_utt()
            alignment = self.decoder.get_alignment()
        except RuntimeError:  # the search found no path through the words: no alignment
            return []
        if alignment is None:
            return []
        return [
            Phone(phone.name, phone.start * FRAME_SECONDS, (phone.start + phone.duration) * FRAME_SECONDS)
            for word in alignment
            for phone in word
            if phone.name not in SILENCES and word.name not in SILENCES
        ]


def durations_from_phones(
    source: list[Phone],
    target: list[Phone],
    source_frames: int,
    target_frames: int,
    factor: int,
    frame_seconds: float,
) -> np.ndarray:
    """(ceil(source_frames / factor),) target frames per encoder step, summing to target_frames, from the
    two recordings' phones (the module docstring says how). Frame k sits at k * frame_seconds."""
    names = difflib.SequenceMatcher(None, [p.name for p in source], [p.name for p in target], autojunk=False)
    src_times, tgt_times = [0.0], [0.0]
    for block in names.get_matching_blocks():
        for k in range(block.size):
            s, t = source[block.a + k], target[block.b + k]
            for src_time, tgt_time in ((s.start, t.start), (s.end, t.end)):
                if src_time > src_times[-1] and tgt_time > tgt_times[-1]:  # strictly monotonic anchors
                    src_times.append(src_time)
                    tgt_times.append(tgt_time)
    src_end, tgt_end = (source_frames - 1) * frame_seconds, (target_frames - 1) * frame_seconds
    while len(src_times) > 1 and (src_times[-1] >= src_end or tgt_times[-1] >= tgt_end):
        src_times.pop(), tgt_times.pop()  # the recordings' own ends are the last anchor
    src_times.append(max(src_end, 0.0))
    tgt_times.append(max(tgt_end, 0.0))
    mapped = np.interp(np.arange(target_frames) * frame_seconds, tgt_times, src_times)
    frames = np.clip(np.floor(mapped / frame_seconds + 0.5).astype(np.int64), 0, source_frames - 1)
    steps = -(-source_frames // factor)
    return np.bincount(frames // factor, minlength=steps)[:steps]


_ALIGNER: PhoneAligner | None = None


def _align(job: tuple[str, str, AudioConfig]) -> tuple[list[list], set[str]]:
    """One recording's phones, as [[name, start, end]], in a worker (its own aligner)."""
    global _ALIGNER
    if _ALIGNER is None:
        _ALIGNER = PhoneAligner()
    path, text, audio = job
    wave = read_audio(path, audio)  # trimmed as the features are
    if audio.sample_rate != SAMPLE_RATE:
        import librosa

        wave = librosa.resample(wave, orig_sr=audio.sample_rate, target_sr=SAMPLE_RATE)
    phones = _ALIGNER(wave, text)
    return [[p.name, round(p.start, 3), round(p.end, 3)] for p in phones], set(_ALIGNER.unpronounced)


def pair_transcripts(pairs, text: str | Path | None) -> dict[str, str]:
    """utt id -> text of every pair: from ``text`` (utt_id<TAB>text or txt.done.data), else the corpus
    file beside each recording's folder (ARCTIC's etc/txt.done.data); a DataError names a missing one."""
    given = read_transcripts(text) if text else {}
    found: dict[str, str] = {}
    files: dict[Path, dict[str, str]] = {}
    for pair in pairs:
        if pair.utt_id in given:
            found[pair.utt_id] = given[pair.utt_id]
            continue
        for recording in (pair.target, pair.source):
            corpus = find_transcripts(Path(recording).parent)
            if corpus is not None:
                if corpus not in files:
                    files[corpus] = read_transcripts(corpus)
                if pair.utt_id in files[corpus]:
                    found[pair.utt_id] = files[corpus][pair.utt_id]
                    break
        else:
            raise DataError(
                f"no transcript of {pair.utt_id}: give --text (utt_id<TAB>text) or keep the corpus "
                "layout (etc/txt.done.data beside the wav folder)"
            )
    return found


def extract_phone_durations(
    config: Config,
    lists: list[str | Path],
    features_dir: str | Path,
    out: str | Path,
    alignments_out: str | Path,
    text: str | Path | None = None,
    workers: int = 1,
    progress: bool = True,
) -> DurationReport:
    """Durations from the phones of every pair of ``lists`` -> ``out``; the phone alignments ->
    ``alignments_out`` (JSON: utt id -> {"source": [[phone, start s, end s]], "target": ...})."""
    pairs = [pair for path in lists for pair in read_pair_list(path)]
    texts = pair_transcripts(pairs, text)
    features = {}
    for path in lists:
        features.update(load_features(path, config.audio, features_dir, progress=progress))
    jobs = [
        (str(recording), texts[p.utt_id], config.audio) for p in pairs for recording in (p.source, p.target)
    ]
    aligned, unpronounced = [], set()
    # each worker process its own aligner
    for phones, missing_words in process_map(
        _align, jobs, workers, desc="phones", unit="file", progress=progress, chunksize=8
    ):
        aligned.append(phones)
        unpronounced |= missing_words
    factor = config.model.encoder_reduction_factor
    frame_seconds = config.audio.hop_length / config.audio.sample_rate
    durations, alignments, unaligned = {}, {}, []
    for k, pair in enumerate(pairs):
        src, tgt = features[pair.utt_id]
        source, target = aligned[2 * k], aligned[2 * k + 1]
        alignments[pair.utt_id] = {"source": source, "target": target}
        if not source or not target:
            unaligned.append(pair.utt_id)
        found = durations_from_phones(
            [Phone(*p) for p in source],
            [Phone(*p) for p in target],
            len(src),
            len(tgt),
            factor,
            frame_seconds,
        )
        durations[pair.utt_id] = torch.from_numpy(found.astype(np.int32))
    if unpronounced:
        log.warning(
            "words without a pronunciation, left out of the alignment: %s", " ".join(sorted(unpronounced))
        )
    if unaligned:
        log.warning(
            "%d pairs have a recording the aligner found no path through; they are timed linearly: %s",
            len(unaligned),
            unaligned[:5],
        )
    report = DurationReport(
        utterances=len(durations), sharpness=None, zero_fraction=empty_step_share(durations)
    )
    atomic_write_text(Path(alignments_out), json.dumps(alignments, separators=(",", ":")) + "\n")
    save_durations(out, durations, config, "phones", report)
    log.info(
        "phone durations of %d utterances -> %s (alignments %s): %.1f %% of encoder steps get no frame",
        len(durations), out, alignments_out, 100 * report.zero_fraction,
    )  # fmt: skip
    return report

#!/usr/bin/env python3
"""Synthetic parallel data: Debian's TTS voices reading the ARCTIC prompts, paired with the target.

Many-to-one training keeps the target's natural recordings and adds sources:
each voice below reads every prompt of the pair lists, and (voice reading p)
-> (the target's recording of p) is one more training pair. Given the folder
data_prep.py wrote (train.tsv, dev.tsv, eval.tsv), writes

    OUT/<voice>/<utt_id>.wav          each train-role voice reading the train and dev prompts
    OUT/train.tsv, OUT/dev.tsv        the original pairs plus every train-role voice's, with
                                      ids <voice>_<utt_id> (feature caches are keyed by id)
    OUT/eval.tsv                      the original eval pairs, unchanged (OUT is a whole data folder)
    OUT/text                          utt_id<TAB>prompt of every id above (the phones' aligner reads it)
    OUT/heldout/<voice>/<utt_id>.wav  each held-out voice reading the eval prompts; in no list,
                                      for a later stage to convert and score as unseen voices

Audio is 16 kHz mono 16-bit wav, resampled where the engine makes another
rate; the engine's leading and trailing silence is kept. Writes are atomic and
a finished file is never synthesised again, so an interrupted run resumes.
Engines: `apt-get install flite espeak-ng festival festvox-kallpc16k festvox-kdlpc16k`.
"""

from __future__ import annotations

import argparse
import functools
import logging
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf

from vc.errors import VcError
from vc.evaluation.transcripts import find_transcripts, read_transcripts
from vc.fileio import atomic_open
from vc.pairs import Pair, read_pair_list, write_pair_list
from vc.progress import progress as progress_bar

SAMPLE_RATE = 16000
TRAIN, HELDOUT = "train", "heldout"


class TTSError(RuntimeError):
    """An engine or voice is missing or failed; the message is one complete line."""


@dataclass(frozen=True)
class Voice:
    name: str  # folder name and utt id prefix: letters, digits, '-'
    engine: str  # a key of ENGINES
    args: tuple[str, ...]  # the engine's command-line arguments that select the voice
    role: str  # TRAIN: a source in the pair lists; HELDOUT: eval prompts only, never trained on
    package: str  # the Debian package holding the voice's data
    about: str


# Why these: flite's awb, rms and slt are built from the CMU ARCTIC speakers of those names, so
# training on awb or rms would leak real voices the unseen-voice stage scores as unseen, and slt
# imitates the target. awb and rms are held out; slt is left out (the unseen-voice stage already
# feeds the target's own recordings as input). flite's kal16 and festival's kal are one speaker's
# diphones in two engines, held out together. The train voices are espeak-ng's formant voices
# (both genders, US, British and Caribbean, its Klatt synthesiser too) and festival's ked.
# The unseen-voice stage (unseen_voices.py) reads the held-out flite voices from this table.
VOICES = (
    Voice("espeak-us-m3", "espeak-ng", ("-v", "en-us+m3"), TRAIN, "espeak-ng", "US English, male"),
    Voice("espeak-us-f2", "espeak-ng", ("-v", "en-us+f2"), TRAIN, "espeak-ng", "US English, female"),
    Voice("espeak-gb-m7", "espeak-ng", ("-v", "en-gb+m7"), TRAIN, "espeak-ng", "British English, male"),
    Voice("espeak-rp-f4", "espeak-ng", ("-v", "en-gb-x-rp+f4"), TRAIN, "espeak-ng", "British RP, female"),
    Voice("espeak-029-f5", "espeak-ng", ("-v", "en-029+f5"), TRAIN, "espeak-ng", "Caribbean English, female"),
    Voice("espeak-us-klatt", "espeak-ng", ("-v", "en-us+klatt"), TRAIN, "espeak-ng", "US English, Klatt"),
    Voice("festival-ked", "festival", ("-eval", "(voice_ked_diphone)"), TRAIN, "festvox-kdlpc16k", "US male"),
    Voice(
        "espeak-scot-f3", "espeak-ng", ("-v", "en-gb-scotland+f3"), HELDOUT, "espeak-ng", "Scottish, female"
    ),
    Voice(
        "festival-kal", "festival", ("-eval", "(voice_kal_diphone)"), HELDOUT, "festvox-kallpc16k", "US male"
    ),
    Voice("flite-rms", "flite", ("-voice", "rms"), HELDOUT, "flite", "US male (ARCTIC rms)"),
    Voice("flite-awb", "flite", ("-voice", "awb"), HELDOUT, "flite", "Scottish male (ARCTIC awb)"),
    Voice("flite-kal16", "flite", ("-voice", "kal16"), HELDOUT, "flite", "US male diphones (kal)"),
)


def _run(command: list[str], text: str | None = None) -> str:
    """Run an engine; its failure is one line naming the command and its last words."""
    done = subprocess.run(command, input=text, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise TTSError(f"{' '.join(command[:3])} ... failed (exit {done.returncode}): {last}")
    return done.stdout


def synthesize_flite(args: tuple[str, ...], text: str, wav: Path) -> None:
    _run(["flite", *args, "-t", text, "-o", str(wav)])


def synthesize_espeak(args: tuple[str, ...], text: str, wav: Path) -> None:
    _run(["espeak-ng", *args, "-w", str(wav), "--stdin"], text)  # stdin: a prompt may start with '-'


def synthesize_festival(args: tuple[str, ...], text: str, wav: Path) -> None:
    _run(["text2wave", *args, "-o", str(wav)], text)


# An unknown voice is no error to any of the three (flite and espeak-ng fall back to a default
# voice), so each engine lists what it has, and every voice is checked before any work.
def flite_voices() -> set[tuple[str, ...]]:
    names = _run(["flite", "-lv"]).split(":", 1)[-1].split()
    return {("-voice", name) for name in names}


def espeak_voices() -> set[tuple[str, ...]]:
    def column(listing: str, index: int) -> list[str]:
        return [line.split()[index] for line in listing.splitlines()[1:] if line.strip()]

    languages = column(_run(["espeak-ng", "--voices"]), 1)
    variants = [file.removeprefix("!v/") for file in column(_run(["espeak-ng", "--voices=variant"]), 4)]
    return {("-v", f"{language}+{variant}") for language in languages for variant in variants}


def festival_voices() -> set[tuple[str, ...]]:
    listing = _run(["festival", "--batch", "(print (voice.list))"])
    return {("-eval", f"(voice_{name})") for name in listing.strip("()\n ").split()}


@dataclass(frozen=True)
class Engine:
    program: str
    package: str
    synthesize: Callable[[tuple[str, ...], str, Path], None]
    voices: Callable[[], set[tuple[str, ...]]]


ENGINES = {
    "flite": Engine("flite", "flite", synthesize_flite, flite_voices),
    "espeak-ng": Engine("espeak-ng", "espeak-ng", synthesize_espeak, espeak_voices),
    "festival": Engine("text2wave", "festival", synthesize_festival, festival_voices),
}


def packages(voices) -> list[str]:
    """The Debian packages the voices need: their engines' and their own data's."""
    return sorted({ENGINES[v.engine].package for v in voices} | {v.package for v in voices})


@functools.cache
def installed_voices(engine: str) -> frozenset[tuple[str, ...]]:
    """What an installed engine lists, read once per process (each listing starts the engine)."""
    return frozenset(ENGINES[engine].voices())


def missing(voices: list[Voice] | tuple[Voice, ...]) -> str | None:
    """None when every voice can be synthesised here, else one line naming what to install."""
    absent = []
    for voice in voices:
        engine = ENGINES[voice.engine]
        if shutil.which(engine.program) is None:
            absent.append((voice, f"{engine.program} is not installed"))
            continue
        if voice.args not in installed_voices(voice.engine):
            absent.append((voice, f"{voice.engine} has no voice {' '.join(voice.args)}"))
    if not absent:
        return None
    voice, why = absent[0]
    more = f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""
    return f"voice {voice.name}{more}: {why}; apt-get install {' '.join(packages([v for v, _ in absent]))}"


def synthesize(voice: Voice, text: str, path: Path) -> None:
    """``voice`` reading ``text`` into ``path``: 16 kHz mono 16-bit wav, written atomically."""
    with tempfile.TemporaryDirectory(prefix="tts-") as tmp:
        made = Path(tmp) / "out.wav"
        ENGINES[voice.engine].synthesize(voice.args, text, made)
        if not made.is_file() or made.stat().st_size <= 44:  # festival says nothing for some errors
            raise TTSError(f"voice {voice.name} wrote no audio for {text[:40]!r}")
        info = sf.info(str(made))
        if (info.samplerate, info.channels, info.subtype) == (SAMPLE_RATE, 1, "PCM_16"):
            with atomic_open(path) as out:  # already the format: the engine's bytes as they are
                out.write(made.read_bytes())
            return
        import librosa  # here: these two import torch, which the engines' own 16 kHz never needs

        from vc.audio import write_audio

        wave, rate = sf.read(str(made), dtype="float32", always_2d=True)
        wave = librosa.resample(wave.mean(axis=1), orig_sr=rate, target_sr=SAMPLE_RATE)
        write_audio(path, wave, SAMPLE_RATE)


def synthesize_missing(jobs: list[tuple[Voice, str, Path]], progress: bool = True) -> int:
    """Synthesise every (voice, text, path) whose file does not exist yet; returns how many were made."""
    todo = [job for job in jobs if not job[2].exists()]
    for voice, text, path in progress_bar(todo, desc="synthesising", unit="file", disable=not progress):
        synthesize(voice, text, path)
    return len(todo)


def read_prompts(db_root: Path | None, tgt: str, first_target: Path) -> dict[str, str]:
    """utt id -> prompt, from the target's etc/txt.done.data (under db_root, or beside the list's audio)."""
    if db_root is not None:
        found = db_root / f"cmu_us_{tgt}_arctic" / "etc" / "txt.done.data"
    else:
        found = find_transcripts(first_target.parent)
    if found is None or not found.is_file():
        where = f"at {found}" if found else f"beside {first_target.parent}"
        raise TTSError(f"no ARCTIC transcripts (etc/txt.done.data) {where}")
    return read_transcripts(found)


def build(data: Path, out: Path, prompts: dict[str, str], voices=VOICES, progress: bool = True) -> list[str]:
    """The synthetic sources of data/{train,dev,eval}.tsv and the lists that pair them; returns a summary."""
    lists = {split: read_pair_list(data / f"{split}.tsv") for split in ("train", "dev", "eval")}
    train_voices = [v for v in voices if v.role == TRAIN]
    heldout_voices = [v for v in voices if v.role == HELDOUT]
    jobs = [  # (voice, the pair whose prompt it reads, the file, the split)
        (voice, pair, out / voice.name / f"{pair.utt_id}.wav", split)
        for voice in train_voices
        for split in ("train", "dev")
        for pair in lists[split]
    ] + [
        (voice, pair, out / HELDOUT / voice.name / f"{pair.utt_id}.wav", "eval")
        for voice in heldout_voices
        for pair in lists["eval"]
    ]
    absent = sorted({pair.utt_id for _, pair, _, _ in jobs} - set(prompts))
    if absent:
        raise TTSError(
            f"no prompt for {len(absent)} utterances ({', '.join(absent[:3])}...) in the transcripts"
        )
    needed = list(dict.fromkeys(voice for voice, _, path, _ in jobs if not path.exists()))
    problem = missing(needed)
    if problem:
        raise TTSError(problem)
    made = synthesize_missing([(v, prompts[p.utt_id], path) for v, p, path, _ in jobs], progress)

    summary = [f"synthesised {made} files ({len(jobs) - made} were there already)"]
    for split in ("train", "dev"):
        pairs = lists[split] + [
            Pair(f"{voice.name}_{pair.utt_id}", path, pair.target)
            for voice, pair, path, job_split in jobs
            if job_split == split
        ]
        write_pair_list(out / f"{split}.tsv", pairs)
        summary.append(
            f"{out / split}.tsv: {len(pairs)} pairs ({len(lists[split])} original"
            f" + {len(lists[split])} from each of {len(train_voices)} train voices)"
        )
    write_pair_list(out / "eval.tsv", lists["eval"])
    summary.append(f"{out / 'eval.tsv'}: {len(lists['eval'])} pairs (the original's)")
    # The prompt of every pair id (a voice's id too), for `vc durations --phones --text`: a synthetic
    # recording has no corpus transcript file beside it.
    texts = {pair.utt_id: prompts[pair.utt_id] for split in ("train", "dev", "eval") for pair in lists[split]}
    texts.update({f"{voice.name}_{pair.utt_id}": prompts[pair.utt_id] for voice, pair, _, _ in jobs})
    with atomic_open(out / "text", "w") as handle:
        handle.writelines(f"{utt_id}\t{text}\n" for utt_id, text in texts.items())
    summary.append(f"{out / 'text'}: the prompts of {len(texts)} ids")
    summary.append(
        f"{out / HELDOUT}/: {len(heldout_voices)} held-out voices x {len(lists['eval'])} eval prompts"
    )
    return summary


def voice_table() -> str:
    return "\n".join(
        f"{v.name:16} {v.role:8} {' '.join(v.args):26} {v.about:26} "
        + ("installed" if missing([v]) is None else f"missing: apt-get install {' '.join(packages([v]))}")
        for v in VOICES
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", help="data_prep.py's folder: train.tsv, dev.tsv, eval.tsv")
    parser.add_argument("--out", help="folder for the voices' audio and the new lists")
    parser.add_argument(
        "--db_root",
        help="CMU ARCTIC root whose <tgt> transcripts are read (default: beside the lists' audio)",
    )
    parser.add_argument("--tgt", default="slt", help="the target speaker, whose transcripts are the prompts")
    parser.add_argument(
        "--list", action="store_true", help="print the voices, their roles and what is installed"
    )
    args = parser.parse_args(argv)
    if args.list:
        print(voice_table())
        return
    if not (args.data and args.out):
        parser.error("--data and --out are required (or --list)")

    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the progress lines off a terminal
    data = Path(args.data)
    try:
        first_target = read_pair_list(data / "train.tsv")[0].target
        prompts = read_prompts(Path(args.db_root) if args.db_root else None, args.tgt, first_target)
        summary = build(data, Path(args.out), prompts)
    except (TTSError, VcError) as exc:
        sys.exit(f"tts_voices: error: {exc}")
    print("\n".join(summary), file=sys.stderr)


if __name__ == "__main__":
    main()

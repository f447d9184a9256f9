#!/usr/bin/env python3
"""Voices no training run ever hears, reading the eval prompts: the inputs of the unseen-voice stage.

Writes OUT/<voice>/<utt_id>.{wav,flac} for the first --limit utterances of the
eval list, one folder per voice:

- every other CMU ARCTIC speaker found under --db_root (real recordings; the
  target's own recordings too, named "<tgt>-as-source": a real voice the model
  only ever produced, never heard as input);
- the held-out TTS voices of tts_voices.py (flite's, espeak-ng's and
  festival's) reading the same prompts, each when its engine is installed
  (`apt-get install flite espeak-ng festival festvox-kallpc16k`);
- the source speaker's own eval recordings played SPEEDUP times faster
  (resampled: pitch, formants and tempo all up, as a smaller speaker; a
  phase-vocoder pitch shift was tried first, but its artefacts made even the
  unconverted input unintelligible to the recognizer: WER 94 %).

Real recordings are linked, not copied. Prints one line per voice.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tts_voices import (  # local/, beside this
    HELDOUT,
    VOICES,
    TTSError,
    missing,
    read_prompts,
    synthesize_missing,
)

# The TTS voices no training run hears (tts_voices.py holds them out of its pair lists)
HELDOUT_VOICES = tuple(v for v in VOICES if v.role == HELDOUT)
SPEEDUP = 1.19  # 3 semitones


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--eval", required=True, help="the recipe's eval.tsv (utt_id, source, target)")
    parser.add_argument("--out", required=True, help="folder for one sub-folder per voice")
    parser.add_argument(
        "--db_root",
        help="CMU ARCTIC root whose other speakers are real unseen voices (default: the eval list's)",
    )
    parser.add_argument("--src", default="bdl")
    parser.add_argument("--tgt", default="slt")
    parser.add_argument("--limit", type=int, default=20, help="eval utterances per voice (default 20)")
    return parser.parse_args()


def read_eval(path: Path, limit: int) -> list[tuple[str, Path, Path]]:
    rows = [line.split("\t") for line in path.read_text().splitlines() if line.strip()]
    return [(utt, Path(src), Path(tgt)) for utt, src, tgt in rows[:limit]]


def link_real_speakers(db_root: Path, utts: list[str], out: Path, src: str, tgt: str) -> list[str]:
    made = []
    for speaker_dir in sorted(db_root.glob("cmu_us_*_arctic")):
        speaker = speaker_dir.name.split("_")[2]
        if speaker == src:
            continue
        files = {p.stem: p for p in (speaker_dir / "wav").glob("*.*") if p.suffix in (".wav", ".flac")}
        if not all(utt in files for utt in utts):
            print(f"  {speaker}: skipped (not every eval utterance is there)")
            continue
        name = f"{speaker}-as-source" if speaker == tgt else speaker
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for utt in utts:
            link = folder / files[utt].name
            if not link.exists():
                link.symlink_to(files[utt].resolve())
        made.append(f"{name}: real recordings ({speaker_dir})")
    return made


def synthesize_heldout(prompts: dict[str, str], utts: list[str], out: Path) -> list[str]:
    """Every held-out TTS voice whose engine is installed; the others are skipped with one line each."""
    made, ready = [], []
    for voice in HELDOUT_VOICES:
        problem = missing([voice])
        if problem:
            made.append(f"{voice.name}: skipped ({problem})")
        else:
            ready.append(voice)
    synthesize_missing([(v, prompts[utt], out / v.name / f"{utt}.wav") for v in ready for utt in utts])
    return made + [f"{v.name}: {v.engine} {' '.join(v.args[1:])}, {v.about} (synthetic)" for v in ready]


def sped_up(rows: list[tuple[str, Path, Path]], out: Path, src: str) -> list[str]:
    import soundfile as sf
    import soxr

    from vc.audio import write_audio

    name = f"{src}-x{SPEEDUP:g}"
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    for utt, source, _ in rows:
        target = folder / f"{utt}.wav"
        if target.exists():
            continue
        wave, rate = sf.read(source, dtype="float32")
        faster = soxr.resample(wave, rate * SPEEDUP, rate)  # fewer samples at the same rate
        write_audio(target, faster, rate)  # atomic, 16-bit
    return [f"{name}: {src}'s eval recordings played {SPEEDUP:g}x faster (pitch, formants, tempo)"]


def main() -> None:
    args = parse_args()
    rows = read_eval(Path(args.eval), args.limit)
    if not rows:
        sys.exit(f"unseen_voices.py: no utterances in {args.eval}")
    utts = [utt for utt, _, _ in rows]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    made = []
    db_root = (
        Path(args.db_root) if args.db_root else rows[0][1].parent.parent.parent
    )  # <root>/cmu_us_x_arctic/wav
    made += link_real_speakers(db_root, utts, out, args.src, args.tgt)
    try:
        prompts = read_prompts(None, args.tgt, rows[0][1])  # the transcripts beside the source's audio
    except TTSError as exc:
        sys.exit(f"unseen_voices.py: {exc}")
    made += synthesize_heldout(prompts, utts, out)
    made += sped_up(rows, out, args.src)
    print("\n".join(f"  {line}" for line in made))


if __name__ == "__main__":
    main()

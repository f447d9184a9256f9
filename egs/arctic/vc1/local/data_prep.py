#!/usr/bin/env python3
"""CMU ARCTIC pair lists: train / dev / eval with the standard split.

Sorted ids; the first 932 train, the next 100 dev (arctic_b0340..b0439), the
last 100 eval (arctic_b0440..b0539). With --db_root an existing copy in the
official layout is used (wav or flac); without it the official release of each
speaker is downloaded into --download_dir, resumably, and checked.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

SPEAKERS = ("awb", "bdl", "clb", "jmk", "ksp", "rms", "slt")
URL = "http://festvox.org/cmu_arctic/packed/cmu_us_{speaker}_arctic-0.95-release.tar.bz2"
TRAIN, DEV, EVAL = 932, 100, 100
# Every speaker's release holds 1132 utterances; a shorter archive is truncated.
MIN_ARCHIVE_BYTES = 50_000_000


def audio_files(speaker_dir: Path) -> dict[str, Path]:
    wav_dir = speaker_dir / "wav"
    files = {p.stem: p for p in sorted(wav_dir.glob("*.wav")) + sorted(wav_dir.glob("*.flac"))}
    if not files:
        sys.exit(f"data_prep: error: no wav or flac files in {wav_dir}")
    return files


def fetch(url: str, partial: Path) -> None:
    """Download url into partial, continuing where an interrupted run stopped."""
    done = partial.stat().st_size if partial.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={done}-"})
    print(f"downloading {url} (from byte {done})", file=sys.stderr)
    fail = f"data_prep: error: cannot download {url}: {{}}; rerun to resume, or pass --db_root"
    try:
        with (
            urllib.request.urlopen(request, timeout=60) as response,
            open(partial, "ab" if done else "wb") as out,
        ):
            if done and response.status != 206:  # the server ignored the range: start over
                out.truncate(0)
            while chunk := response.read(1 << 20):
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        if exc.code != 416:  # 416: nothing left after byte `done`, the download is complete
            sys.exit(fail.format(exc))
    except OSError as exc:
        sys.exit(fail.format(exc))


def download(speaker: str, download_dir: Path) -> Path:
    """Fetch and unpack one speaker's release; resumes a partial download."""
    target = download_dir / f"cmu_us_{speaker}_arctic"
    if (target / "wav").is_dir() and len(list((target / "wav").glob("*.wav"))) >= TRAIN + DEV + EVAL:
        return target
    download_dir.mkdir(parents=True, exist_ok=True)
    archive = download_dir / Path(URL.format(speaker=speaker)).name
    partial = archive.with_suffix(archive.suffix + ".part")
    if not archive.is_file():
        fetch(URL.format(speaker=speaker), partial)
        partial.replace(archive)
    size = archive.stat().st_size
    if size < MIN_ARCHIVE_BYTES:
        archive.unlink()
        sys.exit(f"data_prep: error: {archive.name} is truncated ({size} bytes); rerun to fetch it again")
    # No official checksums are published; bz2's per-block CRCs, checked while
    # unpacking, catch corruption, and the digest is printed for the record.
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    print(f"{archive.name} sha256 {digest}", file=sys.stderr)
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(download_dir, filter="data")
    except (tarfile.TarError, EOFError, OSError) as exc:  # bz2 checks each block's CRC while reading
        archive.unlink()
        sys.exit(f"data_prep: error: {archive.name} is corrupt ({exc}); rerun to fetch again")
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db_root", help="folder holding cmu_us_<spk>_arctic/ (official layout)")
    parser.add_argument(
        "--download_dir", default="downloads", help="where to download when --db_root is absent"
    )
    parser.add_argument("--src", default="bdl", choices=SPEAKERS)
    parser.add_argument("--tgt", default="slt", choices=SPEAKERS)
    parser.add_argument("--out", default="data", help="folder for train.tsv, dev.tsv, eval.tsv")
    parser.add_argument("--limit", type=int, default=0, help="keep only N utterances per split (quick tests)")
    args = parser.parse_args(argv)

    if args.db_root:
        root = Path(args.db_root)
        dirs = [root / f"cmu_us_{spk}_arctic" for spk in (args.src, args.tgt)]
        for folder in dirs:
            if not folder.is_dir():
                sys.exit(
                    f"data_prep: error: {folder} not found (expected the official layout under --db_root)"
                )
    else:
        dirs = [download(spk, Path(args.download_dir)) for spk in (args.src, args.tgt)]
    src_files, tgt_files = (audio_files(d) for d in dirs)
    ids = sorted(set(src_files) & set(tgt_files))
    if len(ids) < TRAIN + DEV + EVAL:
        sys.exit(f"data_prep: error: only {len(ids)} parallel utterances, {TRAIN + DEV + EVAL} expected")
    splits = {
        "train": ids[:TRAIN],
        "dev": ids[TRAIN : TRAIN + DEV],
        "eval": ids[TRAIN + DEV : TRAIN + DEV + EVAL],
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, split_ids in splits.items():
        if args.limit:
            split_ids = split_ids[: args.limit]
        lines = [f"{i}\t{src_files[i].resolve()}\t{tgt_files[i].resolve()}" for i in split_ids]
        tmp = out / f".{name}.tsv.tmp"
        tmp.write_text("\n".join(lines) + "\n")
        tmp.replace(out / f"{name}.tsv")
        print(f"{out / name}.tsv: {len(lines)} pairs ({split_ids[0]}..{split_ids[-1]})", file=sys.stderr)


if __name__ == "__main__":
    main()

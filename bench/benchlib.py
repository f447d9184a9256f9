"""Shared pieces of the benchmark: paths, sizes, data lists, the model, timers, memory."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DB_ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "cmu_arctic"
DEFAULT_CONFIG = REPO / "egs" / "arctic" / "vc1" / "conf" / "default.yaml"
DATA_PREP = REPO / "egs" / "arctic" / "vc1" / "local" / "data_prep.py"
# Where recipes leave their trained models (egs/<corpus>/vc1/exp/<src>_<tgt>_<tag>/checkpoints/best.pt):
# without --checkpoint the newest of these is used, whatever --tag the recipe ran with.
RECIPE_CHECKPOINTS = "egs/*/vc1/exp/*/checkpoints/best.pt"
# Benchmark output goes here unless --json says otherwise: git ignores it, so a run never
# touches the committed reference results (bench/results.json, bench/results_full.json).
DEFAULT_JSON = REPO / "bench" / "out" / "results.json"
# An untrained stop token fires at random: an untrained model decodes exactly this many output frames
# per source frame (inference.min_ratio = max_ratio), about what a trained bdl -> slt model outputs.
UNTRAINED_RATIO = 1.0
STATS_UTTERANCES = 16  # training pairs whose statistics normalise an untrained model


@dataclass(frozen=True)
class Sizes:
    """How much of each measurement to run; --quick picks the small set."""

    convert_utterances: int
    gl_utterances: int
    gl_repeats: int
    train_steps: int  # timed steps per DDP rank; one process runs twice as many
    score_utterances: int  # natural target files each metric family scores (section scoring)


QUICK = Sizes(
    convert_utterances=16,
    gl_utterances=8,
    gl_repeats=3,
    train_steps=4,
    score_utterances=20,
)
FULL = Sizes(
    convert_utterances=100,
    gl_utterances=16,
    gl_repeats=3,
    train_steps=12,
    score_utterances=100,
)


@dataclass(frozen=True)
class Setup:
    """Everything a measurement process needs, as plain picklable values."""

    db_root: str
    config: str
    checkpoint: str  # "" = untrained model built from config
    lists_dir: str  # train.tsv / dev.tsv / eval.tsv written by data_prep.py
    work_dir: str  # scratch space (feature cache, training output)
    sizes: Sizes

    def to_dict(self) -> dict:
        return asdict(self)


class BenchError(SystemExit):
    """A one-line reason the benchmark will not run; exits with status 2."""

    def __init__(self, message: str):
        super().__init__(f"bench/run.py: error: {message}")


def newest_recipe_checkpoint(repo: Path = REPO) -> Path | None:
    """The most recently written best.pt of any recipe experiment, or None."""
    found = [path for path in repo.glob(RECIPE_CHECKPOINTS) if path.is_file()]
    return max(found, key=lambda path: path.stat().st_mtime) if found else None


def resolve_checkpoint(given: str | None, untrained: bool, repo: Path = REPO) -> str:
    """--checkpoint, else the newest recipe best.pt; "" (untrained) only when asked for.

    An untrained model's stop token is random, so every decode runs to the length
    cap: its conversion speed says nothing about a trained model. Timing one by
    accident (a recipe run with another --tag) must be an error, not a table.
    """
    if untrained:
        return ""
    if given:
        if not Path(given).is_file():
            raise BenchError(f"--checkpoint {given}: no such file")
        return str(Path(given).resolve())
    found = newest_recipe_checkpoint(repo)
    if found is None:
        raise BenchError(
            f"no trained checkpoint: none matches {RECIPE_CHECKPOINTS}; give --checkpoint FILE, "
            "or --untrained to time an untrained model (every decode runs to the length cap)"
        )
    return str(found)


def prepare_lists(db_root: str, out_dir: str) -> None:
    """Standard ARCTIC bdl -> slt split with the recipe's own data_prep.py."""
    subprocess.run(
        [sys.executable, str(DATA_PREP), "--db_root", db_root, "--out", out_dir],
        check=True,
        stderr=subprocess.DEVNULL,
    )


def list_pairs(setup: Setup, split: str, count: int | None = None):
    """The first ``count`` pairs (vc.pairs.Pair) of train / dev / eval."""
    from vc.pairs import read_pair_list

    pairs = read_pair_list(Path(setup.lists_dir) / f"{split}.tsv")
    return pairs if count is None else pairs[:count]


def read_waves(paths, audio) -> tuple[list, float]:
    """Prepared (mono, 16 kHz, trimmed) waves as `vc convert` reads them, and the reading time."""
    from vc.audio import read_audio

    start = time.perf_counter()
    waves = [read_audio(path, audio) for path in paths]
    return waves, time.perf_counter() - start


def source_stats(setup: Setup, audio):
    """Source and target statistics of the first STATS_UTTERANCES training pairs (untrained model)."""
    from vc.audio import FeatureStats, LogMel, logmel_numpy

    extractor = LogMel(audio)
    pairs = list_pairs(setup, "train", STATS_UTTERANCES)
    src = [logmel_numpy(w, audio, extractor) for w in read_waves([p.source for p in pairs], audio)[0]]
    tgt = [logmel_numpy(w, audio, extractor) for w in read_waves([p.target for p in pairs], audio)[0]]
    return FeatureStats.from_features(src), FeatureStats.from_features(tgt)


def load_converter(setup: Setup):
    """(Converter, load seconds, description). Untrained: built from the config, capped decoding."""
    import torch

    from vc.config import load_config
    from vc.inference import Converter
    from vc.kinds import build_model

    if setup.checkpoint:
        start = time.perf_counter()
        converter = Converter.from_checkpoint(setup.checkpoint, device="cpu")
        return converter, time.perf_counter() - start, f"trained checkpoint {setup.checkpoint}"
    overrides = [f"inference.min_ratio={UNTRAINED_RATIO}", f"inference.max_ratio={UNTRAINED_RATIO}"]
    config = load_config(setup.config, overrides)
    src_stats, tgt_stats = source_stats(setup, config.audio)
    start = time.perf_counter()
    torch.manual_seed(0)
    model = build_model(config.audio.n_mels, config.model)
    converter = Converter(model, config, src_stats, tgt_stats, torch.device("cpu"))
    description = (
        f"UNTRAINED model from {Path(setup.config).name} (no checkpoint): its stop token is random, so "
        f"decoding is capped at inference.max_ratio={UNTRAINED_RATIO} x source frames (min_ratio too) and "
        "every item runs to the cap; decoder numbers are those of a 1.0 x output length"
    )
    return converter, time.perf_counter() - start, description


def time_call(fn, repeats: int) -> tuple[float, list[float]]:
    """Mean wall seconds of fn() over ``repeats`` calls (after none: warm up yourself), and all times."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.mean(times), times


def peak_rss_mb() -> float:
    """Peak resident set size of this process (getrusage ru_maxrss, KiB on Linux) in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    """Current resident set size from /proc/self/status, in MiB (0 where unavailable)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class BackgroundLoad:
    """CPU time other processes used while we ran: all busy CPU time (/proc/stat) minus our own
    and our children's (getrusage). Children count once they have been waited for."""

    def __init__(self):
        self.start_busy, self.start_own, self.start_wall = (
            _busy_seconds(),
            _own_seconds(),
            time.perf_counter(),
        )

    def result(self) -> dict:
        wall = time.perf_counter() - self.start_wall
        other = (_busy_seconds() - self.start_busy) - (_own_seconds() - self.start_own)
        cores = os.cpu_count() or 1
        return {
            "wall_seconds": wall,
            "other_cpu_seconds": max(0.0, other),
            "other_percent_of_machine": max(0.0, 100 * other / (wall * cores)),
        }


def _busy_seconds() -> float:
    """Non-idle CPU seconds of the whole machine since boot (0 where /proc/stat is missing)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return 0.0
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def machine() -> dict:
    """Date, OS, CPU model and count, library versions, torch threads."""
    import librosa
    import numpy
    import torch

    model_name = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model_name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "platform": platform.platform(),
        "cpu": model_name,
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "numpy": numpy.__version__,
        "librosa": librosa.__version__,
    }

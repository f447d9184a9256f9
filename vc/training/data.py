"""Parallel data: cached features of pair lists (vc.pairs), padded batches, length buckets.

Features are computed
once per (list, audio config) and cached on disk; training then reads only the
cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from vc.audio import FeatureStats, LogMel, logmel_numpy, read_audio
from vc.audio.pitch import SETTINGS as PITCH_SETTINGS
from vc.audio.pitch import pitch_features, yin
from vc.errors import DataError
from vc.fileio import atomic_save, atomic_write_text
from vc.kinds.losses import IGNORE
from vc.pairs import read_pair_list
from vc.progress import progress as show_progress  # `progress` is a parameter name here
from vc.settings.audio import AudioConfig

log = logging.getLogger(__name__)


Features = dict[str, tuple[np.ndarray, np.ndarray]]  # utt_id -> (source log-mel, target log-mel)


def cache_path(list_path: Path, audio: AudioConfig, cache_dir: Path, settings: tuple = ()) -> Path:
    """The cache file depends on the list's content, every audio setting and what made it (``settings``:
    e.g. the pitch estimator's)."""
    key = json.dumps([list_path.read_text(), vars(audio), *settings], sort_keys=True)
    digest = hashlib.sha1(key.encode()).hexdigest()[:10]
    return cache_dir / f"{list_path.stem}-{digest}.pt"


def read_cache(path: Path, what: str):
    """A list's cached tensors at ``path``, or None when it is missing or unreadable (a damaged cache is
    only a cache: the caller computes it again)."""
    if not path.is_file():
        return None
    try:
        return torch.load(path, weights_only=True)
    except Exception:
        log.warning("%s cache %s is unreadable; computing it again", what, path)
        return None


def load_features(
    list_path: str | Path, audio: AudioConfig, cache_dir: str | Path, progress: bool = True
) -> Features:
    """Log-mels of every pair in the list, from the cache or computed (and cached) now."""
    list_path = Path(list_path)
    pairs = read_pair_list(list_path)
    path = cache_path(list_path, audio, Path(cache_dir))
    stored = read_cache(path, "feature")
    if stored is not None:
        return {utt: (src.numpy(), tgt.numpy()) for utt, (src, tgt) in stored.items()}
    extractor = LogMel(audio)
    features: Features = {}
    for pair in show_progress(pairs, desc=f"features {list_path.name}", disable=not progress, unit="utt"):
        features[pair.utt_id] = (
            logmel_numpy(read_audio(pair.source, audio), audio, extractor),
            logmel_numpy(read_audio(pair.target, audio), audio, extractor),
        )
    tensors = {utt: (torch.from_numpy(src), torch.from_numpy(tgt)) for utt, (src, tgt) in features.items()}
    atomic_save(path, tensors)
    log.info("cached features of %d pairs in %s", len(features), path)
    return features


def load_f0(
    list_path: str | Path, audio: AudioConfig, cache_dir: str | Path, progress: bool = True
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """utt_id -> (source, target) F0 per log-mel frame (Hz, 0 unvoiced; vc/audio/pitch.py's yin) of every
    pair in the list, from the cache beside the features' or computed (and cached) now."""
    list_path = Path(list_path)
    path = cache_path(list_path, audio, Path(cache_dir), PITCH_SETTINGS).with_suffix(".f0.pt")
    stored = read_cache(path, "F0")
    if stored is not None:
        return stored

    def f0(file) -> torch.Tensor:
        wave = torch.from_numpy(read_audio(file, audio))
        return yin(wave[None], torch.tensor([len(wave)]), audio)[0]

    pairs = read_pair_list(list_path)
    curves = {
        pair.utt_id: (f0(pair.source), f0(pair.target))
        for pair in show_progress(pairs, desc=f"F0 {list_path.name}", disable=not progress, unit="utt")
    }
    atomic_save(path, curves)
    log.info("cached the F0 of %d pairs in %s", len(curves), path)
    return curves


def pitch_inputs(
    curves: dict[str, tuple[torch.Tensor, torch.Tensor]], target: tuple[float, float]
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """utt_id -> (source, target) pitch features (frames, 2): the target's in the target speaker's range
    ``target`` (log_f0_stats), the source's in each utterance's own, as conversion reads an input."""

    def features(curve: torch.Tensor, speaker) -> torch.Tensor:
        return pitch_features(curve[None], torch.tensor([len(curve)]), speaker)[0]

    return {utt: (features(src, None), features(tgt, target)) for utt, (src, tgt) in curves.items()}


def require_lists(config) -> tuple[str, str]:
    """(train list, dev list) from the config, or a DataError saying which key to set."""
    for key in ("train_list", "dev_list"):
        if not getattr(config.data, key):
            raise DataError(f"data.{key} is not set: give it in the config or as data.{key}=PATH")
    return config.data.train_list, config.data.dev_list


def speaker_list(config) -> str:
    """The list whose sources define the source speaker: data.stats_list, else the training list."""
    return config.data.stats_list or require_lists(config)[0]


def feature_cache_dir(config, out_dir: str | Path) -> Path:
    """data.cache_dir, or EXP/features by default."""
    return Path(config.data.cache_dir) if config.data.cache_dir else Path(out_dir) / "features"


def compute_stats(features: Features) -> tuple[FeatureStats, FeatureStats]:
    """Source and target speaker statistics (call on the training set only)."""
    sources = [src for src, _ in features.values()]
    targets = [tgt for _, tgt in features.values()]
    return FeatureStats.from_features(sources), FeatureStats.from_features(targets)


def speaker_stats(
    config, out_dir: str | Path, progress: bool = True, features: Features | None = None
) -> tuple[FeatureStats, FeatureStats]:
    """Statistics of the training list (or data.stats_list), kept in EXP/stats.json.

    The file names the feature cache it was computed from; when that cache
    changes (another list, other audio settings), or the file predates
    ``utterance_spread``, the statistics are recomputed.
    ``features``: that list's, when already loaded.
    """
    list_path = Path(speaker_list(config))
    cache = cache_path(list_path, config.audio, feature_cache_dir(config, out_dir))
    path = Path(out_dir) / "stats.json"
    if path.is_file():
        stored = json.loads(path.read_text())
        if stored.get("features") == cache.name and "utterance_spread" in stored["source"]:
            return FeatureStats.from_dict(stored["source"]), FeatureStats.from_dict(stored["target"])
    if features is None:
        features = load_features(list_path, config.audio, cache.parent, progress)
    src, tgt = compute_stats(features)
    atomic_write_text(
        path, json.dumps({"features": cache.name, "source": src.to_dict(), "target": tgt.to_dict()})
    )
    return src, tgt


class ParallelDataset(torch.utils.data.Dataset):
    """Normalised (utt_id, source, target, durations, phones) tensors, in a fixed (sorted id) order.

    ``durations``: utt_id -> (N,) target frames per encoder step (vc.training.durations), for the
    converters timed by them; ``phones``: utt_id -> frame labels of the phonetic loss
    (vc.training.phonetic); ``pitch``: utt_id -> (source, target) pitch features (pitch_inputs), for the
    kinds that read them; None where not given.
    """

    def __init__(
        self,
        features: Features,
        src_stats: FeatureStats,
        tgt_stats: FeatureStats,
        durations: dict[str, torch.Tensor] | None = None,
        phones: dict[str, torch.Tensor] | None = None,
        pitch: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
    ):
        self.ids = sorted(features)
        self.items = [
            (
                torch.from_numpy(src_stats.normalize(features[i][0])),
                torch.from_numpy(tgt_stats.normalize(features[i][1])),
                durations[i].long() if durations is not None else None,
                phones[i].long() if phones is not None else None,
                *(pitch[i] if pitch is not None else (None, None)),
            )
            for i in self.ids
        ]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int):
        return self.ids[index], *self.items[index]

    def lengths(self) -> list[int]:
        return [max(len(item[0]), len(item[1])) for item in self.items]


@dataclass
class Batch:
    utt_ids: list[str]
    src: torch.Tensor  # (B, T_src, n_mels)
    src_lens: torch.Tensor  # (B,)
    tgt: torch.Tensor  # (B, T_tgt, n_mels)
    tgt_lens: torch.Tensor  # (B,)
    durations: torch.Tensor | None = None  # (B, N) frames per encoder step, 0 on padding
    phones: torch.Tensor | None = None  # (B, T) phone labels of the phonetic loss, IGNORE on padding
    src_pitch: torch.Tensor | None = None  # (B, T_src, 2) pitch features (vc/audio/pitch.py), 0 on padding
    tgt_pitch: torch.Tensor | None = None  # (B, T_tgt, 2)
    # The target's frames as a kind that reads the target's own content hears them in training, augmented
    # (vc/training/augment.py, a kind with augments "target"); None: tgt itself.
    heard: torch.Tensor | None = None  # (B, T_tgt, n_mels)
    # What a kind's frozen recognizer reads of the target's and the source's frames, read once per
    # training recording when training starts (ModelKind.fixed_content); None: read each step.
    tgt_content: torch.Tensor | None = None  # (B, T_tgt, width)
    src_content: torch.Tensor | None = None  # (B, T_src, width)

    def to(self, device) -> Batch:
        tensors = (getattr(self, field.name) for field in dataclasses.fields(self)[1:])
        return Batch(self.utt_ids, *(None if x is None else x.to(device) for x in tensors))


def collate(items) -> Batch:
    ids, sources, targets, durations, phones, src_pitch, tgt_pitch = zip(*items, strict=True)
    pad = torch.nn.utils.rnn.pad_sequence

    def padded(tensors, value=0):
        return pad(tensors, batch_first=True, padding_value=value) if tensors[0] is not None else None

    return Batch(
        list(ids),
        pad(sources, batch_first=True),
        torch.tensor([len(s) for s in sources]),
        pad(targets, batch_first=True),
        torch.tensor([len(t) for t in targets]),
        padded(durations),
        padded(phones, IGNORE),
        padded(src_pitch),
        padded(tgt_pitch),
    )


def random_crops(items: list[tuple], count: int, frames: int, rng: random.Random) -> list[tuple]:
    """``count`` examples drawn with replacement from ``items`` (tuples of tensors of one length along
    dim 0; entries that are not tensors, None or an index, stay as they are), each cut to a random
    window of ``frames`` frames (shorter ones whole): the batches of the networks trained on crops (the
    mel -> linear network, the post-filter, the phone classifier), each padding them as its loss needs."""
    crops = []
    for example in rng.choices(items, k=count):
        length = len(next(t for t in example if isinstance(t, torch.Tensor)))
        start = rng.randrange(max(length - frames, 0) + 1)
        crops.append(tuple(t[start : start + frames] if isinstance(t, torch.Tensor) else t for t in example))
    return crops


def batches_in_order(dataset: ParallelDataset, batch_size: int, count: int | None = None):
    """The first ``count`` items (all by default) as collated batches, in list order: the dev views."""
    count = len(dataset) if count is None else min(count, len(dataset))
    for start in range(0, count, batch_size):
        yield collate([dataset[k] for k in range(start, min(start + batch_size, count))])


class BucketBatchSampler(torch.utils.data.Sampler):
    """Endless, length-bucketed batches whose order is a function of the step.

    Each epoch shuffles the utterances (seed + epoch), sorts them by length
    inside windows of 50 batches so a batch holds similar lengths (little
    padding), and shuffles the batches. Step s of rank k reads batch
    s * world_size + k of that sequence, so resuming at a step reproduces the
    data order exactly and DDP ranks never share a batch.
    """

    def __init__(
        self,
        lengths: list[int],
        batch_size: int,
        seed: int,
        start_step: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ):
        if len(lengths) < batch_size * world_size:
            batch_size = max(1, len(lengths) // world_size)
        self.lengths = lengths
        self.batch_size = batch_size
        self.seed = seed
        self.start_step = start_step
        self.rank = rank
        self.world_size = world_size

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        rng = random.Random(self.seed * 100_003 + epoch)
        order = list(range(len(self.lengths)))
        rng.shuffle(order)
        window = self.batch_size * 50
        batches = []
        for start in range(0, len(order), window):
            chunk = sorted(order[start : start + window], key=self.lengths.__getitem__)
            batches += [chunk[k : k + self.batch_size] for k in range(0, len(chunk), self.batch_size)]
        batches = [b for b in batches if len(b) == self.batch_size]  # equal batch sizes across ranks
        rng.shuffle(batches)
        return batches

    def steps_per_epoch(self) -> int:
        return max(1, len(self.epoch_batches(0)) // self.world_size)

    def __iter__(self) -> Iterator[list[int]]:
        per_epoch = self.steps_per_epoch()
        step = self.start_step
        while True:
            epoch, index = divmod(step, per_epoch)
            batches = self.epoch_batches(epoch)
            for k in range(index, per_epoch):
                yield batches[k * self.world_size + self.rank]
            step = (epoch + 1) * per_epoch

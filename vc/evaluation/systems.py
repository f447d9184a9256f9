"""The rows `vc score` prints, and where each row's files come from.

model                   the converted folder (vc score --name renames the row);
more systems            each --system NAME=DIR folder, scored as the converted one
                        (e.g. the classical peer of vc gmm-peer, another model);
no conversion (source)  the source speaker's recordings (the floor);
Griffin-Lim ceiling     the target's recordings through the log-mel + vocoder
                        path `vc convert` uses (the best this vocoder allows); one
                        such row per vocoder asked for (HiFi-GAN ceiling, ...);
natural target          the target's recordings themselves.

Each row gets every metric, so each number has its floor and ceilings beside it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
from collections.abc import Iterable
from pathlib import Path

import torch

from vc.audio import AUDIO_FORMATS
from vc.config import Config, load_config
from vc.errors import DataError
from vc.evaluation import registry
from vc.evaluation.scoring import System, files_by_utterance, resynthesize_folder, score_systems
from vc.evaluation.transcripts import find_transcripts, read_transcripts
from vc.pairs import read_pair_list
from vc.vocoders import VOCODERS, build_vocoder, built_in, vocoder_name

log = logging.getLogger(__name__)

MODEL, SOURCE, NATURAL = "model", "no conversion (source)", "natural target"


def ceiling_row(vocoder: str) -> str:
    """The ceiling row of a vocoder: "Griffin-Lim ceiling", "HiFi-GAN ceiling"."""
    return f"{VOCODERS[vocoder_name(vocoder)].title} ceiling"


CEILING = ceiling_row(built_in())  # the built-in vocoder's


def _speaker_files(train_list: str | Path | None) -> dict[str, list[Path]] | None:
    if not train_list:
        return None
    pairs = read_pair_list(train_list)
    return {"target": [p.target for p in pairs], "source": [p.source for p in pairs]}


def ceiling_vocoders(
    config: Config,
    checkpoint: str | Path | None,
    vocoders: Iterable[str] | None = None,
    pseudo_inverse: bool = False,
) -> dict[str, torch.nn.Module]:
    """Row name -> vocoder for the ceiling rows, one per vocoder in ``vocoders`` (None: the built-in one).

    Each row uses the path `vc convert` uses with ``checkpoint`` and that vocoder (the mel ->
    linear network inside an exported model file or beside a training checkpoint, when there is
    one), so the ceiling moves with the vocoder. ``pseudo_inverse``, with a network: a second
    built-in vocoder's row through the network-free pseudo-inverse path, so the network's gain shows.
    """
    rows = {}
    for name in vocoders or (built_in(),):
        row = ceiling_row(name)
        rows[row] = build_vocoder(config, checkpoint, kind=name)
        if pseudo_inverse and vocoder_name(name) == built_in() and rows[row].mel2linear is not None:
            rows[f"{row} (pseudo-inverse)"] = build_vocoder(config, checkpoint, mel2linear=False, kind=name)
    return rows


def score_against_references(
    converted: str | Path,
    reference: str | Path,
    *,
    source: str | Path | None = None,
    config_path: str | Path | None = None,
    checkpoint: str | Path | None = None,
    text: str | Path | None = None,
    train_list: str | Path | None = None,
    ceiling: bool = True,
    vocoders: Iterable[str] | None = None,
    pseudo_inverse: bool = False,
    families: tuple[str, ...] | None = None,
    source_families: tuple[str, ...] | None = None,
    ceiling_dir: str | Path | None = None,
    natural: bool = True,
    name: str = MODEL,
    extra_systems: Iterable[tuple[str, str | Path]] = (),
    cache_dir: str | Path | None = None,
    workers: int = 2,
    progress: bool = True,
) -> dict:
    """Score the model beside the floor, the ceilings and the natural target (see score_systems).

    ``name`` is the model row's name. ``extra_systems``, (row name, folder) pairs, are more rows
    (a classical peer, another model) scored exactly as ``converted``, listed right after it.
    The result's "model_row" says which row is the model (the listening report reads it).
    ``vocoders``: a ceiling row through each (with ``ceiling``); ``pseudo_inverse``: Griffin-Lim's
    ceiling through the pseudo-inverse too (ceiling_vocoders). ``families``: the metric families every
    row gets (None: vc score's defaults, registry.default_families()); ``source_families``: those the
    no-conversion row gets (None: ``families``). ``cache_dir``: the score cache (score_systems).
    """
    config = load_config(config_path, stored=True) if config_path else Config()
    text = text or find_transcripts(reference)
    transcripts = read_transcripts(text) if text else None
    if train_list is None and config.data.train_list and Path(config.data.train_list).is_file():
        train_list = config.data.train_list
    utts = sorted(files_by_utterance(Path(converted), "converted"))
    if not utts:
        raise DataError(f"no {'/'.join(AUDIO_FORMATS)} files in {converted}")
    systems = [System(name, Path(converted), families=families)]
    systems += [System(row, Path(folder), families=families) for row, folder in extra_systems]
    _check_row_names([system.name for system in systems])
    for system in systems[1:]:  # a wrong folder fails now, not after the ceiling's resynthesis
        files_by_utterance(system.folder, system.name)
    if source:
        systems.append(System(SOURCE, Path(source), families=source_families or families))
    with contextlib.ExitStack() as stack:
        if ceiling:
            for row, vocoder in ceiling_vocoders(config, checkpoint, vocoders, pseudo_inverse).items():
                out_dir = None
                if ceiling_dir:
                    out_dir = Path(ceiling_dir) / re.sub(r"[^a-z0-9-]+", "_", row.lower()).strip("_")
                folder = stack.enter_context(
                    resynthesize_folder(
                        reference, utts, config, progress, out_dir=out_dir, vocoder=vocoder, title=row
                    )
                )
                systems.append(System(row, folder, families=families))
        if natural:
            systems.append(System(NATURAL, Path(reference), distances=False, families=families))
        result = score_systems(
            systems,
            reference,
            sample_rate=config.audio.sample_rate,
            transcripts=transcripts,
            speakers=_speaker_files(train_list),
            # every row's (None: vc score's defaults) and the source row's
            families=set(families or registry.default_families()) | set(source_families or ()),
            workers=workers,
            progress=progress,
            cache_dir=Path(cache_dir) if cache_dir else None,
        )
    result["config"] = str(config_path) if config_path else None
    result["checkpoint"] = str(checkpoint) if checkpoint else None  # the model: the report shows its run
    result["model_row"] = name
    return result


def _check_row_names(names: list[str]) -> None:
    """The model's and the extra systems' row names: unique, and none of the rows vc score adds."""
    for index, name in enumerate(names):
        if not name.strip():
            raise DataError("a row name is empty")
        if name in names[:index]:
            raise DataError(f"two rows named {name!r}: give each system its own name")
        if name in (SOURCE, NATURAL) or any(name.startswith(ceiling_row(v)) for v in VOCODERS):
            raise DataError(f"{name!r} is the name of a row vc score adds itself: choose another")


def json_ready(value):
    """Plain JSON types: numpy scalars become floats/ints, NaN and inf become null (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, str | bool | None):
        return value
    if isinstance(value, int):
        return value
    number = float(value)
    if number.is_integer() and not isinstance(value, float) and "int" in type(value).__name__:
        return int(number)
    return number if math.isfinite(number) else None

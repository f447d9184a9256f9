"""Section 7: what `vc score` costs, family by family, with the score cache cold.

The first N eval utterances of the natural target (slt) are scored by each metric family alone through
`score_systems`, the product's own call, in its default 2 worker processes and without a cache, so
every file is scored; the speaker centroids' training files (similarity) are 8 training pairs. Per
family: the wall time, its seconds per file, and what it adds to the main job, which scores MAIN_JOB_FILES
files (9 rows of 100: the model and the attention model through both vocoders, the GMM peer, the source,
both ceilings and the natural target) when the cache holds none of them. pocketsphinx is timed too,
though `vc score` runs it only when asked for ("default": false).
"""

from __future__ import annotations

import time
from pathlib import Path

from benchlib import Setup, list_pairs

MAIN_JOB_FILES = 900
CENTROID_PAIRS = 8


def measure_scoring(setup: Setup) -> dict:
    from vc.evaluation import registry
    from vc.evaluation.scoring import System, available_families, score_systems
    from vc.evaluation.transcripts import find_transcripts, read_transcripts

    pairs = list_pairs(setup, "eval", setup.sizes.score_utterances)
    transcripts = read_transcripts(find_transcripts(pairs[0].target.parent))
    folder = Path(setup.work_dir) / "score_time"  # the N files alone (links), as a row's folder
    folder.mkdir(parents=True, exist_ok=True)
    for pair in pairs:
        link = folder / pair.target.name
        if not link.exists():
            link.symlink_to(pair.target.resolve())
    train = list_pairs(setup, "train", CENTROID_PAIRS)
    speakers = {"target": [p.target for p in train], "source": [p.source for p in train]}
    wanted = {p.target.stem for p in pairs}
    ready, missing = available_families(registry.optional_families())  # every family, asked for or not
    families = {}
    for name in [m.name for m in registry.METRICS if m.name in ready]:
        started = time.perf_counter()
        result = score_systems(
            [System("natural", folder, families=(name,))],  # that family alone (distances are always run)
            folder,
            transcripts={utt: text for utt, text in transcripts.items() if utt in wanted},
            speakers=speakers,
            families=(name,),
            workers=2,
            progress=False,
        )
        seconds = time.perf_counter() - started
        row = result["rows"]["natural"]
        families[name] = {
            "seconds": seconds,
            "files": row["utterances"],
            "per_file_s": seconds / row["utterances"],
            "main_job_s": seconds / row["utterances"] * MAIN_JOB_FILES,
            "default": registry.families()[name].by_default,
            "scores": {key: row[key] for key in ("whisper_wer", "wer", "mcd", "mos_ovrl") if key in row},
        }
    return {"families": families, "missing": missing, "workers": 2, "main_job_files": MAIN_JOB_FILES}

"""Speaker similarity: d-vector embeddings and cosines to speaker centroids.

resemblyzer's pretrained voice encoder (the GE2E d-vector of Wan et al.,
"Generalized end-to-end loss for speaker verification", ICASSP 2018; 3-layer
LSTM over 40-band mels, 256-dim embeddings, weights shipped in the wheel). An
utterance embedding is the normalised mean of embeddings of 1.6 s windows;
a speaker's centroid is the normalised mean of utterance embeddings. As in the
Voice Conversion Challenge's objective evaluations, a converted file is scored
by its cosine to the target speaker's centroid and to the source speaker's.
"""

from __future__ import annotations

import numpy as np

from vc.evaluation.metric import Column, FileJob, Metric
from vc.evaluation.optional import INSTALL_HINT, pkg_resources_stand_in
from vc.packages import missing

MODULES = ("resemblyzer", "webrtcvad")
SAMPLE_RATE = 16000
# A speaker's centroid is embedded from at most this many of its training files, spread over the list.
CENTROID_FILES = 50


def unavailable() -> str | None:
    if missing(*MODULES):
        return f"speaker similarity: resemblyzer is not installed ({INSTALL_HINT})"
    return None


class SpeakerEncoder:
    """16 kHz mono float wave -> unit-norm (256,) embedding."""

    def __init__(self):
        with pkg_resources_stand_in():
            from resemblyzer import VoiceEncoder, preprocess_wav

            self.encoder = VoiceEncoder(device="cpu", verbose=False)
        self.preprocess = preprocess_wav

    def __call__(self, wave: np.ndarray) -> np.ndarray:
        # Volume normalisation and voice-activity trimming, as the encoder was trained.
        prepared = self.preprocess(np.asarray(wave, dtype=np.float32), source_sr=SAMPLE_RATE)
        if prepared.size == 0:  # the VAD found no speech: embed what there is
            prepared = np.asarray(wave, dtype=np.float32)
        return np.asarray(self.encoder.embed_utterance(prepared), dtype=np.float64)


def spread(paths: list, count: int) -> list:
    """At most ``count`` items evenly spread over the (sorted) list."""
    paths = sorted(paths)
    if len(paths) <= count:
        return paths
    return [paths[int(k * len(paths) / count)] for k in range(count)]


def centroid(embeddings: list[np.ndarray]) -> np.ndarray:
    mean = np.mean(np.stack(embeddings), axis=0)
    return mean / np.linalg.norm(mean)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


class Similarity(Metric):
    """Cosines of each file's embedding to the target's and the source's centroids (embedded from their
    training files by the same workers), and the share of files closer to the target."""

    name = "similarity"
    columns = (
        Column("sim to tgt", "sim_target", "{:.3f}", headline=True),
        Column("sim to src", "sim_source", "{:.3f}", lower_is_better=True),
        Column("closer to tgt [%]", "closer_to_target", "{:.0f}"),
    )
    packages = ("resemblyzer", "webrtcvad", "torch", "librosa")

    def unavailable(self) -> str | None:
        return unavailable()

    def missing_input(self, transcripts, speakers) -> str | None:
        if not (speakers and speakers.get("target")):
            return "speaker similarity: no training files for the speaker centroids (--train-list)"
        return None

    def run_files(self, transcripts, speakers) -> dict[str, list]:
        return {role: spread(paths, CENTROID_FILES) for role, paths in (speakers or {}).items()}

    def run_found(self, scored: dict[str, list[dict]]) -> dict:
        return {
            "centroids": {role: centroid([s["embedding"] for s in found]) for role, found in scored.items()}
        }

    def load(self) -> SpeakerEncoder:
        return SpeakerEncoder()

    def score(self, model: SpeakerEncoder, wave: np.ndarray, job: FileJob) -> dict:
        return {"embedding": model(wave)}

    def finish(self, row: dict, found: dict) -> None:
        embedding = row.pop("embedding", None)
        centroids = found.get("centroids", {})
        if embedding is not None:
            for role, key in (("target", "sim_target"), ("source", "sim_source")):
                if role in centroids:
                    row[key] = cosine(embedding, centroids[role])
        if "sim_target" in row and "sim_source" in row:
            row["closer_to_target"] = 100.0 if row["sim_target"] > row["sim_source"] else 0.0


SIMILARITY = Similarity()

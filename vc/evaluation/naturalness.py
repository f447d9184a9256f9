"""Naturalness: a predicted MOS, DNSMOS P.835 (Reddy et al., ICASSP 2022).

The non-intrusive P.835 model predicts signal (SIG), background (BAK) and
overall (OVRL) quality of 16 kHz speech from 9.01 s windows; its ONNX file
ships inside the ``speechmos`` package and runs with onnxruntime on one CPU
thread. As in the DNSMOS reference scoring, a clip longer than a window is
scored every second and the calibrated scores (the published polynomials) are
averaged. A clip shorter than a window is repeated to fill exactly one window
and scored once; the reference doubles it until it is at least a window long
and then scores every second of that, i.e. mostly repeats of the same content
at a few times the cost (see the test for how close the two agree).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vc.evaluation.metric import Column, FileJob, Metric
from vc.evaluation.optional import INSTALL_HINT
from vc.packages import missing, package_folder

MODULES = ("speechmos", "onnxruntime")
SAMPLE_RATE = 16000
WINDOW_SECONDS = 9.01
HOP_SECONDS = 1.0
# DNSMOS P.835 calibration (raw model output -> MOS), non-personalised model.
CALIBRATION = {
    "sig": np.poly1d([-0.08397278, 1.22083953, 0.0052439]),
    "bak": np.poly1d([-0.13166888, 1.60915514, -0.39604546]),
    "ovrl": np.poly1d([-0.06766283, 1.11546468, 0.04602535]),
}


def unavailable() -> str | None:
    if missing(*MODULES):
        return f"predicted MOS: speechmos/onnxruntime are not installed ({INSTALL_HINT})"
    return None


def model_path() -> Path:
    return package_folder("speechmos") / "dnsmos_models" / "sig_bak_ovr.onnx"


class MosPredictor:
    """16 kHz mono float wave -> {"sig", "bak", "ovrl"} predicted MOS."""

    def __init__(self):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        # Scoring runs one process per core; more threads per process only contend.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            str(model_path()), options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, wave: np.ndarray) -> dict[str, float]:
        window = int(WINDOW_SECONDS * SAMPLE_RATE)
        audio = np.clip(np.asarray(wave, dtype=np.float32), -1.0, 1.0)
        if audio.size == 0:
            raise ValueError("empty wave")
        if audio.size < window:
            audio = np.tile(audio, int(np.ceil(window / audio.size)))[:window]
        hop = int(HOP_SECONDS * SAMPLE_RATE)
        starts = range(0, audio.size - window + 1, hop)
        raw = np.stack(
            [self.session.run(None, {"input_1": audio[None, s : s + window]})[0][0] for s in starts]
        )
        return {
            name: float(np.mean(CALIBRATION[name](raw[:, k])))
            for k, name in enumerate(("sig", "bak", "ovrl"))
        }


class Naturalness(Metric):
    """DNSMOS P.835's overall and signal MOS, means over utterances."""

    name = "naturalness"
    columns = (
        Column("MOS ovrl", "mos_ovrl", "{:.2f}", headline=True),
        Column("MOS sig", "mos_sig", "{:.2f}"),
    )
    packages = MODULES

    def unavailable(self) -> str | None:
        return unavailable()

    def load(self) -> MosPredictor:
        return MosPredictor()

    def score(self, model: MosPredictor, wave: np.ndarray, job: FileJob) -> dict:
        mos = model(wave)
        return {"mos_ovrl": mos["ovrl"], "mos_sig": mos["sig"]}


NATURALNESS = Naturalness()

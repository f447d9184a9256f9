from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tests.browser import find_chromium
from tests.helpers import save_tiny_checkpoint

if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest -n 2 (.ci/run): two workers share the cores, so each, and every process it starts,
    # computes on one thread; two threads each would oversubscribe them several times over.
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"

ARCTIC = Path(__file__).resolve().parents[2] / "shared" / "data" / "cmu_arctic"


@pytest.fixture
def one_thread():
    """Torch on one thread for the test: tiny tensors gain nothing from a second one but synchronisation,
    which gets very slow when other jobs share the two cores (a module opts in with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def arctic_file(speaker: str, utt_id: str) -> Path:
    """A real CMU ARCTIC file from ../shared, or skip the test where it is absent."""
    path = ARCTIC / f"cmu_us_{speaker}_arctic" / "wav" / f"{utt_id}.flac"
    if not path.is_file():
        pytest.skip(f"CMU ARCTIC data not found at {ARCTIC}")
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """An untrained tiny model's checkpoint, shared by a test module's tests (they must not change it)."""
    path = tmp_path_factory.mktemp("ckpt") / "model.pt"
    save_tiny_checkpoint(path)
    return path


@pytest.fixture()
def model_checkpoint(tmp_path):
    """(path, config) of an untrained tiny model's checkpoint at TMP/checkpoints/best.pt, one per test."""
    path = tmp_path / "checkpoints" / "best.pt"
    return path, save_tiny_checkpoint(path)


TINY = "run/checkpoints/best.pt"  # the tiny model's name in `catalog`


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """`vc serve`'s models: the bundled ones and, under --models, one tiny checkpoint (TINY) beside files
    that are not models."""
    from vc.serving.catalog import ModelCatalog

    folder = tmp_path_factory.mktemp("models")
    (folder / "run" / "checkpoints").mkdir(parents=True)
    save_tiny_checkpoint(folder / TINY)
    (folder / "run" / "notes.pt").write_bytes(b"not a model")
    return ModelCatalog(folder)


@pytest.fixture(scope="module")
def chromium() -> str:
    """The browser the page tests drive; under CI=true its absence fails, else it skips with the reason."""
    path = find_chromium()
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is not installed; .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); the CI run installs it")
    return path

from __future__ import annotations

from pathlib import Path

import pytest

ARCTIC = Path(__file__).resolve().parents[2] / "shared" / "data" / "cmu_arctic"


def arctic_file(speaker: str, utt_id: str) -> Path:
    """A real CMU ARCTIC file from ../shared, or skip the test where it is absent."""
    path = ARCTIC / f"cmu_us_{speaker}_arctic" / "wav" / f"{utt_id}.flac"
    if not path.is_file():
        pytest.skip(f"CMU ARCTIC data not found at {ARCTIC}")
    return path

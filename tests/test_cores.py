"""vc cores: the side-by-side probe the recipe decides by."""

from __future__ import annotations

import json

import pytest

from vc.cli import main
from vc.cores import side_by_side_gain
from vc.errors import VcError


def test_the_probe_counts_both_ways_and_writes_its_gain(tmp_path, capsys):
    out = tmp_path / "cores.json"
    assert main(["cores", "--seconds", "0.5", "--json", str(out)]) == 0
    found = json.loads(out.read_text())
    alone, together = found["alone_2_threads"], found["side_by_side_1_thread"]
    assert alone > 0 and len(together) == 2 and all(steps > 0 for steps in together)
    rate, rates = found["steps_per_second_alone"], found["steps_per_second_side_by_side"]
    assert found["gain"] == pytest.approx(sum(rates) / rate)
    # each rated by its whole steps over the seconds they took: at least its 0.5 s in all, each round's
    # last step ending past the round's end
    counts, paces = [alone, *together], [rate, *rates]
    assert all(steps / pace >= 0.5 for steps, pace in zip(counts, paces, strict=True))
    assert capsys.readouterr().out.startswith(
        f"side by side: {found['gain']:.2f}x the work of one 2-thread process"
    )


@pytest.mark.parametrize("seconds", ["0", "-1", "soon", "601"])
def test_a_bad_length_is_one_line_and_status_2(seconds, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["cores", "--seconds", seconds])
    assert stop.value.code == 2 and "vc cores: error: argument --seconds" in capsys.readouterr().err


def test_the_library_refuses_a_length_that_measures_nothing():
    with pytest.raises(VcError, match="positive number of seconds"):
        side_by_side_gain(0)

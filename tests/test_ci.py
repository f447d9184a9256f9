"""CI tests against the newest releases too, and the README says which versions (issue 12, item 6)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    script = (REPO / ".ci" / "run").read_text()
    return [line for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_ci_runs_the_suite_on_pinned_and_on_newest_releases():
    commands = _commands()
    pytest_runs = [line for line in commands if "-m pytest" in line]
    assert len(pytest_runs) >= 2, pytest_runs
    upgrades = [line for line in commands if "pip install" in line and "--upgrade" in line]
    assert upgrades and re.search(r"\btorch\b(?![=<>~])", upgrades[0]), "the newest torch is not installed"
    newest_venv = upgrades[0].split("/bin/pip")[0].split()[-1]
    run = re.compile(rf"^(\w*=\S*\s+)*{re.escape(newest_venv)}/bin/python -m pytest")  # VAR=value ... first
    assert any(run.match(line) for line in pytest_runs), f"no pytest run in {newest_venv}"
    assert f"{newest_venv.strip('./')}/" in (REPO / ".gitignore").read_text()


def test_readme_names_the_versions_ci_tested():
    pinned = re.search(r"torch==([\d.]+)", "\n".join(_commands())).group(1)
    development = (REPO / "README.md").read_text().split("## Development", 1)[1].split("\n## ", 1)[0]
    tested = re.search(r"Last tested: (.*?)\(Python", " ".join(development.split()))
    assert tested, "README's Development section does not say which versions were tested"
    assert f"torch {pinned}" in tested.group(1)
    assert len(re.findall(r"torch \d+\.\d+", tested.group(1))) >= 2, "newest torch version missing"

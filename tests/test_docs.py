"""The docs tell today's product: docs/design.md states the code's defaults, docs/ablation.md's index and
adopted settings hold, and the README is a user's page in the agreed order."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest
import yaml

from vc.config import Config, load_config
from vc.kinds import KINDS

REPO = Path(__file__).resolve().parents[1]
SECTIONS = tuple(f.name for f in dataclasses.fields(Config))
_SECTION = "|".join(SECTIONS)
# `section.key: value` states the package default (the key may be dotted: vocoder.griffin_lim.iters) ...
COLON = re.compile(rf"`({_SECTION})\.([\w.]+): ([^`]+)`")
# ... and so does `section.key` (default value), the value ending at a comma, semicolon or parenthesis.
DEFAULT = re.compile(rf"`({_SECTION})\.([\w.]+)` \(default:? ([^,;)]+)")
# Any backticked config key, alone or as an override (`section.key=value`), must exist.
NAMED = re.compile(rf"`({_SECTION})\.([\w.]+)(?:[=:][^`]*)?`")
FILE_SUFFIXES = {"pt", "py", "yaml", "json", "npy", "png", "tsv", "txt"}  # `postfilter.pt` is a file

# The README's sections, in this order (a heading may say more, e.g. "Train on CMU ARCTIC").
README_ORDER = (
    "Quick start",
    "Install",
    "Convert",
    "Train",
    "Commands",
    "Configuration",
    "Results",
    "Design",
    "Evaluation",
    "Development",
    "Documentation",
)
README_MAX_LINES = 300
# A row of docs/ablation.md's "Adopted settings": `section.key` | value, or value (`conf/NAME.yaml`).
ADOPTED_KEY = re.compile(rf"^\| `({_SECTION})\.([\w.]+)` \| ([^|`(]+?)(?: \(`conf/(\w+)\.yaml`\))? \|")
# ... or a recipe option: recipe: what | `--name value`.
ADOPTED_RECIPE = re.compile(r"^\| recipe: [^|]+ \| `--(\w+) ([^`]+)` \|")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def same_value(doc, code) -> bool:
    if isinstance(code, float) and isinstance(doc, (int, float)) and not isinstance(doc, bool):
        return math.isclose(code, doc)
    return doc == code


def stated_defaults(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value as written) for every default the text states."""
    return [m.groups() for m in COLON.finditer(text)] + [m.groups() for m in DEFAULT.finditer(text)]


def section_with(config: Config, section: str, key: str):
    """The config section that holds ``key`` (its last part, for a dotted one: the sub-section of the rest):
    a model key in the section of the kind that has it (each kind's own section, vc/settings/kinds.py)."""
    if section == "model":
        return next((kind.config() for kind in KINDS.values() if hasattr(kind.config, key)), config.model)
    where = getattr(config, section)
    for part in key.split(".")[:-1]:
        where = getattr(where, part, None)
    return where


def has_key(config: Config, section: str, key: str) -> bool:
    return hasattr(section_with(config, section, key), key.split(".")[-1])


def mismatches(text: str, config: Config) -> list[str]:
    """Each stated default that is not the dataclass default, as 'section.key: doc X, code Y'."""
    wrong = []
    for section, key, written in stated_defaults(text):
        if not has_key(config, section, key):
            wrong.append(f"{section}.{key}: no such key")
            continue
        code = getattr(section_with(config, section, key), key.split(".")[-1])
        if not same_value(yaml.safe_load(written.strip()), code):
            wrong.append(f"{section}.{key}: doc {written.strip()!r}, code {code!r}")
    return wrong


def headings(markdown: str, level: int = 2) -> list[str]:
    """The headings of one level, outside fenced code blocks (a '# comment' in a shell block is none)."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#" * level + " "):
            found.append(line[level + 1 :].strip())
    return found


def test_design_states_the_code_defaults():
    text = (REPO / "docs" / "design.md").read_text()
    assert len(stated_defaults(text)) >= 15, "docs/design.md states fewer defaults than it did: pattern lost?"
    assert mismatches(text, Config()) == []


def test_design_names_only_existing_config_keys():
    text = (REPO / "docs" / "design.md").read_text()
    config = Config()
    unknown = [
        f"{section}.{key}"
        for section, key in NAMED.findall(text)
        if key not in FILE_SUFFIXES and not has_key(config, section, key)
    ]
    assert unknown == []


@pytest.mark.parametrize(
    "line, wrong",
    [
        ("after warmup (`train.decay: noam`, the package default)", "train.decay"),
        ("the last `train.keep_checkpoints` (default 5) kept", "train.keep_checkpoints"),
        ("`inference.prenet_dropout: null` keeps the trained rate", "inference.prenet_dropout"),
        ("`inference.attention_sharpness` (default 1; sharper above)", "inference.attention_sharpness"),
    ],
)
def test_a_wrong_default_in_the_doc_fails(line, wrong):
    found = mismatches(line, Config())
    assert len(found) == 1 and found[0].startswith(wrong + ":"), found


def test_a_right_default_passes():
    text = (
        "`train.decay: linear`, `audio.max_duration` (default 60, seconds), `vocoder.griffin_lim.iters: 32`"
    )
    assert len(stated_defaults(text)) == 3
    assert mismatches(text, Config()) == []


def test_readme_is_a_short_page_in_the_agreed_order():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    found = headings(text)
    positions = []
    for wanted in README_ORDER:
        matches = [k for k, heading in enumerate(found) if heading.startswith(wanted)]
        assert len(matches) == 1, f"README: one '## {wanted}...' section expected, found {found}"
        positions.append(matches[0])
    assert positions == sorted(positions), f"README sections out of order: {found}"


def test_readme_points_to_the_recipe_results():
    text = (REPO / "README.md").read_text()
    assert "egs/arctic/vc1/RESULTS.md" in text
    assert (REPO / "egs" / "arctic" / "vc1" / "RESULTS.md").is_file()


def ablation_part(title: str) -> str:
    text = (REPO / "docs" / "ablation.md").read_text()
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_ablation_log_links_every_write_up_it_names():
    log = (REPO / "docs" / "ablation.md").read_text()
    archive = (REPO / "docs" / "ablation_archive.md").read_text()
    anchors = {slug(heading) for heading in headings(archive)}
    links = re.findall(r"\]\(ablation_archive\.md#([^)]+)\)", log)
    assert len(links) >= 40
    assert sorted(set(links) - anchors) == []


def test_ablation_adopted_settings_are_what_the_code_and_configs_set():
    table = [line for line in ablation_part("Adopted settings").splitlines() if line.startswith("|")]
    rows = table[2:]  # after the header and its |---| line
    recipe = (REPO / "recipes" / "vc1" / "vc.sh").read_text()
    wrong = []
    for row in rows:
        if match := ADOPTED_KEY.match(row):
            section, key, value, config_name = match.groups()
            config = load_config(config_name) if config_name else Config()
            code = getattr(config, section)
            for part in key.split("."):  # a nested section: vocoder.hifigan.precision
                code = getattr(code, part)
            if not same_value(yaml.safe_load(value.strip()), code):
                wrong.append(f"{section}.{key}: doc {value.strip()!r}, {config_name or 'code'} {code!r}")
        elif match := ADOPTED_RECIPE.match(row):
            name, value = match.groups()
            if not re.search(rf"^{name}={re.escape(value)}$", recipe, re.MULTILINE):
                wrong.append(f"--{name} {value}: not the default of recipes/vc1/vc.sh")
        else:
            wrong.append(f"row not understood: {row}")
    assert len(rows) >= 10 and wrong == []

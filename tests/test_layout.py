"""The package's floor plan: each folder one job, imports flowing downward only, no import circle.

Every `import vc...` / `from vc... import` in vc/, at the top of a module or inside a
function, is an edge of the module graph. A module may import only from its own layer's
folder or a lower layer (cli -> training -> evaluation -> inference -> kinds, vocoders -> artifacts ->
model / audio -> the base modules), and the graph has no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "vc"
# Lower number = lower layer. A module's layer is that of its longest matching prefix.
LAYERS = {
    "vc.errors": 0, "vc.settings": 0, "vc.config": 0, "vc.fileio": 0, "vc.progress": 0, "vc.quiet": 0,
    "vc.pairs": 0, "vc.plotting": 0, "vc.masks": 0, "vc.parallel": 0, "vc.cores": 0, "vc.packages": 0,
    "vc.audio": 1, "vc.model": 1,
    "vc.artifacts": 2,
    "vc.kinds": 3, "vc.vocoders": 3,
    "vc.inference": 4,
    "vc.evaluation": 5,
    "vc.training": 6, "vc.listening": 6, "vc.serving": 6,
    "vc.cli": 7, "vc.__main__": 8,
}  # fmt: skip


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in ROOT.rglob("*.py")}


def imports(path: Path, known: set[str]) -> set[str]:
    """The vc modules a file imports anywhere in it (a `from pkg import name` of a submodule counts as it)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("vc")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vc"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known}
    return {name for name in found if name in known}


def graph() -> dict[str, set[str]]:
    found = modules()
    edges = {}
    for name, path in found.items():
        # The root package's lazy attributes (vc.Converter) and a module's own parent packages are
        # not dependencies: Python runs a parent package's __init__ before any submodule.
        parents = {name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)}
        edges[name] = {m for m in imports(path, set(found)) if m != "vc" and m not in parents and m != name}
    return edges


def layer(name: str) -> int:
    matches = [prefix for prefix in LAYERS if name == prefix or name.startswith(prefix + ".")]
    if not matches:
        pytest.fail(f"{name} has no layer in tests/test_layout.py: give its folder one")
    return LAYERS[max(matches, key=len)]


def test_every_module_has_a_layer_and_imports_only_downward():
    upward = [
        f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
        for module, targets in graph().items()
        if module != "vc"
        for target in targets
        if layer(target) > layer(module)
    ]
    assert not upward, "\n".join(upward)


def test_no_module_imports_another_that_imports_it_back():
    edges = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                cycles.append(" -> ".join(path[path.index(target) :] + [node, target]))
            elif target not in state:
                visit(target, path + [node])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(cycles)


def test_a_config_reads_from_a_source_checkout_without_installing_or_torch(tmp_path):
    """Config() and load_config in a fresh interpreter that sees this checkout and PyYAML alone: no
    installed package (no metadata, no entry point), no torch. Every section, the kinds' too, is known to
    the config floor (vc/settings/), not found by importing a model."""
    import subprocess
    import sys

    import yaml

    root = Path(__file__).resolve().parents[1]
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "yaml").symlink_to(Path(yaml.__file__).parent)
    student = root / "egs" / "arctic" / "vc1" / "conf" / "student.yaml"
    code = (
        f"import sys; sys.path[:0] = [{str(root)!r}, {str(lib)!r}]\n"
        "from vc.config import Config, load_config\n"
        f"print(type(Config().model).__name__, type(load_config({str(student)!r}).model).__name__)\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )  # -S: no site-packages, so neither an installed vc nor torch can be found
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["AttentionConfig", "NonAutoregressiveConfig", "False"]


def test_the_graph_sees_function_level_imports():
    """A lazy import inside a function is an edge too (the old inference -> mel2linear -> inference circle)."""
    edges = graph()
    assert "vc.inference.converter" in edges["vc.inference.teacher_forcing"]
    assert "vc.training.trainer" in edges["vc.cli.train"]  # imported inside its handler

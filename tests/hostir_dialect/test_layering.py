"""The layers import one way only (docs/architecture.md): hostir_dialect <- passes <-
runtime <- hostir. Every module of a layer is parsed, and an import of a higher layer
fails the test, at the top level or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HIGHER_LAYERS = {
    "hostir_dialect": {"passes", "runtime", "hostir"},
    "passes": {"runtime", "hostir"},
    "runtime": {"hostir"},
}


def imported_packages(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import in the module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


@pytest.mark.parametrize("layer", sorted(HIGHER_LAYERS))
def test_a_layer_imports_no_higher_layer(layer: str) -> None:
    modules = sorted((ROOT / layer).glob("*.py"))
    assert modules, f"no modules found under {layer}/"
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {package}"
        for path in modules
        for line, package in imported_packages(path)
        if package in HIGHER_LAYERS[layer]
    ]
    assert upward == []


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from runtime import execute\n    import passes.opt\n")
    assert imported_packages(module) == [(2, "runtime"), (3, "passes")]

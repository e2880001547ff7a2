"""The layers import one way only (docs/architecture.md): hostir_dialect <- passes <-
runtime <- hostir. Every module of a layer's folder, subfolders included, is parsed, and
an import of a higher layer fails the test, at the top level or inside a function.

The folders `passes/` and `runtime/` install as `hostir.passes` and `hostir.runtime`; the
rest of `hostir` is the top layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ORDER = ("hostir_dialect", "passes", "runtime", "hostir")
"""Layers from the bottom up, named by their folder."""


def layer_of_import(module: str) -> str | None:
    """The layer an absolute import names (None: not one of hostir's)."""
    parts = module.split(".")
    if parts[0] == "hostir":
        return parts[1] if len(parts) > 1 and parts[1] in ("passes", "runtime") else "hostir"
    return parts[0] if parts[0] == "hostir_dialect" else None


def imported_layers(path: Path) -> list[tuple[int, str]]:
    """(line, layer) of every absolute import of one of hostir's layers in the module;
    `from hostir import passes` names the layer it imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, layer_of_import(alias.name)) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "hostir":
                found += [(node.lineno, layer_of_import(f"hostir.{alias.name}")) for alias in node.names]
            else:
                found.append((node.lineno, layer_of_import(node.module)))
    return [(line, layer) for line, layer in found if layer is not None]


@pytest.mark.parametrize("layer", ORDER[:-1])
def test_a_layer_imports_no_higher_layer(layer: str) -> None:
    modules = sorted((ROOT / layer).rglob("*.py"))
    assert modules, f"no modules found under {layer}/"
    higher = set(ORDER[ORDER.index(layer) + 1:])
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {imported}"
        for path in modules
        for line, imported in imported_layers(path)
        if imported in higher
    ]
    assert upward == []


def test_subfolders_are_checked_too() -> None:
    assert ROOT / "runtime" / "compile" / "context.py" in set((ROOT / "runtime").rglob("*.py"))


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from hostir.runtime import execute\n    import hostir.passes.opt\n"
                      "    from hostir import runtime, FusionDefinition\n    import torch\n")
    assert imported_layers(module) == [(2, "runtime"), (3, "passes"), (4, "runtime"), (4, "hostir")]

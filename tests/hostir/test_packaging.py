"""What installing hostir adds to an environment: two import names, no generic ones."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import distribution


def test_the_distribution_claims_only_hostir_and_hostir_dialect():
    top_level = distribution("hostir").read_text("top_level.txt")
    assert top_level is not None and sorted(top_level.split()) == ["hostir", "hostir_dialect"]


def test_the_compiler_and_runtime_are_subpackages_of_hostir():
    from hostir import passes, runtime

    assert passes.__name__ == "hostir.passes" and runtime.__name__ == "hostir.runtime"
    assert callable(passes.lower) and callable(runtime.run_spmd)


def test_importing_the_passes_loads_neither_the_runtime_nor_torch():
    """hostir-opt imports hostir.passes; hostir/__init__ must not drag the runtime in."""
    code = "import sys, hostir.passes.opt; print(sorted(m for m in ('torch', 'hostir.runtime') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_no_module_imports_the_folders_by_their_folder_names():
    """From the checkout, `passes` and `runtime` would import as top-level packages too: a
    second copy of every class. Nothing may import them so."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = []
    for path in root.rglob("*.py"):
        if ".venv" in path.parts or "build" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            found += [f"{path.relative_to(root)}:{node.lineno}" for n in names if n.split(".")[0] in ("passes", "runtime")]
    assert found == []

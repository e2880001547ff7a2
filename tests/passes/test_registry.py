"""The registry and the package's modules import one way: the package (`hostir.passes`)
reads the registry and the pipeline machinery, which read the registry; no module of the
package imports a name from the package itself (which worked only by statement order),
and no pass imports another pass (what two passes share is a module of its own)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from hostir.passes import get_all_passes

PASSES = Path(__file__).resolve().parents[2] / "passes"
SUBMODULES = {path.stem for path in PASSES.glob("*.py")} | {path.name for path in PASSES.iterdir() if path.is_dir()}
PASS_MODULES = {name.replace("-", "_") for name in get_all_passes()}


def package_imports(path: Path) -> list[tuple[int, str]]:
    """(line, name) of everything `path` imports from the package `hostir.passes`: a
    submodule's name, or a name the package defines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            relative = node.level == 1 and node.module is not None
            absolute = node.level == 0 and node.module is not None and node.module.startswith("hostir.passes.")
            if relative or absolute:
                found.append((node.lineno, node.module.removeprefix("hostir.passes.")))
            elif (node.level == 1 and node.module is None) or node.module == "hostir.passes":
                found += [(node.lineno, alias.name) for alias in node.names]
    return found


def test_every_pass_module_exists() -> None:
    assert PASS_MODULES <= SUBMODULES


def test_no_module_imports_a_name_from_the_package_itself() -> None:
    from_package = [
        f"{path.name}:{line} imports {name!r} from the package"
        for path in sorted(PASSES.glob("*.py"))
        for line, name in package_imports(path)
        if name.split(".")[0] not in SUBMODULES
    ]
    assert from_package == []


def test_no_pass_imports_another_pass() -> None:
    between_passes = [
        f"{path.name}:{line} imports the pass {name}"
        for path in sorted(PASSES.glob("*.py"))
        if path.stem in PASS_MODULES
        for line, name in package_imports(path)
        if name.split(".")[0] in PASS_MODULES - {path.stem}
    ]
    assert between_passes == []


def test_the_check_sees_both_kinds_of_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from . import PIPELINES\nfrom .lower_to_host import LowerToHost\n"
                      "from hostir.passes import cost_model\nfrom hostir.passes.split_by_member import x\n")
    assert package_imports(module) == [(1, "PIPELINES"), (2, "lower_to_host"), (3, "cost_model"), (4, "split_by_member")]


def test_the_pipeline_machinery_imports_first_in_a_fresh_interpreter() -> None:
    for module in ("hostir.passes.pipeline", "hostir.passes.registry", "hostir.passes.opt"):
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True, timeout=120)

"""The linter (ruff) and the type checker (mypy) pass, with the settings of pyproject.toml;
both come with the test extra (`pip install -e '.[test]'`), so the README's test command,
which CI runs, runs them.

mypy reads modules from the folders of their import names, and `hostir.passes` and
`hostir.runtime` live in `passes/` and `runtime/` (`package-dir`): it checks a tree of
links laid out as the installed packages are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    checked = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def installed_layout(tree: Path) -> Path:
    """Links to hostir's folders under `tree`, as the packages are installed."""
    (tree / "hostir").mkdir(parents=True)
    for module in (ROOT / "hostir").glob("*.py"):
        (tree / "hostir" / module.name).symlink_to(module)
    (tree / "hostir" / "passes").symlink_to(ROOT / "passes")
    (tree / "hostir" / "runtime").symlink_to(ROOT / "runtime")
    (tree / "hostir_dialect").symlink_to(ROOT / "hostir_dialect")
    return tree


def test_mypy_finds_nothing(tmp_path: Path) -> None:
    tree = installed_layout(tmp_path / "tree")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
         str(tmp_path / "cache"), "-p", "hostir", "-p", "hostir_dialect"],
        cwd=tree, capture_output=True, text=True, timeout=600,
    )
    assert checked.returncode == 0, checked.stdout[-6000:] + checked.stderr

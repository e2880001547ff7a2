"""hostir's transformations; `lower` runs the default pipeline from Python."""

from __future__ import annotations

import importlib.util

from xdsl.dialects.builtin import ModuleOp

from .pass_manager import PassManagerOptions, PassRun, run_passes
from .registry import PIPELINES, pass_class


def lower(module: ModuleOp, options: PassManagerOptions | None = None) -> ModuleOp:
    """Run the `hostir-lower` pipeline on `module` in place (and return it)."""
    from hostir_dialect.context import make_context

    run_passes(make_context(), module, _pipeline_passes("hostir-lower"), options or PassManagerOptions())
    return module


def _pipeline_passes(pipeline: str) -> list:
    # TODO(lead): drop the availability filter once every pass of the pipeline is
    # committed; until then a missing pass module is skipped rather than failing the import.
    names = [n for n in PIPELINES[pipeline] if importlib.util.find_spec(f"passes.{n.replace('-', '_')}")]
    return [pass_class(name)() for name in names]


__all__ = ["PassManagerOptions", "PassRun", "lower"]

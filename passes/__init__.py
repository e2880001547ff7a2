"""hostir's passes, registered the way xDSL registers its own (xdsl/transforms/__init__.py).

`get_all_passes()` maps each pass's CLI name to a loader that imports the pass's module
only when called, so `hostir-opt` starts fast; `PIPELINES` names sequences of passes
(both in `registry.py`); `lower()` runs `hostir-lower` from Python. A pass is a
frozen-dataclass `ModulePass` in `passes/<name_in_snake_case>.py` whose `name` is its
CLI name and whose docstring's first line is its `hostir-opt --help` description
(docs/architecture.md).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from hostir_dialect.context import make_context

from .pipeline import PassManagerOptions, PassRun, build_passes, build_pipeline, run_passes
from .registry import PIPELINE_DEFAULTS, PIPELINES, get_all_passes


def lower(module: ModuleOp, options: PassManagerOptions | None = None, pipeline: str = "hostir-lower") -> ModuleOp:
    """Run `pipeline` (default: `hostir-lower`; e.g. `hostir-lower{transport=auto}`) on
    `module` in place (and return it); `options` disable passes, dump IR after passes,
    time them (see PassManagerOptions)."""
    run_passes(make_context(), module, build_passes(pipeline), options or PassManagerOptions())
    return module


__all__ = [
    "PIPELINES",
    "PIPELINE_DEFAULTS",
    "PassManagerOptions",
    "PassRun",
    "build_passes",
    "build_pipeline",
    "get_all_passes",
    "lower",
    "run_passes",
]

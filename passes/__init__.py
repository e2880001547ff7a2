"""hostir's transformations; `lower` runs the default pipeline from Python."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from .pass_manager import PassManagerOptions, PassRun, build_passes, run_passes


def lower(module: ModuleOp, options: PassManagerOptions | None = None) -> ModuleOp:
    """Run the `hostir-lower` pipeline on `module` in place (and return it); `options`
    disable passes, dump IR after passes, time them (see PassManagerOptions)."""
    from hostir_dialect.context import make_context

    run_passes(make_context(), module, build_passes("hostir-lower"), options or PassManagerOptions())
    return module


__all__ = ["PassManagerOptions", "PassRun", "lower"]

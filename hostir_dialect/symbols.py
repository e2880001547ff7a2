"""Queries on the functions of a module, written once for the passes and the runtime.

A module holds `fusion.func`s and `hir.program`s at its top level. A `fusion.func` that a
`hir.post_on_stream` calls is a *kernel unit* of a host program (lower-to-host outlined
it); every other `fusion.func` is a *user fusion*, still to be lowered.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from .functions import FunctionLikeOp
from .fusion import FuncOp
from .hir import PostOnStreamOp, ProgramOp


def functions(module: ModuleOp) -> list[FunctionLikeOp]:
    """The module's `fusion.func`s and `hir.program`s, in order."""
    return [op for op in module.ops if isinstance(op, FunctionLikeOp)]


def programs(module: ModuleOp) -> list[ProgramOp]:
    return [op for op in module.ops if isinstance(op, ProgramOp)]


def kernel_unit_names(module: ModuleOp) -> set[str]:
    """Names of the `fusion.func`s some `hir.post_on_stream` calls."""
    return {op.callee_name() for op in module.walk() if isinstance(op, PostOnStreamOp)}


def user_fusions(module: ModuleOp) -> list[FuncOp]:
    """The `fusion.func`s that are not kernel units, in order."""
    units = kernel_unit_names(module)
    return [op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data not in units]


def lookup(module: ModuleOp, name: str) -> FunctionLikeOp | None:
    """The `fusion.func` or `hir.program` named `name` (without `@`), if any."""
    return next((op for op in functions(module) if op.sym_name.data == name), None)

"""The evaluator's compiler: a function body into one generated Python function, whose
lines are the ops' torch calls on local variables (runtime/evaluator.py gives the binding
rules), one module per group of ops:

- `fusion_compute`: compute ops and `hir.post_on_stream` units;
- `hir_buffers`: allocate, deallocate, views, extents and streams;
- `hir_communication`: collectives, send/recv, waits;
- `control_flow`: scf and arith;

and `context`: the compile context (what every handler may know about the program and
this rank), the function compiler and the emitters they share. A new op's handler goes
into its group's module and that module's `HANDLERS`.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from hostir_dialect import hir
from hostir_dialect.functions import FunctionLikeOp

from . import control_flow, fusion_compute, hir_buffers, hir_communication
from .context import (
    DEFAULT_NUMBER_OF_STREAMS,
    MAX_NUMBER_OF_STREAMS,
    CompileContext,
    CompiledFunction,
    ExecutionError,
    FunctionCompiler,
)

HANDLERS = {**fusion_compute.HANDLERS, **hir_buffers.HANDLERS, **hir_communication.HANDLERS, **control_flow.HANDLERS}


def compile_function(context: CompileContext, function: FunctionLikeOp,
                     may_view: Callable[[SSAValue], bool]) -> CompiledFunction:
    """`function` as one Python function; a host program takes result buffers (see
    `FunctionCompiler.function`)."""
    return FunctionCompiler(context, HANDLERS, may_view).function(function, result_buffers=isinstance(function, hir.ProgramOp))


__all__ = [
    "DEFAULT_NUMBER_OF_STREAMS", "MAX_NUMBER_OF_STREAMS", "HANDLERS", "CompileContext", "CompiledFunction", "ExecutionError", "compile_function",
]

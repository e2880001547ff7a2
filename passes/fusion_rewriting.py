"""What the sharding passes share: which `fusion.func`s they work on, and changing the
type of values in one while keeping it verifying.

Sharding passes change only parallelization, allocation and mesh, which compute ops'
verifiers do not look at; what must follow is the function's signature when an argument
or a returned value changes (`FunctionLikeOp.update_function_type()`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from hostir_dialect import hir
from hostir_dialect.fusion import FuncOp
from hostir_dialect.tensor_type import TensorType


def retype(value: SSAValue, new_type: TensorType) -> SSAValue:
    """`value` with `new_type` (a new SSA value replacing it everywhere), or itself."""
    if value.type == new_type:
        return value
    return Rewriter.replace_value_with_new_type(value, new_type)


def user_fusions(module: ModuleOp) -> list[FuncOp]:
    """The user's fusions: every `fusion.func` except the kernel units a host program
    calls with `hir.post_on_stream` (those were lowered already)."""
    units = {op.callee_name() for op in module.walk() if isinstance(op, hir.PostOnStreamOp)}
    return [op for op in module.walk() if isinstance(op, FuncOp) and op.sym_name.data not in units]


def tensors(func: FuncOp) -> list[tuple[SSAValue, Operation]]:
    """Every tensor value of `func` with the op to report it at (the func for arguments)."""
    found: list[tuple[SSAValue, Operation]] = [(a, func) for a in func.body.block.args]
    for op in func.body.block.ops:
        found.extend((r, op) for r in op.results)
    return [(v, op) for v, op in found if isinstance(v.type, TensorType)]

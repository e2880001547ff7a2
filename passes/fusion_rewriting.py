"""What the sharding passes share: the tensors of a `fusion.func`, and changing the type
of values in one while keeping it verifying.

Sharding passes change only parallelization, allocation and mesh, which compute ops'
verifiers do not look at; what must follow is the function's signature when an argument
or a returned value changes (`FunctionLikeOp.update_function_type()`).
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from hostir_dialect.fusion import FuncOp
from hostir_dialect.tensor_type import TensorType


def retype(value: SSAValue, new_type: TensorType) -> SSAValue:
    """`value` with `new_type` (a new SSA value replacing it everywhere), or itself."""
    if value.type == new_type:
        return value
    return Rewriter.replace_value_with_new_type(value, new_type)


def tensors(func: FuncOp) -> list[tuple[SSAValue, Operation]]:
    """Every tensor value of `func` with the op to report it at (the func for arguments)."""
    found: list[tuple[SSAValue, Operation]] = [(a, func) for a in func.body.block.args]
    for op in func.body.block.ops:
        found.extend((r, op) for r in op.results)
    return [(v, op) for v, op in found if isinstance(v.type, TensorType)]

"""Changing the type of values in a `fusion.func` while keeping it verifying.

Sharding passes change only parallelization, allocation and mesh, which compute ops'
verifiers do not look at; what must follow is the function's signature when an argument
or a returned value changes.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FunctionType
from xdsl.ir import SSAValue
from xdsl.rewriter import Rewriter

from hostir_dialect.fusion import FunctionLikeOp
from hostir_dialect.tensor_type import TensorType


def retype(value: SSAValue, new_type: TensorType) -> SSAValue:
    """`value` with `new_type` (a new SSA value replacing it everywhere), or itself."""
    if value.type == new_type:
        return value
    return Rewriter.replace_value_with_new_type(value, new_type)


def sync_function_type(func: FunctionLikeOp) -> None:
    """Make `function_type` match the entry block's arguments and the returned values."""
    block = func.body.block
    terminator = block.last_op
    assert terminator is not None
    new = FunctionType.from_lists(block.arg_types, [v.type for v in terminator.operands])
    if new != func.function_type:
        func.properties["function_type"] = new

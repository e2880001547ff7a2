"""Chunks of a tensor along one axis, as the passes that build loops over chunks take
them (stream-parallel-type, split-by-member)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from hostir_dialect import fusion
from hostir_dialect.tensor_type import TensorType


def operand_axis(op: fusion.ComputeOp, operand: SSAValue, axis: int) -> int | None:
    """The logical axis of `operand` that `op` maps to its result axis `axis`, if any
    (the axis maps of stream-sliceable ops are one-to-one)."""
    return next((a for a, target in op.axis_map(operand).items() if target == axis), None)


def sliced_type(t: TensorType, axis: int) -> TensorType:
    """`t` without logical axis `axis` (a chunk's type); mesh and parallel types kept."""
    order = tuple(i - (i > axis) for i in t.allocation_order() if i != axis)
    return t.with_(axes=t.axes[:axis] + t.axes[axis + 1 :], alloc_order=order, stream_allocated=False)

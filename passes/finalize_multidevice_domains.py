"""finalize-multidevice-domains: decide how each tensor of a fusion is allocated
(nvFuser's FinalizeMultideviceDomainsPass, csrc/preseg_passes/finalize_multidevice_domains.cpp,
after PR #5353).

Device-parallel pieces are always sharded in the allocation: the tensor type makes
that implicit. The Stream piece is allocated one chunk at a time (`alloc=[0 stream,
..]`) only for a tensor that is neither a fusion input nor output -- those are
allocated by the caller -- and whose every consumer's result has the same Stream
sharding, so that producer and consumers run in one stream loop and no iteration needs
another iteration's chunk. Every other tensor is allocated whole.

Precondition, reported at the op: all tensors of a fusion have a device mesh or none
do. (nvFuser also rejects any allocation order on a resharding op, its
MakeReshardingContiguous check, which has no counterpart here: reorder-sharded-axis,
which runs before, lays out the buffers collectives need, and convert-op-to-communication
checks that layout contract where it applies, `sharding_policy.layout_problem`.)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from hostir_dialect.diagnostics import op_error
from hostir_dialect.fusion import ComputeOp, FuncOp, ReturnOp
from hostir_dialect.sharding import have_different_shardings
from hostir_dialect.symbols import fusions_to_lower
from hostir_dialect.tensor_type import ParallelKind, tensor_type

from .fusion_rewriting import retype, tensors


def check_meshes(func: FuncOp) -> None:
    values = tensors(func)
    with_mesh = [tensor_type(v).mesh is not None for v, _ in values]
    if any(with_mesh) and not all(with_mesh):
        value, op = values[with_mesh.index(False)]
        where = f"argument {value.index}" if op is func else "its result"  # type: ignore[attr-defined]  # the func's values are block arguments
        raise op_error(op, f"Cannot have some tensors with a device mesh and some without ({where} has none)")


def allocated_per_stream_chunk(value: SSAValue) -> bool:
    """nvFuser #5353: not a fusion input or output, and every consumer keeps the Stream axis."""
    t = tensor_type(value)
    if t.stream_axis() is None or not isinstance(value.owner, Operation):
        return False
    for use in value.uses:
        consumer = use.operation
        if isinstance(consumer, ReturnOp):
            return False
        assert isinstance(consumer, ComputeOp)
        if have_different_shardings(t, tensor_type(consumer.result), consumer.axis_map(value), types=[ParallelKind.STREAM]):
            return False
    return True


def finalize(func: FuncOp) -> None:
    check_meshes(func)
    decisions = [(v, allocated_per_stream_chunk(v)) for v, _ in tensors(func)]
    for value, per_chunk in decisions:
        retype(value, tensor_type(value).with_(stream_allocated=per_chunk))
    func.update_function_type()


@dataclass(frozen=True)
class FinalizeMultideviceDomains(ModulePass):
    """Decide how each tensor of a user fusion is allocated: whole, or one stream chunk at a time."""

    name = "finalize-multidevice-domains"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in fusions_to_lower(op):
            finalize(func)

"""The sharding policy of the passes: how propagate-shardings and decompose-reshardings
give tensors a sharding, and what one communication can do (decompose-reshardings,
convert-op-to-communication). nvFuser: csrc/preseg_passes/propagate_shardings.cpp,
csrc/preseg_passes/decompose_reshardings.cpp, csrc/host_ir/lower_to_communication.cpp.
The queries the runtime needs too (placement, is_resharding, communicates) are in
hostir_dialect/sharding.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.ir import Operation, SSAValue

from hostir_dialect.fusion import ComputeOp, ReduceOp, SetOp
from hostir_dialect.sharding import have_different_shardings, is_resharding, placement, reduces_sharded_axis
from hostir_dialect.tensor_type import DEVICE_KINDS, DYNAMIC, Axis, ParallelKind, Piece, TensorType, tensor_type


def is_inner_split(axis: Axis, parallel: ParallelKind) -> bool:
    """Parallelized on a piece that is not the outermost one (nvFuser rejects these)."""
    return any(p.parallel == parallel for p in axis.pieces[1:])


# --------------------------------------------------------------------------- #
# Propagation (propagate-shardings, decompose-reshardings)
# --------------------------------------------------------------------------- #

PROPAGATED_TYPES = (ParallelKind.DIDX, ParallelKind.DIDY, ParallelKind.STREAM)


class ShardingError(Exception):
    """A sharding that cannot be propagated or lowered; passes report it at the op."""


def is_annotated(t: TensorType) -> bool:
    """Carries a device mesh or a parallelized piece: a sharding the user chose."""
    return t.mesh is not None or any(axis.parallel_types() for axis in t.axes)


def forward_axis_map(op: ComputeOp, operand: SSAValue) -> dict[int, int]:
    """`op.axis_map(operand)` restricted to axes that can carry an outer split onto
    their target: when several operand axes merge into one result axis (reshape), only
    the outermost of them does."""
    outermost: dict[int, int] = {}
    for source, target in sorted(op.axis_map(operand).items()):
        outermost.setdefault(target, source)
    return {source: target for target, source in outermost.items()}


def backward_axis_map(op: ComputeOp, operand: SSAValue) -> dict[int, int]:
    """Result axis -> the (outermost) operand axis that becomes it."""
    return {target: source for source, target in forward_axis_map(op, operand).items()}


def propagate_parallel_types(
    reference: TensorType, target: TensorType, axis_map: dict[int, int], types: Iterable[ParallelKind]
) -> TensorType:
    """`target` with the reference's mesh (if it has none) and each parallel type of
    `types` it lacks, replayed as an outer split of the axis `axis_map` maps the
    reference's parallel axis to. A device type moves only to a mesh with the same
    number of devices along it; target axes already split or parallelized, and
    broadcast axes, are left alone."""
    if target.mesh is None and reference.mesh is not None:
        target = target.with_(mesh=reference.mesh)
    for parallel in types:
        if placement(target, parallel, include_reduction=True) is not None:
            continue
        source = placement(reference, parallel, include_reduction=True)
        if source is None or source.axis not in axis_map:
            continue
        if parallel.is_device and not _same_device_axis(reference, target, parallel):
            continue
        if source.outer_factors:
            raise ShardingError("inner split for device or stream parallelization is not supported")
        index = axis_map[source.axis]
        axis = target.axes[index]
        if axis.is_broadcast or axis.is_split or axis.parallel_types():
            continue
        pieces = _outer_split(reference.axes[source.axis], source.extent, axis, index, parallel)
        axes = list(target.axes)
        axes[index] = Axis(axis.extent, axis.kind, pieces)
        target = target.with_(axes=tuple(axes))
    return target


def _same_device_axis(reference: TensorType, target: TensorType, parallel: ParallelKind) -> bool:
    if reference.mesh is None or target.mesh is None or target.mesh.axis_of(parallel) is None:
        return False
    return reference.mesh.axis_size(parallel) == target.mesh.axis_size(parallel)


def _outer_split(source: Axis, factor: int, axis: Axis, index: int, parallel: ParallelKind) -> tuple[Piece, ...]:
    if not source.is_split and source.extent == axis.extent:
        return (Piece(axis.extent, parallel),)
    if axis.extent != DYNAMIC and (factor == DYNAMIC or axis.extent % factor):
        shown = "?" if factor == DYNAMIC else factor
        raise ShardingError(f"split factor {shown} does not divide extent {axis.extent} of axis {index}")
    if factor == axis.extent:
        return (Piece(axis.extent, parallel),)
    inner = DYNAMIC if axis.extent == DYNAMIC else axis.extent // factor
    return Piece(factor, parallel), Piece(inner)


# --------------------------------------------------------------------------- #
# What one communication can do (decompose-reshardings, convert-op-to-communication)
# --------------------------------------------------------------------------- #


def sharding_changes(
    producer: TensorType, consumer: TensorType, axis_map: dict[int, int], types: Iterable[ParallelKind] = DEVICE_KINDS
) -> list[ParallelKind]:
    """The parallel types whose placement differs between producer and consumer. A mesh
    change counts only for the types either side is parallelized on: moving a tensor
    sharded on DIDx to another mesh changes DIDx alone, a replicated one changes none."""
    return [
        t for t in types
        if have_different_shardings(producer, consumer, axis_map, (t,))
        and (placement(producer, t) is not None or placement(consumer, t, include_reduction=True) is not None)
    ]


def device_parallel_reduced_axes(op: ReduceOp) -> list[int]:
    """Reduced input axes (value positions) that carry a device-parallel piece."""
    axes = tensor_type(op.input).value_axes()
    return [d for d in op.reduced_axes() if axes[d].parallel_types() & set(DEVICE_KINDS)]


def communication_problem(op: Operation) -> str | None:
    """Why the resharding `op` is not exactly one communication (None if it is, or if
    it does not reshard): a `fusion.set`, or a `fusion.reduce` of exactly one axis that
    is device-parallel as a whole in its input, changing at most one parallel type."""
    if reduces_sharded_axis(op):
        return "its result keeps a device-parallel reduction axis (a partial result per device)"
    if not is_resharding(op):
        return None
    assert isinstance(op, ComputeOp)
    if len(op.tensor_inputs()) != 1:
        return "it has several tensor inputs"
    if not isinstance(op, SetOp | ReduceOp):
        return f"{op.name} computes as well as reshards"
    (source,) = op.tensor_inputs()
    changed = sharding_changes(tensor_type(source), tensor_type(op.result), op.axis_map(source))
    if len(changed) > 1:
        return f"it changes more than one parallel type ({', '.join(changed)})"
    if isinstance(op, ReduceOp):
        sharded = device_parallel_reduced_axes(op)
        if len(op.reduced_axes()) != 1 or len(sharded) != 1:
            return "a resharding reduction must reduce exactly one axis, a device-parallel one"
        axis = tensor_type(source).value_axes()[sharded[0]]
        if axis.is_split:
            return "the reduced device-parallel axis is split; reduce its device piece alone"
    return None

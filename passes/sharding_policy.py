"""The sharding policy of the passes: how propagate-shardings and decompose-reshardings
give tensors a sharding, and what one communication can do (decompose-reshardings,
convert-op-to-communication). nvFuser: csrc/preseg_passes/propagate_shardings.cpp,
csrc/preseg_passes/decompose_reshardings.cpp, csrc/host_ir/lower_to_communication.cpp.
The queries the runtime needs too (placement, is_resharding, communicates) are in
hostir_dialect/sharding.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from hostir_dialect import hir
from hostir_dialect.fusion import AxesReduction, ComputeOp, ReduceOp, SetOp, ShapeTable
from hostir_dialect.sharding import communicates, have_different_shardings, is_resharding, placement, reduces_sharded_axis
from hostir_dialect.tensor_type import DEVICE_KINDS, DYNAMIC, Axis, Mesh, ParallelKind, Piece, TensorType, tensor_type


def is_inner_split(axis: Axis, parallel: ParallelKind) -> bool:
    """Parallelized on a piece that is not the outermost one (nvFuser rejects these)."""
    return any(p.parallel == parallel for p in axis.pieces[1:])


def unlowerable_inner_split(op: SetOp | ReduceOp) -> tuple[int, ParallelKind, TensorType] | None:
    """The first (axis, device type, tensor) of `op`'s input or result with the type on an
    inner piece that no collective carries: every one but those of a set within one mesh
    behind device pieces both sides share (`_behind_shared_device_pieces`)."""
    source, target = tensor_type(op.input), tensor_type(op.result)
    within_mesh = isinstance(op, SetOp) and source.mesh == target.mesh
    for t, other in ((source, target), (target, source)):
        for index, axis in enumerate(t.axes):
            for parallel in DEVICE_KINDS:
                if is_inner_split(axis, parallel) and not (
                        within_mesh and _behind_shared_device_pieces(axis, other.axes[index], parallel)):
                    return index, parallel, t
    return None


def _behind_shared_device_pieces(axis: Axis, other: Axis, parallel: ParallelKind) -> bool:
    """Is `parallel`'s piece of `axis` behind device pieces only, which `other` (the same
    axis on the set's other side) has in front too (`E(2 didx, 2 didy, 2)` and `E(2 didx, 4)`)?
    Then each device's part is a block of the shared pieces' block, the same on both sides,
    and `parallel`'s team moves the parts within it as if the axis were that block alone."""
    position = next(i for i, piece in enumerate(axis.pieces) if piece.parallel == parallel)
    return position <= shared_device_pieces(axis, other)


def device_piece_run(axis: Axis) -> int:
    """How many pieces in front of `axis` are device-parallel (0 for a whole device axis:
    its one piece has nothing behind it)."""
    if not axis.is_split:
        return 0
    return next((i for i, p in enumerate(axis.pieces) if not p.parallel.is_device), len(axis.pieces))


def shared_device_pieces(a: Axis, b: Axis) -> int:
    """How many device pieces in front `a` and `b` have alike."""
    run = min(device_piece_run(a), device_piece_run(b))
    return next((i for i in range(run) if a.pieces[i] != b.pieces[i]), run)


# --------------------------------------------------------------------------- #
# Propagation (propagate-shardings, decompose-reshardings)
# --------------------------------------------------------------------------- #

PROPAGATED_TYPES = (*DEVICE_KINDS, ParallelKind.STREAM)


class ShardingError(Exception):
    """A sharding that cannot be propagated or lowered; passes report it at the op."""


def is_annotated(t: TensorType) -> bool:
    """Carries a device mesh or a parallelized piece: a sharding the user chose."""
    return t.mesh is not None or any(axis.parallel_types() for axis in t.axes)


def forward_axis_map(op: ComputeOp, operand: SSAValue) -> dict[int, int]:
    """`op.sharding_axis_map(operand)` restricted to axes that can carry an outer split
    onto their target: when several operand axes merge into one result axis (reshape),
    only the outermost of them does."""
    outermost: dict[int, int] = {}
    for source, target in sorted(op.sharding_axis_map(operand).items()):
        outermost.setdefault(target, source)
    return {source: target for target, source in outermost.items()}


def backward_axis_map(op: ComputeOp, operand: SSAValue) -> dict[int, int]:
    """Result axis -> the (outermost) operand axis that becomes it."""
    return {target: source for source, target in forward_axis_map(op, operand).items()}


INNER_SPLIT = "inner split for device or stream parallelization is not supported"


def propagate_parallel_types(
    reference: TensorType, target: TensorType, axis_map: dict[int, int], types: Iterable[ParallelKind]
) -> TensorType:
    """`target` with the reference's mesh (if it has none) and each parallel type of
    `types` it lacks, replayed as an outer split of the axis `axis_map` maps the
    reference's parallel axis to. A device type moves only to a mesh with the same
    number of devices along it; target axes already split or parallelized, and
    broadcast axes, are left alone. A device type the target has on a reduction axis
    only (a partial result per device) is not one it has, as in nvFuser: it moves to the
    iteration axis, and the reduction across devices then scatters that axis (a
    reduce-scatter instead of an all-reduce)."""
    if target.mesh is None and reference.mesh is not None:
        target = target.with_(mesh=reference.mesh)
    for parallel in types:
        if placement(target, parallel) is not None:
            continue
        source = placement(reference, parallel, include_reduction=True)
        if source is None or source.axis not in axis_map:
            continue
        if parallel.is_device and not same_device_axis(reference, target, parallel):
            continue
        if source.outer_factors:
            raise ShardingError(INNER_SPLIT)
        index = axis_map[source.axis]
        axis = target.axes[index]
        if axis.is_broadcast or axis.is_split or axis.parallel_types():
            continue
        factor = source.extent
        if factor == DYNAMIC and parallel.is_device:  # a whole dynamic device axis: one element per device
            factor = reference.mesh.axis_size(parallel)  # type: ignore[union-attr]  # same_device_axis saw it
        pieces = _outer_split(reference.axes[source.axis], factor, axis, index, parallel)
        axes = [a.unparallelized() if a.is_reduction and parallel in a.parallel_types() else a for a in target.axes]
        axes[index] = Axis(axis.extent, axis.kind, pieces)
        target = target.with_(axes=tuple(axes))
    return target


def same_device_axis(reference: TensorType, target: TensorType, parallel: ParallelKind) -> bool:
    if reference.mesh is None or target.mesh is None or target.mesh.axis_of(parallel) is None:
        return False
    return reference.mesh.axis_size(parallel) == target.mesh.axis_size(parallel)


def _outer_split(source: Axis, factor: int, axis: Axis, index: int, parallel: ParallelKind) -> tuple[Piece, ...]:
    """The pieces of `axis` parallelized as the reference axis `source` (`factor` pieces
    outermost): the whole axis where both have one static extent; two dynamic extents
    may differ (a reshape merging axes), so a device type splits the target by it."""
    if not source.is_split and source.extent == axis.extent and (axis.extent != DYNAMIC or not parallel.is_device):
        return (Piece(axis.extent, parallel),)
    if not source.is_split and source.extent == DYNAMIC and not parallel.is_device:
        # A whole Stream axis of the run's extent: the mapped axis has that extent at run
        # time, so it is streamed whole too (a chunk per element).
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


def device_parallel_reduced_axes(op: AxesReduction) -> list[int]:
    """Reduced input axes (value positions) that carry a device-parallel piece."""
    axes = tensor_type(op.input).value_axes()
    return [d for d in op.reduced_axes() if axes[d].parallel_types() & set(DEVICE_KINDS)]


def communication_problem(op: Operation) -> str | None:
    """Why the resharding `op` is not exactly one communication (None if it is, or if
    it does not reshard): a `fusion.set`, or a `fusion.reduce` of exactly one axis that
    is device-parallel as a whole in its input, changing at most one parallel type."""
    if not isinstance(op, ComputeOp):
        return None
    return _PROBLEMS.answer(op, _communication_problem)


def _communication_problem(op: ComputeOp) -> str | None:
    if reduces_sharded_axis(op):
        return "its result keeps a device-parallel reduction axis (a partial result per device)"
    if not is_resharding(op):
        return None
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


_PROBLEMS: ShapeTable[str | None] = ShapeTable()
"""`communication_problem` by shape of op: decompose-reshardings asks it of every op, more than once."""


# --------------------------------------------------------------------------- #
# The buffers of one communication (reorder-sharded-axis, convert-op-to-communication)
# --------------------------------------------------------------------------- #


def team_along(mesh: Mesh, parallel: ParallelKind) -> hir.Team:
    """The team a collective along device type `parallel` runs on: the whole of a 1-D
    mesh, each rank's slice of a 2-D one (its row along DIDx, its column along DIDy)."""
    return hir.Team(mesh) if mesh.ndim == 1 else hir.Team(mesh, parallel)


def communicated_type(op: SetOp | ReduceOp) -> ParallelKind:
    """The device type a communicating set or reduce works along: the one whose
    placement changes (the type of the reduced axis for a reduce); DIDx when only the
    mesh changes. Several changed types give the first (decompose-reshardings splits them)."""
    if isinstance(op, ReduceOp):
        axes = tensor_type(op.input).value_axes()
        for d in device_parallel_reduced_axes(op):
            return next(p for p in axes[d].parallel_types() if p.is_device)
    changed = sharding_changes(tensor_type(op.input), tensor_type(op.result), op.axis_map(op.input))
    return changed[0] if changed else ParallelKind.DIDX


def pairs_meshes_directly(op: SetOp) -> bool:
    """Does one collective carry `op`, a set between two different meshes, along the one
    device type that changes (convert-op-to-communication's plans): a broadcast of a whole
    tensor, a scatter from a device of both meshes onto a 1-D mesh, a gather from a 1-D
    mesh, or a send/recv per pair of devices of two 1-D meshes of one size."""
    source, target = tensor_type(op.input), tensor_type(op.result)
    assert source.mesh is not None and target.mesh is not None
    if len(sharding_changes(source, target, op.axis_map(op.input))) > 1:
        return False
    parallel = communicated_type(op)  # with the meshes changing, no other type is parallelized on either side
    sharded_in, sharded_out = source.is_spread(parallel), target.is_spread(parallel)
    if not sharded_in and not sharded_out:
        return True
    if not sharded_in:
        return target.mesh.ndim == 1 and not set(source.mesh.devices).isdisjoint(target.mesh.devices)
    if not sharded_out:
        return source.mesh.ndim == 1
    same_sizes = source.mesh.ndim == target.mesh.ndim == 1 and source.mesh.size == target.mesh.size
    return same_sizes and Exchange.of(op).scattered is None


def shards_locally(op: Operation) -> bool:
    """A set from a tensor replicated along the device type it communicates to one sharded
    along it, within one mesh: every device already holds the shard it gets, so nothing
    moves (`hir.local_shard`, where nvFuser scatters from the first device) and neither
    buffer needs a layout."""
    if not isinstance(op, SetOp) or not communicates(op):
        return False
    source, target = tensor_type(op.input), tensor_type(op.result)
    if source.mesh is None or source.mesh != target.mesh:
        return False
    parallel = communicated_type(op)
    return not source.is_spread(parallel) and target.is_spread(parallel)


@dataclass(frozen=True)
class Exchange:
    """How a collective cuts its flat buffers into team chunks (the buffer contracts of
    runtime/communicator.py): by the device piece of the result axis `scattered` in the
    sender's buffer (scatter, reduce_scatter, all_to_all: chunk j goes to member j), and
    of the result axis `gathered` in the receiver's (allgather, gather, all_to_all: chunk
    i comes from member i). Each such piece must be outermost in its buffer, and the rest
    of a chunk laid out alike on both sides."""

    parallel: ParallelKind
    scattered: int | None
    gathered: int | None

    @staticmethod
    def of(op: SetOp | ReduceOp, loop_axis: int | None = None) -> Exchange:
        """`op`'s exchange, in the chunks of a stream loop over the result axis `loop_axis`
        if given. A loop over the gathered axis is a ring (stream-parallel-type): each
        iteration receives one member's whole shard into its chunk, gathering nothing."""
        exchange = Exchange._of(op)
        if loop_axis is not None and loop_axis == exchange.gathered:
            return Exchange(exchange.parallel, exchange.scattered, None)
        return exchange

    @staticmethod
    def _of(op: SetOp | ReduceOp) -> Exchange:
        parallel = communicated_type(op)
        source, target = tensor_type(op.input), tensor_type(op.result)
        produced = _sharded_placement(source, parallel)
        consumed = _sharded_placement(target, parallel)
        scattered = consumed.axis if consumed is not None else None
        if isinstance(op, ReduceOp) or produced is None:
            return Exchange(parallel, scattered, None)  # a reduce's sharded input axis is reduced
        gathered = op.axis_map(op.input).get(produced.axis)
        if gathered == scattered and produced.outer_factors == consumed.outer_factors:
            return Exchange(parallel, None, None)  # each shard stays whole (send_recv)
        return Exchange(parallel, scattered, gathered)


def _sharded_placement(t: TensorType, parallel: ParallelKind):
    """Where `t` is sharded along `parallel` over more than one device, if it is."""
    if t.mesh is None or t.mesh.axis_size(parallel) < 2:
        return None
    return placement(t, parallel)


def buffer_order(t: TensorType, to_result: Mapping[int, int], skip: int | None = None) -> list[int]:
    """The result axes of `t`'s local buffer in memory order, without the axes of local
    extent 1 (nor `skip`, the axis a stream loop slices away)."""
    return [
        to_result[a] for a in t.allocation_order()
        if a in to_result and to_result[a] != skip and not t.axes[a].is_reduction and t.local_extent(a) != 1
    ]


def _chunk_order(t: TensorType, to_result: Mapping[int, int], split: int | None, split_extent: int, skip: int | None) -> list[int]:
    """The result axes of one team chunk of `t`'s buffer, cut along the result axis
    `split` into chunks of `split_extent` (None: the chunk is the whole buffer), in
    memory order, without those of extent 1 in the chunk."""
    from_result = {r: a for a, r in to_result.items()}
    order = []
    for axis in buffer_order(t, to_result, skip):
        extent = split_extent if axis == split else t.local_extent(from_result[axis])
        if extent != 1:
            order.append(axis)
    return order


def layout_problem(op: SetOp | ReduceOp, loop_axis: int | None = None) -> str | None:
    """Why the flat buffers of the communicating `op` are not laid out as its collective
    needs (None if they are). `loop_axis`: a result axis a stream loop slices away."""
    if shards_locally(op):
        return None
    exchange = Exchange.of(op, loop_axis)
    source, target = tensor_type(op.input), tensor_type(op.result)
    to_result = op.axis_map(op.input)
    identity = {i: i for i in range(target.rank)}
    for order in (buffer_order(source, to_result), buffer_order(target, identity)):
        if loop_axis in order and order[0] != loop_axis:
            return f"the stream loop over axis {loop_axis} would cut chunks that are not contiguous out of its buffers"
    sent, received = buffer_order(source, to_result, loop_axis), buffer_order(target, identity, loop_axis)
    for order, leading in ((sent, exchange.scattered), (received, exchange.gathered)):
        if leading is not None and order[:1] != [leading]:
            return (f"Resharding on an inner axis is not lowerable: axis {leading} of the result must be the "
                    "outermost allocated axis with a local extent above 1 (reorder-sharded-axis makes it so)")
    # A scattered axis is cut into chunks of its extent on one member of the result, a
    # gathered one into chunks of its extent on one member of the input (one element
    # where a whole axis is device-parallel, even a dynamic one).
    from_result = {r: a for a, r in to_result.items()}
    sent_part = target.local_extent(exchange.scattered) if exchange.scattered is not None else DYNAMIC
    received_part = source.local_extent(from_result[exchange.gathered]) if exchange.gathered is not None else DYNAMIC
    send_chunk = _chunk_order(source, to_result, exchange.scattered, sent_part, loop_axis)
    receive_chunk = _chunk_order(target, identity, exchange.gathered, received_part, loop_axis)
    if send_chunk == receive_chunk:
        return None
    if exchange.scattered is not None and exchange.gathered is not None:
        return (f"an all-to-all from axis {exchange.gathered} to axis {exchange.scattered} that keeps both "
                "above one element per device needs its scattered axis split first (reorder-sharded-axis does it)")
    return "input and result buffers allocate their axes in different orders, which no communication can convert"

"""Chunks of a tensor along one axis, as the passes that build loops over chunks take
them (stream-parallel-type, split-by-member): a chunk either *selects* one element of
the axis and lacks it (`Selected`: a whole Stream axis, a member's part), or *narrows*
the axis to one of `parts` equal contiguous blocks and keeps it (`Narrowed`: the outer
Stream piece of a split axis, nvFuser's `outer_split` then `parallelize(Stream)`)."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from hostir_dialect import fusion, hir
from hostir_dialect.building import index_constant
from hostir_dialect.tensor_type import TensorType, tensor_type


def operand_axis(op: fusion.ComputeOp, operand: SSAValue, axis: int) -> int | None:
    """The logical axis of `operand` that `op` maps to its result axis `axis`, if any
    (the axis maps of stream-sliceable ops are one-to-one)."""
    return next((a for a, target in op.axis_map(operand).items() if target == axis), None)


def narrowed_operand_axes(op: fusion.ComputeOp, axis: int, operand_axes: dict[SSAValue, int]) -> dict[SSAValue, int] | None:
    """The operands read in narrowed chunks, block i of the result's axis being block i
    of theirs: each axis `op` maps element for element onto the result's (kept where it
    is, `sharding_axis_map`: not an axis a slice cuts or a cat joins, read in order, of
    the same extent). A broadcast axis is read whole. None when an operand breaks it."""
    assert isinstance(op, fusion.StreamSliceable)
    extent = tensor_type(op.result).axes[axis].extent
    narrowed: dict[SSAValue, int] = {}
    for operand, chunk_axis in operand_axes.items():
        chosen = tensor_type(operand).axes[chunk_axis]
        if chosen.is_broadcast:
            continue
        kept = op.sharding_axis_map(operand).get(chunk_axis) == axis
        if not kept or op.operand_chunk_stride(operand, chunk_axis) != (0, 1) or chosen.extent != extent:
            return None
        narrowed[operand] = chunk_axis
    return narrowed


def sliced_type(t: TensorType, axis: int) -> TensorType:
    """`t` without logical axis `axis` (a chunk's type); mesh and parallel types kept."""
    order = tuple(i - (i > axis) for i in t.allocation_order() if i != axis)
    return t.with_(axes=t.axes[:axis] + t.axes[axis + 1 :], alloc_order=order, stream_allocated=False)


def narrowed_type(t: TensorType, axis: int, parts: int) -> TensorType:
    """`t` with logical axis `axis` one of `parts` equal blocks (`Axis.narrowed`)."""
    axes = (*t.axes[:axis], t.axes[axis].narrowed(parts), *t.axes[axis + 1 :])
    return t.with_(axes=axes, stream_allocated=False)


class ChunkForm(abc.ABC):
    """How a loop over chunks takes them along an axis."""

    @property
    @abc.abstractmethod
    def trip_count(self) -> int | None:
        """The number of chunks when the form fixes it (else the axis's extent)."""

    @abc.abstractmethod
    def type(self, t: TensorType, axis: int) -> TensorType:
        """The type of a chunk of a `t` along its logical axis `axis`."""

    @abc.abstractmethod
    def whole_axis(self, chunk_axis: int, axis: int) -> int:
        """The logical axis of the whole tensor that a chunk's `chunk_axis` is (chunks
        taken along `axis`)."""

    @abc.abstractmethod
    def takes(self, t: TensorType, axis: int) -> bool:
        """Can a loop take chunks of a `t` along its logical axis `axis`? Not of a
        reduction axis (no storage), nor where a chunk is not one of each device's part."""

    @abc.abstractmethod
    def view(self, tensor: SSAValue, index: SSAValue, axis: int) -> hir.AliasViewOp:
        """The view of chunk `index` of `tensor` along `axis` (not inserted)."""

    @abc.abstractmethod
    def op(self, op: fusion.ComputeOp, chunks: Mapping[SSAValue, SSAValue], axes: Mapping[SSAValue, int],
           result_type: TensorType, out: SSAValue | None = None) -> fusion.ComputeOp:
        """`op` on one chunk: each operand in `chunks` replaced by its chunk along its
        axis in `axes` (which also holds the result's), the result of `result_type`."""


@dataclass(frozen=True)
class Selected(ChunkForm):
    """Chunk i is element i of the axis, which the chunk lacks."""

    @property
    def trip_count(self) -> int | None:
        return None

    def type(self, t: TensorType, axis: int) -> TensorType:
        return sliced_type(t, axis)

    def whole_axis(self, chunk_axis: int, axis: int) -> int:
        return chunk_axis + (chunk_axis >= axis)

    def takes(self, t: TensorType, axis: int) -> bool:
        chosen = t.axes[axis]  # a device-parallel axis: each device holds a part of it
        return not chosen.is_reduction and not any(p.parallel.is_device for p in chosen.pieces)

    def view(self, tensor: SSAValue, index: SSAValue, axis: int) -> hir.AliasViewOp:
        return hir.AliasSelectOp(tensor, index, axis, self.type(tensor_type(tensor), axis))

    def op(self, op: fusion.ComputeOp, chunks: Mapping[SSAValue, SSAValue], axes: Mapping[SSAValue, int],
           result_type: TensorType, out: SSAValue | None = None) -> fusion.ComputeOp:
        assert isinstance(op, fusion.StreamSliceable)
        chunk = op.stream_chunk(chunks, axes, result_type, out)
        chunk.attributes.update(op.attributes)
        return chunk


@dataclass(frozen=True)
class Narrowed(ChunkForm):
    """Chunk i is block i of `parts` equal contiguous blocks of the axis, which the chunk
    keeps: the op on a chunk is the op itself on narrower types."""

    parts: int

    @property
    def trip_count(self) -> int | None:
        return self.parts

    def type(self, t: TensorType, axis: int) -> TensorType:
        return narrowed_type(t, axis, self.parts)

    def whole_axis(self, chunk_axis: int, axis: int) -> int:
        return chunk_axis

    def block_extent(self, extent: SSAValue) -> list[Operation]:
        """The ops computing the run-time extent of one block of an axis of `extent`
        (the last one's result)."""
        parts = index_constant(self.parts)
        block = arith.DivUIOp(extent, parts.result)
        parts.result.name_hint, block.result.name_hint = "parts", "block"
        return [parts, block]

    def takes(self, t: TensorType, axis: int) -> bool:
        return not t.axes[axis].is_reduction and t.axes[axis].narrowing_problem(self.parts) is None

    def view(self, tensor: SSAValue, index: SSAValue, axis: int) -> hir.AliasViewOp:
        return hir.AliasChunkOp(tensor, index, axis, self.parts, self.type(tensor_type(tensor), axis))

    def op(self, op: fusion.ComputeOp, chunks: Mapping[SSAValue, SSAValue], axes: Mapping[SSAValue, int],
           result_type: TensorType, out: SSAValue | None = None) -> fusion.ComputeOp:
        return op.retyped(chunks, result_type, out)


SELECTED = Selected()

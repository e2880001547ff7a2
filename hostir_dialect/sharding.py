"""Sharding analysis: how a tensor is split over devices and streams, and which ops
change that (nvFuser's haveDifferentShardings / isResharding, §2.4 of the reference).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.ir import Operation

from .fusion import ComputeOp
from .tensor_type import Axis, ParallelType, TensorType

DEVICE_TYPES = (ParallelType.DIDX, ParallelType.DIDY)


@dataclass(frozen=True)
class Placement:
    """Where a parallel type sits in a tensor: logical axis, and the outer split
    factors in front of its piece (empty for a whole-axis parallelization)."""

    axis: int
    outer_factors: tuple[int, ...]
    extent: int


def placement(t: TensorType, parallel: ParallelType, include_reduction: bool = False) -> Placement | None:
    for index, axis in enumerate(t.axes):
        if axis.is_reduction and not include_reduction:
            continue
        for position, piece in enumerate(axis.pieces):
            if piece.parallel == parallel:
                return Placement(index, tuple(p.extent for p in axis.pieces[:position]), piece.extent)
    return None


def is_inner_split(axis: Axis, parallel: ParallelType) -> bool:
    """Parallelized on a piece that is not the outermost one (nvFuser rejects these)."""
    return any(p.parallel == parallel for p in axis.pieces[1:])


def have_different_shardings(
    producer: TensorType, consumer: TensorType, axis_map: dict[int, int], types: Iterable[ParallelType] = DEVICE_TYPES
) -> bool:
    """Does reading `producer` as `consumer` (axes related by `axis_map`) move data
    between devices (or, for Stream, between stream chunks)?"""
    types = tuple(types)
    if any(t.is_device for t in types) and producer.mesh != consumer.mesh:
        if producer.mesh is not None and consumer.mesh is not None:
            return True
    for parallel in types:
        p = placement(producer, parallel)
        c = placement(consumer, parallel, include_reduction=True)
        if p is None and c is None:
            continue
        if p is None or c is None:
            return True
        if axis_map.get(p.axis) != c.axis or p.outer_factors != c.outer_factors:
            return True
    return False


def reduces_sharded_axis(op: Operation) -> bool:
    """A reduction (reduce/matmul/linear) whose reduced axis is device-parallel: each
    device holds only a partial result until a communication combines them."""
    if not isinstance(op, ComputeOp):
        return False
    result = op.result.type
    assert isinstance(result, TensorType)
    return any(a.is_reduction and a.parallel_types() & set(DEVICE_TYPES) for a in result.axes)


def is_resharding(op: Operation) -> bool:
    """Some tensor input and the result are sharded differently over devices."""
    if not isinstance(op, ComputeOp):
        return False
    result = op.result.type
    assert isinstance(result, TensorType)
    return any(
        have_different_shardings(v.type, result, op.axis_map(v))  # type: ignore[arg-type]
        for v in op.tensor_inputs()
    )

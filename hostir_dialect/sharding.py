"""Sharding queries: how a tensor is split over devices and streams, and which ops move
data between devices (nvFuser's haveDifferentShardings / isResharding,
csrc/multidevice/resharding.cpp). The queries both the passes and the runtime ask
live here; the passes' policy (propagation, what one communication can
do) is passes/sharding_policy.py.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.ir import Operation

from .fusion import ComputeOp, ShapeTable
from .hir import CollectiveOp
from .tensor_type import DEVICE_KINDS, ParallelKind, TensorType, tensor_type


@dataclass(frozen=True)
class Placement:
    """Where a parallel type sits in a tensor: logical axis, and the outer split
    factors in front of its piece (empty for a whole-axis parallelization)."""

    axis: int
    outer_factors: tuple[int, ...]
    extent: int


def placement(t: TensorType, parallel: ParallelKind, include_reduction: bool = False) -> Placement | None:
    index = t.axis_with(parallel, include_reduction)
    if index is None:
        return None
    pieces = t.axes[index].pieces
    position = next(i for i, piece in enumerate(pieces) if piece.parallel == parallel)
    return Placement(index, tuple(p.extent for p in pieces[:position]), pieces[position].extent)


def have_different_shardings(
    producer: TensorType,
    consumer: TensorType,
    axis_map: dict[int, int],
    types: Iterable[ParallelKind] = DEVICE_KINDS,
    derived: set[int] | None = None,
) -> bool:
    """Does reading `producer` as `consumer` (axes related by `axis_map`) move data
    between devices (or, for Stream, between stream chunks)? `derived`: the consumer
    axes made of producer data (`ComputeOp.derived_axes`), the map's targets by default."""
    types = tuple(types)
    derived = set(axis_map.values()) if derived is None else derived
    if any(t.is_device for t in types) and producer.mesh != consumer.mesh:
        if producer.mesh is not None and consumer.mesh is not None:
            return True
    for parallel in types:
        p = placement(producer, parallel)
        c = placement(consumer, parallel, include_reduction=True)
        if p is None and c is None:
            continue
        if p is None and c is not None and not _comes_from_producer_axis(producer, c.axis, axis_map, derived):
            continue  # a new or broadcast axis: every device already has what its shard needs
        if p is None or c is None:
            return True
        if axis_map.get(p.axis) != c.axis or p.outer_factors != c.outer_factors:
            return True
        if not _is_outermost_source(p.axis, axis_map):
            return True  # an inner axis of a merge: its shards interleave in the result
    return False


def _is_outermost_source(axis: int, axis_map: dict[int, int]) -> bool:
    """Is `axis` the outermost of the producer axes merged into its result axis? A
    reshape merges [a, b] into one axis whose outer split follows `a`'s, never `b`'s."""
    target = axis_map.get(axis)
    return all(source >= axis for source, mapped in axis_map.items() if mapped == target)


def _comes_from_producer_axis(producer: TensorType, consumer_axis: int, axis_map: dict[int, int], derived: set[int]) -> bool:
    """Is the consumer axis made of producer data, and not only the image of broadcast
    axes? (nvFuser leaves broadcast axes out of the pairwise map.)"""
    if consumer_axis not in derived:
        return False
    images = [source for source, target in axis_map.items() if target == consumer_axis]
    return not images or any(not producer.axes[source].is_broadcast for source in images)


def reduces_sharded_axis(op: Operation) -> bool:
    """A reduction (reduce/matmul/linear) whose reduced axis is device-parallel: each
    device holds only a partial result until a communication combines them."""
    if not isinstance(op, ComputeOp):
        return False
    return _keeps_device_parallel_reduction(tensor_type(op.result))


@functools.lru_cache(maxsize=4096)
def _keeps_device_parallel_reduction(t: TensorType) -> bool:
    return any(a.is_reduction and a.parallel_types() & set(DEVICE_KINDS) for a in t.axes)


def is_resharding(op: Operation) -> bool:
    """Some tensor input and the result are sharded differently over devices."""
    if not isinstance(op, ComputeOp):
        return False
    return _RESHARDING.answer(op, _reads_another_sharding)


_RESHARDING: ShapeTable[bool] = ShapeTable()
"""`is_resharding` by shape of op."""


def _reads_another_sharding(op: ComputeOp) -> bool:
    result = tensor_type(op.result)
    return any(
        have_different_shardings(tensor_type(v), result, op.axis_map(v), derived=op.derived_axes(v))
        for v in op.tensor_inputs()
    )


def communicates(op: Operation) -> bool:
    """Moves data between devices: its input and result are sharded differently, or it
    reduces over a device-parallel axis (each device holds only a partial result)."""
    if not isinstance(op, ComputeOp):
        return False
    return _COMMUNICATES.answer(op, _moves_data)


def _moves_data(op: ComputeOp) -> bool:
    return is_resharding(op) or reduces_sharded_axis(op)


_COMMUNICATES: ShapeTable[bool] = ShapeTable()
"""`communicates` by shape of op: every pass asks it of every op."""


def largest_device(root: Operation) -> int | None:
    """The largest device id named in `root` and the ops inside it: by the meshes of
    their tensors and the teams of their collectives (None when there is none). A program
    needs a world of at least this many ranks plus one."""
    devices: set[int] = set()
    for op in root.walk():
        values = [*op.results, *(arg for region in op.regions for block in region.blocks for arg in block.args)]
        for value in values:
            if isinstance(value.type, TensorType) and value.type.mesh is not None:
                devices.update(value.type.mesh.devices)
        if isinstance(op, CollectiveOp):
            devices.update(op.team_ids)
    return max(devices, default=None)

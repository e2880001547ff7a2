"""Segmentation of a `fusion.func` into groups of ops (nvFuser's SegmentCandidateFinder
with a custom `shouldMergeSegmentedGroups`, PR #4145).

The merge predicate is the only policy: `segment(func, should_merge)` starts with one
group per compute op and merges producer/consumer neighbours while the predicate allows
it and the merge keeps the group graph acyclic. The default predicate keeps every
standalone host op (one the host program runs directly) alone and fuses everything else.

Scalar ops (e.g. `arith.constant` operands of binary ops or of `fusion.select`) belong
to no group: whoever builds code from a group re-materializes the scalars it uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue

from hostir_dialect import fusion
from hostir_dialect.sharding import communicates
from hostir_dialect.tensor_type import TensorType


def is_standalone_host_op(op: Operation) -> bool:
    """Runs directly in the host program (nvFuser's isLowerableAsStandaloneHostOp): an
    op with the `StandaloneHostOp` trait (matmul, linear, binary, reduction, set, slice,
    select), and any op that communicates (a later pass turns those into collectives, so
    they can never hide in a kernel unit)."""
    return op.has_trait(fusion.StandaloneHostOp) or communicates(op)


@dataclass(eq=False)
class Group:
    """Ops of one segment, in the order of the function body."""

    ops: list[Operation]
    _members: set[Operation] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._members = set(self.ops)

    def __contains__(self, op: Operation) -> bool:
        return op in self._members

    def inputs(self) -> list[SSAValue]:
        """Tensor values the group reads but does not define, in first-use order."""
        seen: dict[SSAValue, None] = {}
        for op in self.ops:
            for operand in op.operands:
                if isinstance(operand.type, TensorType) and operand.owner not in self._members:
                    seen.setdefault(operand)
        return list(seen)

    def outputs(self) -> list[SSAValue]:
        """Results of the group used outside it (by other groups or the return)."""
        return [
            result
            for op in self.ops
            for result in op.results
            if any(use.operation not in self._members for use in result.uses)
        ]

    def merged_with(self, other: Group, order: dict[Operation, int]) -> Group:
        return Group(sorted(self.ops + other.ops, key=order.__getitem__))


MergePredicate = Callable[[Group, Group], bool]


def should_merge_segmented_groups(first: Group, second: Group) -> bool:
    """nvFuser's default: a group holding a standalone host op never merges."""
    return not any(is_standalone_host_op(op) for op in (*first.ops, *second.ops))


def segment(func: fusion.FuncOp, should_merge: MergePredicate = should_merge_segmented_groups) -> list[Group]:
    """Groups of the compute ops of `func`, in a valid run order."""
    order = {op: i for i, op in enumerate(func.body.block.ops)}
    groups = [Group([op]) for op in func.body.block.ops if isinstance(op, fusion.ComputeOp)]
    while (pair := _next_merge(groups, should_merge)) is not None:
        producer, consumer = pair
        groups.remove(producer)
        groups[groups.index(consumer)] = producer.merged_with(consumer, order)
    return _run_order(groups, order)


def _next_merge(groups: list[Group], should_merge: MergePredicate) -> tuple[Group, Group] | None:
    """The first producer -> consumer edge that the predicate accepts and whose merge
    keeps the graph acyclic: no other path may lead from the producer to the consumer."""
    edges = _edges(groups)
    for producer in groups:
        for consumer in edges[producer]:
            if should_merge(producer, consumer) and not _has_indirect_path(producer, consumer, edges):
                return producer, consumer
    return None


def _owner_groups(groups: Iterable[Group]) -> dict[Operation, Group]:
    return {op: g for g in groups for op in g.ops}


def _edges(groups: list[Group]) -> dict[Group, list[Group]]:
    """producer group -> consumer groups, in group order."""
    owner = _owner_groups(groups)
    edges: dict[Group, list[Group]] = {}
    for group in groups:
        consumers: dict[Group, None] = {}
        for op in group.ops:
            for result in op.results:
                for use in result.uses:
                    target = owner.get(use.operation)
                    if target is not None and target is not group:
                        consumers.setdefault(target)
        edges[group] = list(consumers)
    return edges


def _has_indirect_path(source: Group, target: Group, edges: dict[Group, list[Group]]) -> bool:
    stack = [g for g in edges[source] if g is not target]
    seen = set(stack)
    while stack:
        group = stack.pop()
        if group is target:
            return True
        for successor in edges[group]:
            if successor not in seen:
                seen.add(successor)
                stack.append(successor)
    return False


def _run_order(groups: list[Group], order: dict[Operation, int]) -> list[Group]:
    """Topological order of the groups, ties broken by their first op's position."""
    edges = _edges(groups)
    indegree = {g: 0 for g in groups}
    for consumers in edges.values():
        for consumer in consumers:
            indegree[consumer] += 1
    ready = sorted((g for g in groups if not indegree[g]), key=lambda g: order[g.ops[0]])
    result: list[Group] = []
    while ready:
        group = ready.pop(0)
        result.append(group)
        for consumer in edges[group]:
            indegree[consumer] -= 1
            if not indegree[consumer]:
                ready.append(consumer)
        ready.sort(key=lambda g: order[g.ops[0]])
    assert len(result) == len(groups), "segmentation produced a cycle between groups"
    return result

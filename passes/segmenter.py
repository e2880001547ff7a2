"""Segmentation of a `fusion.func` into groups of ops (nvFuser's SegmentCandidateFinder
with a custom `shouldMergeSegmentedGroups`, PR #4145).

The merge predicate is the only policy: `segment(func, should_merge)` starts with one
group per compute op and merges producer/consumer neighbours while the predicate allows
it and the merge keeps the group graph acyclic. The default predicate keeps every
standalone host op (one the host program runs directly) alone and fuses everything else.

The predicate's contract: `should_merge(producer, consumer)` is a pure function of the
two groups (their ops and what the ops say about themselves), so an answer holds for as
long as both groups exist. The segmenter relies on it: it visits the ops once, in body
order, and asks about each pair of groups when the later one is formed, never again.
Each op's group absorbs its producers' groups, latest first, until the predicate
refuses or another path leads from the producer to it (the merge would make a cycle);
after every merge the producers of the grown group are asked again.

Cost: one predicate call per producer group of each op per merge, and a search for
another path only when a group that the predicate accepts has several producer groups.
The default predicate is O(1) (`Group.has_standalone_host_op` is kept up to date by
merges) and the groups it accepts are trees of one-input ops, which have at most one
producer group: segmenting with it is linear in the number of ops. A predicate that
reads every op of both groups costs what it reads.

Scalar ops (e.g. `arith.constant` operands of binary ops or of `fusion.select`) belong
to no group: whoever builds code from a group re-materializes the scalars it uses.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence

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


class Group:
    """Ops of one segment, in the order of the function body.

    A group made by a merge keeps the two merged groups and lists its ops only when
    asked, so that a merge costs O(1) whatever the sizes of the groups."""

    def __init__(self, ops: Sequence[Operation]):
        self._ops: list[Operation] | None = list(ops)
        self._parts: tuple[Group, Group] | None = None
        self._order: Mapping[Operation, int] | None = None
        self._members: set[Operation] | None = None
        self.has_standalone_host_op = any(is_standalone_host_op(op) for op in self._ops)
        """Holds an op the host program runs directly (see is_standalone_host_op)."""

    @staticmethod
    def merged(first: Group, second: Group, order: Mapping[Operation, int]) -> Group:
        """The union of two groups; `order` gives each op's position in the body."""
        group = Group(())
        group._ops, group._parts, group._order = None, (first, second), order
        group.has_standalone_host_op = first.has_standalone_host_op or second.has_standalone_host_op
        return group

    @property
    def ops(self) -> list[Operation]:
        if self._ops is None:
            assert self._order is not None
            self._ops = sorted(self._collect(), key=self._order.__getitem__)
            self._parts = None  # the parts' own lists are no longer needed
        return self._ops

    def _collect(self) -> list[Operation]:
        """The ops of the merged parts, unordered (iteratively: a long chain of merges
        nests as deep as the chain is long)."""
        ops: list[Operation] = []
        pending = [self]
        while pending:
            group = pending.pop()
            if group._ops is not None:
                ops.extend(group._ops)
            else:
                assert group._parts is not None
                pending.extend(group._parts)
        return ops

    def __contains__(self, op: Operation) -> bool:
        if self._members is None:
            self._members = set(self.ops)
        return op in self._members

    def inputs(self) -> list[SSAValue]:
        """Tensor values the group reads but does not define, in first-use order."""
        seen: dict[SSAValue, None] = {}
        for op in self.ops:
            for operand in op.operands:
                if isinstance(operand.type, TensorType) and not (isinstance(operand.owner, Operation) and operand.owner in self):
                    seen.setdefault(operand)
        return list(seen)

    def outputs(self) -> list[SSAValue]:
        """Results of the group used outside it (by other groups or the return)."""
        return [
            result
            for op in self.ops
            for result in op.results
            if any(use.operation not in self for use in result.uses)
        ]

    def __repr__(self) -> str:
        return f"Group({[op.name for op in self.ops]})"


MergePredicate = Callable[[Group, Group], bool]
"""`should_merge(producer, consumer)`: a pure function of the two groups."""


def should_merge_segmented_groups(first: Group, second: Group) -> bool:
    """nvFuser's default: a group holding a standalone host op never merges."""
    return not (first.has_standalone_host_op or second.has_standalone_host_op)


def segment(func: fusion.FuncOp, should_merge: MergePredicate = should_merge_segmented_groups) -> list[Group]:
    """Groups of the compute ops of `func`, in a valid run order."""
    return _Segmenter(func, should_merge).run()


class _Segmenter:
    """The group graph while ops join it in body order. A merged group's old groups
    point to it (`merged_into`, a union-find), so the producer sets, which may name old
    groups, are resolved with `current` instead of being rewritten at every merge."""

    def __init__(self, func: fusion.FuncOp, should_merge: MergePredicate):
        self.body = func.body.block
        self.should_merge = should_merge
        self.order = {op: i for i, op in enumerate(self.body.ops)}
        self.group_of: dict[Operation, Group] = {}
        """Each compute op's first group (`current` gives the group it is in now)."""
        self.merged_into: dict[Group, Group] = {}
        self.producers: dict[Group, set[Group]] = {}
        self.last: dict[Group, int] = {}
        """Position of each live group's latest op."""

    def run(self) -> list[Group]:
        for op in self.body.ops:
            if isinstance(op, fusion.ComputeOp):
                self.add(op)
        return self.run_order()

    def add(self, op: fusion.ComputeOp) -> None:
        group = Group([op])
        self.group_of[op] = group
        self.producers[group] = {self.group_of[v.owner] for v in op.operands
                                 if isinstance(v.owner, Operation) and v.owner in self.group_of}
        self.last[group] = self.order[op]
        while (producer := self.mergeable_producer(group)) is not None:
            group = self.merge(producer, group)

    def current(self, group: Group) -> Group:
        root = group
        while root in self.merged_into:
            root = self.merged_into[root]
        while group is not root:  # path compression
            self.merged_into[group], group = root, self.merged_into[group]
        return root

    def producers_of(self, group: Group) -> set[Group]:
        resolved = {self.current(p) for p in self.producers[group]} - {group}
        self.producers[group] = resolved
        return resolved

    def mergeable_producer(self, group: Group) -> Group | None:
        """The latest producer group that may merge into `group` (the latest first: a
        path between two producers leads from the earlier to the later one, so
        absorbing the later one can make the earlier one mergeable)."""
        producers = sorted(self.producers_of(group), key=self.last.__getitem__, reverse=True)
        for producer in producers:
            if self.should_merge(producer, group) and not self.has_other_path(producer, group, producers):
                return producer
        return None

    def has_other_path(self, source: Group, target: Group, target_producers: list[Group]) -> bool:
        """Does a path lead from `source` to `target` through another group? Searched
        backwards from the target's other producers."""
        pending = [p for p in target_producers if p is not source]
        seen = set(pending)
        while pending:
            group = pending.pop()
            for producer in self.producers_of(group):
                if producer is source:
                    return True
                if producer not in seen:
                    seen.add(producer)
                    pending.append(producer)
        return False

    def merge(self, producer: Group, consumer: Group) -> Group:
        group = Group.merged(producer, consumer, self.order)
        self.producers[group] = self.producers.pop(producer) | self.producers.pop(consumer)
        self.last[group] = max(self.last.pop(producer), self.last.pop(consumer))
        self.merged_into[producer] = self.merged_into[consumer] = group
        return group

    def run_order(self) -> list[Group]:
        """Topological order of the groups, ties broken by their first op's position."""
        groups = list(self.last)
        by_first = {self.order[group.ops[0]]: group for group in groups}
        consumers: dict[Group, list[Group]] = {group: [] for group in groups}
        waiting = {}
        for group in groups:
            producers = self.producers_of(group)
            waiting[group] = len(producers)
            for producer in producers:
                consumers[producer].append(group)
        ready = [first for first, group in by_first.items() if not waiting[group]]
        heapq.heapify(ready)
        result: list[Group] = []
        while ready:
            group = by_first[heapq.heappop(ready)]
            result.append(group)
            for consumer in consumers[group]:
                waiting[consumer] -= 1
                if not waiting[consumer]:
                    heapq.heappush(ready, self.order[consumer.ops[0]])
        assert len(result) == len(groups), "segmentation produced a cycle between groups"
        return result

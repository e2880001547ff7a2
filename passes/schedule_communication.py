"""`schedule-communication`: in every block of a host program, post each collective as
early and wait for it as late as its data allow, so that its transfers run beside all the
compute that does not need them.

Lowering leaves the ops of independent computations in the fusion's order, each
collective's post and wait around its own producer and consumer. Where a block holds two
such chains, one chain's transfers then wait for the other's compute and the current
stream waits for them before the other chain's compute. The attention projections of a
sequence-parallel layer (QKV = all_gather(X) @ Wqkv, O = reduce_scatter(A @ Wo), one
stream loop) became, per chunk: the output projection's GEMMs, a wait for its
reduce-scatter, and only then the post of the all-gather of X, whose transfer the QKV GEMM
of the peer's rows waits for. Scheduled:

    %w = hir.reduce_scatter ...                     %v = hir.allgather %x_i -> ...
    fusion.matmul (own part of O)                   %w = hir.reduce_scatter ...
    hir.wait %w                            ->       fusion.matmul (own part of O)
    %v = hir.allgather %x_i -> ...                  fusion.matmul (own part of QKV)
    fusion.matmul (own part of QKV)                 (wait for the peer's rows; its part of QKV)
    (wait for the peer's rows; its part of QKV)     hir.wait %w
    hir.wait %v                                     hir.wait %v

A list scheduler, block by block. An op follows
- the ops that define the values it uses (inside its regions too),
- the earlier ops that write a buffer it reads, and those that read or write a buffer it
  writes (`_accesses`): a compute op reads its operands and writes its destination or
  result; a collective writes all its buffers (input, output, `via`) from its post to its
  wait, so an op that reads its input, or views it, keeps its side of both (an
  all-reduce's `own` operands it reads from its post to its wait); a kernel unit
  writes its inputs too, as its result may be a view of one; a deallocation writes its
  buffer; views and index arithmetic access none,
- every earlier op it cannot move past: stream ops (the current stream decides where work
  goes), random ops (a host counter's draws), anything else.
Among the ops whose predecessors are placed it takes the posts first, then the other ops,
then the waits for whole collectives that later work needs, then the other waits, in
program order within each class; a view, an index computation or an allocation goes right
before the first op that needs it. Ops only move within their block, past ops that share
no buffer with them, so every computation reads and writes what it did. Every rank runs
the same program text, so the collectives keep one order on all ranks (the one
verify-collective-order then checks).
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

from hostir_dialect import fusion, hir
from hostir_dialect.symbols import programs
from hostir_dialect.tensor_type import TensorType

from .buffer_aliases import buffer_roots, written_operands

_NO_MEMORY = (*hir.VIEW_OPS, hir.IndexValueOp, arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp,
              arith.RemUIOp, arith.DivUIOp, arith.CmpiOp, arith.SelectOp)
"""Views and index arithmetic: they read and write no tensor's memory."""

_MOVABLE = (*_NO_MEMORY, fusion.ComputeOp, hir.AllocateOp, hir.DeallocateOp, hir.WaitedOp, hir.WaitOp,
            hir.PostOnStreamOp, hir.LocalShardOp, scf.ForOp, scf.YieldOp)
"""The ops a block's schedule may move past each other (where their buffers allow)."""

_POST, _OTHER, _NEEDED_WAIT, _WAIT = 0, 1, 2, 3
"""Scheduling classes: posts first, then other work, then whole waits that some later work
needs, then the others."""


def schedule_communication(program: hir.ProgramOp) -> None:
    roots = _may_alias(program)
    blocks = [block for op in program.walk() for region in op.regions for block in region.blocks]
    for block in blocks:
        _schedule(block, roots)


def _schedule(block: Block, roots: dict[SSAValue, frozenset[SSAValue]]) -> None:
    ops = list(block.ops)
    if not any(isinstance(op, hir.WaitedOp) or _waits_whole(op) for op in ops):
        return  # without posts or whole waits the schedule is the block's order
    movable = [_movable(op) and not op.has_trait(IsTerminator) for op in ops]
    order = _Schedule(ops, _predecessors(ops, movable, roots), movable).order()
    if _work(order) == _work(ops):
        return  # views and index arithmetic stay where they are unless the work around them moves
    for op in order:
        op.detach()
    for op in order:
        block.add_op(op)


def _predecessors(ops: list[Operation], movable: list[bool],
                  roots: dict[SSAValue, frozenset[SSAValue]]) -> list[set[int]]:
    """predecessors[i]: the ops (indices) that op i must follow (see the module doc); an op
    that cannot move follows every op since the one before it that cannot (which follows
    the rest), and every later op follows it."""
    position = {op: i for i, op in enumerate(ops)}
    predecessors: list[set[int]] = []
    readers: dict[SSAValue, list[int]] = {}
    writers: dict[SSAValue, list[int]] = {}
    last_barrier: int | None = None
    for i, op in enumerate(ops):
        before = {position[d] for d in _defining_ops(op) if d in position} - {i}
        reads, writes = _accesses(op, roots)
        for root in reads:
            before.update(writers.setdefault(root, []))
        for root in writes:
            before.update(writers.setdefault(root, []), readers.setdefault(root, []))
        for root in reads:
            readers.setdefault(root, []).append(i)
        for root in writes:
            writers[root].append(i)
        if last_barrier is not None:
            before.add(last_barrier)
        if not movable[i]:
            before.update(range(last_barrier or 0, i))
            last_barrier = i
        predecessors.append(before)
    return predecessors


class _Schedule:
    """The list schedule of one block. Views, index arithmetic and allocations are not
    scheduled for themselves: each goes right before the first op placed that needs it,
    so they stay next to what reads them."""

    def __init__(self, ops: list[Operation], predecessors: list[set[int]], movable: list[bool]):
        self.ops = ops
        self.movable = movable
        self.lazy = [_placed_where_needed(op) for op in ops]
        self.waiting_on: list[set[int]] = []
        """Per op, the scheduled ops it must follow, also through the lazy ones it needs."""
        self.needs: list[list[int]] = []
        """Per op, the lazy ops to place right before it (if not placed yet), in block order."""
        for i in range(len(ops)):
            scheduled, lazy = set(), set()
            for p in predecessors[i]:
                if self.lazy[p]:
                    scheduled |= self.waiting_on[p]
                    lazy |= {p, *self.needs[p]}
                else:
                    scheduled.add(p)
            self.waiting_on.append(scheduled)
            self.needs.append(sorted(lazy))
        self.placed = [False] * len(ops)

    def order(self) -> list[Operation]:
        followers: list[list[int]] = [[] for _ in self.ops]
        count = [len(after) for after in self.waiting_on]
        for i, after in enumerate(self.waiting_on):
            for p in after:
                followers[p].append(i)
        self.kinds = [self._kind(i, followers[i]) for i in range(len(self.ops))]
        ready = [(self.kinds[i], i) for i in range(len(self.ops)) if not self.lazy[i] and count[i] == 0]
        heapq.heapify(ready)
        order: list[Operation] = []
        while ready:
            _, i = heapq.heappop(ready)
            for j in [*self.needs[i], i]:
                if not self.placed[j]:
                    self.placed[j] = True
                    order.append(self.ops[j])
            for j in followers[i]:
                count[j] -= 1
                if count[j] == 0 and not self.lazy[j]:
                    heapq.heappush(ready, (self.kinds[j], j))
        assert len(order) == len(self.ops), "each lazy op is needed by a later op that cannot move, at the latest"
        return order

    def _kind(self, i: int, followers: list[int]) -> int:
        op = self.ops[i]
        if isinstance(op, hir.WaitedOp):
            return _POST
        if _waits_whole(op):
            needed = any(self.movable[j] and not _waits_whole(self.ops[j]) for j in followers)
            return _NEEDED_WAIT if needed else _WAIT
        return _OTHER


def _defining_ops(op: Operation) -> Iterable[Operation]:
    """The ops defining the values `op` or an op inside it uses."""
    for nested in op.walk():
        for operand in nested.operands:
            if isinstance(operand.owner, Operation):
                yield operand.owner
            else:
                parent = operand.owner.parent_op()
                if parent is not None:
                    yield parent


def _may_alias(program: hir.ProgramOp) -> dict[SSAValue, frozenset[SSAValue]]:
    """Each tensor value -> the buffers (their owners) it may share memory with: its own,
    and for a kernel unit's result those of the unit's inputs too (the runtime returns a
    view of an input from a unit that only relabels elements)."""
    roots = buffer_roots(program)
    may_alias: dict[SSAValue, frozenset[SSAValue]] = {}

    def of(value: SSAValue) -> frozenset[SSAValue]:
        root = roots.get(value, value)
        return may_alias.get(root, frozenset({root}))

    for op in program.walk():
        if isinstance(op, hir.PostOnStreamOp) and not op.outs:
            inputs = frozenset().union(*(of(v) for v in op.inputs if isinstance(v.type, TensorType)))
            for result in op.outputs:
                may_alias[result] = frozenset({result}) | inputs
    return {value: of(value) for value in roots}


def _accesses(op: Operation, roots: dict[SSAValue, frozenset[SSAValue]]) -> tuple[set[SSAValue], set[SSAValue]]:
    """The buffers (their owners) that `op` or an op inside it reads, and those it writes.
    A compute op reads its operands and writes its destination or result; a kernel unit
    writes its inputs too (it may return a view of one); a collective accesses its
    buffers from its post to its wait, which therefore accesses them as the post does,
    writing its output and `via`, and, for this schedule, its input: an op that reads the
    input (or a view of it, whose deallocation insert-deallocations places after that op)
    keeps its side of the post and of the wait; a deallocation writes its buffer."""
    reads: set[SSAValue] = set()
    writes: set[SSAValue] = set()
    for inner in op.walk():
        if _computes_no_memory(inner):
            continue
        nested = hir.posting_op(inner.work) if isinstance(inner, hir.WaitOp) else inner
        written = {*written_operands(nested), *nested.results}
        if isinstance(nested, (hir.WaitedOp, hir.DeallocateOp, hir.PostOnStreamOp)):
            written.update(v for v in nested.operands if not _only_read(nested, v))
        for value in (*nested.operands, *nested.results):
            if isinstance(value.type, TensorType):
                (writes if value in written else reads).update(roots.get(value, frozenset({value})))
    return reads, writes


def _only_read(op: Operation, operand: SSAValue) -> bool:
    """Is `operand` one that `op`, a collective, reads and never writes (an all-reduce's or
    reduce-scatter's `own` matmul operands, read from its post to its wait)?"""
    return isinstance(op, hir.OwnProductCollectiveOp) and operand in op.own


def _waits_whole(op: Operation) -> bool:
    return isinstance(op, hir.WaitOp) and op.member is None


def _work(ops: list[Operation]) -> list[Operation]:
    return [op for op in ops if not _placed_where_needed(op)]


def _placed_where_needed(op: Operation) -> bool:
    """Views, index arithmetic and allocations go right before the first op that needs them."""
    return _computes_no_memory(op) or isinstance(op, hir.AllocateOp)


def _computes_no_memory(op: Operation) -> bool:
    return _is_kind(type(op), _NO_MEMORY)


def _movable(op: Operation) -> bool:
    """Can the schedule move `op` past other ops (and them past it)?"""
    for nested in op.walk():
        kind = type(nested)
        if _is_kind(kind, fusion.RandomOp) or not _is_kind(kind, _MOVABLE):
            return False
        if isinstance(nested, hir.PostOnStreamOp) and any(isinstance(o, fusion.RandomOp) for o in nested.unit().walk()):
            return False
    return True


@functools.cache
def _is_kind(kind: type, kinds: type | tuple[type, ...]) -> bool:
    """issubclass, remembered: ops are classes whose isinstance checks are slow, and a block
    of 10,000 ops asks about a few dozen classes."""
    return issubclass(kind, kinds)


@dataclass(frozen=True)
class ScheduleCommunication(ModulePass):
    """Post every collective as early and wait for it as late as its data allow."""

    name = "schedule-communication"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in programs(op):
            schedule_communication(program)

"""`insert-deallocations`: `hir.deallocate` each buffer a host program owns right after
its last use (nvFuser's InsertDeallocations, csrc/host_ir/pass/insert_deallocations.cpp, made
scope-aware).

A buffer is owned by the value that created it: a `hir.allocate`, a compute op without
destination, a `hir.post_on_stream` without `outs`. Other values alias an owner and are
never freed themselves: a `hir.alias_select` view, the result of a compute op written
into a destination, a `hir.post_on_stream` result written into its `outs`. The owner is
freed in the block that defines it, after the op of that block that contains the last
use of any of its aliases, so a buffer used only inside a loop is freed after the loop
(nvFuser 2025 scanned top-level inputs only and never freed those). A collective reads
and writes its buffers until its `hir.wait`, so the waits count as uses. Program inputs
and everything aliasing a program output are never freed, nor is a buffer that already
has a `hir.deallocate` (the pass is idempotent).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from hostir_dialect import hir
from hostir_dialect.diagnostics import located_like
from hostir_dialect.symbols import programs

from .buffer_aliases import alias_classes


def uses_until_done(value: SSAValue) -> list[Operation]:
    """Ops that use `value`'s buffer; for a collective, also the waits on its work."""
    users: list[Operation] = []
    for use in value.uses:
        users.append(use.operation)
        if isinstance(use.operation, hir.CollectiveOp):
            users += [w.operation for w in use.operation.work.uses]
    return users


def insert_deallocations(program: hir.ProgramOp) -> None:
    classes = alias_classes(program)
    terminator = program.body.block.last_op
    assert terminator is not None
    owner_of = {alias: owner for owner, aliases in classes.items() for alias in aliases}
    kept = {value for returned in terminator.operands if returned in owner_of for value in classes[owner_of[returned]]}
    kept |= set(program.args)
    positions = _BlockPositions()
    inserted_after: dict[Operation, Operation] = {}
    for owner, aliases in classes.items():
        if owner in kept:
            continue
        users = [user for alias in aliases for user in uses_until_done(alias)]
        if any(isinstance(user, hir.DeallocateOp) for user in users):
            continue
        anchor = _last_use_in_defining_block(owner, users, positions)
        if anchor is None:
            continue
        owner_op = owner.owner
        assert isinstance(owner_op, Operation)
        dealloc = located_like(hir.DeallocateOp(owner), owner_op)
        Rewriter.insert_op(dealloc, InsertPoint.after(inserted_after.get(anchor, anchor)))
        inserted_after[anchor] = dealloc


class _BlockPositions:
    """Each op's position in its block, numbered once per block (xDSL's
    `Block.get_operation_index` walks the block at every call). Deallocations inserted
    later are never asked about: anchors are ops of the program as it was."""

    def __init__(self) -> None:
        self._by_block: dict[Block, dict[Operation, int]] = {}

    def of(self, op: Operation) -> int:
        block = op.parent_block()
        assert block is not None
        if block not in self._by_block:
            self._by_block[block] = {o: i for i, o in enumerate(block.ops)}
        return self._by_block[block][op]


def _last_use_in_defining_block(owner: SSAValue, users: list[Operation], positions: _BlockPositions) -> Operation | None:
    """The op of the owner's block after which none of the `users` of its buffer is
    left (the owner's definition if there are none); None if the buffer leaves the
    block (a terminator)."""
    defining = owner.owner
    assert isinstance(defining, Operation) and defining.parent_block() is not None
    block = defining.parent_block()
    assert block is not None
    anchors = [block.find_ancestor_op_in_block(user) for user in users]
    last = max((a for a in anchors if a is not None), key=positions.of, default=defining)
    return None if last is block.last_op and last.has_trait(IsTerminator) else last


@dataclass(frozen=True)
class InsertDeallocations(ModulePass):
    """Free every buffer a host program owns after its last use."""

    name = "insert-deallocations"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in programs(op):
            insert_deallocations(program)

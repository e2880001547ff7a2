"""Symmetric buffers in a host program: making the buffer a copy-engine collective's peers
push into symmetric (allocated once per run, or as one slice per iteration of a buffer
allocated before the loop), for convert-op-to-communication and split-by-member
(docs/copy_engine.md)."""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from hostir_dialect import hir
from hostir_dialect.diagnostics import located_like
from hostir_dialect.tensor_type import Axis, TensorType, tensor_type

from .buffer_aliases import alias_source
from .stream_loops import enclosing_loops, forks_streams, trip_count


def symmetric_output(buffer: SSAValue) -> SSAValue:
    """The output of a copy-engine collective whose peers push into it (an all-reduce's
    reduced chunks, with no `via` half to copy them from; a lead's chunk that a
    reduce-scatter's own product adds onto) becomes a view of a symmetric buffer, where
    that buffer is allocated once per run: outside loops (one allocated in a loop, a
    bounded intermediate, keeps its bound). A buffer the program returns is then a result
    its peers write into, whose instance each run is agreed among them
    (runtime/result_sets.py); that needs the buffer returned as itself, not as a view or
    through an op written into it. Returns what now holds `buffer`'s value."""
    return make_symmetric(buffer) if can_be_symmetric_output(buffer) else buffer


def can_be_symmetric_output(buffer: SSAValue) -> bool:
    """Can `symmetric_output` make `buffer` a view of a symmetric buffer?"""
    root = hir.view_root(buffer)
    allocate = root.owner
    return (isinstance(allocate, hir.AllocateOp) and not enclosing_loops(allocate) and not allocate.extents
            and all(value is root for value in returned_aliases(root)))


def symmetric_slice_per_iteration(chunk: TensorType, loop: scf.ForOp, op: Operation, name: str) -> hir.AliasSelectOp:
    """A symmetric buffer holding one `chunk` per iteration of `loop` (`0 to N step 1`),
    allocated before the loop, and the view of the current iteration's chunk (not
    inserted). A symmetric buffer is acquired from the peers, not from an allocator: a
    chunk reused by the next iteration, on another stream, would be overwritten while
    this iteration still reads it."""
    trips = trip_count(loop)
    assert trips is not None  # copy_engine_problem admits only a loop with constant bounds from 0 by 1
    order = (0, *(p + 1 for p in chunk.allocation_order()))
    whole = TensorType.of(chunk.element_type, [Axis(trips), *chunk.axes], chunk.mesh, order)
    allocate = located_like(hir.AllocateOp(whole, symmetric=True), op)
    allocate.result.name_hint = name
    Rewriter.insert_op(allocate, InsertPoint.before(_forking(loop)))
    view = located_like(hir.AliasSelectOp(allocate.result, loop.body.block.args[0], 0, chunk), op)
    view.result.name_hint = f"{name}_i"
    return view


def make_symmetric(buffer: SSAValue) -> SSAValue:
    """The allocation of the buffer `buffer` views becomes symmetric; returns what now
    holds `buffer`'s value. One allocated in a loop (a bounded intermediate, or the op's
    own result) becomes a slice of a symmetric buffer allocated before the loop, one
    slice per iteration."""
    root = hir.view_root(buffer)
    allocate = root.owner
    assert isinstance(allocate, hir.AllocateOp)
    loops = enclosing_loops(allocate)
    if not loops:
        allocate.properties["symmetric"] = UnitAttr()
        return buffer
    for use in list(root.uses):  # the slice is released with its buffer, after the loop
        if isinstance(use.operation, hir.DeallocateOp):
            Rewriter.erase_op(use.operation)
    view = symmetric_slice_per_iteration(tensor_type(root), loops[0], allocate, "gathered")
    Rewriter.replace_op(allocate, view)
    return view.result if root is buffer else buffer


def returned_aliases(buffer: SSAValue) -> list[SSAValue]:
    """The values sharing `buffer`'s memory (itself, its views, what is written into it:
    passes/buffer_aliases.py) that the program returns."""
    returned = [buffer] if any(isinstance(use.operation, hir.ReturnOp) for use in buffer.uses) else []
    for use in buffer.uses:
        user = use.operation
        for result in user.results:
            if alias_source(user, result) is buffer:
                returned += returned_aliases(result)
    return returned


def _forking(loop: scf.ForOp) -> Operation:
    """The first op of `loop`'s stream pipeline: the sync loop in front of it that makes
    every worker stream wait for the user's, else `loop`. A symmetric buffer the
    iterations share is allocated there, on the user's stream, outside the pipeline: its
    acquisition forks from that stream and holds back only the pushes into the peers'
    instances (docs/copy_engine.md)."""
    return loop.prev_op if forks_streams(loop.prev_op) else loop  # type: ignore[return-value]  # forks_streams: an op

"""The shape of the stream loops stream-parallel-type builds, which later passes read and
extend: a sync loop that forks every worker stream from the user's, then the main loop
(see stream_parallel_type.py's module docstring)."""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.ir import Operation, SSAValue

from hostir_dialect import hir
from hostir_dialect.attributes import INDEX
from hostir_dialect.building import constant_integer


def enclosing_loops(op: Operation) -> list[scf.ForOp]:
    """The loops around `op` in its program, innermost first."""
    loops, parent = [], op.parent_op()
    while parent is not None and not isinstance(parent, hir.ProgramOp):
        if isinstance(parent, scf.ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    return loops


def trip_count(loop: scf.ForOp) -> int | None:
    """The iterations of a loop `0 to N step 1` with a constant N (None otherwise)."""
    if constant_integer(loop.lb) != 0 or constant_integer(loop.step) != 1:
        return None
    return constant_integer(loop.ub)


def worker_stream_ops(index: SSAValue) -> list[Operation]:
    """%n = hir.number_of_streams ; %key = arith.remui %index, %n ; %worker = hir.stream %key:
    the worker stream of iteration `index` (iterations of equal residue share a stream)."""
    count = hir.NumberOfStreamsOp()
    # Built by `Operation.create`, as the loops' other ops are (hostir_dialect/building.py).
    key = arith.RemUIOp.create(operands=[index, count.result], result_types=[INDEX])
    worker = hir.StreamOp(key.result)
    count.result.name_hint, key.result.name_hint, worker.result.name_hint = "n", "key", "worker"
    return [count, key, worker]


def forks_streams(op: Operation | None) -> bool:
    """Is `op` a sync loop, whose iterations make their worker stream wait for the user's?"""
    if not isinstance(op, scf.ForOp):
        return False
    last = op.body.block.last_op
    sync = last.prev_op if last is not None else None
    return isinstance(sync, hir.SynchronizeOp) and isinstance(sync.stream.owner, hir.GetCurrentStreamOp)

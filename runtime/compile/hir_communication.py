"""Handlers of hir communication: collectives (through runtime/communicator.py, or
runtime/copy_engine.py for `transport copy_engine`), local shards, send/recv, waits, team
positions."""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.ir import Operation, SSAValue

from hostir_dialect import fusion, hir
from hostir_dialect.diagnostics import describe, op_error
from hostir_dialect.tensor_type import tensor_type

from ..communicator import DONE, CollectiveError, Communicator
from ..hazards import StreamHazard, on_own_stream
from ..layouts import flatten_in_allocation_order
from ..torch_ops import copy_into
from .context import ExecutionError, FunctionCompiler, Handler, on_current_stream, value_name


def _rank(c: FunctionCompiler) -> int:
    """This rank: communication ops are host-program ops, compiled for one rank."""
    assert c.rank is not None
    return c.rank


def _communicator(c: FunctionCompiler) -> Communicator:
    """This rank's communicator (a host program is compiled with one)."""
    assert c.context.comm is not None
    return c.context.comm


def collective(c: FunctionCompiler, op: hir.CollectiveOp) -> None:
    _refuse_strided(op, {"input": op.input, "output": op.output})
    if not op.takes_part(_rank(c)):
        return c.constant(op.work, DONE)
    if op.uses_copy_engine:
        return copy_engine_collective(c, op)
    try:
        post: Callable[..., object] = _communicator(c).poster(op)
    except CollectiveError as error:
        raise op_error(op, str(error)) from None
    if c.context.hazards is not None:
        post = on_own_stream(c.context.hazards, op, post, reads=[0], writes=[1])
    c.emit(f"{c.name(op.work)} = {c.bind(post, 'post')}({c.names_of(op.operands)})")


def copy_engine_collective(c: FunctionCompiler, op: hir.CollectiveOp) -> None:
    """Post through the copy-engine algorithm of `op` on flat views of its buffers."""
    if c.context.copy_engine is None:
        raise op_error(op, "a copy-engine collective needs symmetric buffers: its program allocates none")
    post = c.context.copy_engine.collective(op).post
    flat = c.bind(flatten_in_allocation_order, "flat")
    buffers = [f"{flat}({c.name(v)}, {tensor_type(v).value_allocation_order()!r}, {what!r})"
               for v, what in ((op.input, "input"), (op.output, "output"), (op.via, "via")) if v is not None]
    if isinstance(op, hir.OwnProductCollectiveOp) and op.own:
        buffers.append(f"own=({c.names_of(op.own)})")
    c.emit(f"{c.name(op.work)} = {c.bind(post, 'post')}({', '.join(buffers)})")


def local_shard(c: FunctionCompiler, op: hir.LocalShardOp) -> None:
    """This member's part of its own input, copied into its output: nothing moves between
    devices. The part is a view of the input's logical axis, whatever its layout."""
    team = op.teams.members(_rank(c))
    if team is None:
        return
    member, parts, dim = team.index(c.rank), len(team), op.dim

    def copy(source: torch.Tensor, dest: torch.Tensor) -> None:
        part = source.shape[dim] // parts
        copy_into(dest, source.narrow(dim, member * part, part))

    c.emit(f"{c.bind(copy, 'local_shard')}({c.names_of([op.input, op.output])})")


def point_to_point(c: FunctionCompiler, op: hir.PointToPointOp) -> None:
    _refuse_strided(op, {"buffer": op.buffer})
    if not op.takes_part(_rank(c)):
        return c.constant(op.work, DONE)
    if _communicator(c).backend is None:
        raise op_error(op, "needs torch.distributed; run the program with run_spmd or hostir-run --nproc")
    post: Callable[..., object] = _communicator(c).point_to_point(op)
    if c.context.hazards is not None:
        receives = isinstance(op, hir.RecvOp)
        post = on_own_stream(c.context.hazards, op, post, reads=[] if receives else [0], writes=[0] if receives else [])
    c.emit(f"{c.name(op.work)} = {c.bind(post, 'post')}({c.name(op.buffer)}, {c.name(op.peer)})")


def _refuse_strided(op: Operation, buffers: dict[str, SSAValue]) -> None:
    """Communications move a buffer's memory as one dense block; every rank decides the
    same from the types, before any of them posts (or skips) the op."""
    for role, value in buffers.items():
        if not _is_dense(value):
            raise op_error(op, f"its {role} {value_name(value)} is a strided view (a chunk along an axis that is not "
                               "the outermost allocated one); communications need dense buffers")


def _is_dense(value: SSAValue) -> bool:
    """Is the buffer bound to `value` dense in its type's allocation order? Inputs,
    allocations and fresh results are; a chunk view is when the axis it selects is the
    outermost allocated axis with more than one element; a result written into a buffer
    or view is when that is."""
    owner = value.owner
    if isinstance(owner, hir.AliasViewOp):
        return _is_dense(owner.input) and tensor_type(owner.input).chunk_is_dense(owner.axis_index)
    if isinstance(owner, hir.AliasAsOp):
        return _is_dense(owner.input)
    if isinstance(owner, fusion.ComputeOp) and owner.out is not None:
        return _is_dense(owner.out)
    if isinstance(owner, hir.PostOnStreamOp) and owner.outs:
        return _is_dense(owner.outs[value.index])  # type: ignore[attr-defined]  # a result of the post: an OpResult
    return True


def wait(c: FunctionCompiler, op: hir.WaitOp) -> None:
    work, poster = c.name(op.work), hir.posting_op(op.work)
    member = c.name(op.member) if op.member is not None else "None"

    def incomplete(error: RuntimeError) -> ExecutionError:
        # A peer that never came: the poster is the culprit.
        return ExecutionError(describe(poster, f"did not complete: {str(error).strip()}"))

    c.emit(f"if {work} is None: raise _Unbound('waits for a collective that was never posted')",
           "try:",
           f"    {work}.wait({member})",
           f"except {c.bind(StreamHazard, 'StreamHazard')}:",
           "    raise  # the wait's own work races (a copy-engine collective's): reported at the wait",
           "except RuntimeError as error:",
           f"    raise {c.bind(incomplete, 'incomplete')}(error) from error")


def team_position(c: FunctionCompiler, op: hir.TeamPositionOp) -> None:
    c.constant(op.result, op.position_of(_rank(c)))


HANDLERS: dict[type, Handler] = {
    hir.CollectiveOp: on_current_stream(collective),
    hir.LocalShardOp: on_current_stream(local_shard),
    hir.PointToPointOp: on_current_stream(point_to_point),
    hir.WaitOp: on_current_stream(wait),
    hir.TeamPositionOp: team_position,
}

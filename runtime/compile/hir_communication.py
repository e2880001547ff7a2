"""Handlers of hir communication: collectives (through runtime/communicator.py, or
runtime/copy_engine.py for `transport copy_engine`), send/recv, waits, team positions."""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from hostir_dialect import fusion, hir
from hostir_dialect.diagnostics import describe, op_error
from hostir_dialect.tensor_type import tensor_type

from ..communicator import DONE, CollectiveError
from ..layouts import flatten_in_allocation_order
from .context import ExecutionError, FunctionCompiler, Handler, Step, Unbound, on_current_stream, value_name


def collective(c: FunctionCompiler, op: hir.CollectiveOp) -> Step | None:
    _refuse_strided(op, {"input": op.input, "output": op.output})
    work = c.slot(op.work)
    if not op.takes_part(c.rank):
        c.constant(op.work, DONE)
        return None
    if op.uses_copy_engine:
        return copy_engine_collective(c, op)
    try:
        post = c.context.comm.poster(op)
    except CollectiveError as error:
        raise op_error(op, str(error)) from None
    operands = [c.slot(o) for o in op.operands]
    if len(operands) == 2:  # input and output: the common case, without unpacking a list
        source, dest = operands

        def step(env: list) -> None:
            env[work] = post(env[source], env[dest])

        return step

    def step_with_indices(env: list) -> None:  # hir.shift: its offset too
        env[work] = post(*[env[s] for s in operands])

    return step_with_indices


def copy_engine_collective(c: FunctionCompiler, op: hir.CollectiveOp) -> Step:
    """Post through the copy-engine algorithm of `op` on flat views of its buffers."""
    if c.context.copy_engine is None:
        raise op_error(op, "a copy-engine collective needs symmetric buffers: its program allocates none")
    post = c.context.copy_engine.collective(op).post
    buffers = [(c.slot(v), tensor_type(v).value_allocation_order(), what)
               for v, what in ((op.input, "input"), (op.output, "output"), (op.via, "via")) if v is not None]
    work = c.slot(op.work)

    def step(env: list) -> None:
        env[work] = post(*(flatten_in_allocation_order(env[slot], perm, what) for slot, perm, what in buffers))

    return step


def point_to_point(c: FunctionCompiler, op: hir.PointToPointOp) -> Step | None:
    _refuse_strided(op, {"buffer": op.buffer})
    work = c.slot(op.work)
    if not op.takes_part(c.rank):
        c.constant(op.work, DONE)
        return None
    if c.context.comm.backend is None:
        raise op_error(op, "needs torch.distributed; run the program with run_spmd or hostir-run --nproc")
    post = c.context.comm.point_to_point(op)
    buffer, peer = c.slot(op.buffer), c.slot(op.peer)

    def step(env: list) -> None:
        env[work] = post(env[buffer], env[peer])

    return step


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
    if isinstance(owner, hir.AliasSelectOp):
        return _is_dense(owner.input) and tensor_type(owner.input).chunk_is_dense(owner.axis_index)
    if isinstance(owner, fusion.ComputeOp) and owner.out is not None:
        return _is_dense(owner.out)
    if isinstance(owner, hir.PostOnStreamOp) and owner.outs:
        return _is_dense(owner.outs[value.index])  # type: ignore[attr-defined]
    return True


def wait(c: FunctionCompiler, op: hir.WaitOp) -> Step:
    work, poster = c.slot(op.work), op.work.owner
    member = c.slot(op.member) if op.member is not None else None

    def step(env: list) -> None:
        token = env[work]
        if token is None:
            raise Unbound("waits for a collective that was never posted")
        try:
            token.wait(None if member is None else env[member])
        except RuntimeError as error:  # a peer that never came: the poster is the culprit
            raise ExecutionError(describe(poster, f"did not complete: {str(error).strip()}")) from error

    return step


def team_position(c: FunctionCompiler, op: hir.TeamPositionOp) -> None:
    c.constant(op.result, op.position_of(c.rank))


HANDLERS: dict[type, Handler] = {
    hir.CollectiveOp: on_current_stream(collective),
    hir.PointToPointOp: on_current_stream(point_to_point),
    hir.WaitOp: on_current_stream(wait),
    hir.TeamPositionOp: team_position,
}

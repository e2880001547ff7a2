"""Handlers of control flow and scalars: scf.for and scf.if, arith on host integers and
floats (loop indices, extents, stream keys)."""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.ir import Operation

from hostir_dialect import arith_semantics, hir
from hostir_dialect.diagnostics import op_error
from hostir_dialect.tensor_type import TensorType, tensor_type

from .context import FunctionCompiler, Handler, emit_call, value_name


def arith_constant(c: FunctionCompiler, op: arith.ConstantOp) -> None:
    try:
        c.constant(op.result, arith_semantics.constant_value(op))
    except ValueError as error:
        raise op_error(op, str(error)) from None


def arith_cmpi(c: FunctionCompiler, op: arith.CmpiOp) -> None:
    emit_call(c, arith_semantics.comparison(op.predicate.value.data), op.result, [op.lhs, op.rhs])


def arith_select(c: FunctionCompiler, op: arith.SelectOp) -> None:
    c.emit(f"{c.name(op.result)} = {c.name(op.lhs)} if {c.name(op.cond)} else {c.name(op.rhs)}")


def arith_identity(c: FunctionCompiler, op: Operation) -> None:
    c.emit(f"{c.name(op.results[0])} = {c.name(op.operands[0])}")


def scf_for(c: FunctionCompiler, op: scf.ForOp) -> None:
    if _bound_held_elsewhere(c, op):
        # A stream loop over a tensor of a smaller mesh: where that tensor is not held,
        # the loop does nothing here, and runs no iteration.
        return c.assign(list(map(c.name, op.res)), list(map(c.name, op.iter_args)))
    body = op.body.block
    carried = list(map(c.name, body.args[1:]))
    c.assign(carried, list(map(c.name, op.iter_args)))
    c.emit(f"for {c.name(body.args[0])} in range({c.names_of([op.lb, op.ub, op.step])}):")
    c.loop_depth += 1
    c.emit_block(body)
    c.loop_depth -= 1
    assert body.last_op is not None, "a verified loop body ends with its yield"
    with c.nested():
        c.assign(carried, list(map(c.name, body.last_op.operands)))
    c.assign(list(map(c.name, op.res)), carried)


def _bound_held_elsewhere(c: FunctionCompiler, op: scf.ForOp) -> bool:
    """Is one of the loop's bounds the extent of a tensor this rank does not hold? Then
    the loop must have nothing to do on this rank (refused, located, where it has)."""
    sources = [b.owner for b in (op.lb, op.ub, op.step) if isinstance(b.owner, hir.ExtentOp)]
    missing = next((s.input for s in sources if not tensor_type(s.input).is_on_rank(c.rank)), None)
    if missing is None or not c.local:
        return False
    working = next((inner for inner in op.body.walk() if _works_on_rank(inner, c.rank)), None)
    if working is not None:
        raise op_error(op, f"runs as many times as {value_name(missing)} is long, which rank {c.rank} does not "
                           f"hold, but its '{working.name}' works on rank {c.rank}")
    return True


def _works_on_rank(op: Operation, rank: int | None) -> bool:
    """Does `op` touch a tensor held by `rank`, or communicate with it?"""
    if isinstance(op, (hir.CollectiveOp, hir.PointToPointOp)):
        return rank is not None and op.takes_part(rank)
    values = (*op.operands, *op.results)
    return any(isinstance(v.type, TensorType) and v.type.is_on_rank(rank) for v in values)


def scf_if(c: FunctionCompiler, op: scf.IfOp) -> None:
    results = list(map(c.name, op.output))
    for keyword, region in ((f"if {c.name(op.cond)}:", op.true_region), ("else:", op.false_region)):
        c.emit(keyword)
        if not region.blocks:
            with c.nested():
                c.emit("pass")
            continue
        c.emit_block(region.block)
        with c.nested():
            c.assign(results, list(map(c.name, region.block.last_op.operands)) if region.block.last_op else [])


def arith_binary(c: FunctionCompiler, op: Operation) -> None:
    emit_call(c, arith_semantics.BINARY[type(op)], op.results[0], op.operands)


HANDLERS: dict[type, Handler] = {
    arith.ConstantOp: arith_constant,
    arith.CmpiOp: arith_cmpi,
    arith.SelectOp: arith_select,
    scf.ForOp: scf_for,
    scf.IfOp: scf_if,
    **{cls: arith_identity for cls in arith_semantics.CASTS},
    **{cls: arith_binary for cls in arith_semantics.BINARY},
}

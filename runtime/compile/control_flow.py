"""Handlers of control flow and scalars: scf.for and scf.if, arith on host integers and
floats (loop indices, extents, stream keys)."""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.ir import Operation

from hostir_dialect import arith_semantics
from hostir_dialect.diagnostics import op_error

from .context import FunctionCompiler, Handler, Step, fresh_step, run_steps


def arith_constant(c: FunctionCompiler, op: arith.ConstantOp) -> None:
    try:
        c.constant(op.result, arith_semantics.constant_value(op))
    except ValueError as error:
        raise op_error(op, str(error)) from None


def arith_cmpi(c: FunctionCompiler, op: arith.CmpiOp) -> Step:
    return fresh_step(arith_semantics.comparison(op.predicate.value.data), c.slot(op.result), [c.slot(op.lhs), c.slot(op.rhs)])


def arith_select(c: FunctionCompiler, op: arith.SelectOp) -> Step:
    cond, a, b, result = c.slot(op.cond), c.slot(op.lhs), c.slot(op.rhs), c.slot(op.result)

    def step(env: list) -> None:
        env[result] = env[a] if env[cond] else env[b]

    return step


def arith_identity(c: FunctionCompiler, op: Operation) -> Step:
    return fresh_step(lambda x: x, c.slot(op.results[0]), [c.slot(op.operands[0])])


def scf_for(c: FunctionCompiler, op: scf.ForOp) -> Step:
    body = op.body.block
    lb, ub, st = c.slot(op.lb), c.slot(op.ub), c.slot(op.step)
    iv = c.slot(body.args[0])
    carried = [c.slot(a) for a in body.args[1:]]
    inits = [c.slot(v) for v in op.iter_args]
    results = [c.slot(v) for v in op.res]
    steps, ops = c.block(body)
    yielded = [c.slot(v) for v in body.last_op.operands]
    if not carried:
        def step(env: list) -> None:
            for i in range(env[lb], env[ub], env[st]):
                env[iv] = i
                run_steps(steps, ops, env)
        return step

    def step_carried(env: list) -> None:
        for slot, init in zip(carried, inits):
            env[slot] = env[init]
        for i in range(env[lb], env[ub], env[st]):
            env[iv] = i
            run_steps(steps, ops, env)
            for slot, value in zip(carried, [env[y] for y in yielded]):
                env[slot] = value
        for slot, value in zip(results, carried):
            env[slot] = env[value]

    return step_carried


def scf_if(c: FunctionCompiler, op: scf.IfOp) -> Step:
    cond = c.slot(op.cond)
    results = [c.slot(v) for v in op.output]
    branches = []
    for region in (op.true_region, op.false_region):
        if region.blocks:
            steps, ops = c.block(region.block)
            yielded = [c.slot(v) for v in region.block.last_op.operands] if region.block.last_op else []
        else:
            steps, ops, yielded = [], [], []
        branches.append((steps, ops, yielded))
    (then_steps, then_ops, then_yield), (else_steps, else_ops, else_yield) = branches

    def step(env: list) -> None:
        steps, ops, yielded = (then_steps, then_ops, then_yield) if env[cond] else (else_steps, else_ops, else_yield)
        run_steps(steps, ops, env)
        for slot, value in zip(results, [env[y] for y in yielded]):
            env[slot] = value

    return step


def arith_binary(c: FunctionCompiler, op: Operation) -> Step:
    return fresh_step(arith_semantics.BINARY[type(op)], c.slot(op.results[0]), [c.slot(o) for o in op.operands])


HANDLERS: dict[type, Handler] = {
    arith.ConstantOp: arith_constant,
    arith.CmpiOp: arith_cmpi,
    arith.SelectOp: arith_select,
    scf.ForOp: scf_for,
    scf.IfOp: scf_if,
    **{cls: arith_identity for cls in arith_semantics.CASTS},
    **{cls: arith_binary for cls in arith_semantics.BINARY},
}

"""Which values of a host program share a buffer: views (`hir.alias_select`,
`hir.alias_chunk`, `hir.alias_as`), compute ops written into a destination and kernel units written into
their `outs` alias the buffer they write; every other tensor value owns one. The passes
that place frees (insert-deallocations) or move work (schedule-communication) and the
runtime's buffer analysis (runtime/buffers.py) follow these chains."""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from hostir_dialect import fusion, hir
from hostir_dialect.tensor_type import TensorType


def alias_source(op: Operation, result: SSAValue) -> SSAValue | None:
    """The value whose buffer `result` of `op` aliases, None if it owns a new one."""
    if isinstance(op, hir.VIEW_OPS):
        return op.input
    if isinstance(op, fusion.ComputeOp):
        return op.out
    if isinstance(op, hir.PostOnStreamOp) and op.outs:
        return op.outs[list(op.outputs).index(result)]  # type: ignore[arg-type]  # a result of op, so among its outputs
    return None


def alias_classes(program: hir.ProgramOp) -> dict[SSAValue, list[SSAValue]]:
    """Owner (or program input) -> every tensor value sharing its buffer, itself first."""
    root: dict[SSAValue, SSAValue] = {arg: arg for arg in program.args}
    classes: dict[SSAValue, list[SSAValue]] = {arg: [arg] for arg in program.args}
    for op in program.walk():
        for result in op.results:
            if not isinstance(result.type, TensorType):
                continue
            source = alias_source(op, result)
            root[result] = result if source is None else root[source]
            classes.setdefault(root[result], []).append(result)
    return classes


def written_operands(op: Operation) -> list[SSAValue]:
    """The operands whose memory `op` writes."""
    if isinstance(op, fusion.ComputeOp):
        return [op.out] if op.out is not None else []
    if isinstance(op, hir.PostOnStreamOp):
        return list(op.outs)
    if isinstance(op, (hir.CollectiveOp, hir.LocalShardOp)):
        return [op.output]
    if isinstance(op, hir.RecvOp):
        return [op.buffer]
    return []


def buffer_roots(program: hir.ProgramOp) -> dict[SSAValue, SSAValue]:
    """Each tensor value of `program` -> the owner (or program input) of its buffer."""
    return {alias: owner for owner, aliases in alias_classes(program).items() for alias in aliases}

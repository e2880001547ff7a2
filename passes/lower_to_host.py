"""`lower-to-host`: a `fusion.func` becomes a `hir.program` (nvFuser's HostIrLower::lower).

The fusion is segmented (passes/segmenter.py, default merge predicate). In run order,
a group that is one standalone host op is moved into the program (no destination); any
other group is outlined into a new `fusion.func @<name>_unit<N>` (inputs: the tensors it
reads from outside, outputs: the values used outside it) and called with
`hir.post_on_stream`. The program keeps the fusion's name, signature and returned values.

A module that already holds a `hir.program` and no fusion left to lower is returned
unchanged; `fusion.func`s called by a `hir.post_on_stream` are kernel units, and one with
the signature of a program is that program's reference (hostir_dialect/symbols.py):
neither is lowered. A fusion input may have a stream axis (stream-parallel-type slices it
chunk by chunk, nvFuser's row-parallel overlap), but not be allocated one stream chunk at
a time: the caller passes whole tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from hostir_dialect import fusion, hir
from hostir_dialect.diagnostics import located_like, op_error
from hostir_dialect.sharding import communicates
from hostir_dialect.symbols import functions, fusions_to_lower, programs
from hostir_dialect.tensor_type import TensorType, tensor_type

from .segmenter import Group, MergePredicate, is_standalone_host_op, segment, should_merge_segmented_groups


def lower_module(module: ModuleOp, should_merge: MergePredicate = should_merge_segmented_groups) -> None:
    fusions = fusions_to_lower(module)
    if not fusions and not programs(module):
        raise op_error(module, "holds neither a fusion.func to lower nor a hir.program")
    symbols = {op.sym_name.data for op in functions(module)}
    for func in fusions:
        _check_inputs(func)
        program, units = _ProgramBuilder(func, symbols).build(segment(func, should_merge))
        Rewriter.insert_op([program, *units], InsertPoint.before(func))
        Rewriter.erase_op(func)


def _check_inputs(func: fusion.FuncOp) -> None:
    """Inputs are the caller's buffers, whole: a stream axis of an input is sliced chunk by
    chunk, but no input holds one stream chunk at a time."""
    for index, arg in enumerate(func.args):
        if isinstance(arg.type, TensorType) and arg.type.stream_allocated:
            name = f" (%{arg.name_hint})" if arg.name_hint else ""
            raise op_error(func, f"input {index}{name} is allocated one stream chunk at a time; the caller passes whole tensors")


class _ProgramBuilder:
    """Builds the program of one fusion: scalars re-materialized where used, standalone
    ops moved into it, other groups outlined into units. `mapping` (and a unit's) gives
    the value a block reads for each value of the fusion."""

    def __init__(self, func: fusion.FuncOp, symbols: set[str]):
        self.func = func
        self.symbols = symbols
        self.program = located_like(
            hir.ProgramOp(func.sym_name.data, func.function_type.inputs.data, func.function_type.outputs.data),
            func,
        )
        self.mapping: dict[SSAValue, SSAValue] = _named_like(func.args, self.program.args)
        self.units: list[fusion.FuncOp] = []

    def build(self, groups: list[Group]) -> tuple[hir.ProgramOp, list[fusion.FuncOp]]:
        self._check_ops()
        block = self.program.body.block
        for group in groups:
            if len(group.ops) == 1 and is_standalone_host_op(group.ops[0]):
                _move_into(group.ops[0], block, self.mapping)
            else:
                self._outline(group, block)
        returned = self.func.body.block.last_op
        assert returned is not None
        block.add_op(located_like(hir.ReturnOp(*(self.mapping[v] for v in returned.operands)), returned))
        return self.program, self.units

    def _check_ops(self) -> None:
        for op in self.func.body.block.ops:
            if isinstance(op, (fusion.ComputeOp, fusion.ReturnOp)):
                continue
            if op.regions or any(isinstance(r.type, TensorType) for r in op.results):
                raise op_error(op, "cannot be lowered to a host program: a fusion may only hold fusion compute ops and scalar ops")

    def _outline(self, group: Group, block: Block) -> None:
        """`fusion.func @unit` holding the group + `hir.post_on_stream @unit` calling it."""
        for op in group.ops:
            _check_fusible(op)
        inputs, outputs = group.inputs(), group.outputs()
        name = self._unit_name()
        unit = located_like(fusion.FuncOp(name, [v.type for v in inputs], [v.type for v in outputs]), group.ops[0])
        unit_mapping = _named_like(inputs, unit.args)
        for op in group.ops:
            _move_into(op, unit.body.block, unit_mapping)
        unit.body.block.add_op(located_like(fusion.ReturnOp(*(unit_mapping[v] for v in outputs)), group.ops[-1]))
        self.units.append(unit)
        # A group's outputs are results of its compute ops, which are tensors.
        call = located_like(
            hir.PostOnStreamOp(name, [self.mapping[v] for v in inputs], [tensor_type(v) for v in outputs]), group.ops[0]
        )
        block.add_op(call)
        self.mapping.update(_named_like(outputs, call.outputs))

    def _unit_name(self) -> str:
        base = self.func.sym_name.data
        index = len(self.units)
        while f"{base}_unit{index}" in self.symbols:
            index += 1
        self.symbols.add(f"{base}_unit{index}")
        return f"{base}_unit{index}"


def _named_like(originals, copies) -> dict[SSAValue, SSAValue]:
    """original -> copy, the copies taking the originals' names so the IR stays readable."""
    for original, copy in zip(originals, copies, strict=True):
        copy.name_hint = original.name_hint
    return dict(zip(originals, copies))


def _check_fusible(op: Operation) -> None:
    """A communicating op must stay standalone: inside a unit no pass could turn it into
    a collective and every rank would compute on its local shard alone."""
    if communicates(op):
        raise op_error(op, "communicates between devices and cannot be fused with other ops into a kernel unit")


def _move_into(op: Operation, block: Block, mapping: dict[SSAValue, SSAValue]) -> None:
    """Move `op` of the fusion (which `lower_module` erases: no copy is needed) to the
    end of `block`, reading its operands as `block` does."""
    assert not op.regions, "_check_ops refuses them"
    operands = [_materialized(operand, block, mapping) for operand in op.operands]
    op.detach()
    op.operands = operands
    block.add_op(op)
    mapping.update(zip(op.results, op.results))


def _materialized(value: SSAValue, block: Block, mapping: dict[SSAValue, SSAValue]) -> SSAValue:
    """`value` as `block` reads it; a scalar is re-materialized there (cloned, with the
    scalars it uses) the first time the block reads it."""
    if value not in mapping:
        owner = value.owner
        if not isinstance(owner, Operation) or isinstance(owner, fusion.ComputeOp):
            raise op_error(
                block.parent_op() or owner,  # type: ignore[arg-type]  # a block argument's block has a parent op
                f"a kernel unit cannot take the non-tensor input {value.name_hint or value}; pass scalars as constants",
            )
        for operand in owner.operands:
            _materialized(operand, block, mapping)
        block.add_op(owner.clone_without_regions(value_mapper=mapping))
    return mapping[value]


@dataclass(frozen=True)
class LowerToHost(ModulePass):
    """Turn each user fusion into a hir.program of standalone host ops and kernel units."""

    name = "lower-to-host"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op)

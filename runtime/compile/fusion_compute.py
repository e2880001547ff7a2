"""Handlers of fusion compute: compute ops (through `runtime/torch_ops.py`'s kernels) and
`hir.post_on_stream`, which runs a `fusion.func` unit."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from xdsl.ir import SSAValue

from hostir_dialect import fusion, hir
from hostir_dialect.diagnostics import op_error
from hostir_dialect.sharding import communicates
from hostir_dialect.tensor_type import DYNAMIC, TensorType, tensor_type

from ..buffers import BufferUses
from ..layouts import copied_in_allocation_order, empty_buffer, in_allocation_order, logical_shape, whole_dynamic_device_axes
from ..torch_ops import Kernel, UnsupportedOp, build_kernel, copy_into
from .context import CompiledFunction, FunctionCompiler, Handler, emit_call, emit_call_into, on_current_stream, value_name
from .unit_backends import CompiledUnit


def compute(c: FunctionCompiler, op: fusion.ComputeOp) -> None:
    start = len(c.lines)
    viewed = compute_lines(c, op)
    if len(c.lines) > start:
        # A view of an input writes no memory: recorded as a write, it would be one to the
        # input's (which other streams may read meanwhile).
        c.record_accesses(op, op.tensor_inputs(), [] if viewed else [op.result])


def compute_lines(c: FunctionCompiler, op: fusion.ComputeOp) -> bool:
    """Emit the op's lines; True where its result is a view of an input (nothing written)."""
    # Refusals come before the rank's own business: a rank outside the op's mesh that
    # skipped them would wait forever in a collective for the ranks that refused.
    if c.local:
        c.refuse_unlowered(op, [*op.operands, op.result])
        if communicates(op):
            raise op_error(op, "needs a communication (it reshards its input or reduces a sharded axis) but was "
                               "not lowered to one; run the hostir-lower pipeline first")
    try:
        kernel = build_kernel(op, c.op_context)
    except UnsupportedOp as error:
        raise op_error(op, str(error)) from None
    if not c.on_rank([*op.operands, op.result]):
        return False
    args = op.operands[:-1] if op.out is not None else op.operands  # the destination is last
    dest = c.name(op.out) if op.out is not None else c.destinations.get(op.result)
    if dest is not None:
        shown = value_name(op.out) if op.out is not None else "the post's output"
        emit_call_into(c, checked_into(kernel, op, c.rank), op.result, dest, args, shown)
        return False
    c.refuse_one_chunk(op, [op.result])
    perm = tensor_type(op.result).value_allocation_order()
    viewed = False
    if perm is None and kernel.view is not None and all(map(c.may_view, [*op.tensor_inputs(), op.result])):
        emit_call(c, kernel.view, op.result, args)  # nothing writes or communicates either buffer
        viewed = True
    elif perm is not None and kernel.writes_laid_out and DYNAMIC not in logical_shape(tensor_type(op.result), c.rank):
        laid_out = c.bind(_empty_buffer_of(tensor_type(op.result), c.rank, c.context.device), "laid_out")
        c.emit(f"{c.name(op.result)} = {c.bind(kernel.into)}({', '.join([f'{laid_out}()', *map(c.name, args)])})")
    elif perm is not None and kernel.view is not None:
        # A view laid out anew (a reorder's set): one copy, not a clone and then a permuting copy.
        view = f"{c.bind(kernel.view)}({c.names_of(args)})"
        c.emit(f"{c.name(op.result)} = {c.bind(copied_in_allocation_order, 'copied')}({view}, {perm!r})")
    else:
        # torch keeps an input's strides (a permuted input gives a permuted result): a fresh
        # result is laid out as its type declares, as every buffer is.
        fresh = f"{c.bind(kernel.fresh)}({c.names_of(args)})"
        if perm is None:
            c.emit(f"{c.name(op.result)} = {fresh}.contiguous()")
        else:
            c.emit(f"{c.name(op.result)} = {c.bind(in_allocation_order, 'laid_out')}({fresh}, {perm!r})")
    emit_whole_device_axes_check(c, op.result)
    return viewed


def _empty_buffer_of(t: TensorType, rank: int | None, device: torch.device) -> Callable[[], torch.Tensor]:
    """A fresh buffer of `t` (of static shape) laid out as its type says, each call."""
    return lambda: empty_buffer(t, rank, device)


def emit_whole_device_axes_check(c: FunctionCompiler, value: SSAValue) -> None:
    """A result with a whole device axis of dynamic extent (`? didx`) holds one element of
    it on each device: refuse, at the op, a run whose inputs give that axis another extent
    (a schedule the types cannot check before the extents are known)."""
    t = tensor_type(value)
    whole = {t.value_position(axis): devices for axis, devices in whole_dynamic_device_axes(t).items()}
    if not c.local or not whole:
        return

    def check(result: torch.Tensor) -> None:
        for position, devices in whole.items():
            if result.shape[position] != 1:
                raise ValueError(f"value axis {position} of its result has {result.shape[position] * devices} elements "
                                 f"at run time, but it is parallelized whole over {devices} devices (one element "
                                 "each); split it instead")

    c.emit(f"{c.bind(check, 'whole_device_axes')}({c.name(value)})")


def checked_into(kernel: Kernel, op: fusion.ComputeOp, rank: int | None) -> Callable[..., torch.Tensor]:
    """The kernel's `into`, or, where the destination's shape is only known at run time,
    the same once the shapes are checked (where the kernel knows its result's shape), else
    a copy of a fresh result that checks the shapes first: torch's `out=` resizes a
    destination of another shape (the caller's buffer, perhaps) with only a warning."""
    if DYNAMIC not in logical_shape(tensor_type(op.result), rank):
        return kernel.into
    fresh, into, result_shape = kernel.fresh, kernel.into, kernel.result_shape or elementwise_shape(op)
    if result_shape is None:
        return lambda out, *args: copy_into(out, fresh(*args))
    return lambda out, *args: into(out, *args) if out.shape == result_shape(*args) else copy_into(out, fresh(*args))


def elementwise_shape(op: fusion.ComputeOp) -> Callable[..., tuple[int, ...]] | None:
    """The result shape of an elementwise op from its operands' (None for other ops): its
    input's for one operand (copies and casts included), the broadcast of its tensor
    operands' for two."""
    if isinstance(op, fusion.ElementwiseUnaryOp):
        return lambda x: x.shape
    if isinstance(op, fusion.BinaryComputeOp):
        return lambda *xs: torch.broadcast_shapes(*(x.shape for x in xs if isinstance(x, torch.Tensor)))
    return None


def post_on_stream(c: FunctionCompiler, op: hir.PostOnStreamOp) -> None:
    if c.local:
        c.refuse_unlowered(op, [*op.inputs, *op.outs, *op.outputs])
    if not op.outs:
        c.refuse_one_chunk(op, op.outputs)
    if not c.on_rank([*op.inputs, *op.outs, *op.outputs]):
        return
    if not op.outs:
        compiled = unit(c, op, outs=0, direct=False, views=all(map(c.may_view, [*op.inputs, *op.outputs]))
                        or relabels_while_read(c, op))
        emit_unit_call(c, compiled, op.outputs, op.inputs)
        return c.record_accesses(op, op.inputs, op.outputs)
    # Writing straight into an out buffer that is also an input could clobber the
    # input before the unit has read it: such posts copy their results at the end.
    direct = not set(op.outs) & set(op.inputs)
    compiled = unit(c, op, outs=len(op.outs), direct=direct, views=all(map(c.may_view, op.inputs)))
    outs = list(map(c.name, op.outs))
    c.emit(f"if {' or '.join(f'{o} is None' for o in outs)}: raise _Unbound('an outs buffer is not bound (allocate it first)')")
    emit_unit_call(c, compiled, op.outputs, [*op.inputs, *op.outs])
    c.record_accesses(op, op.inputs, op.outputs)


def relabels_while_read(c: FunctionCompiler, op: hir.PostOnStreamOp) -> bool:
    """A unit that only relabels elements (the layout ops an rFactor puts before a matmul)
    may return views of its inputs where nothing writes them while its results are read."""
    buffers = c.context.program_buffers
    return fusion.moves_no_data(op.unit()) and buffers is not None and buffers.unwritten_while_read(op)


def emit_unit_call(c: FunctionCompiler, compiled: CompiledFunction | CompiledUnit, outputs: Sequence[SSAValue],
                   args: Sequence[SSAValue]) -> None:
    call = f"{c.bind(compiled.run, 'unit')}({c.names_of(args)})"
    c.emit(f"{c.names_of(outputs)}, = {call}" if outputs else call)


def unit(c: FunctionCompiler, op: hir.PostOnStreamOp, outs: int, direct: bool,
         views: bool) -> CompiledFunction | CompiledUnit:
    """The post's `fusion.func`, compiled once per way of being called, by the context's
    unit backend (runtime/compile/unit_backends.py). With `views` (nothing in the program
    writes the post's inputs, nor its results when it has no `outs`), the unit's values
    may be views of each other where the unit does not write them."""
    if c.context.unit_backend == "compiled" and not fusion.moves_no_data(op.unit()):
        return compiled_unit(c, op, outs)
    key = (op.callee_name(), outs, direct, views)
    if key not in c.context.units:
        function = op.unit()
        may_view = BufferUses(function).unwritten if views else _never
        c.context.units[key] = FunctionCompiler(c.context, c.handlers, may_view).function(function, outs, direct)
    return c.context.units[key]


def compiled_unit(c: FunctionCompiler, op: hir.PostOnStreamOp, outs: int) -> CompiledUnit:
    """The post's unit as fused kernels: its function on fresh values, traced by torch.compile."""
    key = (op.callee_name(), outs, "compiled")
    if key not in c.context.units:
        function = op.unit()
        fresh = FunctionCompiler(c.context.for_traced_units(), c.handlers, _never).function(function)
        c.context.units[key] = CompiledUnit(op.callee_name(), fresh, len(function.args),
                                            lambda: unit_eagerly(c, op, outs))
    return c.context.units[key]


def unit_eagerly(c: FunctionCompiler, op: hir.PostOnStreamOp, outs: int) -> CompiledFunction:
    """The eager function a compiled unit falls back to (results copied into `outs`)."""
    key = (op.callee_name(), outs, False, False)
    if key not in c.context.units:
        c.context.units[key] = FunctionCompiler(c.context, c.handlers, _never).function(op.unit(), outs, False)
    return c.context.units[key]


def _never(value: SSAValue) -> bool:
    return False


HANDLERS: dict[type, Handler] = {
    fusion.ComputeOp: on_current_stream(compute),
    hir.PostOnStreamOp: on_current_stream(post_on_stream),
}

"""Handlers of hir buffers and streams: allocate (symmetric buffers acquired from the peers),
deallocate, alias_select, alias_chunk, alias_as, extent, and the stream ops (runtime/streams.py)."""

from __future__ import annotations

import torch

from hostir_dialect import hir
from hostir_dialect.diagnostics import op_error
from hostir_dialect.tensor_type import DYNAMIC, tensor_type

from ..copy_engine import CopyEngineProgram
from ..layouts import empty_buffer, logical_shape, shard_factor, torch_dtype, whole_dynamic_device_axes
from .context import FunctionCompiler, Handler, on_current_stream, value_name


def allocate(c: FunctionCompiler, op: hir.AllocateOp) -> None:
    t = tensor_type(op.result)
    if not c.loop_depth:
        c.refuse_one_chunk(op, [op.result])  # a buffer outside a loop holds every chunk
    shape = logical_shape(t, c.rank)
    if DYNAMIC in shape:
        allocate_dynamic(c, op)  # it refuses what it cannot allocate on every rank first
    elif t.is_on_rank(c.rank) and op.is_symmetric:
        acquire_symmetric(c, op)
    elif t.is_on_rank(c.rank):
        allocate_static(c, op, shape)


def allocate_static(c: FunctionCompiler, op: hir.AllocateOp, shape: tuple[int, ...]) -> None:
    t = tensor_type(op.result)
    result, device = c.name(op.result), c.bind(c.context.device, "device")
    if t.value_allocation_order() is None:
        new = f"{c.bind(torch.empty, 'empty')}({tuple(shape)!r}, dtype={c.bind(torch_dtype(t), 'dtype')}, device={device})"
    else:
        new = f"{c.bind(empty_buffer, 'empty_buffer')}({c.bind(t, 'type')}, {c.rank!r}, {device})"
    c.emit(f"if {result} is None: {result} = {new}")


def allocate_dynamic(c: FunctionCompiler, op: hir.AllocateOp) -> None:
    """A buffer whose local shape depends on the extents `op` reads at run time."""
    t = tensor_type(op.result)
    shown = ["?" if e == DYNAMIC else e for e in logical_shape(t, c.rank)]
    if not op.extents:
        raise op_error(op, f"cannot allocate {t}: its local shape {shown} is dynamic and no input provides its extent")
    if op.is_symmetric:
        raise op_error(op, f"cannot allocate {t}: a symmetric buffer is created at compile time, and its local shape {shown} is dynamic")
    axes = t.dynamic_value_axes()
    if any(t.local_extent(a, extent=1) == DYNAMIC for a in axes):
        raise op_error(op, f"cannot allocate {t}: a dynamic device or stream piece leaves its local shape {shown} unknown")
    if not t.is_on_rank(c.rank):
        return
    for extent in op.extents:
        source = extent.owner
        if isinstance(source, hir.ExtentOp) and not tensor_type(source.input).is_on_rank(c.rank):
            raise op_error(op, f"cannot allocate {t} on rank {c.rank}: its extent is read from "
                               f"{value_name(source.input)}, which this rank does not hold")
    positions = [t.value_position(a) for a in axes]
    factors = [t.axes[a].split_factor for a in axes]
    whole = whole_dynamic_device_axes(t)
    rank, device, static_shape = c.rank, c.context.device, logical_shape(t, c.rank)

    def new(*extents: int) -> torch.Tensor:
        shape = list(static_shape)
        for position, axis, factor, extent in zip(positions, axes, factors, extents):
            # Every rank holding the buffer reads the same logical extent, so all refuse here.
            if extent % factor:
                raise ValueError(f"axis {axis} has extent {extent} at run time, which its split factor {factor} does not divide")
            if whole.get(axis, extent) != extent:
                raise ValueError(f"axis {axis} has extent {extent} at run time, but it is parallelized whole over "
                                 f"{whole[axis]} devices (one element each); split it instead")
            shape[position] = t.local_extent(axis, extent=extent)
        return empty_buffer(t, rank, device, shape)

    result = c.name(op.result)
    c.emit(f"if {result} is None: {result} = {c.bind(new, 'allocate')}({c.names_of(op.extents)})")


def acquire_symmetric(c: FunctionCompiler, op: hir.AllocateOp) -> None:
    """Bind this rank's instance of the symmetric buffer (created once, when the
    program was compiled) once every peer is done with its own (docs/copy_engine.md)."""
    c.emit(f"{c.name(op.result)} = {c.bind(_copy_engine(c).acquire(op), 'acquire')}()")


def _copy_engine(c: FunctionCompiler) -> CopyEngineProgram:
    copy_engine = c.context.copy_engine
    assert copy_engine is not None, "a program with symmetric buffers has its copy-engine state"
    return copy_engine


def deallocate(c: FunctionCompiler, op: hir.DeallocateOp) -> None:
    """Drop the buffer and every value that aliases it (results written into it), so
    the memory really goes back to the allocator; a symmetric buffer stays (every run
    reuses it) and is released to the peers instead."""
    owner = op.buffer.owner
    if isinstance(owner, hir.AllocateOp) and owner.is_symmetric:
        if not tensor_type(op.buffer).is_on_rank(c.rank):
            return
        c.emit(f"{c.bind(_copy_engine(c).release(owner, op), 'release')}()")
    else:
        c.record_free(op, op.buffer)
    c.emit(f"{' = '.join(map(c.name, op.freed_values()))} = None")


def alias_select(c: FunctionCompiler, op: hir.AliasSelectOp) -> None:
    t = tensor_type(op.input)
    if not t.is_on_rank(c.rank):
        return
    axis = op.axis_index
    # A broadcast axis has one element; a stream-allocated buffer holds one chunk; a
    # rank holds one slice of a device-sharded axis, its own (the verifier checked the index).
    one_element = t.axes[axis].is_broadcast or _holds_one_chunk(c, op) or (c.local and op.selects_own_shard())
    index = "0" if one_element else c.name(op.index)
    c.emit(f"{c.name(op.result)} = {c.name(op.input)}.select({t.value_position(axis)}, {index})")


def alias_chunk(c: FunctionCompiler, op: hir.AliasChunkOp) -> None:
    t = tensor_type(op.input)
    if not t.is_on_rank(c.rank):
        return
    axis, parts = op.axis_index, op.part_count
    if _holds_one_chunk(c, op):
        c.emit(f"{c.name(op.result)} = {c.name(op.input)}")
        return
    position = t.value_position(axis)

    def chunk(whole: torch.Tensor, index: int) -> torch.Tensor:
        extent = whole.shape[position]
        if extent % parts:  # the split says it divides; every rank holding it reads the same extent
            raise ValueError(f"axis {axis} has extent {extent} at run time, which its {parts} stream chunks do not divide")
        return whole.narrow(position, index * (extent // parts), extent // parts)

    c.emit(f"{c.name(op.result)} = {c.bind(chunk, 'chunk')}({c.name(op.input)}, {c.name(op.index)})")


def alias_as(c: FunctionCompiler, op: hir.AliasAsOp) -> None:
    if tensor_type(op.input).is_on_rank(c.rank):
        c.emit(f"{c.name(op.result)} = {c.name(op.input)}.view({logical_shape(tensor_type(op.result), c.rank)})")


def _holds_one_chunk(c: FunctionCompiler, view: hir.AliasViewOp) -> bool:
    """Does this rank's buffer hold one chunk of the view's axis (stream-allocated)?"""
    t = tensor_type(view.input)
    return c.local and t.stream_allocated and view.axis_index == t.stream_axis()


def extent(c: FunctionCompiler, op: hir.ExtentOp) -> None:
    t = tensor_type(op.input)
    axis = op.axis.value.data
    if t.axes[axis].extent != DYNAMIC:
        c.constant(op.result, t.axes[axis].extent)
        return
    if t.axes[axis].is_reduction:
        raise op_error(op, "the extent of a dynamic reduction axis is not stored in any buffer")
    factor = shard_factor(t, axis) if c.local else 1
    if factor is None:
        raise op_error(op, "a dynamic stream-allocated axis has no known extent")
    if c.local and not t.is_on_rank(c.rank):
        return  # only ranks holding the input read it (and allocate what it sizes)
    c.emit(f"{c.name(op.result)} = {c.name(op.input)}.shape[{t.value_position(axis)}] * {factor}")


def get_current_stream(c: FunctionCompiler, op: hir.GetCurrentStreamOp) -> None:
    c.emit(f"{c.name(op.result)} = _streams.current()")


def stream(c: FunctionCompiler, op: hir.StreamOp) -> None:
    key, count = c.name(op.key), c.context.number_of_streams
    c.emit(f"if not 0 <= {key} < {count}: {c.bind(refuse_stream_key, 'refuse')}({key}, {count})",
           f"{c.name(op.result)} = _streams.get({key})")


def refuse_stream_key(key: int, count: int) -> None:
    raise ValueError(f"stream key {key} is outside the run's {count} streams (keys 0 to {count - 1})")


def set_current_stream(c: FunctionCompiler, op: hir.SetCurrentStreamOp) -> None:
    c.emit(f"_streams.set_current({c.name(op.stream)})")


def synchronize(c: FunctionCompiler, op: hir.SynchronizeOp) -> None:
    c.emit(f"_streams.synchronize({c.name(op.stream)})")


def number_of_streams(c: FunctionCompiler, op: hir.NumberOfStreamsOp) -> None:
    c.constant(op.result, c.context.number_of_streams)


HANDLERS: dict[type, Handler] = {
    hir.AllocateOp: on_current_stream(allocate),
    hir.DeallocateOp: on_current_stream(deallocate),
    hir.AliasSelectOp: alias_select,
    hir.AliasChunkOp: alias_chunk,
    hir.AliasAsOp: alias_as,
    hir.ExtentOp: extent,
    hir.GetCurrentStreamOp: get_current_stream,
    hir.StreamOp: stream,
    hir.SetCurrentStreamOp: set_current_stream,
    hir.SynchronizeOp: synchronize,
    hir.NumberOfStreamsOp: number_of_streams,
}

"""Handlers of hir buffers and streams: allocate (symmetric buffers acquired from the peers),
deallocate, alias_select, extent, and the stream ops (runtime/streams.py)."""

from __future__ import annotations

import torch

from hostir_dialect import hir
from hostir_dialect.diagnostics import op_error
from hostir_dialect.tensor_type import DYNAMIC, tensor_type

from ..layouts import empty_buffer, logical_shape, shard_factor, torch_dtype
from .context import FunctionCompiler, Handler, Step, on_current_stream


def allocate(c: FunctionCompiler, op: hir.AllocateOp) -> Step | None:
    t = tensor_type(op.result)
    if not c.loop_depth:
        c.refuse_one_chunk(op, [op.result])  # a buffer outside a loop holds every chunk
    shape = logical_shape(t, c.rank)
    if DYNAMIC in shape:
        return allocate_dynamic(c, op)
    if not t.is_on_rank(c.rank):
        return None
    if op.is_symmetric:
        return acquire_symmetric(c, op)
    result, rank, device = c.slot(op.result), c.rank, c.context.device
    if t.value_allocation_order() is None:
        dtype = torch_dtype(t)

        def step(env: list) -> None:
            if env[result] is None:
                env[result] = torch.empty(shape, dtype=dtype, device=device)
    else:
        def step(env: list) -> None:
            if env[result] is None:
                env[result] = empty_buffer(t, rank, device)
    return step


def allocate_dynamic(c: FunctionCompiler, op: hir.AllocateOp) -> Step | None:
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
        return None
    positions = [t.value_position(a) for a in axes]
    factors = [t.axes[a].split_factor for a in axes]
    extents, result, rank, device = [c.slot(e) for e in op.extents], c.slot(op.result), c.rank, c.context.device

    def step(env: list) -> None:
        if env[result] is None:
            shape = list(logical_shape(t, rank))
            for position, axis, factor, extent in zip(positions, axes, factors, extents):
                if env[extent] % factor:
                    # Every rank holding the buffer reads the same logical extent, so all refuse here.
                    raise ValueError(f"axis {axis} has extent {env[extent]} at run time, which its split factor {factor} does not divide")
                shape[position] = t.local_extent(axis, extent=env[extent])
            env[result] = empty_buffer(t, rank, device, shape)

    return step


def acquire_symmetric(c: FunctionCompiler, op: hir.AllocateOp) -> Step:
    """Bind this rank's instance of the symmetric buffer (created once, when the
    program was compiled) once every peer is done with its own (docs/copy_engine.md)."""
    acquire, result = c.context.copy_engine.acquire(op), c.slot(op.result)

    def step(env: list) -> None:
        env[result] = acquire()

    return step


def deallocate(c: FunctionCompiler, op: hir.DeallocateOp) -> Step | None:
    """Drop the buffer and every value that aliases it (results written into it), so
    the memory really goes back to the allocator; a symmetric buffer stays (every run
    reuses it) and is released to the peers instead."""
    slots = [c.slot(v) for v in op.freed_values()]
    owner = op.buffer.owner
    if isinstance(owner, hir.AllocateOp) and owner.is_symmetric:
        if not tensor_type(op.buffer).is_on_rank(c.rank):
            return None
        release = c.context.copy_engine.release(owner)

        def step(env: list) -> None:
            release()
            for slot in slots:
                env[slot] = None

        return step

    def step(env: list) -> None:
        for slot in slots:
            env[slot] = None

    return step


def alias_select(c: FunctionCompiler, op: hir.AliasSelectOp) -> Step | None:
    t = tensor_type(op.input)
    if not t.is_on_rank(c.rank):
        return None
    axis = op.axis_index
    chosen = t.axes[axis]
    if c.local and any(p.parallel.is_device for p in chosen.pieces):
        raise op_error(op, f"selects on axis {axis}, which is sharded across devices")
    dim = t.value_position(axis)
    source, result = c.slot(op.input), c.slot(op.result)
    one_chunk = c.local and t.stream_allocated and axis == t.stream_axis()
    if chosen.is_broadcast or one_chunk:
        # A broadcast axis has one element; a stream-allocated buffer holds one chunk.
        def step(env: list) -> None:
            env[result] = env[source].select(dim, 0)
    else:
        index = c.slot(op.index)

        def step(env: list) -> None:
            env[result] = env[source].select(dim, env[index])
    return step


def extent(c: FunctionCompiler, op: hir.ExtentOp) -> Step | None:
    t = tensor_type(op.input)
    axis = op.axis.value.data
    if t.axes[axis].extent != DYNAMIC:
        c.constant(op.result, t.axes[axis].extent)
        return None
    if t.axes[axis].is_reduction:
        raise op_error(op, "the extent of a dynamic reduction axis is not stored in any buffer")
    dim = t.value_position(axis)
    factor = shard_factor(t, axis) if c.local else 1
    if factor is None:
        raise op_error(op, "a dynamic stream-allocated axis has no known extent")
    if c.local and not t.is_on_rank(c.rank):
        return None  # only ranks holding the input read it (and allocate what it sizes)
    source, result = c.slot(op.input), c.slot(op.result)

    def step(env: list) -> None:
        env[result] = env[source].shape[dim] * factor

    return step


def get_current_stream(c: FunctionCompiler, op: hir.GetCurrentStreamOp) -> Step:
    current, result = c.context.streams.current, c.slot(op.result)

    def step(env: list) -> None:
        env[result] = current()

    return step


def stream(c: FunctionCompiler, op: hir.StreamOp) -> Step:
    get, key, result = c.context.streams.get, c.slot(op.key), c.slot(op.result)

    def step(env: list) -> None:
        env[result] = get(env[key])

    return step


def set_current_stream(c: FunctionCompiler, op: hir.SetCurrentStreamOp) -> Step:
    set_current, stream = c.context.streams.set_current, c.slot(op.stream)

    def step(env: list) -> None:
        set_current(env[stream])

    return step


def synchronize(c: FunctionCompiler, op: hir.SynchronizeOp) -> Step:
    synchronize, stream = c.context.streams.synchronize, c.slot(op.stream)

    def step(env: list) -> None:
        synchronize(env[stream])

    return step


def number_of_streams(c: FunctionCompiler, op: hir.NumberOfStreamsOp) -> None:
    c.constant(op.result, c.context.number_of_streams)


HANDLERS: dict[type, Handler] = {
    hir.AllocateOp: on_current_stream(allocate),
    hir.DeallocateOp: on_current_stream(deallocate),
    hir.AliasSelectOp: alias_select,
    hir.ExtentOp: extent,
    hir.GetCurrentStreamOp: get_current_stream,
    hir.StreamOp: stream,
    hir.SetCurrentStreamOp: set_current_stream,
    hir.SynchronizeOp: synchronize,
    hir.NumberOfStreamsOp: number_of_streams,
}

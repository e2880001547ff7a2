"""`reorder-sharded-axis`: lay out the buffers of every communication as its collective
needs them (nvFuser's ReorderShardedAxisPass, csrc/preseg_passes/reorder_sharded_axis.cpp).

A collective works on flat buffers (runtime/communicator.py): the device piece of the
axis it scatters must be outermost in its input's buffer, the one of the axis it gathers
outermost in its result's, and the rest of a team chunk laid out alike on both sides
(`sharding_policy.layout_problem`). nvFuser permutes the communicated axis to the front
before the set and back after it. Here the local copies that do this are `fusion.set`s
that change the allocation order only, so that the communication stays one set or reduce
of the same logical axes:

    y = set|reduce x                  laid out wrongly for its collective
->  x' = set x       alloc [s, c, g, rest]     local: x's sharding, y's Stream axis
    y' = set|reduce x'   alloc [s, g, c, rest]  the communication
    y  = set y'      y's value type            local

s: y's Stream axis (its loop slices it away), c: the axis the collective scatters, g:
the one it gathers, rest: the other axes in logical order. A copy is left out where its
buffer is already laid out so, and where x is a matmul's own result that only the
collective reads, laid out anew with its rows and columns still innermost: the matmul
computes in that layout instead (its result typed so; the runtime writes it with one
strided-batched GEMM per index of its outermost axis): a reduce-scatter of overlap.py's
layout run whole, `[S, D (K), D (rows), m, k]`, whose row blocks lie inside the S axis.
The copies are sets, which stream-parallel-type computes one chunk at a time, so with a
Stream axis all three run in y's loop, chunk by chunk: this is why allocation orders
rather than permutes (a permute is not computed per chunk). The copy after a reduce drops
the reduce's reduction axes from the value's type (not from its value), as nvFuser's
permute back does.

An all-to-all whose scattered and gathered axes both keep more than one element per
device cannot be laid out by an order of the logical axes (a chunk needs c's device
piece first and c's local part after g's). The scattered axis is split first:

    x2 = reshape x       c -> [D, c/D], alloc [s, D, g, c/D, rest]   (whole, before any loop)
    y2 = set x2          D sharded instead of g, alloc [s, g, D, c/D, rest]
    y  = reshape y2      y's type (computed whole; a set puts back y's Stream axis)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from hostir_dialect.diagnostics import HostIRError, located_like, op_error
from hostir_dialect.fusion import ComputeOp, MatmulOp, ReduceOp, ReshapeOp, SetOp
from hostir_dialect.sharding import communicates
from hostir_dialect.symbols import fusions_to_lower
from hostir_dialect.tensor_type import Axis, ParallelKind, Piece, TensorType, tensor_type

from .sharding_policy import (
    INNER_SPLIT,
    Exchange,
    ShardingError,
    buffer_order,
    layout_problem,
    propagate_parallel_types,
    sharding_changes,
    unlowerable_inner_split,
)


@dataclass(frozen=True)
class Layout:
    """The memory orders, as result axes, that a communication's two buffers need."""

    sent: list[int]
    received: list[int]

    @staticmethod
    def of(op: SetOp | ReduceOp, exchange: Exchange) -> Layout:
        target = tensor_type(op.result)
        stream = target.stream_axis()
        lead = [a for a in (stream, exchange.scattered, exchange.gathered) if a is not None]
        rest = [a for a in range(target.rank) if a not in lead]
        received = [a for a in (stream, exchange.gathered, exchange.scattered) if a is not None]
        return Layout(lead + rest, received + rest)


class ReorderShardedAxis(RewritePattern):
    """Local copies around a communication whose buffers its collective cannot use as
    they are (see the module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SetOp | ReduceOp, rewriter: PatternRewriter) -> None:
        if not _is_one_communication(op):
            return
        stream = tensor_type(op.result).stream_axis()
        if layout_problem(op, stream) is None:
            return
        exchange = Exchange.of(op, stream)
        try:
            if stream is not None and stream == exchange.scattered:
                # The axis has a device piece and a Stream piece, one of them inner.
                raise ShardingError(INNER_SPLIT)
            if isinstance(op, SetOp) and _needs_split(op, exchange):  # an all-to-all: a set
                _split_scattered_axis(op, exchange, rewriter)
            else:
                _copy_around(op, Layout.of(op, exchange), rewriter)
        except ShardingError as error:  # e.g. a Stream on an inner split, which no copy can carry
            raise op_error(op, str(error)) from None


def _is_one_communication(op: SetOp | ReduceOp) -> bool:
    """A communication convert-op-to-communication could lower but for its layout;
    anything else is left to the passes that report it (a device type on an inner
    split among them: no allocation order lays out its shards)."""
    source, target = tensor_type(op.input), tensor_type(op.result)
    if not communicates(op) or source.mesh is None or target.mesh is None:
        return False
    if unlowerable_inner_split(op) is not None:
        return False
    return len(sharding_changes(source, target, op.axis_map(op.input))) <= 1


def _needs_split(op: SetOp | ReduceOp, exchange: Exchange) -> bool:
    """An all-to-all whose scattered axis and gathered axis both keep more than one
    element per device in its chunks."""
    if exchange.scattered is None or exchange.gathered is None:
        return False
    source, target = tensor_type(op.input), tensor_type(op.result)
    gathered = next(a for a, r in op.axis_map(op.input).items() if r == exchange.gathered)
    return source.local_extent(gathered) != 1 and target.local_extent(exchange.scattered) != 1


def _copy_around(op: SetOp | ReduceOp, layout: Layout, rewriter: PatternRewriter) -> None:
    source, target = tensor_type(op.input), tensor_type(op.result)
    identity = {i: i for i in range(target.rank)}
    sent = _streamed_like(target, _value_type(source)).with_(alloc_order=tuple(layout.sent))
    if buffer_order(source, op.axis_map(op.input)) != buffer_order(sent, identity):
        if (laid_out := _produced_laid_out(op.input, sent)) is not None:
            rewriter.replace_value_with_new_type(op.input, laid_out)
        else:
            copy = located_like(SetOp(op.input, sent), op)
            rewriter.insert(copy, InsertPoint.before(op))
            op.operands[0] = copy.result
    received = target.with_(alloc_order=tuple(layout.received))
    if buffer_order(target, identity) != buffer_order(received, identity):
        communicated = rewriter.replace_value_with_new_type(op.result, received)
        copy = located_like(SetOp(communicated, target.value_type()), op)
        rewriter.insert(copy, InsertPoint.after(op))
        communicated.replace_uses_with_if(copy.result, lambda use: use.operation is not copy)
    rewriter.notify_op_modified(op)


def _produced_laid_out(value: SSAValue, sent: TensorType) -> TensorType | None:
    """`value`'s type laid out as `sent` (the collective's input) where its producer can
    compute it so, in place of a copy into that layout: a matmul's own result that only
    the collective reads, whose value `sent` only lays out anew with its last two axes
    still innermost (the runtime writes it with one GEMM per index of its outermost axis,
    runtime/torch_ops.py); None otherwise."""
    producer, t = value.owner, tensor_type(value)
    if not isinstance(producer, MatmulOp) or producer.out is not None or not value.has_one_use():
        return None
    if sent.with_(alloc_order=None) != _value_type(t):
        return None  # not a layout only (the copy would add a stream axis, say)
    order = sent.allocation_order()
    if order[-2:] != (sent.rank - 2, sent.rank - 1):
        return None
    positions = t.value_positions()
    reductions = [a for a in range(t.rank) if t.axes[a].is_reduction]
    return t.with_(alloc_order=tuple(positions[a] for a in order) + tuple(reductions))


def _split_scattered_axis(op: SetOp, exchange: Exchange, rewriter: PatternRewriter) -> None:
    """x2 = reshape x ; y2 = set x2 ; y = reshape y2 (module docstring), c split in two."""
    source, target = tensor_type(op.input), tensor_type(op.result)
    scattered, gathered = exchange.scattered, exchange.gathered
    assert scattered is not None and gathered is not None
    devices = target.mesh.axis_size(exchange.parallel)  # type: ignore[union-attr]  # an exchange's tensors have a mesh
    split = target.axes[scattered]
    part = Axis(split.extent // devices)
    stream = target.stream_axis()

    def position(axis: int) -> int:  # a result axis after the split
        return axis + (axis > scattered)

    sent_axes = _split(source.value_axes(), scattered, Axis(devices), part)
    lead = [position(a) for a in (stream, scattered, gathered) if a is not None]
    lead.insert(lead.index(position(gathered)) + 1, scattered + 1)
    rest = [a for a in range(len(sent_axes)) if a not in lead]
    sent = _tensor(source, sent_axes, source.mesh).with_(alloc_order=tuple(lead + rest))
    x2 = _emit(rewriter, op, ReshapeOp(op.input, sent))

    device_axis = Axis(devices, pieces=(Piece(devices, exchange.parallel),))
    received_axes = [a.unparallelized() if i == position(gathered) else a for i, a in enumerate(sent_axes)]
    received_axes[scattered] = device_axis
    if stream is not None:
        received_axes[position(stream)] = target.axes[stream]
    received_lead = [position(a) for a in (stream, gathered) if a is not None] + [scattered, scattered + 1]
    received = _tensor(target, received_axes, target.mesh).with_(
        alloc_order=tuple(received_lead + [a for a in rest if a not in received_lead])
    )
    y2 = _emit(rewriter, op, SetOp(x2, received))
    whole = target.value_type().with_(axes=tuple(_without_stream(a) for a in target.value_axes()))
    value = _emit(rewriter, op, ReshapeOp(y2, whole))
    if stream is not None:
        value = _emit(rewriter, op, SetOp(value, target.value_type()))
    rewriter.replace(op, [], [value])


def _split(axes: Sequence[Axis], index: int, outer: Axis, inner: Axis) -> list[Axis]:
    return [*axes[:index], outer, inner, *axes[index + 1 :]]


def _without_stream(axis: Axis) -> Axis:
    return axis.unparallelized() if ParallelKind.STREAM in axis.parallel_types() else axis


def _tensor(like: TensorType, axes: Sequence[Axis], mesh) -> TensorType:
    return TensorType.of(like.element_type, list(axes), mesh)


def _value_type(t: TensorType) -> TensorType:
    """`t` as a set of it produces it: its value axes, the same sharding and mesh."""
    return _tensor(t, t.value_axes(), t.mesh)


def _streamed_like(target: TensorType, t: TensorType) -> TensorType:
    """`t` (axes matching `target`'s) with `target`'s Stream axis, so that a copy of it
    runs in `target`'s stream loop."""
    return propagate_parallel_types(target, t, {i: i for i in range(target.rank)}, (ParallelKind.STREAM,))


def _emit(rewriter: PatternRewriter, like: Operation, op: ComputeOp) -> SSAValue:
    rewriter.insert(located_like(op, like), InsertPoint.before(like))
    return op.result


@dataclass(frozen=True)
class ReorderShardedAxisPass(ModulePass):
    """Lay out the buffers of each communication as its collective needs them (local copies around it)."""

    name = "reorder-sharded-axis"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        walker = PatternRewriteWalker(ReorderShardedAxis(), apply_recursively=False)
        for func in fusions_to_lower(op):
            try:
                walker.rewrite_region(func.body)
            except HostIRError as error:
                error.__notes__ = []  # the walker attaches a print of the whole module
                raise
            func.update_function_type()

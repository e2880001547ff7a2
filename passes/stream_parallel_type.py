"""`stream-parallel-type`: stream-parallel host ops become pipelined loops over stream
chunks (nvFuser's hir_pass::StreamParallelType, csrc/host_ir/pass/stream_parallel_type.cpp).

Input: `hir.program`s whose bodies list, in run order, standalone fusion compute ops
(without destinations) and `hir.post_on_stream` calls, as `lower-to-host` builds them.
An op is *stream-parallel* when each of its results has a `stream` axis (of one extent).
It is *sliced* (`Slicing`) when one chunk of its results along those axes is the op
applied to chunks of its operands: a standalone op through the `StreamSliceable`
interface, a kernel unit when every op of the unit is (beyond nvFuser, which only
pipelines standalone host ops). A stream axis is whole (a chunk selects one element of
it: `hir.alias_select`) or split with Stream on its static outer piece (nvFuser's
`outer_split` then Stream: a chunk is one of S contiguous blocks and keeps the axis,
`hir.alias_chunk`; passes/chunking.py). A stream-parallel op that cannot be sliced -- a
stream axis that is reduced or split otherwise (with a located UnpipelinedStreamWarning),
a chunk that would cut a device-parallel axis, an op whose chunks are not the op of
chunks -- runs whole, outside any loop: Stream only says
how to schedule a computation, never what it computes, so this pass refuses nothing
but inputs allocated one stream chunk at a time (the caller passes whole tensors; a stream
axis of an input is sliced chunk by chunk, as nvFuser's row-parallel overlap does). Four steps:

1. group: adjacent sliced ops whose stream axes map (through the axis maps, broadcast
   axes included), or that read nothing the loop computes and have its extent, share
   one loop; any other op in between closes the loop, unless it
   reads nothing the loop computes: index arithmetic, and loop-invariant computations
   such as the reshape, broadcast or transpose of a weight an rFactor inserts between
   two matmuls, move in front of the loop instead (so a layer is one loop, not one per
   matmul).
2. hoist allocations: each body output is allocated full-size before the loop, and uses of
   the op's result after the loop read that buffer.
3. slice the body: every tensor an op reads or writes is sliced with one
   `hir.alias_select %t[%i] axis A` per tensor and loop (A: its logical axis mapped to the
   loop's stream axis; tensors without one are passed whole); the op then writes through
   its destination, `%r = fusion.matmul %a_i, %b into %c_i`, and a post calls its unit
   rewritten to compute chunks, `hir.post_on_stream @unit(%a_i) outs(%c_i)`. An
   iteration runs first what waits for no communication the loop receives (`_body_order`:
   two independent pipelines, as an attention block's, send before they receive).
4. stream management: the user's stream is captured once; a separate sync loop makes every
   worker stream `i % numberOfStreams` wait for it (syncing inside the main loop kills
   overlap, nvFuser #4402); the main loop runs each iteration on its worker stream and makes
   the user stream wait for it at the end of the iteration. Nothing blocks the host.
   (order-chunk-compute later chains the compute of loops that only send, and joins their
   workers after the loop instead.)

Each loop becomes, at the position of its first op:

    %c0, %c1, %ub                           loop bounds (%ub: constant, or hir.extent)
    %buf = hir.allocate : T                 one per body output
    %user = hir.get_current_stream
    scf.for %i = %c0 to %ub step %c1 {      sync loop
      %n = hir.number_of_streams ; %k = arith.remui %i, %n ; %w = hir.stream %k
      hir.set_current_stream %w ; hir.synchronize %user
    }
    scf.for %i = %c0 to %ub step %c1 {      main loop
      (same %w) hir.set_current_stream %w
      hir.alias_select ... ; fusion.<op> ... into ...      the body
      hir.set_current_stream %user ; hir.synchronize %w
    }

Improvements over nvFuser: an op is not merged into a loop when it would read, in one
iteration, a chunk other iterations of that loop produce (an operand made in the loop but
sliced on another axis, or read whole); ops with several results are accepted.

A stream-allocated mark (`alloc=[0 stream, ..]`, finalize-multidevice-domains) is dropped
from every tensor: a loop writes every chunk of its full-size buffers, and what runs
whole holds every chunk.

DID -> Stream sets become a ring of point-to-point copies (nvFuser #4515, "linear
allgather"): when a set's result has its stream axis where its input has an axis sharded
over the D devices of a 1-D mesh (`a: [D didx, m, k]` -> `set` -> `[D stream, m, k]`),
iteration i of the set's loop handles the chunk of team member p = (me + i) mod D, where
me is this rank's position (`hir.team_position`): every op of the loop works on chunk p,
and the set becomes a `hir.shift` by offset i, which receives member p's whole shard into
chunk p and sends this rank's shard to member (me - i) mod D. Iteration 0 is a local copy
of this rank's own shard (own-first: the first compute needs no communication). Since
each rank visits the chunks in its own order, a ring loop holds no other communication:
a communicating op closes it and starts a loop of its own. An axis split over the D
devices outermost (`[8(D didx, 4)]`) whose set's result is split in D stream chunks
(`[8(D stream, 4)]`, nvFuser's column-parallel overlap) is a ring too: chunk p, narrowed,
is member p's shard. A set that a ring cannot compute (to another mesh, on a 2-D mesh,
over a split device axis streamed whole) runs whole, as does any other op reading a
device axis one stream chunk at a time. The shift is one op per
iteration, a collective with a team, so a transport choice (its `transport` attribute)
replaces the NCCL send/recv of an iteration without touching the loop; on the copy-engine
transport a shift would be a put into the peer's chunk (docs/design_notes.md).

    %me = hir.team_position team [0, 1, ..]          (in the main loop's body)
    %p = arith.remui (%i + %me), D
    %t_p = hir.alias_select %t[%p] axis 0
    %w = hir.shift %a -> %t_p team [0, 1, ..] offset %i
    hir.wait %w
    (the other ops of the loop on chunk %p)

Option `bounded-intermediates=true` (beyond nvFuser, whose code leaves it as a TODO): a body
output that is neither returned nor read after its loop (such as the ones
finalize-multidevice-domains marks stream-allocated) gets no full-size buffer. Each
iteration allocates its chunk in the body and frees it at the end of the iteration, so
iterations on one worker stream reuse one block of the stream-ordered caching allocator:
about `numberOfStreams` chunks are alive instead of the whole stream extent
(benchmarks/stream_memory.py measures it).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import VerifyException

from hostir_dialect import cache_check, fusion, hir
from hostir_dialect.attributes import INDEX
from hostir_dialect.building import index_constant
from hostir_dialect.diagnostics import located_like, location_of, op_error
from hostir_dialect.functions import FunctionLikeOp
from hostir_dialect.remarks import remark
from hostir_dialect.sharding import communicates
from hostir_dialect.symbols import functions, fusions_to_lower, programs
from hostir_dialect.tensor_type import DEVICE_KINDS, DYNAMIC, Axis, ParallelKind, TensorType, tensor_type

from .chunking import SELECTED, ChunkForm, Narrowed, narrowed_operand_axes, operand_axis
from .stream_loops import worker_stream_ops

# --------------------------------------------------------------------------- #
# Preconditions, axis mapping, chunk types
# --------------------------------------------------------------------------- #


def check_program_inputs(program: hir.ProgramOp) -> None:
    """An input allocated one stream chunk at a time that a host op still to be lowered
    reads: the caller passes whole tensors. (A host program that slices such an input
    itself, with `hir.alias_select` in its own loops, is already lowered and left alone.)"""
    for index, arg in enumerate(program.args):
        if isinstance(arg.type, TensorType) and arg.type.stream_allocated:
            if any(is_to_lower(use.operation) for use in arg.uses):
                raise op_error(
                    program,
                    f"input {index} of type {arg.type} is allocated one stream chunk at a time; the caller passes whole tensors",
                )


def is_to_lower(op: Operation) -> bool:
    """An op as lower-to-host leaves it: a compute op without destination or a post
    without outs. Everything else (hir ops, ops writing into buffers, loops) is host code
    this pass already built, or that the user wrote, and is left as it is."""
    if isinstance(op, fusion.ComputeOp):
        return op.out is None
    return isinstance(op, hir.PostOnStreamOp) and not op.outs


def same_extent_operand(op: fusion.ComputeOp, axis: int) -> tuple[SSAValue, int] | None:
    """An operand of `op` and a logical axis of it whose run-time extent is that of the
    result's `axis`: an axis mapped onto it that is not a broadcast one (for a reshape, of
    a group of one axis each side)."""
    extent = tensor_type(op.result).axes[axis].extent
    if isinstance(op, fusion.ReshapeOp) and not op.slices_along(axis):
        return None
    for operand in op.tensor_inputs():
        axes = tensor_type(operand).axes
        for source, target in op.axis_map(operand).items():
            if target == axis and not axes[source].is_broadcast and axes[source].extent == extent:
                return operand, source
    return None


def same_extent_origin(value: SSAValue, axis: int, computed: Callable[[SSAValue], bool]) -> tuple[SSAValue, int] | None:
    """A tensor that is not `computed` and a logical axis of it whose run-time extent is
    that of `value`'s `axis`, traced back through the ops computing `value` (a post's
    through its unit's ops, to the unit's arguments: the post's inputs)."""
    while computed(value):
        owner = value.owner
        if isinstance(owner, hir.PostOnStreamOp):
            returned = owner.unit().body.block.last_op.operands[value.index]  # type: ignore[union-attr, attr-defined]
            if tensor_type(returned).rank != tensor_type(value).rank:
                return None  # the unit computes a chunk of the result: their axes differ
            found = same_extent_origin(returned, axis, lambda v: not isinstance(v, BlockArgument))
            found = (owner.inputs[found[0].index], found[1]) if found is not None else None  # type: ignore[attr-defined]
        else:
            found = same_extent_operand(owner, axis) if isinstance(owner, fusion.ComputeOp) else None
        if found is None:
            return None
        value, axis = found
    return value, axis


def is_scalar_op(op: Operation) -> bool:
    """Index and scalar arithmetic: does not end a loop, moves in front of it."""
    values = (*op.operands, *op.results)
    return bool(op.results) and not any(isinstance(v.type, TensorType) for v in values) and (
        not op.regions and is_side_effect_free(op)
    )


def stream_axes(op: Operation) -> tuple[dict[SSAValue, int], ChunkForm] | None:
    """Each tensor result of `op` -> its stream axis, and how chunks of them are taken,
    if every result has one, none reduced, all alike: whole logical axes of one extent
    (a chunk selects one element), or axes split into the same static number of parts
    whose outer piece is the Stream one (a chunk is one part, nvFuser's `outer_split` then
    Stream; `_chunk_form`)."""
    results = [r for r in op.results if isinstance(r.type, TensorType)]
    axes = {r: tensor_type(r).stream_axis() for r in results}
    if not results or None in axes.values():
        return None
    chosen = [tensor_type(r).axes[a] for r, a in axes.items()]  # type: ignore[index]  # no None left: checked above
    forms = {_chunk_form(a) for a in chosen}
    if any(a.is_reduction for a in chosen) or None in forms or len(forms) > 1:
        return None
    (form,) = forms
    if form is SELECTED and len({a.extent for a in chosen}) > 1:
        return None
    return axes, form  # type: ignore[return-value]  # no None left: checked above


def _chunk_form(axis: Axis) -> ChunkForm | None:
    """How chunks of a stream axis are taken: a whole axis, or a static outer Stream
    piece over serial or device pieces (`(S stream, m)`, `(S stream, D didx, m)`); None
    for any other split."""
    if not axis.is_split:
        return SELECTED
    outer, *inner = axis.pieces
    if outer.parallel != ParallelKind.STREAM or outer.extent == DYNAMIC or any(p.parallel == ParallelKind.STREAM for p in inner):
        return None
    return Narrowed(outer.extent)


# --------------------------------------------------------------------------- #
# Slicing: how an op computes one chunk at a time
# --------------------------------------------------------------------------- #


@dataclass
class Slicing:
    """How an op of a program computes one chunk of its results at a time."""

    op: Operation
    axes: dict[SSAValue, int]
    """Each result -> the logical axis its chunks lack."""
    operand_axes: dict[int, int]
    """Index of each operand read in chunks -> the logical axis its chunks lack; the
    other operands are read whole. Indices, since building an earlier loop replaces
    the values an op reads by that loop's buffers."""
    strides: dict[int, tuple[int, int]] = field(default_factory=dict)
    """(start, step) of an operand (by index) whose chunk `start + step * i` result
    chunk `i` reads; (0, 1) when absent."""
    unit_axes: dict[SSAValue, int | None] = field(default_factory=dict)
    """For a post: the chunk axis of every live value of its unit (None: computed whole)."""
    ring: tuple[int, ...] | None = None
    """For a DID -> Stream set: the team of its ring of shifts (it reads its input whole,
    this rank's shard)."""
    form: ChunkForm = SELECTED
    """How chunks are taken along the axes."""

    @staticmethod
    def of(op: Operation, axes: dict[SSAValue, int], chunked: dict[SSAValue, int], **fields) -> Slicing:
        """A slicing whose operands read in chunks are given by value."""
        indices = {i: chunked[v] for i, v in enumerate(op.operands) if v in chunked}
        return Slicing(op, axes, indices, **fields)

    def chunked(self) -> dict[SSAValue, int]:
        """Each operand read in chunks -> its chunk axis."""
        return {self.op.operands[i]: a for i, a in self.operand_axes.items()}

    def inputs(self) -> list[tuple[SSAValue, int | None, tuple[int, int]]]:
        """(value, chunk axis or None, stride) of each tensor operand the op reads."""
        count = len(self.op.inputs) if isinstance(self.op, hir.PostOnStreamOp) else len(self.op.operands)
        return [
            (v, self.operand_axes.get(i), self.strides.get(i, (0, 1)))
            for i, v in enumerate(self.op.operands[:count])
            if isinstance(v.type, TensorType)
        ]

    @property
    def extent(self) -> int:
        """The number of chunks."""
        result, axis = next(iter(self.axes.items()))
        return self.form.trip_count or tensor_type(result).axes[axis].extent

    def extent_provider(self) -> tuple[SSAValue, int] | None:
        """An operand chunked along an axis that has the loop's extent at run time (a
        dynamic extent is never that of a broadcast axis)."""
        return next(((v, a) for v, a in self.chunked().items() if not tensor_type(v).axes[a].is_broadcast), None)


def slicing_of(op: Operation, checks: ChunkChecks) -> Slicing | None:
    """How `op` computes one chunk of its stream axes at a time; None when it has no
    stream axis or cannot (it then runs whole, outside any loop). A compute op's answer
    reads only what `shape_of` the op holds (types, properties, which operands are the
    same value), so it is worked out once per shape of op; a post's reads its unit."""
    if isinstance(op, fusion.ComputeOp):
        shape = _SLICINGS.answer(op, lambda op: _SlicingShape.of(_slicing(op, checks)))
        return shape.slicing(op) if shape is not None else None
    return _slicing(op, checks)


def _slicing(op: Operation, checks: ChunkChecks) -> Slicing | None:
    found = stream_axes(op) if is_to_lower(op) else None
    if found is None:
        return None
    axes, form = found
    if isinstance(op, hir.PostOnStreamOp):
        slicing = _post_slicing(op, axes, form, checks)
    elif isinstance(op, fusion.SetOp) and op.out is None and communicates(op) and _reads_device_axis(op, axes[op.result]):
        # Devices sharing the axis inside its outer piece: each chunk is a collective of its own.
        slicing = _ring_slicing(op, axes[op.result], form) or (
            _compute_slicing(op, axes[op.result], form, checks) if isinstance(form, Narrowed) else None)
    elif isinstance(op, fusion.ComputeOp) and op.out is None:
        slicing = _compute_slicing(op, axes[op.result], form, checks)
    else:
        return None
    if slicing is None or not _chunks_exist(slicing):
        return None
    return slicing


@dataclass(frozen=True)
class _SlicingShape:
    """A compute op's slicing by positions, for every op of its shape."""

    axes: tuple[tuple[int, int], ...]
    """(result index, axis) of each result."""
    operand_axes: tuple[tuple[int, int], ...]
    strides: tuple[tuple[int, tuple[int, int]], ...]
    ring: tuple[int, ...] | None
    form: ChunkForm

    @staticmethod
    def of(slicing: Slicing | None) -> _SlicingShape | None:
        if slicing is None:
            return None
        results: list[SSAValue] = list(slicing.op.results)
        return _SlicingShape(
            tuple((results.index(r), a) for r, a in slicing.axes.items()),
            tuple(slicing.operand_axes.items()), tuple(slicing.strides.items()), slicing.ring, slicing.form,
        )

    def slicing(self, op: Operation) -> Slicing:
        return Slicing(op, {op.results[i]: a for i, a in self.axes}, dict(self.operand_axes), dict(self.strides),
                       ring=self.ring, form=self.form)


_SLICINGS: fusion.ShapeTable[_SlicingShape | None] = fusion.ShapeTable()
"""`slicing_of` a compute op, by shape of op."""


def _chunks_exist(slicing: Slicing) -> bool:
    """Every operand chunk can be taken, a dynamic loop extent can be read from one, and
    a communication moves dense chunks (collectives move a buffer as one block)."""
    chunked = slicing.chunked()
    if any(not slicing.form.takes(tensor_type(v), a) for v, a in chunked.items()):
        return False
    if slicing.extent == DYNAMIC and slicing.extent_provider() is None:
        return False
    if communicates(slicing.op):  # buffers are allocated full-size (see drop_stream_allocation)
        types = {v: tensor_type(v).with_(stream_allocated=False) for v in [*chunked, *slicing.axes]}
        return all(types[v].chunk_is_dense(a) for v, a in {**chunked, **slicing.axes}.items())
    return True


def _reads_device_axis(op: fusion.ComputeOp, axis: int) -> bool:
    """Does `op` read, along its result's axis `axis`, an input axis sharded over devices?"""
    return any(
        (a := operand_axis(op, v, axis)) is not None and bool(tensor_type(v).axes[a].parallel_types() & set(DEVICE_KINDS))
        for v in op.tensor_inputs()
    )


def _ring_slicing(op: fusion.SetOp, axis: int, form: ChunkForm) -> Slicing | None:
    """A DID -> Stream set as a ring of shifts (module docstring); None (it runs whole)
    where a ring cannot compute it."""
    source, result = tensor_type(op.input), tensor_type(op.result)
    mapped = operand_axis(op, op.input, axis)
    assert mapped is not None and source.mesh is not None  # a device-parallel axis has a mesh
    if source.mesh != result.mesh or source.mesh.ndim != 1:
        return None  # a ring stays on one mesh and needs this rank's position along one mesh axis
    if not _chunk_per_shard(source.axes[mapped], result.axes[axis], source.mesh.size, form):
        return None
    if result.is_sharded():
        return None  # it scatters another axis as well: an all-to-all, not whole shards
    return Slicing(op, {op.result: axis}, {}, ring=source.mesh.devices, form=form)


def _chunk_per_shard(sharded: Axis, streamed: Axis, devices: int, form: ChunkForm) -> bool:
    """Is chunk p of the streamed axis member p's whole shard of the sharded one? For a
    whole device axis (one element per device) chunked by selection, and for an axis split
    over the devices outermost (nvFuser's `outer_split(a, D)`) chunked into D blocks."""
    if isinstance(form, Narrowed):
        outer, *inner = sharded.pieces
        return (form.parts == devices and outer.parallel.is_device and outer.extent == devices
                and len(inner) == 1 and inner[0].parallel == ParallelKind.SERIAL)
    return not sharded.is_split and streamed.extent == devices


def _compute_slicing(op: fusion.ComputeOp, axis: int, form: ChunkForm, checks: ChunkChecks) -> Slicing | None:
    operand_axes = _operand_axes(op, axis, form, checks)
    if operand_axes is None:
        return None
    assert isinstance(op, fusion.StreamSliceable)
    slicing = Slicing.of(op, {op.result: axis}, operand_axes, form=form)
    slicing.strides = {i: op.operand_chunk_stride(op.operands[i], a) for i, a in slicing.operand_axes.items()}
    return slicing


def _operand_axes(op: fusion.ComputeOp, axis: int, form: ChunkForm, checks: ChunkChecks) -> dict[SSAValue, int] | None:
    """The operands of `op` read in chunks when its result is computed in chunks along
    `axis`, with their axes; None when that is not `op` on chunks."""
    if not isinstance(op, fusion.StreamSliceable) or not op.slices_along(axis):
        return None
    operand_axes = {v: a for v in op.tensor_inputs() if (a := operand_axis(op, v, axis)) is not None}
    if isinstance(form, Narrowed):
        narrowed = narrowed_operand_axes(op, axis, operand_axes)
        if narrowed is None:
            return None
        operand_axes = narrowed
    return operand_axes if checks.computes_chunks(op, operand_axes, axis, form) else None


class ChunkChecks:
    """Does an op compute its chunks along an axis? A check that builds the chunk op and
    verifies it (a linear sliced on N would need a 1-D weight). The chunk op reads
    placeholders of the chunked operands' types and the other operands themselves, so the
    answer depends only on what the key holds: the op's kind, properties and attributes,
    the types of its chunked operands and the other operands themselves, which operands
    are the same value, its result types and the axis. Programs repeat a few such ops
    many times over, so each is built and verified once per program."""

    def __init__(self) -> None:
        self.known: dict[tuple, bool] = {}

    def computes_chunks(self, op: fusion.ComputeOp, operand_axes: dict[SSAValue, int], axis: int, form: ChunkForm) -> bool:
        operands = tuple(op.operands)
        key = (
            type(op), tuple(op.properties.items()), tuple(op.attributes.items()),
            tuple(v.type if v in operand_axes else v for v in operands), tuple(operands.index(v) for v in operands),
            tuple(r.type for r in op.results), axis, tuple(operand_axes.values()), form,
        )
        if key not in self.known:
            self.known[key] = _chunk_verifies(op, operand_axes, axis, form)
        elif cache_check.CHECKING:
            cache_check.recheck(self.known[key], _chunk_verifies, op, operand_axes, axis, form)
        return self.known[key]


def _chunk_verifies(op: fusion.ComputeOp, operand_axes: dict[SSAValue, int], axis: int, form: ChunkForm) -> bool:
    placeholders = Block(arg_types=[form.type(tensor_type(v), a) for v, a in operand_axes.items()]).args
    chunk = form.op(
        op, dict(zip(operand_axes, placeholders)), {**operand_axes, op.result: axis}, form.type(tensor_type(op.result), axis)
    )
    try:
        chunk.verify()
    except VerifyException:
        return False
    finally:
        chunk.erase()
    return True


def _post_slicing(post: hir.PostOnStreamOp, axes: dict[SSAValue, int], form: ChunkForm, checks: ChunkChecks) -> Slicing | None:
    unit = post.unit()
    unit_axes = _unit_chunk_axes(unit, [axes[r] for r in post.outputs], form, checks)
    if unit_axes is None:
        return None
    chunked = {v: a for v, arg in zip(post.inputs, unit.args) if (a := unit_axes.get(arg)) is not None}
    return Slicing.of(post, axes, chunked, unit_axes=unit_axes, form=form)


def _unit_chunk_axes(
    unit: fusion.FuncOp, output_axes: Sequence[int], form: ChunkForm, checks: ChunkChecks
) -> dict[SSAValue, int | None] | None:
    """The chunk axis of every live value of `unit` (None: computed or read whole) when
    its outputs are computed in chunks along `output_axes`; None when some op of the
    unit cannot compute its chunks from chunks, or a value would be needed both ways."""
    axes: dict[SSAValue, int | None] = {}

    def need(value: SSAValue, axis: int | None) -> bool:
        return axes.setdefault(value, axis) == axis

    returned = unit.body.block.last_op
    assert returned is not None
    if not all(need(v, a) for v, a in zip(returned.operands, output_axes)):
        return None
    for op in reversed(list(unit.body.block.ops)):
        if not isinstance(op, fusion.ComputeOp) or op.result not in axes:
            continue  # a scalar, or a dead op (left out of the chunk unit)
        axis = axes[op.result]
        operand_axes: dict[SSAValue, int] = {}
        if axis is not None:
            found = _operand_axes(op, axis, form, checks)
            if found is None or tensor_type(op.result).axes[axis].is_reduction:
                return None
            operand_axes = found
            assert isinstance(op, fusion.StreamSliceable)
            if any(op.operand_chunk_stride(v, a) != (0, 1) for v, a in operand_axes.items()):
                return None
        if not all(need(v, operand_axes.get(v)) for v in op.tensor_inputs()):
            return None
    return axes


# --------------------------------------------------------------------------- #
# Step 1: grouping
# --------------------------------------------------------------------------- #


@dataclass
class StreamLoop:
    """Adjacent sliced ops that share one loop."""

    slicings: list[Slicing]
    extent: int
    stream_axes: dict[SSAValue, int]
    """Each result of a body op -> its stream axis."""
    mapped: set[tuple[SSAValue, int]]
    """(tensor, logical axis) pairs known to run along the loop's axis."""
    hoisted: list[Operation] = field(default_factory=list)
    """Ops met between the body ops that read nothing the loop computes (scalars, and
    values of the inputs alone); they move in front of the loop, in order."""
    ring: tuple[int, ...] | None = None
    """The team of the ring of shifts the loop runs, if a set of it is a ring."""
    form: ChunkForm = SELECTED
    """How the loop takes chunks: every op of it takes them so."""

    @staticmethod
    def start(slicing: Slicing) -> StreamLoop:
        loop = StreamLoop([], slicing.extent, {}, set(), form=slicing.form)
        loop.add(slicing)
        return loop

    def add(self, slicing: Slicing) -> None:
        self.slicings.append(slicing)
        self.ring = self.ring or slicing.ring
        self.stream_axes.update(slicing.axes)
        self.mapped.update(slicing.axes.items())
        self.mapped.update((v, a) for v, a, stride in slicing.inputs() if a is not None and stride == (0, 1))

    def accepts(self, slicing: Slicing) -> bool:
        """`slicing`'s stream axes map to the loop's and each iteration only reads chunks
        that the same iteration produces; or it reads nothing the loop computes and has
        the loop's extent (an independent pipeline, such as an attention block's output
        projection beside its QKV projection: iteration i computes chunk i of both, so one
        pipeline's communication hides behind the other's compute), known to be the same:
        two dynamic extents may differ."""
        if slicing.extent != self.extent or slicing.form != self.form or not self.keeps_one_order(slicing):
            return False
        joined, independent = False, True
        for operand, mapped, stride in slicing.inputs():
            same_chunk = mapped is not None and stride == (0, 1)
            if operand in self.stream_axes and (mapped != self.stream_axes[operand] or not same_chunk):
                return False
            independent = independent and operand not in self.stream_axes
            joined = joined or (same_chunk and (operand, mapped) in self.mapped)
        return joined or (independent and self.extent != DYNAMIC)


    def can_hoist(self, op: Operation) -> bool:
        """Is `op` a value computation (as lower-to-host builds them) that reads nothing
        the loop computes, so that it can run before the loop instead of ending it?"""
        body = {s.op for s in self.slicings}
        return is_to_lower(op) and not any(operand.owner in body for operand in op.operands)

    def keeps_one_order(self, slicing: Slicing) -> bool:
        """In a ring each rank visits the chunks in its own order: a collective, which
        needs them in one order, and a ring of another team stay out of it."""
        if slicing.ring is not None:
            return self.ring in (None, slicing.ring) and not any(communicates(s.op) for s in self.slicings)
        return self.ring is None or not communicates(slicing.op)


def group(block: Block) -> list[StreamLoop]:
    loops: list[StreamLoop] = []
    current: StreamLoop | None = None
    checks = ChunkChecks()
    for op in block.ops:
        if is_scalar_op(op):
            if current is not None:
                current.hoisted.append(op)
            continue
        slicing = slicing_of(op, checks)
        if slicing is None and current is not None and current.can_hoist(op):
            current.hoisted.append(op)
        elif slicing is None:
            current = None
        elif current is not None and current.accepts(slicing):
            current.add(slicing)
        else:
            current = StreamLoop.start(slicing)
            loops.append(current)
    return loops


# --------------------------------------------------------------------------- #
# Steps 2-4: building the loops
# --------------------------------------------------------------------------- #


class _LoopBuilder:
    """Builds the ops of one StreamLoop in front of its first op, then retires the ops."""

    def __init__(self, loop: StreamLoop, units: _ChunkUnits, bounded_intermediates: bool):
        self.loop = loop
        self.units = units
        self.anchor = loop.slicings[0].op
        self.ring = loop.ring
        body_ops = {s.op for s in loop.slicings}
        self.results = [r for s in loop.slicings for r in s.axes]
        read_in_loop_only = {r for r in self.results if all(use.operation in body_ops for use in r.uses)}
        self.views = {r for r in read_in_loop_only if _relabels(r.owner)}
        """Results of kernel units that only relabel elements, read in the loop only: no
        buffer at all, each iteration's chunk is the unit's value (a view of its input)."""
        self.loop_local = {r for r in read_in_loop_only - self.views if bounded_intermediates}

    def located(self, op: Operation) -> Operation:
        return located_like(op, self.anchor)

    def build(self) -> None:
        for hoisted in self.loop.hoisted:
            hoisted.detach()
            Rewriter.insert_op(hoisted, InsertPoint.before(self.anchor))
        lower, step, upper = self.bounds()
        allocations = {r: self.allocate(r) for r in self.results if r not in self.loop_local | self.views}
        buffers = {r: ops[-1] for r, ops in allocations.items()}
        user = self.located(hir.GetCurrentStreamOp()).results[0]
        user.name_hint = "user_stream"
        sync = self.for_loop(lower, upper, step, self.sync_body(user))
        main = self.for_loop(lower, upper, step, self.main_body(user, buffers))
        prologue = [lower.owner, step.owner, upper.owner, *(op for ops in allocations.values() for op in ops), user.owner, sync, main]
        Rewriter.insert_op(prologue, InsertPoint.before(self.anchor))  # type: ignore[arg-type]  # the owners of constants: operations
        for result, buffer in buffers.items():
            result.replace_all_uses_with(buffer.results[0])
        for slicing in reversed(self.loop.slicings):
            Rewriter.erase_op(slicing.op)

    def allocate(self, tensor: SSAValue) -> list[Operation]:
        """The full-size buffer of `tensor`: every chunk, even where finalize-multidevice-
        domains marked it stream-allocated (one chunk), since all iterations write it;
        after a `hir.extent` of each of its dynamic extents, read from a tensor defined
        before the loop (without them, allocating refuses, located, on the ranks)."""
        full = tensor_type(tensor).with_(stream_allocated=False)
        extents = self.extents(tensor, full.dynamic_value_axes())
        allocate = self.located(hir.AllocateOp(full, extents=[e.results[0] for e in extents]))
        allocate.results[0].name_hint = tensor.name_hint
        return [*extents, allocate]

    def extents(self, tensor: SSAValue, axes: Sequence[int]) -> list[Operation]:
        """A `hir.extent` of each of `tensor`'s logical `axes`, read from a tensor defined
        before the loop that has the same run-time extent; none unless every axis has one
        (without them, allocating refuses, located, on the ranks)."""
        sources = [same_extent_origin(tensor, axis, lambda v: v in self.results) for axis in axes]
        return [self.located(hir.ExtentOp(*source)) for source in sources if source is not None] if None not in sources else []

    def bounds(self) -> tuple[SSAValue, SSAValue, SSAValue]:
        lower = self.located(index_constant(0)).results[0]
        step = self.located(index_constant(1)).results[0]
        upper: Operation
        if self.loop.extent != DYNAMIC:
            upper = index_constant(self.loop.extent)
        else:
            provider = self.loop.slicings[0].extent_provider()
            assert provider is not None, "slicing_of checked it"
            upper = hir.ExtentOp(*provider)
        lower.name_hint, step.name_hint = "c0", "c1"
        upper_value = self.located(upper).results[0]
        upper_value.name_hint = "extent"
        return lower, step, upper_value

    def for_loop(self, lower: SSAValue, upper: SSAValue, step: SSAValue, body: Block) -> scf.ForOp:
        # Built by `Operation.create`, in order, as hostir's ops are (hostir_dialect/building.py):
        # there are two loops per loop nest, and xDSL's builders match every argument first.
        body.add_op(self.located(scf.YieldOp.create()))
        return self.located(scf.ForOp.create(operands=[lower, upper, step], regions=[Region(body)]))  # type: ignore[return-value]  # create builds an scf.ForOp

    def worker_stream(self, block: Block) -> SSAValue:
        """%w = hir.stream (%i mod numberOfStreams), made current."""
        ops = worker_stream_ops(block.args[0])
        worker = ops[-1].results[0]
        block.add_ops(self.located(o) for o in (*ops, hir.SetCurrentStreamOp(worker)))
        return worker

    def chunk_index(self, block: Block) -> SSAValue:
        """The chunk an iteration handles: its index, or in a ring the chunk of member
        (me + i) mod D."""
        if self.ring is None:
            return block.args[0]
        me = hir.TeamPositionOp(self.ring)
        size = index_constant(len(self.ring))
        shifted = arith.AddiOp(block.args[0], me.result)
        member = arith.RemUIOp(shifted.result, size.result)
        me.result.name_hint, size.result.name_hint, member.result.name_hint = "me", "team_size", "member"
        block.add_ops(self.located(o) for o in (me, size, shifted, member))
        return member.result

    def sync_body(self, user: SSAValue) -> Block:
        block = _loop_block()
        self.worker_stream(block)
        block.add_op(self.located(hir.SynchronizeOp(user)))
        return block

    def main_body(self, user: SSAValue, buffers: dict[SSAValue, Operation]) -> Block:
        block = _loop_block()
        worker = self.worker_stream(block)
        chunks = _Chunks(block, self, self.chunk_index(block))
        for slicing in _body_order(self.loop.slicings):
            chunks.emit(slicing, buffers)
        for chunk in chunks.loop_local:
            block.add_op(self.located(hir.DeallocateOp(chunk)))
        block.add_ops([self.located(hir.SetCurrentStreamOp(user)), self.located(hir.SynchronizeOp(worker))])
        return block


def _body_order(slicings: list[Slicing]) -> list[Slicing]:
    """The loop's ops in the order an iteration runs them: first those that wait for no
    communication the loop reads (among them the computations that feed an outgoing
    collective, and that collective), then the communications the loop reads and what
    depends on them, each group in program order. A topological order still: no op of the
    first group reads a result of the second. In an attention block's loop, iteration i
    then computes A @ Wo and posts its reduce-scatter first, and all-gathers X and
    computes QKV from it after: the last reduce-scatter leaves behind QKV's GEMMs, where
    program order (QKV first) left it exposed at the end of the loop. A loop whose ops
    all depend on what it receives (the MLP block) keeps program order."""
    read = {operand for s in slicings for operand in s.op.operands}
    received: set[SSAValue] = set()
    first: list[Slicing] = []
    then: list[Slicing] = []
    for slicing in slicings:
        op = slicing.op
        if any(v in received for v in op.operands) or (communicates(op) and any(r in read for r in op.results)):
            then.append(slicing)
            received.update(op.results)
        else:
            first.append(slicing)
    return first + then


def _loop_block() -> Block:
    block = Block(arg_types=[INDEX])
    block.args[0].name_hint = "i"
    return block


class _Chunks:
    """The main-loop body: one chunk (view or loop-local buffer) per tensor and axis."""

    def __init__(self, block: Block, builder: _LoopBuilder, index: SSAValue):
        self.block = block
        self.builder = builder
        self.index = index
        self.cache: dict[tuple[SSAValue, int, SSAValue], SSAValue] = {}
        self.loop_local: list[SSAValue] = []

    def select(self, tensor: SSAValue, axis: int, index: SSAValue) -> SSAValue:
        """The view of chunk `index` of `tensor` along `axis`."""
        key = (tensor, axis, index)
        if key not in self.cache:
            view = self.builder.loop.form.view(tensor, index, axis)
            self.block.add_op(self.builder.located(view))
            view.result.name_hint = _chunk_name(tensor)
            self.cache[key] = view.result
        return self.cache[key]

    def strided_index(self, start: int, step: int) -> SSAValue:
        """`start + step * i`: the input position of result chunk `i` of a slice."""
        index = self.index
        if step != 1:
            factor = index_constant(step)
            scaled = arith.MuliOp(index, factor.result)
            factor.result.name_hint, scaled.result.name_hint = "step", "j"
            self.block.add_ops([self.builder.located(factor), self.builder.located(scaled)])
            index = scaled.result
        if start:
            offset = index_constant(start)
            shifted = arith.AddiOp(index, offset.result)
            offset.result.name_hint, shifted.result.name_hint = "start", "j"
            self.block.add_ops([self.builder.located(offset), self.builder.located(shifted)])
            index = shifted.result
        return index

    def destination(self, result: SSAValue, axis: int, buffers: dict[SSAValue, Operation]) -> SSAValue:
        if result in buffers:
            chunk = self.select(buffers[result].results[0], axis, self.index)
        else:
            ops, extents = self.chunk_extents(result, axis)
            allocate = self.builder.located(hir.AllocateOp(self.builder.loop.form.type(tensor_type(result), axis),
                                                           extents=extents))
            self.block.add_ops([*ops, allocate])
            chunk = allocate.results[0]
            chunk.name_hint = _chunk_name(result)
            self.loop_local.append(chunk)
        self.cache[(result, axis, self.index)] = chunk
        return chunk

    def chunk_extents(self, result: SSAValue, axis: int) -> tuple[list[Operation], list[SSAValue]]:
        """The ops computing the extents of a loop-local chunk of `result` along `axis`,
        and the extents: the whole result's, but for a block of a dynamic `axis`, the
        axis's over the number of blocks. None where one is not known."""
        form = self.builder.loop.form
        whole = [form.whole_axis(a, axis) for a in form.type(tensor_type(result), axis).dynamic_value_axes()]
        ops = self.builder.extents(result, whole)
        extents: list[SSAValue] = [op.results[0] for op in ops]
        if axis in whole and ops:
            assert isinstance(form, Narrowed), "a selected chunk lacks the loop's axis"
            block = [self.builder.located(op) for op in form.block_extent(extents[whole.index(axis)])]
            ops += block
            extents[whole.index(axis)] = block[-1].results[0]
        return ops, extents

    def emit(self, slicing: Slicing, buffers: dict[SSAValue, Operation]) -> None:
        chunks = {v: self.select(v, a, self.strided_index(*stride)) for v, a, stride in slicing.inputs() if a is not None}
        op = slicing.op
        if all(r in self.builder.views for r in slicing.axes):
            return self.relabel(slicing, chunks)
        outs = [self.destination(r, a, buffers) for r, a in slicing.axes.items()]
        if slicing.ring is not None:
            assert isinstance(op, fusion.SetOp)
            self.shift(op.input, outs[0], slicing.ring)
            return
        if isinstance(op, hir.PostOnStreamOp):
            name = self.builder.units.chunk_unit(op, slicing.unit_axes, slicing.form)
            chunked: Operation = hir.PostOnStreamOp(name, [chunks.get(v, v) for v in op.inputs], [tensor_type(o) for o in outs], outs)
        else:
            assert isinstance(op, fusion.ComputeOp)
            ((result, axis),) = slicing.axes.items()
            chunked = slicing.form.op(op, chunks, {**slicing.chunked(), result: axis}, tensor_type(outs[0]), outs[0])
        self.block.add_op(self.builder.located(chunked))

    def relabel(self, slicing: Slicing, chunks: dict[SSAValue, SSAValue]) -> None:
        """A unit that only relabels elements, on this iteration's chunks, without outs: its
        results are this iteration's chunks of its outputs (the runtime gives views)."""
        op = slicing.op
        assert isinstance(op, hir.PostOnStreamOp)
        name = self.builder.units.chunk_unit(op, slicing.unit_axes, slicing.form)
        types = [slicing.form.type(tensor_type(r), a) for r, a in slicing.axes.items()]
        chunked = hir.PostOnStreamOp(name, [chunks.get(v, v) for v in op.inputs], types)
        self.block.add_op(self.builder.located(chunked))
        for (result, axis), value in zip(slicing.axes.items(), chunked.results):
            value.name_hint = _chunk_name(result)
            self.cache[(result, axis, self.index)] = value

    def shift(self, source: SSAValue, out: SSAValue, team: tuple[int, ...]) -> None:
        """Member p's whole shard into chunk p: a shift by the iteration number."""
        shift = hir.ShiftOp(source, out, team, self.block.args[0])
        shift.work.name_hint = "w"
        self.block.add_ops([self.builder.located(shift), self.builder.located(hir.WaitOp(shift.work))])


def _relabels(op: Operation | Block) -> bool:
    """A kernel unit's post whose unit only relabels elements (fusion.moves_no_data)."""
    return isinstance(op, hir.PostOnStreamOp) and fusion.moves_no_data(op.unit())


def _check_nothing_to_lower(module: ModuleOp) -> None:
    """A fusion with stream axes but no program: lowering it is lower-to-host's job, and
    returning it unchanged would leave its stream axes silently unlowered."""
    for func in fusions_to_lower(module):
        if any(isinstance(v.type, TensorType) and v.type.stream_axis() is not None
               for op in func.walk() for v in (*op.results, *func.args)):
            raise op_error(func, "has stream axes but the module holds no hir.program; run lower-to-host first")


def _chunk_name(tensor: SSAValue) -> str | None:
    return f"{tensor.name_hint}_i" if tensor.name_hint else None


# --------------------------------------------------------------------------- #
# Kernel units computing chunks
# --------------------------------------------------------------------------- #


class _ChunkUnits:
    """Rewrites the kernel units that sliced posts call so that they compute chunks: in
    place when the post is the unit's only caller, else as a copy under a new name."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.callers: dict[str, int] = {}
        self.names = {op.sym_name.data for op in module.ops if isinstance(op, (fusion.FuncOp, hir.ProgramOp))}
        for op in module.walk():
            if isinstance(op, hir.PostOnStreamOp):
                self.callers[op.callee_name()] = self.callers.get(op.callee_name(), 0) + 1
        self.called = set(self.callers)
        """The units some post calls: a unit keeps a caller when it is copied for another."""

    def chunk_unit(self, post: hir.PostOnStreamOp, axes: dict[SSAValue, int | None], form: ChunkForm) -> str:
        unit = post.unit()
        name = unit.sym_name.data
        if self.callers[name] > 1:
            self.callers[name] -= 1
            name = self._fresh_name(f"{name}_chunk")
            self.called.add(name)
        chunked = located_like(_chunk_function(unit, name, axes, form), unit)
        if name == unit.sym_name.data:
            Rewriter.replace_op(unit, chunked)
        else:
            Rewriter.insert_op(chunked, InsertPoint.after(unit))
        return name

    def _fresh_name(self, base: str) -> str:
        index = 0
        while f"{base}{index}" in self.names:
            index += 1
        self.names.add(f"{base}{index}")
        return f"{base}{index}"


def _chunk_function(unit: fusion.FuncOp, name: str, axes: dict[SSAValue, int | None], form: ChunkForm) -> fusion.FuncOp:
    """`unit` computing chunks: each value with a chunk axis in `axes` is a chunk along it."""

    def chunk_type(value: SSAValue) -> TensorType:
        axis = axes.get(value)
        return tensor_type(value) if axis is None else form.type(tensor_type(value), axis)

    returned = unit.body.block.last_op
    assert returned is not None
    chunked = fusion.FuncOp(name, [chunk_type(a) for a in unit.args], [chunk_type(v) for v in returned.operands])
    mapping = dict(zip(unit.args, chunked.args))
    for arg, copy in mapping.items():
        copy.name_hint = arg.name_hint
    for op in unit.body.block.ops:
        if op is returned or (isinstance(op, fusion.ComputeOp) and op.result not in axes):
            continue
        new = op.clone(value_mapper=mapping) if axes.get(op.results[0]) is None else _chunk_op(op, axes, mapping, form)
        chunked.body.block.add_op(located_like(new, op))
        for original, copy in zip(op.results, new.results):
            mapping[original] = copy
            copy.name_hint = original.name_hint
    chunked.body.block.add_op(located_like(fusion.ReturnOp(*(mapping[v] for v in returned.operands)), returned))
    return chunked


def _chunk_op(op: Operation, axes: dict[SSAValue, int | None], mapping: dict[SSAValue, SSAValue], form: ChunkForm) -> Operation:
    assert isinstance(op, fusion.ComputeOp)
    chunked = {v: a for v in (*op.tensor_inputs(), op.result) if (a := axes.get(v)) is not None}
    result_type = form.type(tensor_type(op.result), chunked[op.result])
    return form.op(op, {v: mapping[v] for v in op.operands}, chunked, result_type)


# --------------------------------------------------------------------------- #
# The pass
# --------------------------------------------------------------------------- #


def drop_stream_allocation(function: FunctionLikeOp) -> None:
    """Retype every tensor of a program or unit that is marked stream-allocated: what a
    loop writes is allocated full-size, what runs whole holds every chunk."""
    arguments: list[SSAValue] = []
    results: list[SSAValue] = []
    for op in function.walk():
        arguments += [v for region in op.regions for block in region.blocks for v in block.args]
        results += op.results
    for value in arguments + results:
        if isinstance(value.type, TensorType) and value.type.stream_allocated:
            Rewriter.replace_value_with_new_type(value, value.type.with_(stream_allocated=False))
    function.update_function_type()


class UnpipelinedStreamWarning(UserWarning):
    """A Stream annotation this pass cannot pipeline: the op runs whole (values unchanged)."""


def report_unpipelined_streams(program: hir.ProgramOp) -> None:
    """Say, located, where a Stream annotation asked for a pipeline that this pass could not
    build (the op is left to run whole), never silently: a warning for a Stream on the
    outer piece of a split (nvFuser's `outer_split` then `parallelize(Stream)`, which its
    users expect to pipeline), a remark (`hostir-opt --remarks`) for a whole stream axis,
    which propagation often gives ops that reduce or reshape it. Run after the loops are built."""
    for inner in program.walk():
        if not is_to_lower(inner):
            continue
        axes = [t.axes[a] for r in inner.results if isinstance(t := r.type, TensorType) and (a := t.stream_axis()) is not None]
        where = location_of(inner)
        if any(a.is_split for a in axes):
            warnings.warn(f"{where + ': ' if where else ''}warning: '{inner.name}' op runs whole: its Stream piece "
                          "of a split axis cannot be computed one chunk at a time (a chunk must be the static outer "
                          "piece of an axis the op keeps element for element)",
                          UnpipelinedStreamWarning, stacklevel=2)
        elif axes:
            remark(inner, StreamParallelType.name, f"'{inner.name}' op runs whole: its stream axis cannot be computed "
                   "one chunk at a time (reduced, merged, read whole by the op, or cut over the devices)")


@dataclass(frozen=True)
class StreamParallelType(ModulePass):
    """Pipeline stream-parallel host ops and kernel units in loops over stream chunks on rotating streams.

    See the module docstring. `-p 'stream-parallel-type{bounded-intermediates=true}'` gives loop-local intermediates
    per-iteration chunk buffers instead of full-size ones.
    """

    name = "stream-parallel-type"

    bounded_intermediates: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        units = _ChunkUnits(op)
        if not programs(op):
            _check_nothing_to_lower(op)
        for program in programs(op):
            check_program_inputs(program)
            for loop in group(program.body.block):
                _LoopBuilder(loop, units, self.bounded_intermediates).build()
            report_unpipelined_streams(program)
        for function in functions(op):
            if isinstance(function, hir.ProgramOp) or function.sym_name.data in units.called:
                drop_stream_allocation(function)

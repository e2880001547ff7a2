"""`stream-parallel-type`: stream-parallel host ops become pipelined loops over stream
chunks (nvFuser's hir_pass::StreamParallelType, csrc/host_ir/pass/stream_parallel_type.cpp).

Input: `hir.program`s whose bodies list, in run order, standalone fusion compute ops
(without destinations) and `hir.post_on_stream` calls, as `lower-to-host` builds them.
An op is *stream-parallel* when its result has a `stream` axis. Four steps:

1. group: adjacent stream-parallel ops whose stream axes map (through the ops' axis maps,
   broadcast axes included) share one loop; any other op in between closes the loop.
   Scalar ops (index constants) do not close it: they move in front of the loop.
2. hoist allocations: each body output is allocated full-size before the loop, and uses of
   the op's result after the loop read that buffer.
3. slice the body: every tensor an op reads or writes is sliced with one
   `hir.alias_select %t[%i] axis A` per tensor and loop (A: its logical axis mapped to the
   loop's stream axis; tensors without one are passed whole); the op then writes through
   its destination, `%r = fusion.matmul %a_i, %b into %c_i`.
4. stream management: the user's stream is captured once; a separate sync loop makes every
   worker stream `i % numberOfStreams` wait for it (syncing inside the main loop kills
   overlap, nvFuser #4402); the main loop runs each iteration on its worker stream and makes
   the user stream wait for it at the end of the iteration. Nothing blocks the host.

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
sliced on another axis, or read whole); ops with several non-stream results are accepted.

DID -> Stream sets become a ring of point-to-point copies (nvFuser #4515, "linear
allgather"): when a loop's stream axis is, in a set's input, an axis sharded over the D
devices of a 1-D mesh (`a: [D didx, m, k]` -> `set` -> `[D stream, m, k]`), iteration i
handles the chunk of team member p = (me + i) mod D, where me is this rank's position
(`hir.team_position`): every op of the loop works on chunk p, and the set becomes a
`hir.shift` by offset i, which receives member p's whole shard into chunk p and sends this
rank's shard to member (me - i) mod D. Iteration 0 is a local copy of this rank's own
shard (own-first: the first compute needs no communication). Since each rank visits the
chunks in its own order, such a loop holds no other communication. The shift is one op
per iteration, a collective with a team, so a transport choice (its `transport`
attribute) replaces the NCCL send/recv of an iteration without touching the loop; on the
copy-engine transport a shift would be a put into the peer's chunk (docs/design_notes.md).

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
(benchmarks/stream_memory.py measures it). Without the option these tensors get full-size
buffers, and a stream-allocated mark (one chunk) is dropped from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import VerifyException

from hostir_dialect import fusion, hir
from hostir_dialect.diagnostics import located_like, op_error
from hostir_dialect.sharding import communicates
from hostir_dialect.symbols import fusions_to_lower, programs
from hostir_dialect.tensor_type import DEVICE_KINDS, DYNAMIC, TensorType, tensor_type

# --------------------------------------------------------------------------- #
# Preconditions and axis mapping
# --------------------------------------------------------------------------- #


def check_program_inputs(program: hir.ProgramOp) -> None:
    """An input with a stream axis that a host op still to be lowered reads: this pass
    pipelines results only. (A host program that slices such an input itself, with
    `hir.alias_select` in its own loops, is already lowered and left alone.)"""
    for index, arg in enumerate(program.args):
        if isinstance(arg.type, TensorType) and arg.type.stream_axis() is not None:
            if any(is_to_lower(use.operation) for use in arg.uses):
                raise op_error(
                    program,
                    f"expected no stream axis in the program inputs, but input {index} has type {arg.type}",
                )


def is_to_lower(op: Operation) -> bool:
    """An op as lower-to-host leaves it: a compute op without destination or a post
    without outs. Everything else (hir ops, ops writing into buffers, loops) is host code
    this pass already built, or that the user wrote, and is left as it is."""
    if isinstance(op, fusion.ComputeOp):
        return op.out is None
    return isinstance(op, hir.PostOnStreamOp) and not op.outs


def stream_axis_of(op: Operation) -> int | None:
    """The stream axis of `op`'s result if `op` is a stream-parallel op to lower, after
    checking that it is an op this pass can put in a loop."""
    if not is_to_lower(op):
        return None
    streamed = [
        r for r in op.results if isinstance(r.type, TensorType) and r.type.stream_axis() is not None
    ]
    if not streamed:
        return None
    if len(op.results) > 1:
        raise op_error(op, f"has {len(op.results)} results; a stream-parallel op must have exactly one")
    if isinstance(op, hir.PostOnStreamOp):
        raise op_error(
            op,
            f"stream parallel type not supported for post_on_stream @{op.callee_name()}: "
            "only a standalone host op can be stream-parallelized",
        )
    if not isinstance(op, fusion.StreamSliceable):
        raise op_error(
            op,
            "stream parallel type not supported for this op: only standalone set, cast, "
            "elementwise, matmul, linear, reduce, slice and select ops can be stream-parallelized",
        )
    assert isinstance(op, fusion.ComputeOp)
    result = tensor_type(op.result)
    axis = result.stream_axis()
    assert axis is not None
    if result.axes[axis].is_split:
        raise op_error(
            op,
            f"cannot stream-parallelize a split axis: the stream axis must be in the logical "
            f"domain, but axis {axis} of the result is split",
        )
    if result.axes[axis].is_reduction:
        raise op_error(
            op, f"cannot stream-parallelize a reduction axis: the stream axis {axis} of the result reduces"
        )
    return axis


def operand_axis(op: fusion.ComputeOp, operand: SSAValue, axis: int) -> int | None:
    """The logical axis of `operand` that `op` maps to its result axis `axis`, if any
    (the axis maps of stream-sliceable ops are one-to-one)."""
    return next((a for a, target in op.axis_map(operand).items() if target == axis), None)


def reads_other_chunks(op: fusion.ComputeOp, operand: SSAValue, axis: int | None) -> bool:
    """Does result chunk `i` read an operand chunk other than `i` along `axis`? A slice
    with a start or a step on that axis reads chunk `start + step * i`."""
    if axis is None or not isinstance(op, fusion.StreamSliceable):
        return False
    return op.operand_chunk_stride(operand, axis) != (0, 1)


def is_scalar_op(op: Operation) -> bool:
    """Index and scalar arithmetic: does not end a loop, moves in front of it."""
    values = (*op.operands, *op.results)
    return bool(op.results) and not any(isinstance(v.type, TensorType) for v in values) and (
        not op.regions and is_side_effect_free(op)
    )


# --------------------------------------------------------------------------- #
# Step 1: grouping
# --------------------------------------------------------------------------- #


@dataclass
class StreamLoop:
    """Adjacent stream-parallel ops that share one loop."""

    ops: list[fusion.ComputeOp]
    extent: int
    stream_axes: dict[SSAValue, int]
    """Result of each body op -> its stream axis."""
    mapped: set[tuple[SSAValue, int]]
    """(tensor, logical axis) pairs known to run along the loop's axis."""
    scalars: list[Operation] = field(default_factory=list)
    """Scalar ops met between the body ops; they move in front of the loop."""

    @staticmethod
    def start(op: fusion.ComputeOp, axis: int) -> StreamLoop:
        loop = StreamLoop([], tensor_type(op.result).axes[axis].extent, {}, set())
        loop.add(op, axis)
        return loop

    def add(self, op: fusion.ComputeOp, axis: int) -> None:
        self.ops.append(op)
        self.stream_axes[op.result] = axis
        self.mapped.add((op.result, axis))
        for operand in op.tensor_inputs():
            mapped = operand_axis(op, operand, axis)
            if mapped is not None and not reads_other_chunks(op, operand, mapped):
                self.mapped.add((operand, mapped))

    def accepts(self, op: fusion.ComputeOp, axis: int) -> bool:
        """`op`'s stream axis maps to the loop's and each iteration only reads chunks
        that the same iteration produces."""
        if tensor_type(op.result).axes[axis].extent != self.extent:
            return False
        joined = False
        for operand in op.tensor_inputs():
            mapped = operand_axis(op, operand, axis)
            if operand in self.stream_axes and (
                mapped != self.stream_axes[operand] or reads_other_chunks(op, operand, mapped)
            ):
                return False
            joined = joined or ((operand, mapped) in self.mapped and not reads_other_chunks(op, operand, mapped))
        return joined


def group(block: Block) -> list[StreamLoop]:
    loops: list[StreamLoop] = []
    current: StreamLoop | None = None
    for op in block.ops:
        if is_scalar_op(op):
            if current is not None:
                current.scalars.append(op)
            continue
        axis = stream_axis_of(op)
        if axis is None:
            current = None
            continue
        assert isinstance(op, fusion.ComputeOp)
        if current is not None and current.accepts(op, axis):
            current.add(op, axis)
        else:
            current = StreamLoop.start(op, axis)
            loops.append(current)
    return loops


# --------------------------------------------------------------------------- #
# DID -> Stream: rings of shifts
# --------------------------------------------------------------------------- #


def ring_team(loop: StreamLoop) -> tuple[int, ...] | None:
    """The team whose ring the loop runs when a set of it turns a device axis into its
    stream axis (module docstring); None for a plain loop. Refuses, at the op, what a
    ring cannot compute."""
    teams = {}
    for op in loop.ops:
        axis = loop.stream_axes[op.result]
        for operand in op.tensor_inputs():
            mapped = operand_axis(op, operand, axis)
            if mapped is not None and tensor_type(operand).axes[mapped].parallel_types() & set(DEVICE_KINDS):
                teams[op] = _ring_set_team(op, operand, mapped, loop.extent)
    if not teams:
        return None
    for op in loop.ops:
        if op not in teams and communicates(op):
            raise op_error(op, "communicates in a stream loop that runs a ring of shifts, where each rank handles the chunks in its own order; a collective needs them in one order")
    (team,) = set(teams.values())  # the sets read one loop's inputs, all on one mesh
    return team


def _ring_set_team(op: fusion.ComputeOp, operand: SSAValue, axis: int, extent: int) -> tuple[int, ...]:
    """The team of a set reading its operand's device axis `axis` chunk by chunk."""
    source, result = tensor_type(operand), tensor_type(op.result)
    if not isinstance(op, fusion.SetOp):
        raise op_error(op, f"reads axis {axis} of an input sharded across devices one stream chunk at a time; only a set can turn a device axis into a stream axis (decompose-reshardings puts one in front)")
    assert source.mesh is not None  # a device-parallel axis has a mesh
    if source.mesh != result.mesh:
        raise op_error(op, f"turns a device axis into a stream axis from mesh {source.mesh} to mesh {result.mesh}; a ring stays on one mesh")
    if source.mesh.ndim != 1:
        raise op_error(op, f"turns a device axis into a stream axis on the 2-D mesh {source.mesh}; a ring needs a 1-D mesh (this rank's position along one mesh axis)")
    if source.axes[axis].is_split or extent != source.mesh.size:
        raise op_error(op, f"turns a split device axis into a stream axis of {extent} chunks; a ring needs the whole axis over the {source.mesh.size} devices")
    return source.mesh.devices


# --------------------------------------------------------------------------- #
# Steps 2-4: building the loops
# --------------------------------------------------------------------------- #


def sliced_type(t: TensorType, axis: int) -> TensorType:
    """`t` without logical axis `axis` (a chunk's type); mesh and parallel types kept."""
    order = tuple(i - (i > axis) for i in t.allocation_order() if i != axis)
    keeps_stream = t.stream_axis() not in (None, axis)
    return t.with_(
        axes=t.axes[:axis] + t.axes[axis + 1 :],
        alloc_order=order,
        stream_allocated=t.stream_allocated and keeps_stream,
    )


class _LoopBuilder:
    """Builds the ops of one StreamLoop in front of its first op, then retires the ops."""

    def __init__(self, loop: StreamLoop, bounded_intermediates: bool):
        self.loop = loop
        self.anchor = loop.ops[0]
        self.ring = ring_team(loop)
        body_ops = set(loop.ops)
        self.loop_local = {
            op.result
            for op in loop.ops
            if bounded_intermediates and all(use.operation in body_ops for use in op.result.uses)
        }

    def located(self, op: Operation) -> Operation:
        return located_like(op, self.anchor)

    def build(self) -> None:
        for scalar in self.loop.scalars:
            scalar.detach()
            Rewriter.insert_op(scalar, InsertPoint.before(self.anchor))
        lower, step, upper = self.bounds()
        buffers = {op.result: self.allocate(op.result) for op in self.loop.ops if op.result not in self.loop_local}
        user = self.located(hir.GetCurrentStreamOp()).results[0]
        user.name_hint = "user_stream"
        sync = self.for_loop(lower, upper, step, self.sync_body(user))
        main = self.for_loop(lower, upper, step, self.main_body(user, buffers))
        prologue = [lower.owner, step.owner, upper.owner, *buffers.values(), user.owner, sync, main]
        Rewriter.insert_op(prologue, InsertPoint.before(self.anchor))  # type: ignore[arg-type]
        for op in self.loop.ops:
            if op.result in buffers:
                op.result.replace_all_uses_with(buffers[op.result].results[0])
        for op in reversed(self.loop.ops):
            Rewriter.erase_op(op)

    def allocate(self, tensor: SSAValue) -> Operation:
        """The full-size buffer of `tensor`: every chunk, even where finalize-multidevice-
        domains marked it stream-allocated (one chunk), since all iterations write it."""
        full = tensor_type(tensor).with_(stream_allocated=False)
        allocate = self.located(hir.AllocateOp(full))
        allocate.results[0].name_hint = tensor.name_hint
        return allocate

    def bounds(self) -> tuple[SSAValue, SSAValue, SSAValue]:
        lower = self.located(arith.ConstantOp.from_int_and_width(0, IndexType())).results[0]
        step = self.located(arith.ConstantOp.from_int_and_width(1, IndexType())).results[0]
        if self.loop.extent != DYNAMIC:
            upper = arith.ConstantOp.from_int_and_width(self.loop.extent, IndexType())
        else:
            upper = hir.ExtentOp(*self.extent_provider())
        lower.name_hint, step.name_hint = "c0", "c1"
        upper_value = self.located(upper).results[0]
        upper_value.name_hint = "extent"
        return lower, step, upper_value

    def extent_provider(self) -> tuple[SSAValue, int]:
        """A tensor bound before the loop whose axis has the loop's run-time extent: a
        dynamic result extent always comes from a non-broadcast operand axis."""
        op = self.anchor
        axis = self.loop.stream_axes[op.result]
        return next(
            (operand, mapped)
            for operand in op.tensor_inputs()
            if (mapped := operand_axis(op, operand, axis)) is not None
            and not tensor_type(operand).axes[mapped].is_broadcast
        )

    def for_loop(self, lower: SSAValue, upper: SSAValue, step: SSAValue, body: Block) -> scf.ForOp:
        body.add_op(self.located(scf.YieldOp()))
        return self.located(scf.ForOp(lower, upper, step, [], Region(body)))  # type: ignore[return-value]

    def worker_stream(self, block: Block) -> SSAValue:
        """%w = hir.stream (%i mod numberOfStreams): iterations of equal residue share a stream."""
        count = hir.NumberOfStreamsOp()
        key = arith.RemUIOp(block.args[0], count.result)
        worker = hir.StreamOp(key.result)
        count.result.name_hint, key.result.name_hint, worker.result.name_hint = "n", "key", "worker"
        block.add_ops(self.located(o) for o in (count, key, worker, hir.SetCurrentStreamOp(worker.result)))
        return worker.result

    def chunk_index(self, block: Block) -> SSAValue:
        """The chunk an iteration handles: its index, or in a ring the chunk of member
        (me + i) mod D."""
        if self.ring is None:
            return block.args[0]
        me = hir.TeamPositionOp(self.ring)
        size = arith.ConstantOp.from_int_and_width(len(self.ring), IndexType())
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
        for op in self.loop.ops:
            chunks.emit(op, buffers)
        for chunk in chunks.loop_local:
            block.add_op(self.located(hir.DeallocateOp(chunk)))
        block.add_ops([self.located(hir.SetCurrentStreamOp(user)), self.located(hir.SynchronizeOp(worker))])
        return block


def _loop_block() -> Block:
    block = Block(arg_types=[IndexType()])
    block.args[0].name_hint = "i"
    return block


class _Chunks:
    """The main-loop body: one chunk (view or loop-local buffer) per tensor and axis."""

    def __init__(self, block: Block, builder: _LoopBuilder, index: SSAValue):
        self.block = block
        self.builder = builder
        self.index = index
        self.cache: dict[tuple[SSAValue, int], SSAValue] = {}
        self.loop_local: list[SSAValue] = []

    def select(self, tensor: SSAValue, axis: int, index: SSAValue | None = None) -> SSAValue:
        """The view of chunk `index` (default: the loop index) of `tensor` along `axis`."""
        index = index or self.index
        key = (tensor, axis, index)
        if key not in self.cache:
            view = hir.AliasSelectOp(tensor, index, axis, sliced_type(tensor_type(tensor), axis))
            self.block.add_op(self.builder.located(view))
            view.result.name_hint = _chunk_name(tensor)
            self.cache[key] = view.result
        return self.cache[key]

    def strided_index(self, start: int, step: int) -> SSAValue:
        """`start + step * i`: the input position of result chunk `i` of a slice."""
        index = self.index
        if step != 1:
            factor = arith.ConstantOp.from_int_and_width(step, IndexType())
            scaled = arith.MuliOp(index, factor.result)
            factor.result.name_hint, scaled.result.name_hint = "step", "j"
            self.block.add_ops([self.builder.located(factor), self.builder.located(scaled)])
            index = scaled.result
        if start:
            offset = arith.ConstantOp.from_int_and_width(start, IndexType())
            shifted = arith.AddiOp(index, offset.result)
            offset.result.name_hint, shifted.result.name_hint = "start", "j"
            self.block.add_ops([self.builder.located(offset), self.builder.located(shifted)])
            index = shifted.result
        return index

    def destination(self, op: fusion.ComputeOp, axis: int, buffers: dict[SSAValue, Operation]) -> SSAValue:
        if op.result in buffers:
            chunk = self.select(buffers[op.result].results[0], axis)
        else:
            allocate = self.builder.located(hir.AllocateOp(sliced_type(tensor_type(op.result), axis)))
            self.block.add_op(allocate)
            chunk = allocate.results[0]
            chunk.name_hint = _chunk_name(op.result)
            self.loop_local.append(chunk)
        self.cache[(op.result, axis, self.index)] = chunk
        return chunk

    def emit(self, op: fusion.ComputeOp, buffers: dict[SSAValue, Operation]) -> None:
        axis = self.builder.loop.stream_axes[op.result]
        source = self.ring_source(op, axis)
        if source is not None:
            self.shift(op, source, self.destination(op, axis, buffers))
            return
        removed: dict[SSAValue, int] = {}
        for operand in op.tensor_inputs():
            mapped = operand_axis(op, operand, axis)
            if mapped is not None:
                removed[operand] = mapped
        chunks = {operand: self.select(operand, a, self.operand_index(op, operand, a)) for operand, a in removed.items()}
        out = self.destination(op, axis, buffers)
        self.block.add_op(self.sliced_op(op, chunks, removed, out))

    def ring_source(self, op: fusion.ComputeOp, axis: int) -> SSAValue | None:
        """The input whose device axis the set `op` turns into the stream axis, if any."""
        if self.builder.ring is None or not isinstance(op, fusion.SetOp):
            return None
        mapped = operand_axis(op, op.input, axis)
        return op.input if tensor_type(op.input).axes[mapped].parallel_types() & set(DEVICE_KINDS) else None  # type: ignore[index]

    def shift(self, op: fusion.ComputeOp, source: SSAValue, out: SSAValue) -> None:
        """Member p's whole shard into chunk p: a shift by the iteration number."""
        shift = hir.ShiftOp(source, out, self.builder.ring, self.block.args[0])  # type: ignore[arg-type]
        shift.work.name_hint = "w"
        self.block.add_ops([self.builder.located(shift), self.builder.located(hir.WaitOp(shift.work))])

    def operand_index(self, op: fusion.ComputeOp, operand: SSAValue, operand_axis: int) -> SSAValue:
        """The operand chunk that result chunk `i` reads: chunk `start + step * i`, which
        is chunk `i` except through a slice (`StreamSliceable.operand_chunk_stride`)."""
        assert isinstance(op, fusion.StreamSliceable)
        return self.strided_index(*op.operand_chunk_stride(operand, operand_axis))

    def sliced_op(
        self, op: fusion.ComputeOp, chunks: dict[SSAValue, SSAValue], removed: dict[SSAValue, int], out: SSAValue
    ) -> Operation:
        """The op computing one chunk, built by the op itself (`StreamSliceable`)."""
        assert isinstance(op, fusion.StreamSliceable)
        new = op.stream_chunk(chunks, removed, out)
        new.attributes.update(op.attributes)
        try:
            new.verify()
        except VerifyException as error:
            raise op_error(op, f"cannot be computed one stream chunk at a time: {error}") from None
        return self.builder.located(new)


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
# The pass
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class StreamParallelType(ModulePass):
    """Pipeline stream-parallel host ops in loops over stream chunks on rotating streams.

    See the module docstring. `-p 'stream-parallel-type{bounded-intermediates=true}'` gives loop-local intermediates
    per-iteration chunk buffers instead of full-size ones.
    """

    name = "stream-parallel-type"

    bounded_intermediates: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not programs(op):
            _check_nothing_to_lower(op)
        for program in programs(op):
            check_program_inputs(program)
            for loop in group(program.body.block):
                _LoopBuilder(loop, self.bounded_intermediates).build()

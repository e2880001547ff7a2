"""`choose-pipelining`: keep a fusion's stream pipeline only where the cost model says it
pays (docs/copy_engine.md, "Choosing").

A `Stream` axis asks for the fusion to run as a loop of S chunks on rotating streams, so
that one chunk's communication hides behind another chunk's matmul. It loses where
chunks are so small that their fixed costs (a collective's latency, a matmul's launch
and tail, the host's work per iteration) exceed what overlapping hides. With
`transport=auto` (`hostir-lower{transport=auto}` hands it over), this pass estimates per
function, from the machine's constants (passes/cost_model.py):

    pipelined = max(max(K, S * g + slowdown * min(K, S * g)) + min(c, g),  S * host per chunk)
    serial    = max(C + G + reorders,                                     host per chunk)
    K         = S * (c - l) + l

where C and c are the communication of the whole tensors and of one chunk (each
collective on its fastest transport), l the fixed part of c (its latency and signal,
which overlap the other chunks' transfers), G and g the matmuls' (a two-stage pipeline:
after the first chunk, the slower stage sets the pace; the matmuls run `slowdown` slower
while transfers run beside them; the host enqueues ahead of the GPU, so its time counts only
where it is the larger; `cuda-graph=true`: none, the program is replayed from a graph),
and `reorders` the transposing copies that running whole adds where the stream axis lies
outside the axis a collective splits by member (reorder-sharded-axis then makes each
member's part contiguous). Where `serial` is smaller it drops the
`Stream` parallelization from every value of the function: no loop is built, and each
communication and matmul runs once, on whole tensors. The user's data layout is the
same either way (a Stream axis is not sharded), so the function's callers see no change.

The chunk count itself is the user's: it is part of the data layout the function's
types declare (chunk i of every rank's shard is gathered together), so the pass chooses
between the declared S chunks and none. Other transports leave the pipeline as declared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from hostir_dialect import fusion, hir
from hostir_dialect.remarks import remark
from hostir_dialect.sharding import communicates
from hostir_dialect.symbols import fusions_to_lower
from hostir_dialect.tensor_type import DYNAMIC, Axis, ParallelKind, TensorType, tensor_type

from .cost_model import DEFAULT_MACHINE, Machine, TransportChoice
from .fusion_rewriting import retype, tensors


@dataclass(frozen=True)
class Stages:
    """A function's work per rank, in ms: its communications and its matmuls, whole and
    per chunk of its stream loop, and how much its matmuls slow down beside the chunks'
    transfers."""

    chunks: int
    communication: float
    communication_per_chunk: float
    matmuls: float
    matmuls_per_chunk: float
    slowdown: float
    latency_per_chunk: float = 0.0
    """Of `communication_per_chunk`, the fixed part (a transfer's start, a signal): it
    delays its own chunk but does not occupy the link, so in a pipeline it overlaps the
    other chunks' transfers and is paid once."""
    reorders: float = 0.0
    """The transposing copies running whole adds: where the stream axis lies outside the
    axis a collective splits by member, the chunks of one member are not contiguous
    once the loop is gone, and reorder-sharded-axis copies the tensor to make them so."""

    def pipelined_ms(self, host_ms_per_chunk: float) -> float:
        c, g = self.communication_per_chunk, self.matmuls_per_chunk
        communication = self.chunks * (c - self.latency_per_chunk) + self.latency_per_chunk
        matmuls = self.chunks * g
        # The matmuls run slower only while transfers run beside them.
        slowed = matmuls + self.slowdown * min(communication, matmuls)
        gpu = max(communication, slowed) + min(c, g)
        return max(gpu, self.chunks * host_ms_per_chunk)

    def serial_ms(self, host_ms_per_chunk: float) -> float:
        return max(self.communication + self.matmuls + self.reorders, host_ms_per_chunk)


def stream_chunks(func: fusion.FuncOp) -> int | None:
    """The extent of the function's Stream axes, if it has some, all of one static extent."""
    extents: set[int] = set()
    for value, _ in tensors(func):
        t = tensor_type(value)
        axis = t.stream_axis()
        if axis is not None:
            extents.update(p.extent for p in t.axes[axis].pieces if p.parallel == ParallelKind.STREAM)
    return extents.pop() if len(extents) == 1 and DYNAMIC not in extents else None


def estimate(func: fusion.FuncOp, machine: Machine) -> Stages | None:
    """The function's stages, or None where the model cannot tell (no single static
    stream extent, a dynamic shape, a communication other than an all-gather,
    reduce-scatter or all-reduce over a whole 1-D mesh)."""
    chunks = stream_chunks(func)
    if chunks is None:
        return None
    communication = per_chunk_communication = latency = matmuls = per_chunk_matmuls = slowdown = reorders = 0.0
    for op in func.body.block.ops:
        if isinstance(op, fusion.ComputeOp) and communicates(op):
            collective, size = _collective(op), _input_bytes(op)
            if collective is None or size is None:
                return None
            kind, team_size = collective
            communication += machine.fastest_collective_ms(kind, size, team_size)
            if _member_axis_inside_stream_axis(op):
                reorders += machine.copy_ms(size * (team_size if kind is hir.AllgatherOp else 1))
            chunk = _per_iteration(op, size, chunks)
            transport = machine.fastest_transport(kind, chunk, team_size, chunks)  # as convert-op-to-communication picks
            per_chunk_communication += machine.collective_ms(kind, transport, chunk, team_size)
            latency += machine.collective_ms(kind, transport, 0, team_size)
            slowdown = max(slowdown, machine.matmul_slowdown[transport])
        elif isinstance(op, (fusion.MatmulOp, fusion.LinearOp)):
            flops = _matmul_flops(tensor_type(op.result))
            if flops is None:
                return None
            element = str(tensor_type(op.result).element_type)
            matmuls += machine.matmul_ms(flops, element)
            per_chunk_matmuls += machine.matmul_ms(flops / chunks, element)
    return Stages(chunks, communication, per_chunk_communication, matmuls, per_chunk_matmuls, slowdown,
                  latency, reorders)


def _collective(op: fusion.ComputeOp) -> tuple[type[hir.CollectiveOp], int] | None:
    """The collective a communicating op becomes, where the model knows it (an all-gather,
    reduce-scatter or all-reduce over one mesh), and the team size."""
    source, target = tensor_type(op.operands[0]), tensor_type(op.result)
    mesh = source.mesh
    if mesh is None or mesh != target.mesh or mesh.ndim != 1:
        return None
    in_sharded, out_sharded = source.is_sharded(ParallelKind.DIDX), target.is_sharded(ParallelKind.DIDX)
    if isinstance(op, fusion.ReduceOp) and in_sharded:
        return (hir.ReduceScatterOp if out_sharded else hir.AllreduceOp), mesh.size
    if isinstance(op, fusion.SetOp) and in_sharded and not out_sharded:
        return hir.AllgatherOp, mesh.size
    return None


def _member_axis_inside_stream_axis(op: fusion.ComputeOp) -> bool:
    """Does the axis the collective splits by member (the gathered input's, the scattered
    result's) come after the stream axis?"""
    source, result = tensor_type(op.operands[0]), tensor_type(op.result)
    split = source if isinstance(op, fusion.SetOp) else result
    stream = result.stream_axis() if result.stream_axis() is not None else source.stream_axis()
    member = split.axis_with(ParallelKind.DIDX, include_reduction=False)
    return stream is not None and member is not None and stream < member


def _input_bytes(op: fusion.ComputeOp) -> int | None:
    """Bytes of the op's input on one member (None: dynamic)."""
    source = tensor_type(op.operands[0])
    assert source.mesh is not None  # a communicating op's input has one (_collective)
    shape = source.local_shape(source.mesh.devices[0])
    return None if shape is None or DYNAMIC in shape else math.prod(shape) * source.element_bytes()


def _per_iteration(op: fusion.ComputeOp, size: int, chunks: int) -> int:
    """Of `size` bytes, what one iteration of the stream loop moves (all of them where the
    op is outside the loop)."""
    return size // chunks if tensor_type(op.result).stream_axis() is not None else size


def _matmul_flops(result: TensorType) -> int | None:
    """2 x one rank's multiply-adds: its output elements times its share of the reduction."""
    extents = [result.local_extent(i, stream_sharded=False) for i in range(result.rank)]
    return None if DYNAMIC in extents else 2 * math.prod(extents)


def unpipeline(func: fusion.FuncOp) -> None:
    """Drop the Stream parallelization from every value of `func`."""
    for value, _ in tensors(func):
        retype(value, without_stream(tensor_type(value)))
    func.update_function_type()


def without_stream(t: TensorType) -> TensorType:
    return t.with_(axes=tuple(_without_stream(a) for a in t.axes))


def _without_stream(axis: Axis) -> Axis:
    pieces = tuple(replace(p, parallel=ParallelKind.SERIAL) if p.parallel == ParallelKind.STREAM else p for p in axis.pieces)
    if all(p.parallel == ParallelKind.SERIAL for p in pieces):
        return Axis(axis.extent, axis.kind)  # a split into serial pieces is no split
    return replace(axis, pieces=pieces)


@dataclass(frozen=True)
class ChoosePipelining(ModulePass):
    """Drop a function's stream pipeline where the cost model says running it whole is faster."""

    name = "choose-pipelining"

    transport: str = TransportChoice.NCCL
    """The lowering's transport option: the pass decides only for `auto`."""

    machine: str = DEFAULT_MACHINE
    """The cost model it decides with: `detect` (this machine's GPUs), or a name (passes/cost_model.py)."""

    cuda_graph: bool = False
    """The program will be replayed from a CUDA graph: no host time per chunk."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.transport != TransportChoice.AUTO:
            return
        machine = Machine.load(self.machine)
        host = 0.0 if self.cuda_graph else machine.host_us_per_chunk / 1e3
        for func in fusions_to_lower(op):
            self.choose(func, machine, host)

    def choose(self, func: fusion.FuncOp, machine: Machine, host_ms_per_chunk: float) -> None:
        chunks = stream_chunks(func)
        stages = estimate(func, machine)
        if stages is None:
            if chunks is not None:
                remark(func, self.name, f"pipeline of {chunks} chunks kept as declared: the cost model cannot "
                                        "estimate it (a dynamic shape, or a communication it does not know)")
            return
        serial, pipelined = stages.serial_ms(host_ms_per_chunk), stages.pipelined_ms(host_ms_per_chunk)
        estimates = f"estimated {serial:.3f} ms whole vs {pipelined:.3f} ms in {stages.chunks} chunks"
        if serial < pipelined:
            unpipeline(func)
            remark(func, self.name, f"pipeline dropped: {estimates}")
        else:
            remark(func, self.name, f"pipeline kept: {estimates}")

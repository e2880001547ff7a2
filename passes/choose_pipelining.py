"""`choose-pipelining`: keep a fusion's stream pipeline only where the cost model says it
pays (docs/copy_engine.md, "Choosing").

A `Stream` axis asks for the fusion to run as a loop of S chunks on rotating streams, so
that one chunk's communication hides behind another chunk's matmul. It loses where
chunks are so small that their fixed costs (a collective's latency, a matmul's launch
and tail, the host's work per iteration) exceed what overlapping hides. With
`transport=auto` (`hostir-lower{transport=auto}` hands it over), this pass estimates per
function, from the machine's constants (passes/cost_model.py):

    pipelined = max(max(K, S * g) + slowdown * min(K, S * g) + max(0, min(c_last, g) - o),  S * host per chunk)
    serial    = max(C + G + reorders + P * p,                                  host per chunk)
    K         = S * (c - l) + l

where C and c are the communication of the whole tensors and of one chunk (each
collective on its fastest transport), l the fixed part of c (its latency and signal,
which overlap the other chunks' transfers), c_last the last phase of c (a copy-engine
all-reduce's second: reduce, push, signal; all of c for the others), o the part of g that
runs beside the chunk's transfers (split-by-member's own member part, 1/D of g, where the
loop's only collective is a one-phase copy-engine one; 0 otherwise), G and g the
matmuls' (a two-stage pipeline: after the first chunk, the slower stage sets the pace,
and the last chunk's last phase follows the last matmul; of the shorter of the two stages,
the share `slowdown` does not overlap the longer (NCCL's kernels wait for the SMs the
matmuls hold); the host enqueues ahead of the GPU, so its time counts only
where it is the larger; `cuda-graph=true`: none, the program is replayed from a graph),
`reorders` the transposing copies that running whole adds where the stream axis lies
outside the axis a collective splits by member (reorder-sharded-axis then makes each
member's part contiguous), P the phases of the whole collectives and p what each phase
adds on the GPU beyond its transfer (`Machine.gpu_us_per_phase`, which the pipeline pays
per chunk and phase). Where `serial` is smaller it drops the
`Stream` parallelization from every value of the function: no loop is built, and each
communication and matmul runs once, on whole tensors. The user's data layout is the
same either way (a Stream axis is not sharded), so the function's callers see no change.

The chunk count itself is the user's: it is part of the data layout the function's
types declare (chunk i of every rank's shard is gathered together), so the pass chooses
between the declared S chunks and none; where devices share an axis inside the chunks'
piece (`[S*D*m]` split in S, then over D), only the chunks' collectives lower it, and the
pipeline stays. Other transports leave the pipeline as declared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from hostir_dialect import fusion, hir
from hostir_dialect.remarks import remark
from hostir_dialect.sharding import communicates
from hostir_dialect.symbols import fusions_to_lower
from hostir_dialect.tensor_type import DYNAMIC, ParallelKind, TensorType, tensor_type

from .cost_model import DEFAULT_MACHINE, Machine, Topology, TransportChoice, matmul_flops, together_ms
from .fusion_rewriting import retype, tensors
from .sharding_policy import communicated_type, shards_locally, team_along


@dataclass(frozen=True)
class Stages:
    """A function's work per rank, in ms: its communications and its matmuls, whole and
    per chunk of its stream loop, and how much of the shorter of the two does not overlap
    the other (`Machine.matmul_slowdown`)."""

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
    last_phase_per_chunk: float | None = None
    """Of `communication_per_chunk`, the last phase (None: all of it): the part that
    follows a chunk's compute. A copy-engine all-reduce's first phase runs beside the
    chunk's own compute, its second (reduce, push, signal) beside the next chunk's, so
    only the last chunk's second phase is left once the matmuls are done."""
    outside: float = 0.0
    """Of `communication` and `matmuls`, what runs once, outside the loop (on results
    without a stream axis), before or after it in either schedule."""
    phases_per_chunk: int = 0
    """How many phases the chunk's collectives take (NCCL's one, a copy-engine all-reduce's
    two): each adds a signal and a wait on the GPU (`Machine.gpu_us_per_phase`)."""
    own_part_per_chunk: float = 0.0
    """Of `matmuls_per_chunk`, what runs beside the chunk's transfers rather than before or
    after them: split-by-member computes this rank's own member part (1/D of the chunk)
    while a one-phase copy-engine collective moves the others (the all-gather's own slot
    is read in place; a reduce-scatter pushes the peers' parts first). 0 where a later
    phase waits for it (an all-reduce reduces the own part) or the loop has several
    collectives."""
    phases_whole: int = 0
    """How many phases the same collectives take run whole, each on its fastest transport
    for the whole tensor: a whole run pays `gpu_us_per_phase` for each once."""

    def pipelined_ms(self, host_ms_per_chunk: float, gpu_ms_per_phase: float = 0.0) -> float:
        """`gpu_ms_per_phase`: what each phase of a chunk's collectives adds on the GPU
        beyond its transfer (a flag's signal and wait, the streams' events), which
        favours fewer chunks."""
        c, g = self.communication_per_chunk, self.matmuls_per_chunk
        communication = self.chunks * (c - self.latency_per_chunk) + self.latency_per_chunk
        matmuls = self.chunks * g
        together = together_ms(communication, matmuls, self.slowdown)
        last = c if self.last_phase_per_chunk is None else self.last_phase_per_chunk
        exposed = max(0.0, min(last, g) - self.own_part_per_chunk)
        gpu = together + exposed + self.chunks * self.phases_per_chunk * gpu_ms_per_phase
        return max(gpu + self.outside, self.chunks * host_ms_per_chunk)

    def serial_ms(self, host_ms_per_chunk: float, gpu_ms_per_phase: float = 0.0) -> float:
        gpu = self.communication + self.matmuls + self.reorders + self.phases_whole * gpu_ms_per_phase
        return max(gpu, host_ms_per_chunk)


def stream_chunks(func: fusion.FuncOp) -> int | None:
    """The extent of the function's Stream axes, if it has some, all of one static extent."""
    extents: set[int] = set()
    for value, _ in tensors(func):
        t = tensor_type(value)
        axis = t.stream_axis()
        if axis is not None:
            extents.update(p.extent for p in t.axes[axis].pieces if p.parallel == ParallelKind.STREAM)
    return extents.pop() if len(extents) == 1 and DYNAMIC not in extents else None


def estimate(func: fusion.FuncOp, machine: Machine, topology: Topology) -> Stages | None:
    """The function's stages, or None where the model cannot tell (no single static
    stream extent, a dynamic shape, a communication other than an all-gather,
    reduce-scatter or all-reduce within one mesh, or across nodes without the machine's
    inter-node constants)."""
    chunks = stream_chunks(func)
    if chunks is None:
        return None
    matmuls = per_chunk_matmuls = outside = 0.0
    for op in func.body.block.ops:
        if isinstance(op, (fusion.MatmulOp, fusion.LinearOp)):
            flops = matmul_flops(tensor_type(op.result))
            if flops is None:
                return None
            element = str(tensor_type(op.result).element_type)
            matmuls += machine.matmul_ms(flops, element)
            if _in_loop(op):
                per_chunk_matmuls += machine.matmul_ms(flops / chunks, element)
            else:
                outside += machine.matmul_ms(flops, element)
    communication = per_chunk_communication = last_phase = latency = slowdown = reorders = 0.0
    phases_per_chunk = phases_whole = 0
    beside_own_parts: list[float] = []
    for op in func.body.block.ops:
        if isinstance(op, fusion.ComputeOp) and communicates(op) and not shards_locally(op):  # a local copy
            collective, size = _collective(op), _input_bytes(op)
            if collective is None or size is None:
                return None
            kind, teams, parallel = collective
            team_size, spans = teams.size, any(topology.spans_nodes(team) for team in teams.teams())
            listed = teams.along is None  # the copy engines carry a listed team only
            if not machine.prices(kind, spans):
                return None
            whole_phases = machine.fastest_phases_ms(kind, size, team_size, spans, listed)
            whole = sum(whole_phases)
            communication += whole
            if _member_axis_inside_stream_axis(op, parallel):
                reorders += machine.copy_ms(size * (team_size if kind is hir.AllgatherOp else 1))
            if not _in_loop(op):
                outside += whole
                continue
            phases_whole += len(whole_phases)
            chunk = size // chunks
            # As convert-op-to-communication picks: the loop's matmuls run beside it.
            transport = machine.fastest_transport(kind, chunk, team_size, chunks, chunks * per_chunk_matmuls,
                                                  copy_engines=listed and not spans)
            phases = machine.phases_ms(kind, transport, chunk, team_size, spans)
            one_phase_on_copy_engines = transport == hir.Transport.COPY_ENGINE and len(phases) == 1
            beside_own_parts.append(per_chunk_matmuls / team_size if one_phase_on_copy_engines else 0.0)
            per_chunk_communication += sum(phases)
            last_phase += phases[-1]
            phases_per_chunk += len(phases)
            latency += machine.collective_ms(kind, transport, 0, team_size, spans)
            slowdown = max(slowdown, machine.matmul_slowdown[transport])
    own_part = beside_own_parts[0] if len(beside_own_parts) == 1 else 0.0
    return Stages(chunks, communication, per_chunk_communication, matmuls, per_chunk_matmuls, slowdown,
                  latency, reorders, last_phase, outside, phases_per_chunk, own_part, phases_whole)


def _in_loop(op: Operation) -> bool:
    """Does stream-parallel-type compute `op` chunk by chunk (its result has a stream
    axis), rather than once, whole, before or after the loop?"""
    return tensor_type(op.results[0]).stream_axis() is not None


def _collective(op: fusion.ComputeOp) -> tuple[type[hir.CollectiveOp], hir.Team, ParallelKind] | None:
    """The collective a communicating op becomes, where the model knows it (an all-gather,
    reduce-scatter or all-reduce on one mesh: on all of a 1-D one, on each slice of a 2-D
    one), its teams, and the device type it works along."""
    source, target = tensor_type(op.operands[0]), tensor_type(op.result)
    mesh = source.mesh
    if mesh is None or mesh != target.mesh or not isinstance(op, (fusion.SetOp, fusion.ReduceOp)):
        return None
    parallel = communicated_type(op)
    teams = team_along(mesh, parallel)
    in_sharded, out_sharded = source.is_sharded(parallel), target.is_sharded(parallel)
    if isinstance(op, fusion.ReduceOp) and in_sharded:
        return (hir.ReduceScatterOp if out_sharded else hir.AllreduceOp), teams, parallel
    if isinstance(op, fusion.SetOp) and in_sharded and not out_sharded:
        return hir.AllgatherOp, teams, parallel
    return None


def _member_axis_inside_stream_axis(op: fusion.ComputeOp, parallel: ParallelKind) -> bool:
    """Does the axis the collective splits by member (the gathered input's, the scattered
    result's) come after the stream axis?"""
    source, result = tensor_type(op.operands[0]), tensor_type(op.result)
    split = source if isinstance(op, fusion.SetOp) else result
    stream = result.stream_axis() if result.stream_axis() is not None else source.stream_axis()
    member = split.axis_with(parallel, include_reduction=False)
    return stream is not None and member is not None and stream < member


def _input_bytes(op: fusion.ComputeOp) -> int | None:
    """Bytes of the op's input on one member (None: dynamic)."""
    source = tensor_type(op.operands[0])
    assert source.mesh is not None  # a communicating op's input has one (_collective)
    shape = source.local_shape(source.mesh.devices[0])
    return None if shape is None or DYNAMIC in shape else math.prod(shape) * source.element_bytes()


def _devices_inside_chunks(func: fusion.FuncOp) -> bool:
    """Does a value of `func` have a device piece inside an outer piece of its axis (the
    sequence-parallel `[S*D*m]` split in S chunks, then over the devices)? Its
    collectives lower one chunk at a time (the chunk's device piece is outermost), not
    whole."""
    return any(any(p.parallel.is_device for p in a.pieces[1:]) for value, _ in tensors(func) for a in tensor_type(value).axes)


def unpipeline(func: fusion.FuncOp) -> None:
    """Drop the Stream parallelization from every value of `func`."""
    for value, _ in tensors(func):
        retype(value, without_stream(tensor_type(value)))
    func.update_function_type()


def without_stream(t: TensorType) -> TensorType:
    return t.with_(axes=tuple(a.with_serial({ParallelKind.STREAM}) for a in t.axes))


@dataclass(frozen=True)
class ChoosePipelining(ModulePass):
    """Drop a function's stream pipeline where the cost model says running it whole is faster."""

    name = "choose-pipelining"

    transport: str = TransportChoice.NCCL
    """The lowering's transport option: the pass decides only for `auto`."""

    machine: str = DEFAULT_MACHINE
    """The cost model it decides with: `detect` (this machine's GPUs), or a name (passes/cost_model.py)."""

    cuda_graph: bool = False
    """The program will be replayed from a CUDA graph: no host time per chunk, and the
    copy engines' fixed costs as replayed (`Machine.replayed`)."""

    ranks_per_node: int = 0
    """As convert-op-to-communication's: a team that spans nodes communicates on NCCL
    across them (the machine's `inter_node` constants; without them it is not priced)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.transport != TransportChoice.AUTO:
            return
        machine, topology = Machine.load(self.machine), Topology.of(self.ranks_per_node)
        host = 0.0 if self.cuda_graph else machine.host_us_per_chunk / 1e3
        machine = machine.replayed() if self.cuda_graph else machine
        for func in fusions_to_lower(op):
            self.choose(func, machine, topology, host)

    def choose(self, func: fusion.FuncOp, machine: Machine, topology: Topology, host_ms_per_chunk: float) -> None:
        chunks = stream_chunks(func)
        if chunks is not None and _devices_inside_chunks(func):
            remark(func, self.name, f"pipeline of {chunks} chunks kept as declared: devices share an axis inside "
                                    "its outer piece, which only the chunks' collectives lower")
            return
        stages = estimate(func, machine, topology)
        if stages is None:
            if chunks is not None:
                remark(func, self.name, f"pipeline of {chunks} chunks kept as declared: the cost model cannot "
                                        "estimate it (a dynamic shape, or a communication it does not know)")
            return
        gpu_ms_per_phase = machine.gpu_us_per_phase / 1e3
        serial = stages.serial_ms(host_ms_per_chunk, gpu_ms_per_phase)
        pipelined = stages.pipelined_ms(host_ms_per_chunk, gpu_ms_per_phase)
        estimates = f"estimated {serial:.3f} ms whole vs {pipelined:.3f} ms in {stages.chunks} chunks"
        if serial < pipelined:
            unpipeline(func)
            remark(func, self.name, f"pipeline dropped: {estimates}")
        else:
            remark(func, self.name, f"pipeline kept: {estimates}")

"""`hostir-calibrate`: measure the cost model's constants on this machine's GPUs
(hostir/passes/cost_model.py), once, into the user's cache, where `hostir-lower` (machine
`detect`, its default) finds them.

    hostir-calibrate [--gpus N] [--name h100x4] [--out FILE]

One rank per GPU on N GPUs of this host (default all of them; NCCL, one process per GPU),
every rank at work at once, as a program's collectives run: copy-engine pushes into every
other rank's symmetric memory in the order a copy-engine phase pushes (per push), and
NCCL's all-gather, reduce-scatter and all-reduce of the N ranks, at sizes from 64 KiB to
256 MiB each rank's (a line through the times: latency + bytes / bandwidth, least squares);
dense matmuls in bf16 and fp32 at several sizes, replayed from a CUDA graph (sustained
rate, and the work at which the rate halves); a signal passed around the ranks with CUDA
stream memory operations (per hop); how much longer a matmul takes beside a copy-engine
transfer and beside an NCCL all-gather; the
evaluator's host time per stream-loop iteration (a tiny all-gather + matmul pipeline at 8
and at 2 chunks, run eagerly, wall-clock); and the GPU time each collective phase of a
chunk adds (a tiny matmul + all-reduce pipeline at 8 and 2 chunks, replayed from a CUDA
graph, per phase); on more than two GPUs, each copy-engine reduction as hostir runs it,
whole and replayed, at 1 to 64 MiB each rank's. Timing: CUDA events (wall-clock for the host),
medians of 20 runs after warm-up, the maximum over the ranks. About a minute. The
constants hold for a team of N (`team`); the cost model scales NCCL's bytes to others.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import torch.distributed as dist

from hostir.passes import lower
from hostir.passes.cost_model import (
    SLOWDOWN_GEMM,
    SLOWDOWN_OF_THE_SHORTER,
    SLOWDOWN_TRANSFER_BYTES,
    detected_gpus,
    user_machines,
)
from hostir_dialect import DeviceMesh, FusionDefinition, ParallelType
from hostir_dialect.tensor_type import TensorType

from .copy_engine import push_order
from .evaluator import Evaluator
from .launcher import launch
from .layouts import shard_tensor
from .symmetric_memory import Flags, SymmetricHeap

SIZES_MIB = (0.0625, 0.25, 1, 4, 16, 64, 256)
MEMORY_GBPS = {"h100": 3350.0, "h200": 4800.0}
"""Device-memory bandwidth by GPU kind (datasheets; the cost model prices local copies with it)."""


def timed(fn: Callable[[], object], repeat: int = 20, warmup: int = 3, wall: bool = False) -> float:
    """Median ms over `repeat` runs, max over ranks: CUDA-event time, or with `wall` the
    wall-clock time through the runs' GPU work (what the host costs where it is slower)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        began = time.perf_counter()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - began) * 1e3 if wall else start.elapsed_time(end))
    median = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(median, op=dist.ReduceOp.MAX)
    return median.item()


def fit_line(points: Sequence[tuple[float, float]]) -> dict[str, float]:
    """Least squares of ms = latency + bytes / bandwidth, as {latency_us, gbps}."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    intercept = max(0.0, mean_y - slope * mean_x)
    return {"latency_us": round(1e3 * intercept, 1), "gbps": round(1 / slope / 1e6, 1)}


def transfers(device: torch.device, heap: SymmetricHeap) -> dict:
    """`copy_engine`: one push of a copy-engine phase, as every rank pushes to every other
    in turn at once (the time of all of a rank's pushes over their number); `nccl`: each
    collective of all the ranks, by what each contributes."""
    rank, world = dist.get_rank(), dist.get_world_size()
    peers = push_order(rank, world)
    largest = int(max(SIZES_MIB) * 2**20)
    buffer = heap.allocate(tuple(range(world)), (largest,), torch.uint8)
    source = torch.randint(0, 255, (largest,), dtype=torch.uint8, device=device)
    out = torch.empty(world * largest, dtype=torch.uint8, device=device)
    points: dict[str, list[tuple[float, float]]] = {k: [] for k in ("ce", "hir.allgather", "hir.reduce_scatter", "hir.allreduce")}
    for mib in SIZES_MIB:
        n = int(mib * 2**20)

        def pushes() -> None:
            for peer in peers:
                buffer.peer(peer)[:n].copy_(source[:n])

        points["ce"].append((n, timed(pushes) / len(peers)))
        points["hir.allgather"].append((n, timed(lambda: dist.all_gather_into_tensor(out[: world * n], source[:n]))))
        share = n // 2 // world  # bf16 elements out of n bytes in, as for the others
        full = torch.randn(world * share, dtype=torch.bfloat16, device=device)
        chunk = torch.empty(share, dtype=torch.bfloat16, device=device)
        points["hir.reduce_scatter"].append((n, timed(lambda: dist.reduce_scatter_tensor(chunk, full))))
        points["hir.allreduce"].append((n, timed(lambda: dist.all_reduce(source[:n].view(torch.bfloat16)))))
    return {"copy_engine": fit_line(points.pop("ce")), "nccl": {k: fit_line(v) for k, v in points.items()}}


GEMMS_PER_TIMING = 10
"""GEMMs run back to back in one timed run, as a pipeline queues them, replayed from a
CUDA graph as hostir runs programs on GPUs. Launched one at a time the host sets the
pace of the small ones: timed eagerly back to back on 2x H200, the three smallest took
some 15 µs each beyond their peak-rate time (a half-rate of 10.3 GFLOP, where a kernel
trace gives 1.8), which made `auto` run matmul+AR 16384x8192x1024 whole at S = 2
(0.379 ms; pipelined with the shipped constants, 0.341 in the next launch). Timed one
at a time after the idle barrier of each run, they came out some 40 µs above it."""


def matmuls(device: torch.device) -> dict:
    shapes = ((16384, 8192, 4096), (8192, 8192, 1024), (4096, 4096, 1024), (2048, 2048, 512), (1024, 1024, 256))
    result: dict[str, dict[str, float]] = {"matmul_tflops": {}, "matmul_half_rate_gflop": {}}
    for name, dtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        points = []
        for m, k, n in shapes:
            a, b = torch.randn(m, k, dtype=dtype, device=device), torch.randn(k, n, dtype=dtype, device=device)
            c = torch.empty(m, n, dtype=dtype, device=device)

            def back_to_back() -> None:
                for _ in range(GEMMS_PER_TIMING):
                    torch.matmul(a, b, out=c)

            points.append((2 * m * k * n, timed(replayed(back_to_back)) / GEMMS_PER_TIMING))
        tflops, half_rate_gflop = matmul_rate(points)
        result["matmul_tflops"][name] = round(tflops, 1)
        result["matmul_half_rate_gflop"][name] = round(half_rate_gflop, 1)
    for per_type in result.values():
        per_type["f16"] = per_type["bf16"]
    return result


def replayed(work: Callable[[], None]) -> Callable[[], None]:
    """`work` captured in a CUDA graph (after one run on a side stream, which creates the
    cuBLAS handle and workspace capture cannot): its replay, one launch for the host."""
    side, current = torch.cuda.Stream(), torch.cuda.current_stream()
    side.wait_stream(current)
    with torch.cuda.stream(side):
        work()
    current.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        work()
    return graph.replay


def matmul_rate(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(sustained TFLOP/s, GFLOP at half that rate) from (flops, ms) of GEMMs of several
    sizes. ms = flops / peak + overhead, so rate(flops) = peak / (1 + half / flops) with
    half = peak * overhead. The peak is the largest GEMM's rate and the overhead what the
    three smallest take beyond the peak (their median): a line fitted through all of
    them lets the large GEMMs' noise (tens of µs) swamp an overhead of a few µs."""
    ordered = sorted(points)
    peak = ordered[-1][0] / ordered[-1][1]  # flops per ms
    overhead_ms = statistics.median(max(0.0, ms - flops / peak) for flops, ms in ordered[:3])
    return peak / 1e9, overhead_ms * peak / 1e9


def signal_hop(heap: SymmetricHeap) -> float:
    """µs from a flag set in the next rank's memory to its stream moving on: a signal passed
    once around the ranks (from rank 0 to 1, ..., back to 0), per hop."""
    rank, world = dist.get_rank(), dist.get_world_size()
    flags = Flags(heap, tuple(range(world)), slots=1)
    after, before = (rank + 1) % world, (rank - 1) % world

    def around() -> None:
        if rank == 0:
            flags.signal(after, 0)
            flags.wait(before, 0)
        else:
            flags.wait(before, 0)
            flags.signal(after, 0)

    return 1e3 * timed(around) / world


def slowdowns(device: torch.device, heap: SymmetricHeap) -> dict[str, float]:
    """Each transport's `matmul_slowdown`, measured in the order a stream loop enqueues
    work: the GEMM is queued first and a 128 MiB transfer posted after it on another
    stream (a chunk's collective follows the GEMMs already queued on the other worker
    streams). NCCL's kernels then wait for SMs the GEMM holds (on 2x H200 about 0.85 of the
    all-gather does not overlap the GEMM); the copy engines' transfer only shares the
    memory's bandwidth (about 0.15). Every rank at once, the copy engines' transfer into
    the rank before it."""
    world = dist.get_world_size()
    peer = push_order(dist.get_rank(), world)[0]
    m, k, n_columns = SLOWDOWN_GEMM
    a = torch.randn(m, k, dtype=torch.bfloat16, device=device)
    b = torch.randn(k, n_columns, dtype=torch.bfloat16, device=device)
    c = torch.empty(m, n_columns, dtype=torch.bfloat16, device=device)
    n = SLOWDOWN_TRANSFER_BYTES
    buffer = heap.allocate(tuple(range(world)), (n,), torch.uint8)
    source = torch.empty(n, dtype=torch.uint8, device=device)
    gathered = torch.empty(world * n, dtype=torch.uint8, device=device)
    side = torch.cuda.Stream(device=device)

    def after_the_matmul(transfer: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            side.wait_stream(torch.cuda.current_stream())
            torch.matmul(a, b, out=c)
            with torch.cuda.stream(side):
                transfer()
            torch.cuda.current_stream().wait_stream(side)
        return run

    transfers: dict[str, Callable[[], object]] = {
        "copy_engine": lambda: buffer.peer(peer).copy_(source),
        "nccl": lambda: dist.all_gather_into_tensor(gathered, source),
    }
    matmul = timed(lambda: torch.matmul(a, b, out=c))
    return {name: slowdown(matmul, timed(transfer), timed(after_the_matmul(transfer)))
            for name, transfer in transfers.items()}


def slowdown(matmul_ms: float, transfer_ms: float, together_ms: float) -> float:
    """Of the shorter of a GEMM and a transfer posted after it, the share that does not
    overlap the longer, as the cost model reads it (`together_ms` = the longer + that share
    of the shorter; timing noise that makes them faster together is no speed-up)."""
    longer, shorter = max(matmul_ms, transfer_ms), min(matmul_ms, transfer_ms)
    return round(min(1.0, max(0.0, (together_ms - longer) / shorter)), 3)


def _allgather_matmul(chunks: int, world: int) -> FusionDefinition:
    """A tiny all-gather + matmul in `chunks` stream chunks: the GPU waits for the host."""
    with FusionDefinition("calibrate") as fd:
        a = fd.define_tensor([chunks, world, 2, 32], dtype="bfloat16")
        b = fd.define_tensor([32, 16], dtype="bfloat16")
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
    mesh = DeviceMesh(list(range(world)))
    for tensor in (a, b, c):
        tensor.set_device_mesh(mesh)
    a.axis(1).parallelize(ParallelType.DIDx)
    c.axis(0).parallelize(ParallelType.Stream)
    return fd


def _matmul_allreduce(chunks: int, world: int) -> FusionDefinition:
    """A tiny matmul + all-reduce in `chunks` stream chunks (K sharded, each chunk's rows
    in one block per member, as benchmarks/overlap.py writes it): its two phases per
    chunk wait on the most flags and streams of the three pipelines."""
    with FusionDefinition("calibrate") as fd:
        a = fd.define_tensor([chunks, world, world, 2, 32], dtype="bfloat16")
        b = fd.define_tensor([world, 32, 16], dtype="bfloat16")
        b_batched = fd.ops.broadcast(b, [True, False, True, False, False])
        partial = fd.ops.matmul(a, b_batched)
        c = fd.ops.sum(partial, dims=[1])
        fd.add_output(c)
    for tensor in (a, b, b_batched, partial, c):
        tensor.set_device_mesh(DeviceMesh(list(range(world))))
    for tensor in (a, b_batched, partial):
        tensor.axis(1).parallelize(ParallelType.DIDx)
    b.axis(0).parallelize(ParallelType.DIDx)
    for tensor in (partial, c):
        tensor.axis(0).parallelize(ParallelType.Stream)
    return fd


def _ms_per_chunk(pipeline: Callable[[int, int], FusionDefinition], device: torch.device, cuda_graph: bool) -> float:
    """The slope of a tiny copy-engine pipeline's time between 2 and 8 chunks: wall-clock
    run eagerly (the host is slower than the GPU's work), CUDA-event time replayed."""
    world = dist.get_world_size()
    times = {chunks: _copy_engine_ms(pipeline(chunks, world), device, cuda_graph, chunks) for chunks in (2, 8)}
    return (times[8] - times[2]) / 6


def _copy_engine_ms(fd: FusionDefinition, device: torch.device, cuda_graph: bool, streams: int = 1) -> float:
    """One run of `fd` lowered with `transport=copy-engine` (timed as `_ms_per_chunk` says)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    module = lower(fd.to_module(), pipeline=f"hostir-lower{{transport=copy-engine cuda-graph={str(cuda_graph).lower()}}}")
    evaluator = Evaluator(module, rank=rank, world_size=world, device=device, number_of_streams=streams,
                          cuda_graph=cuda_graph)
    types = [t for t in evaluator.function.function_type.inputs.data if isinstance(t, TensorType)]
    shards = [shard_tensor(torch.randn(t.value_shape()).to(torch.bfloat16), t, rank) for t in types]
    inputs = [s.to(device) for s in shards if s is not None]  # every rank holds a shard of each
    return timed(lambda: evaluator.run(inputs), wall=not cuda_graph)


COLLECTIVE_SIZES_MIB = (1, 4, 16, 64)
"""What each rank contributes to the copy-engine collectives `copy_engine_collectives` times."""


def _reduction_alone(kind: str, world: int, nbytes: int) -> FusionDefinition:
    """A reduction of `kind` on all ranks, each contributing `nbytes` of bf16 (rows of
    1024): a sum over the sharded axis, its result whole (an all-reduce) or sharded by
    row blocks (a reduce-scatter)."""
    scatters = kind == "hir.reduce_scatter"
    blocks = [world] if scatters else []
    with FusionDefinition("calibrate") as fd:
        a = fd.define_tensor([world, *blocks, max(1, nbytes // 2 // 1024 // math.prod(blocks)), 1024], dtype="bfloat16")
        c = fd.ops.sum(a, dims=[0])
        fd.add_output(c)
    for tensor in (a, c):
        tensor.set_device_mesh(DeviceMesh(list(range(world))))
    a.axis(0).parallelize(ParallelType.DIDx)
    if scatters:
        c.axis(1).parallelize(ParallelType.DIDx)  # axis 0 is the reduced one
    return fd


def copy_engine_collectives(device: torch.device) -> dict[str, dict[str, float]]:
    """Each reduction as hostir runs it on the copy engines, whole, replayed from a CUDA
    graph, every rank at once: its pushes, signals, waits and adds, by what each rank
    contributes; measured on teams of more than two (none on two). With more than two
    members a phase pushes to several peers, which contend where the ranks are out of
    step, and waits for every one of them: what the pushes' own line (`copy_engine`) leaves
    out (docs/copy_engine.md, "At four GPUs"). Two members push to one peer each, and the
    cost model's pushes were fitted there against the pipelines hostir runs, which a
    reduction alone (an add kernel where a matmul + all-reduce adds in the GEMM) prices
    about twice as slow. (An all-gather's result cannot be a program's output on the copy
    engines: it stays priced by its pushes, which matched its pipelines at four GPUs.)"""
    world = dist.get_world_size()
    if world <= 2:
        return {}
    return {kind: fit_line([(mib * 2**20, _copy_engine_ms(_reduction_alone(kind, world, int(mib * 2**20)), device,
                                                          cuda_graph=True))
                            for mib in COLLECTIVE_SIZES_MIB])
            for kind in ("hir.reduce_scatter", "hir.allreduce")}


def host_us_per_chunk(device: torch.device) -> float:
    """The evaluator's host µs per stream-loop iteration, run eagerly."""
    return round(_ms_per_chunk(_allgather_matmul, device, cuda_graph=False) * 1e3, 1)


def gpu_us_per_phase(device: torch.device) -> float:
    """The GPU µs each phase of a chunk's collectives adds beyond its transfer, replayed
    from a CUDA graph: half the tiny matmul + all-reduce's slope (two copy-engine phases
    per chunk; its work is a few µs)."""
    return round(max(0.0, _ms_per_chunk(_matmul_allreduce, device, cuda_graph=True)) / 2 * 1e3, 1)


def measure(rank: int, world_size: int, name: str) -> dict:
    """Every constant, measured on this rank together with the others (launched per rank)."""
    device = torch.device("cuda", rank)
    heap = SymmetricHeap(rank, device, lambda team: dist.group.WORLD)
    kind = torch.cuda.get_device_name(device)
    constants: dict = {"name": name, "team": world_size,
                       "measured_on": f"{world_size}x {kind}, torch {torch.__version__}, NCCL "
                       f"{'.'.join(map(str, torch.cuda.nccl.version()))}, hostir-calibrate"}
    constants |= matmuls(device)
    constants["memory_gbps"] = next((v for k, v in MEMORY_GBPS.items() if k in name), 3350.0)
    constants |= transfers(device, heap)
    constants["signal_us"] = round(signal_hop(heap), 1)
    constants["matmul_slowdown"] = slowdowns(device, heap)
    constants["matmul_slowdown_per"] = SLOWDOWN_OF_THE_SHORTER
    constants["host_us_per_chunk"] = host_us_per_chunk(device)
    constants["gpu_us_per_phase"] = gpu_us_per_phase(device)
    constants["copy_engine_collectives"] = copy_engine_collectives(device)
    return constants


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hostir-calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, help="how many of this host's GPUs to measure together (default: all)")
    parser.add_argument("--name", help="the machine's name (default: its GPU kind and the GPUs measured, e.g. h100x4)")
    parser.add_argument("--out", type=Path, help=f"default: {user_machines()}/NAME.json")
    args = parser.parse_args(argv)
    gpus = detected_gpus()
    if gpus is None or gpus[1] < 2 or torch.cuda.device_count() < 2:
        print("hostir-calibrate: error: needs two NVIDIA GPUs of one kind on this host", file=sys.stderr)
        return 1
    team = args.gpus or min(gpus[1], torch.cuda.device_count())
    if not 2 <= team <= torch.cuda.device_count():
        print(f"hostir-calibrate: error: --gpus {team}: this host has {torch.cuda.device_count()} GPUs; "
              "measure 2 to all of them", file=sys.stderr)
        return 1
    name = args.name or f"{gpus[0]}x{team}"
    constants = launch(measure, team, (name,), backend="nccl", timeout=900)[0]
    out = args.out or user_machines() / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(constants, indent=2) + "\n")
    print(json.dumps(constants, indent=2))
    print(f"hostir-calibrate: wrote {out}")
    return 0


def console_main() -> None:
    sys.exit(main())

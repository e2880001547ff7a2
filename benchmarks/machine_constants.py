"""Measure the cost model's constants on this machine (passes/cost_model.py).

    torchrun --nproc-per-node 2 benchmarks/machine_constants.py --name h200x2 [--out passes/machines/h200x2.json]

On 2 GPUs of one host: copy-engine pushes into a peer's symmetric memory and NCCL's
all-gather, reduce-scatter and all-reduce at sizes from 64 KiB to 256 MiB (a line through
the times: latency + bytes / bandwidth, fitted by least squares); dense matmuls in bf16 and
fp32 at several sizes (sustained rate, and the work at which the rate halves); a
cross-rank signal's round trip with CUDA stream memory operations; and how much longer a
matmul takes beside a copy-engine transfer and beside an NCCL all-gather; and the
evaluator's host time per stream-loop iteration (tiny pipelines of each overlap case,
lowered with the copy-engine transport, at 8 and at 2 chunks, wall-clock). Timing: CUDA
events (wall-clock for the host), medians of 20 runs after warm-up, maximum over ranks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist
from cases import CASES, Operands, Problem, hostir

from hostir.passes.cost_model import MACHINES
from hostir.runtime.symmetric_memory import Flags, SymmetricHeap

SIZES_MIB = (0.0625, 0.25, 1, 4, 16, 64, 256)


def timed(fn, repeat: int = 20, warmup: int = 3, wall: bool = False) -> float:
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


def fit_line(points: list[tuple[float, float]]) -> dict[str, float]:
    """Least squares of ms = latency + bytes / bandwidth, as {latency_us, gbps}."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x, _ in points)
    intercept = max(0.0, mean_y - slope * mean_x)
    return {"latency_us": round(1e3 * intercept, 1), "gbps": round(1 / slope / 1e6, 1)}


def transfers(device: torch.device, heap: SymmetricHeap) -> dict:
    peer = 1 - dist.get_rank()
    largest = int(max(SIZES_MIB) * 2**20)
    buffer = heap.allocate((0, 1), (largest,), torch.uint8)
    source = torch.randint(0, 255, (largest,), dtype=torch.uint8, device=device)
    out = torch.empty(2 * largest, dtype=torch.uint8, device=device)
    points: dict[str, list[tuple[float, float]]] = {k: [] for k in ("ce", "hir.allgather", "hir.reduce_scatter", "hir.allreduce")}
    for mib in SIZES_MIB:
        n = int(mib * 2**20)
        half = source[:n].view(torch.bfloat16)
        points["ce"].append((n, timed(lambda: buffer.peer(peer)[:n].copy_(source[:n]))))
        points["hir.allgather"].append((n, timed(lambda: dist.all_gather_into_tensor(out[: 2 * n], source[:n]))))
        full = torch.randn(n // 2 * 2, dtype=torch.bfloat16, device=device)
        chunk = torch.empty(n // 2, dtype=torch.bfloat16, device=device)
        points["hir.reduce_scatter"].append((n, timed(lambda: dist.reduce_scatter_tensor(chunk, full))))
        points["hir.allreduce"].append((n, timed(lambda: dist.all_reduce(half))))
    return {"copy_engine": fit_line(points.pop("ce")), "nccl": {k: fit_line(v) for k, v in points.items()},
            "points_ms": {k: v for k, v in points.items()}}


def matmuls(device: torch.device) -> dict:
    shapes = ((16384, 8192, 4096), (8192, 8192, 1024), (4096, 4096, 1024), (2048, 2048, 512), (1024, 1024, 256))
    result = {"matmul_tflops": {}, "matmul_half_rate_gflop": {}}
    for name, dtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        points = []
        for m, k, n in shapes:
            a, b = torch.randn(m, k, dtype=dtype, device=device), torch.randn(k, n, dtype=dtype, device=device)
            c = torch.empty(m, n, dtype=dtype, device=device)
            points.append((2 * m * k * n, timed(lambda: torch.matmul(a, b, out=c))))
        # ms = flops / peak + overhead, so rate(flops) = peak / (1 + half / flops) with
        # half = peak * overhead. The peak is the largest GEMM's rate and the overhead what
        # the smaller ones take beyond the peak: a line fitted through all of them lets the
        # large GEMMs' noise (tens of µs) swamp an overhead of a few µs.
        points.sort()
        peak = points[-1][0] / points[-1][1]  # flops per ms
        overhead_ms = statistics.median(max(0.0, ms - flops / peak) for flops, ms in points[:3])
        result["matmul_tflops"][name] = round(peak / 1e9, 1)
        result["matmul_half_rate_gflop"][name] = round(overhead_ms * peak / 1e9, 1)
    for per_type in result.values():
        per_type["f16"] = per_type["bf16"]
    return result


def signal_round_trip(device: torch.device, heap: SymmetricHeap) -> float:
    flags = Flags(heap, (0, 1), slots=2)
    rank, peer = dist.get_rank(), 1 - dist.get_rank()

    def ping() -> None:
        if rank == 0:
            flags.signal(peer, 0)
            flags.wait(peer, 1)
        else:
            flags.wait(peer, 0)
            flags.signal(peer, 1)

    return 1e3 * timed(ping) / 2


def slowdowns(device: torch.device, heap: SymmetricHeap) -> dict[str, float]:
    peer = 1 - dist.get_rank()
    a = torch.randn(16384, 8192, dtype=torch.bfloat16, device=device)
    b = torch.randn(8192, 4096, dtype=torch.bfloat16, device=device)
    c = torch.empty(16384, 4096, dtype=torch.bfloat16, device=device)
    n = 128 * 2**20
    buffer = heap.allocate((0, 1), (n,), torch.uint8)
    source = torch.empty(n, dtype=torch.uint8, device=device)
    gathered = torch.empty(2 * n, dtype=torch.uint8, device=device)
    side = torch.cuda.Stream(device=device)

    def beside(transfer):
        def run() -> None:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                transfer()
            torch.matmul(a, b, out=c)
            torch.cuda.current_stream().wait_stream(side)
        return run

    alone = timed(lambda: torch.matmul(a, b, out=c))
    copy = timed(beside(lambda: buffer.peer(peer).copy_(source)))
    nccl = timed(beside(lambda: dist.all_gather_into_tensor(gathered, source)))
    return {"copy_engine": round(copy / alone - 1, 3), "nccl": round(nccl / alone - 1, 3)}


def host_us_per_chunk(device: torch.device) -> float:
    """The evaluator's host µs per stream-loop iteration, the largest over the overlap
    cases: tiny shapes, so that the GPU waits for the host, at 8 and at 2 chunks."""
    problem = Problem(64, 32, 16, torch.bfloat16, device, dist.get_rank(), dist.get_world_size())
    options = {"convert-op-to-communication": {"transport": "copy-engine"}}
    slopes = []
    for case_class in CASES.values():
        case = case_class(problem)
        times = {}
        for chunks in (2, 8):
            variant = hostir(case, chunks, options)
            variant.load(Operands(problem, seed=1))
            times[chunks] = timed(variant.run, wall=True)
        slopes.append((times[8] - times[2]) / 6 * 1e3)
    return round(max(slopes), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True, help="the machine's name, e.g. h200x2")
    parser.add_argument("--out", type=Path, help="default: passes/machines/<name>.json")
    args = parser.parse_args()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    heap = SymmetricHeap(dist.get_rank(), device, lambda team: dist.group.WORLD)
    constants = {"name": args.name, "measured_on": f"2x {torch.cuda.get_device_name(device)}, torch {torch.__version__}, "
                 f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, benchmarks/machine_constants.py"}
    constants |= matmuls(device)
    constants["memory_gbps"] = 4300.0
    measured = transfers(device, heap)
    constants["copy_engine"], constants["nccl"] = measured["copy_engine"], measured["nccl"]
    constants["signal_us"] = round(signal_round_trip(device, heap), 1)
    constants["matmul_slowdown"] = slowdowns(device, heap)
    constants["host_us_per_chunk"] = host_us_per_chunk(device)
    if dist.get_rank() == 0:
        out = args.out or MACHINES / f"{args.name}.json"
        out.write_text(json.dumps(constants, indent=2) + "\n")
        print(json.dumps(constants, indent=2))
        print("points (bytes, ms):", json.dumps(measured["points_ms"]))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

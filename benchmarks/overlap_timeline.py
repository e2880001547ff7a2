"""The device timeline of overlap.py's variants: where each run's time goes, per stream.

For each case, shape, variant and chunk count named, this builds the variant as overlap.py
does, checks it against the float64 reference, warms it up, then runs it once under
torch.profiler and prints rank 0's device work in start order (kernels, copies, memsets:
stream, start and length in µs from the run's first device event) and a summary per rank:
wall time of the device work, time busy with GEMMs, with transfers (NCCL kernels and
peer-to-peer copies) and with both at once. With `--trace DIR` each rank's Chrome trace goes
to DIR/<case>_<shape>_<variant>_rank<r>.json.

    torchrun --nproc-per-node 2 benchmarks/overlap_timeline.py --cases AG+matmul \
        --shapes 16384x8192x1024 --variants naive hostir_ce_graph --chunks 4 [--trace DIR]

Variants: the names overlap.py prints without their _S suffix (naive, torch_fused,
handwritten_nccl, hostir_nccl, hostir_ce, hostir_auto, hostir_ce_graph, hostir_auto_graph);
the swept ones run at each --chunks.
"""

from __future__ import annotations

import argparse
import re
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist
from cases import CASES, Operands, Problem, hostir
from measure import DTYPES, check, join_world, parse_shape, settle
from overlap import HOSTIR_VARIANTS

GEMM = re.compile(r"gemm|gemv|xmma|cutlass|nvjet|matmul", re.IGNORECASE)  # nvjet: cuBLASLt on Hopper
TRANSFER = re.compile(r"nccl|memcpy ptop|memcpy dtod|memcpy peer", re.IGNORECASE)
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=sorted(CASES))
    parser.add_argument("--shapes", nargs="+", type=parse_shape, required=True)
    parser.add_argument("--variants", nargs="+", required=True)
    parser.add_argument("--chunks", nargs="+", type=int, default=[4])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--trace", type=Path, help="write each rank's Chrome trace here")
    parser.add_argument("--events", type=int, default=80, help="rank 0's device events printed per run")
    return parser.parse_args(argv)


def builders(case, names: list[str], chunk_counts: list[int]):
    hostir_options = {label: (options, graph) for label, options, graph in HOSTIR_VARIANTS}
    for name in names:
        if name in hostir_options:
            options, graph = hostir_options[name]
            for s in chunk_counts:
                yield f"{name}_S{s}", partial(hostir, case, s, options, cuda_graph=graph)
        elif name == "handwritten_nccl":
            for s in chunk_counts:
                yield f"{name}_S{s}", partial(case.handwritten, s)
        else:
            yield name, getattr(case, name)


def device_events(profile) -> list[dict]:
    events = [e for e in profile.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return [{"name": e.name, "stream": getattr(e, "device_resource_id", None) or e.thread,
             "start": e.time_range.start, "end": e.time_range.end} for e in events]


def union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def length(intervals: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in intervals)


def both(first: list[tuple[float, float]], second: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(a1, b1) - max(a0, b0)) for a0, a1 in first for b0, b1 in second)


def summary(events: list[dict]) -> dict:
    if not events:
        return {"wall": 0.0, "gemm": 0.0, "transfer": 0.0, "both": 0.0}
    gemm = union([(e["start"], e["end"]) for e in events if GEMM.search(e["name"])])
    transfer = union([(e["start"], e["end"]) for e in events if TRANSFER.search(e["name"])])
    wall = max(e["end"] for e in events) - min(e["start"] for e in events)
    return {"wall": wall, "gemm": length(gemm), "transfer": length(transfer), "both": both(gemm, transfer)}


def profile_once(variant, device: torch.device, warmup: int, trace: Path | None) -> list[dict]:
    for _ in range(warmup):
        variant.run()
    settle(device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        variant.run()
        torch.cuda.synchronize(device)
    if trace is not None:
        trace.parent.mkdir(parents=True, exist_ok=True)
        profile.export_chrome_trace(str(trace))
    return device_events(profile)


def report(label: str, events: list[dict], summaries: list[dict], limit: int) -> None:
    print(f"\n== {label}")
    for rank, s in enumerate(summaries):
        print(f"rank {rank}: device wall {s['wall']:.0f} us, GEMM busy {s['gemm']:.0f}, transfer busy "
              f"{s['transfer']:.0f}, both at once {s['both']:.0f}")
    if not events:
        return
    t0 = min(e["start"] for e in events)
    for e in sorted(events, key=lambda e: e["start"])[:limit]:
        print(f"  s{e['stream']:<4} {e['start'] - t0:9.1f} {e['end'] - e['start']:8.1f}  {e['name'][:70]}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device, joined = join_world()
    if device.type != "cuda":
        raise SystemExit("overlap_timeline.py needs GPUs: the device timeline comes from CUDA")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        for case_name in args.cases:
            for m, k, n in args.shapes:
                case = CASES[case_name](Problem(m, k, n, DTYPES[args.dtype], device, rank, world))
                for name, build in builders(case, args.variants, args.chunks):
                    variant = build()
                    error = check(variant, Operands(case.p, 1), device)
                    label = f"{case_name} {m}x{k}x{n} {name} (relative error {error:.1e})"
                    stem = f"{re.sub(r'[^A-Za-z0-9]', '_', case_name)}_{m}x{k}x{n}_{name}_rank{rank}"
                    path = None if args.trace is None else args.trace / f"{stem}.json"
                    events = profile_once(variant, device, args.warmup, path)
                    summaries: list = [None] * world
                    dist.all_gather_object(summaries, summary(events))
                    if rank == 0:
                        report(label, events, summaries, args.events)
                    del variant
    finally:
        if joined:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""The device timeline of overlap.py's variants: where each run's time goes, per stream.

For each case, shape, variant and chunk count named, this builds the variant as overlap.py
does, checks it against the float64 reference, warms it up, then runs it once under
torch.profiler and prints every rank's device work in start order (kernels, copies, memsets:
rank, stream, start and length in µs from the first device event of any rank: the ranks
leave a host barrier just before the run, and their traces share the host's clock) and a
summary per rank: wall time of the device work, time busy with GEMMs, with transfers (NCCL
kernels and peer-to-peer copies) and with both at once. With `--runs N` it profiles N runs
issued back to back instead, as overlap.py's back-to-back timing issues them, and also
prints each rank's longest gaps with no device work at all (where a run waits between or
inside runs). With `--trace DIR` each rank's Chrome trace goes to
DIR/<case>_<shape>_<variant>_rank<r>.json.

    torchrun --nproc-per-node 2 benchmarks/overlap_timeline.py --cases AG+matmul \
        --shapes 16384x8192x1024 --variants naive hostir_ce_graph --chunks 4 [--trace DIR]
        [--copy-engine-streams N] [--runs N]

Variants: the names overlap.py prints without their _S suffix (naive, torch_fused,
handwritten_nccl, handwritten_ce, and every hostir label of overlap.py's HOSTIR_VARIANTS);
the swept ones run at each --chunks.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist
from cases import CASES, Operands, Problem, hostir
from measure import DTYPES, check, join_world, leave_world, parse_shape, settle
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
    parser.add_argument("--trace", type=Path, help="keep each rank's Chrome trace here (default: a temporary folder)")
    parser.add_argument("--events", type=int, default=80, help="device events printed per run (all ranks)")
    parser.add_argument("--runs", type=int, default=1, help="runs profiled, issued back to back (default 1)")
    parser.add_argument("--gaps", type=int, default=8, help="longest idle gaps printed per rank with --runs > 1")
    parser.add_argument("--copy-engine-streams", type=int, default=1,
                        help="the hostir variants' communication streams per copy-engine phase (default 1)")
    return parser.parse_args(argv)


def builders(case, names: list[str], chunk_counts: list[int], copy_engine_streams: int = 1):
    hostir_options = {label: (options, graph) for label, options, graph in HOSTIR_VARIANTS}
    for name in names:
        if name in hostir_options:
            options, graph = hostir_options[name]
            for s in chunk_counts:
                yield f"{name}_S{s}", partial(hostir, case, s, options, cuda_graph=graph,
                                              copy_engine_streams=copy_engine_streams)
        elif name in ("handwritten_nccl", "handwritten_ce"):
            method = case.handwritten if name == "handwritten_nccl" else case.handwritten_ce
            for s in chunk_counts:
                yield f"{name}_S{s}", partial(method, s)
        else:
            yield name, getattr(case, name)


def device_events(trace: Path) -> list[dict]:
    """The device work of a Chrome trace, with its host-clock timestamps (µs)."""
    events = json.loads(trace.read_text())["traceEvents"]
    return [{"name": e["name"], "stream": e.get("args", {}).get("stream"), "start": e["ts"], "end": e["ts"] + e["dur"]}
            for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES]


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


def profile_runs(variant, device: torch.device, warmup: int, trace: Path, host_barrier, runs: int = 1) -> list[dict]:
    for _ in range(warmup):
        variant.run()
    settle(device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        # Started profilers differ by hundreds of µs between ranks: the runs start after a
        # host barrier (gloo, no device work), as overlap.py's timed runs do.
        torch.cuda.synchronize(device)
        dist.barrier(group=host_barrier)
        for _ in range(runs):
            variant.run()
        torch.cuda.synchronize(device)
    trace.parent.mkdir(parents=True, exist_ok=True)
    profile.export_chrome_trace(str(trace))
    return device_events(trace)


def idle_gaps(events: list[dict]) -> list[tuple[float, float]]:
    """(start, length) of every stretch between a rank's first and last device event with
    no device work on any stream, longest first."""
    busy = union([(e["start"], e["end"]) for e in events])
    return sorted(((end, following - end) for (_, end), (following, _) in zip(busy, busy[1:])),
                  key=lambda gap: -gap[1])


def report(label: str, per_rank: list[list[dict]], limit: int, runs: int = 1, gaps: int = 0) -> None:
    print(f"\n== {label}")
    everything = [dict(e, rank=rank) for rank, events in enumerate(per_rank) for e in events]
    if not everything:
        return
    t0 = min(e["start"] for e in everything)
    print(f"all ranks: {max(e['end'] for e in everything) - t0:.0f} us from the first device event to the last")
    for rank, events in enumerate(per_rank):
        s = summary(events)
        print(f"rank {rank}: device wall {s['wall']:.0f} us, GEMM busy {s['gemm']:.0f}, transfer busy "
              f"{s['transfer']:.0f}, both at once {s['both']:.0f}"
              + (f" ({runs} runs back to back: {s['wall'] / runs:.0f} us per run)" if runs > 1 else ""))
        if runs > 1 and gaps:
            idle = idle_gaps(events)
            print(f"  idle: {sum(g for _, g in idle):.0f} us in all; longest (us, at): "
                  + ", ".join(f"{g:.0f} at {start - t0:.0f}" for start, g in idle[:gaps]))
    for e in sorted(everything, key=lambda e: e["start"])[:limit]:
        print(f"  r{e['rank']} s{e['stream']!s:<4} {e['start'] - t0:9.1f} {e['end'] - e['start']:8.1f}  {e['name'][:60]}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device, joined = join_world()
    if device.type != "cuda":
        raise SystemExit("overlap_timeline.py needs GPUs: the device timeline comes from CUDA")
    trace_dir = args.trace or Path(tempfile.mkdtemp(prefix="overlap_timeline_"))
    host_barrier = dist.new_group(backend="gloo")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        for case_name in args.cases:
            for m, k, n in args.shapes:
                case = CASES[case_name](Problem(m, k, n, DTYPES[args.dtype], device, rank, world))
                for name, build in builders(case, args.variants, args.chunks, args.copy_engine_streams):
                    variant = build()
                    error = check(variant, Operands(case.p, 1), device)
                    label = f"{case_name} {m}x{k}x{n} {name} (relative error {error:.1e})"
                    stem = f"{re.sub(r'[^A-Za-z0-9]', '_', case_name)}_{m}x{k}x{n}_{name}_rank{rank}"
                    events = profile_runs(variant, device, args.warmup, trace_dir / f"{stem}.json", host_barrier,
                                          args.runs)
                    per_rank: list = [None] * world
                    dist.all_gather_object(per_rank, events)
                    if rank == 0:
                        report(label, per_rank, args.events, args.runs, args.gaps)
                    del variant
    finally:
        leave_world(joined)


if __name__ == "__main__":
    main()

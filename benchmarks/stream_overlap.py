"""Communication/computation overlap of the collective-based stream pipelines on 2 GPUs.

For AG+matmul, matmul+AR and matmul+RS (nvFuser's tests/cpp/test_multidevice_stream_parallel_type.cpp), lowered by `hostir-lower`, this
times in one launch (2 ranks, NCCL, median of --repeat runs after a warm-up):

  pipelined   the program with numberOfStreams = --streams (default 4)
  serial      the same program with numberOfStreams = 1 (no overlap possible)
  comm        the collective alone, same chunks and streams
  compute     the matmul alone, same chunks and streams
  ideal       max(comm, compute): perfect overlap

and prints pipelined/serial and pipelined/ideal. Run on a machine with 2 GPUs:

    python benchmarks/stream_overlap.py [--chunks 4] [--streams 4] [--json stream_overlap.json]

Without 2 GPUs it runs on 2 CPU ranks with gloo (use --tiny): the figures then only show
that the programs run.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module
from passes import build_passes, run_passes
from runtime import shard_tensor
from runtime.launcher import Job, run_spmd_batch


def t(shape: str) -> str:
    return f"!fusion.tensor<f32[{shape}], mesh=[0, 1]>"


def fusion(args: dict[str, str], body: list[tuple[str, str, str]], result: str) -> str:
    """`body`: (name, op text without the result, result type)."""
    signature = ", ".join(f"%{name}: {ty}" for name, ty in args.items())
    lines = [f"  %{name} = {op} -> {ty}" for name, op, ty in body]
    ret = next(ty for name, _, ty in body if name == result)
    return f"fusion.func @f({signature}) -> {ret} {{\n" + "\n".join(lines) + f"\n  fusion.return %{result} : {ret}\n}}"


def ag_matmul(s: int, m: int = 2048, k: int = 4096, n: int = 256) -> dict[str, str]:
    a, g, b = t(f"{s}, 2 didx, {m}, {k}"), t(f"{s}, 2, {m}, {k}"), t(f"{k}, {n}")
    c, gathered = t(f"{s} stream, 2, {m}, {n}, r{k}"), t(f"{s} stream, 2, {m}, {k}")
    return {
        "pipelined": fusion({"a": a, "b": b}, [("c", f"fusion.matmul %a, %b : {a}, {b}", c)], "c"),
        "comm": fusion({"a": a}, [("g", f"fusion.set %a : {a}", gathered)], "g"),
        "compute": fusion({"a": g, "b": b}, [("c", f"fusion.matmul %a, %b : {g}, {b}", c)], "c"),
    }


def matmul_ar(s: int, m: int = 2048, k: int = 512, n: int = 4096) -> dict[str, str]:
    a, b = t(f"{s}, 2 didx, {m}, {k}"), t(f"b1, 2 didx, {k}, {n}")
    u, partial, c = t(f"{s} stream, 2 didx, {m}, {n}, r{k}"), t(f"{s}, 2 didx, {m}, {n}"), t(f"{s} stream, r2 didx, {m}, {n}")
    matmul = ("u", f"fusion.matmul %a, %b : {a}, {b}", u)
    return {
        "pipelined": fusion({"a": a, "b": b}, [matmul, ("c", f"fusion.reduce sum %u dims [1] : {u}", c)], "c"),
        "comm": fusion({"u": partial}, [("c", f"fusion.reduce sum %u dims [1] : {partial}", c)], "c"),
        "compute": fusion({"a": a, "b": b}, [matmul], "u"),
    }


def matmul_rs(s: int, m: int = 1024, k: int = 512, n: int = 4096) -> dict[str, str]:
    a, b, bb = t(f"{s}, 2 didx, 2, {m}, {k}"), t(f"2 didx, {k}, {n}"), t(f"b1, 2 didx, b1, {k}, {n}")
    u, partial = t(f"{s} stream, 2 didx, 2, {m}, {n}, r{k}"), t(f"{s}, 2 didx, 2, {m}, {n}")
    c = t(f"{s} stream, r2, 2 didx, {m}, {n}")
    head = [("bb", f"fusion.broadcast %b dims [0, 2] : {b}", bb), ("u", f"fusion.matmul %a, %bb : {a}, {bb}", u)]
    return {
        "pipelined": fusion({"a": a, "b": b}, [*head, ("c", f"fusion.reduce sum %u dims [1] : {u}", c)], "c"),
        "comm": fusion({"u": partial}, [("c", f"fusion.reduce sum %u dims [1] : {partial}", c)], "c"),
        "compute": fusion({"a": a, "b": b}, head, "u"),
    }


CASES = {"AG+matmul": ag_matmul, "matmul+AR": matmul_ar, "matmul+RS": matmul_rs}
WORLD = 2


def job(text: str, streams: int, repeat: int) -> Job:
    module = parse_module(text)
    run_passes(make_context(), module, build_passes("hostir-lower"))
    (program,) = [op for op in module.ops if isinstance(op, hir.ProgramOp)]
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randn(arg.type.value_shape(), generator=generator) for arg in program.args]
    per_rank = [[shard_tensor(x, arg.type, r) for x, arg in zip(inputs, program.args)] for r in range(WORLD)]
    return Job(str(module), per_rank, number_of_streams=streams, repeat=repeat + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=4, help="stream extent S (default 4)")
    parser.add_argument("--streams", type=int, default=4, help="numberOfStreams of the pipelined run (default 4)")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs after one warm-up (default 10)")
    parser.add_argument("--json", default=None, help="also write the results to this JSON file")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes: a smoke run of the plumbing on CPUs")
    args = parser.parse_args()
    sizes = {"m": 8, "k": 16, "n": 8} if args.tiny else {}
    keys, jobs = [], []
    for case, build in CASES.items():
        texts = build(args.chunks, **sizes)
        for kind, text, streams in (
            ("pipelined", texts["pipelined"], args.streams), ("serial", texts["pipelined"], 1),
            ("comm", texts["comm"], args.streams), ("compute", texts["compute"], args.streams),
        ):
            keys.append((case, kind))
            jobs.append(job(text, streams, args.repeat))
    results = run_spmd_batch(jobs, WORLD, backend="nccl" if torch.cuda.device_count() >= WORLD else "gloo")
    # A run ends when its slowest rank does: per run, the max over ranks; then the median.
    ms = {
        key: 1e3 * statistics.median(max(times) for times in zip(*(r.times[1:] for r in ranks)))
        for key, ranks in zip(keys, results)
    }
    rows = []
    print(f"{'case':<11}{'pipelined':>10}{'serial':>9}{'comm':>8}{'compute':>9}{'ideal':>8}"
          f"{'pipe/serial':>13}{'pipe/ideal':>12}   (ms)")
    for case in CASES:
        row = {kind: ms[(case, kind)] for kind in ("pipelined", "serial", "comm", "compute")}
        row |= {"case": case, "ideal": max(row["comm"], row["compute"]), "chunks": args.chunks, "streams": args.streams}
        rows.append(row)
        print(f"{case:<11}{row['pipelined']:>10.3f}{row['serial']:>9.3f}{row['comm']:>8.3f}{row['compute']:>9.3f}"
              f"{row['ideal']:>8.3f}{row['pipelined'] / row['serial']:>13.2f}{row['pipelined'] / row['ideal']:>12.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

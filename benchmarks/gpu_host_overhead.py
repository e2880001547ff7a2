"""Host overhead of hostir's evaluator on GPU ranks: what running a lowered program costs
the host beyond the torch calls it makes.

1. Pipelines. AG+matmul, matmul+RS and matmul+AR over S chunks on S streams (default 8), at a
   tiny shape (1024x256x256, median of 200 runs) and the overlap shapes (median of 30): the
   lowered program run by runtime.Evaluator, eagerly (hostir) and replayed from a CUDA graph
   (hostir graph), against the same schedule written by hand in torch (cases.py: same
   streams, same collectives, same matmul(out=), same waits). Per run: wall time including
   torch.cuda.synchronize(), CUDA-event time, and the host time to issue the run (the call
   alone). All are checked against torch before they are timed.
2. Host ops. Microseconds of host time per host op, by kind: a `hir.program` repeating one op
   kind N times, timed through Evaluator.run, minus the same program without those ops (a
   collective is timed with its wait: a program may not leave a work token unwaited).
3. Graph replay. A program of 10 and of 1,000 host ops (matmuls into one buffer), eager and
   replayed from a CUDA graph: a replay's host time does not grow with the number of ops.

    torchrun --nproc-per-node 2 benchmarks/gpu_host_overhead.py [--dtype bf16|fp32] [--chunks 8]
        [--json PATH] [--tiny]

On one GPU (--nproc-per-node 1), part 1 times a matmul pipelined the same way without any
communication (cases.StreamMatmul) and part 2 skips the collective.

On GPUs it writes benchmarks/results/gpu_host_overhead_<gpu>x<ranks>_<dtype>.json unless told
otherwise. --tiny: toy sizes and few runs (on CPU ranks with gloo where there are no GPUs),
a smoke run whose times mean nothing; it writes a file only where told.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist
from cases import CASES, Case, Operands, Problem, StreamMatmul, hostir, unsupported
from measure import DTYPES, Variant, checked_timing, format_table, join_world, leave_world, machine_info, machine_kind, time_runs

from hostir.runtime import Evaluator
from hostir_dialect.context import parse_module

PIPELINE_SHAPES = {(1024, 256, 256): 200, (16384, 8192, 4096): 30, (32768, 4096, 2048): 30, (16384, 8192, 1024): 30}
TINY_PIPELINE_SHAPES = {(64, 32, 16): 10}
OPS_PER_PROGRAM, PROGRAM_RUNS = 200, 50
GRAPH_OP_COUNTS, TINY_GRAPH_OP_COUNTS = (10, 1000), (10, 100)
TINY_OPS_PER_PROGRAM, TINY_PROGRAM_RUNS = 20, 3
WARMUP = 3
ELEMENT_TYPES = {"bf16": "bf16", "fp32": "f32"}
RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--chunks", type=int, default=8, help="stream chunks S of the pipelines (default 8)")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--tiny", action="store_true", help="toy sizes, few runs: a smoke run")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark on this rank (every rank returns the same report)."""
    args = parse_args(argv)
    device, joined = join_world()
    try:
        report = {
            "benchmark": "gpu_host_overhead",
            "machine": machine_info(device, args.dtype),
            "pipelines": pipelines(args, device),
            "host_ops": host_ops(args, device),
            "graph_replay": graph_replay(args, device),
        }
        if dist.get_rank() == 0:
            print(tables(report))
            write_json(report, args, device)
        return report
    finally:
        leave_world(joined)


# --------------------------------------------------------------------------- #
# 1. Pipelines: hostir against the same schedule by hand
# --------------------------------------------------------------------------- #


def pipelines(args: argparse.Namespace, device: torch.device) -> list[dict]:
    world, dtype = dist.get_world_size(), DTYPES[args.dtype]
    shapes = TINY_PIPELINE_SHAPES if args.tiny else PIPELINE_SHAPES
    for m, k, _ in shapes:
        problem = unsupported(m, k, max(world, 2), [args.chunks])
        if problem:
            raise SystemExit(f"gpu_host_overhead.py: {problem}")
    seeds = itertools.count(1)  # a fresh input per check, the same on every rank
    rows = []
    for case_class in CASES.values() if world > 1 else [StreamMatmul]:
        for (m, k, n), repeat in shapes.items():
            case = case_class(Problem(m, k, n, dtype, device, dist.get_rank(), world))
            builds = {"hostir": partial(hostir, case, args.chunks, {}),
                      "hostir_graph": partial(hostir, case, args.chunks, {}, cuda_graph=True),
                      "handwritten": partial(case.handwritten, args.chunks)}
            rows.append({"op": case.name, "shape": [m, k, n], "chunks": args.chunks, "repeat": repeat,
                         **{name: checked_pipeline(build, case, next(seeds), repeat) for name, build in builds.items()}})
    return rows


def checked_pipeline(build: Callable[[], Variant], case: Case, seed: int, repeat: int) -> dict:
    result = checked_timing(build, lambda: Operands(case.p, seed), case.p.device, case.p.dtype, repeat, WARMUP)
    if "timing" in result:
        result["timing"] = dataclasses.asdict(result["timing"])
    return result


# --------------------------------------------------------------------------- #
# 2. Host ops: one kind repeated
# --------------------------------------------------------------------------- #


def host_op_kinds(world: int) -> dict[str, tuple]:
    """kind -> (prelude(n): the lines before the n ops, op(i): the i-th op's line)."""
    team = ", ".join(map(str, range(world)))

    def gather_and_wait(i: int) -> str:
        # The verifier requires every work token to be waited, so the two are timed together.
        return f"%v{i} = hir.allgather %s -> %g team [{team}] : !shard -> !gathered\n  hir.wait %v{i}"

    stream = ["%c0 = arith.constant 0 : index", "%w = hir.stream %c0"]
    return {
        "allocate": (lambda n: [], lambda i: f"%v{i} = hir.allocate : !t"),
        "alias_select": (lambda n: ["%c0 = arith.constant 0 : index"],
                         lambda i: f"%v{i} = hir.alias_select %x[%c0] axis 0 : !t -> !row"),
        "set_current_stream": (lambda n: stream, lambda i: "hir.set_current_stream %w"),
        "synchronize": (lambda n: stream, lambda i: "hir.synchronize %w"),
        "collective + wait (allgather)": (lambda n: ["%g = hir.allocate : !gathered"], gather_and_wait),
        "compute (matmul)": (lambda n: ["%o = hir.allocate : !tr"],
                             lambda i: f"%v{i} = fusion.matmul %x, %y into %o : !t, !t -> !tr"),
        "post_on_stream": (lambda n: [], lambda i: f"%v{i} = hir.post_on_stream @neg(%x) : (!t) -> !t"),
    }


def host_program(element: str, world: int, lines: list[str]) -> str:
    """A program on a 64x64 matrix pair and a 256-element shard, running `lines`."""
    mesh = f"mesh=[{', '.join(map(str, range(world)))}]"
    body = "\n".join(f"  {line}" for line in lines)
    return f"""!t = !fusion.tensor<{element}[64, 64]>
!row = !fusion.tensor<{element}[64]>
!tr = !fusion.tensor<{element}[64, 64, r64]>
!shard = !fusion.tensor<{element}[{world} didx, 256], {mesh}>
!gathered = !fusion.tensor<{element}[{world}, 256], {mesh}>
hir.program @main(%x: !t, %y: !t, %s: !shard) -> !t {{
{body}
  hir.return %x : !t
}}
fusion.func @neg(%x: !t) -> !t {{
  %y = fusion.neg %x : !t -> !t
  fusion.return %y : !t
}}
"""


def host_ops(args: argparse.Namespace, device: torch.device) -> list[dict]:
    world, dtype, element = dist.get_world_size(), DTYPES[args.dtype], ELEMENT_TYPES[args.dtype]
    count, runs = (TINY_OPS_PER_PROGRAM, TINY_PROGRAM_RUNS) if args.tiny else (OPS_PER_PROGRAM, PROGRAM_RUNS)
    inputs = [torch.randn(64, 64, device=device).to(dtype), torch.randn(64, 64, device=device).to(dtype),
              torch.randn(1, 256, device=device).to(dtype)]
    rows = []
    for kind, (prelude, op) in host_op_kinds(world).items():
        if world == 1 and kind.startswith("collective"):
            continue  # a team of one copies its input: no collective to time
        with_ops = host_ms(host_program(element, world, [*prelude(count), *map(op, range(count))]), inputs, device, runs)
        without = host_ms(host_program(element, world, prelude(count)), inputs, device, runs)
        rows.append({"kind": kind, "ops": count, "runs": runs, "us_per_op": 1e3 * (with_ops - without) / count})
    return rows


def host_ms(program: str, inputs: list[torch.Tensor], device: torch.device, runs: int) -> float:
    """Median host time of Evaluator.run on `program` (the program's device work is drained
    between runs, outside the timed call)."""
    evaluator = Evaluator(parse_module(program), number_of_streams=1, device=device)
    return time_runs(lambda: evaluator.run(inputs), device, runs, WARMUP).host_ms


# --------------------------------------------------------------------------- #
# 3. Graph replay: host time against the number of host ops
# --------------------------------------------------------------------------- #


def matmul_chain(element: str, count: int) -> str:
    """`count` matmuls of a 64x64 pair into one buffer, which the program returns."""
    lines = [f"  %v{i} = fusion.matmul %x, %y into %o : !t, !t -> !tr" for i in range(count)]
    return f"""!t = !fusion.tensor<{element}[64, 64]>
!tr = !fusion.tensor<{element}[64, 64, r64]>
hir.program @main(%x: !t, %y: !t) -> !tr {{
  %o = hir.allocate : !tr
{chr(10).join(lines)}
  hir.return %o : !tr
}}
"""


def graph_replay(args: argparse.Namespace, device: torch.device) -> list[dict]:
    dtype, element = DTYPES[args.dtype], ELEMENT_TYPES[args.dtype]
    counts, runs = (TINY_GRAPH_OP_COUNTS, TINY_PROGRAM_RUNS) if args.tiny else (GRAPH_OP_COUNTS, PROGRAM_RUNS)
    inputs = [torch.randn(64, 64, device=device).to(dtype) for _ in range(2)]
    rows = []
    for count in counts:
        row: dict = {"ops": count, "runs": runs}
        for mode, cuda_graph in (("eager", False), ("graph", True)):
            evaluator = Evaluator(parse_module(matmul_chain(element, count)), number_of_streams=1, device=device,
                                  cuda_graph=cuda_graph)
            row[mode] = dataclasses.asdict(time_runs(lambda: evaluator.run(inputs), device, runs, WARMUP))
            row[f"{mode}_mode"] = evaluator.graph_mode
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #


def tables(report: dict) -> str:
    machine = report["machine"]
    title = f"GPU host overhead, {machine['dtype']}, {machine['world_size']} ranks on {machine['gpu'] or 'CPU'}"
    if machine["gpu"] is None:
        title += " (no CUDA: all three times are the host clock around the call)"
    header = ["pipeline", "S", "runs", "hostir wall ms", "graph wall ms", "hand wall ms", "wall hostir/hand",
              "wall graph/hand", "hostir event ms", "graph event ms", "hand event ms", "hostir issue ms",
              "graph issue ms", "hand issue ms"]
    rows = [[f"{row['op']} {'x'.join(map(str, row['shape']))}", row["chunks"], row["repeat"], *_pipeline_cells(row)]
            for row in report["pipelines"]]
    ops = [[row["kind"], f"{row['us_per_op']:.1f}", row["ops"], row["runs"]] for row in report["host_ops"]]
    replay = [[row["ops"], row["runs"], *(f"{row[mode][key]:.3f}" for mode in ("eager", "graph")
                                          for key in ("host_ms", "wall_ms"))] for row in report["graph_replay"]]
    return "\n\n".join([
        f"{title}\n(medians, max over ranks; wall = until torch.cuda.synchronize(); issue = the call alone)\n"
        + format_table(header, rows),
        "host time per host op (Evaluator.run, minus the program without the ops)\n"
        + format_table(["op kind", "µs/op", "ops", "runs"], ops),
        f"graph replay ({report['graph_replay'][0]['graph_mode']}): a program of N matmuls\n"
        + format_table(["host ops", "runs", "eager issue ms", "eager wall ms", "graph issue ms", "graph wall ms"], replay),
    ])


VARIANTS = ("hostir", "hostir_graph", "handwritten")


def _pipeline_cells(row: dict) -> list[str]:
    if any("timing" not in row[name] for name in VARIANTS):
        return [*(row[name]["status"] for name in VARIANTS), *["—"] * 8]
    a, g, b = (row[name]["timing"] for name in VARIANTS)
    return [*(f"{t['wall_ms']:.3f}" for t in (a, g, b)), f"{a['wall_ms'] / b['wall_ms']:.2f}×",
            f"{g['wall_ms'] / b['wall_ms']:.2f}×", *(f"{t[key]:.3f}" for key in ("device_ms", "host_ms") for t in (a, g, b))]


def write_json(report: dict, args: argparse.Namespace, device: torch.device) -> None:
    path = args.json or (None if args.tiny else RESULTS / f"gpu_host_overhead_{machine_kind(device)}_{args.dtype}.json")
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

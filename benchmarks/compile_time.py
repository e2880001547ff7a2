"""Compile time of `hostir-lower`: seconds per pass on fusions of 10 to 10,000 ops, and
how each grows with the number of ops.

The fusion repeats a 10-op block of the kinds the examples hold, on 2 devices: a kernel
unit (neg, exp), binary ops, an allgather into a stream-parallel loop, a matmul, a
reduction and a chain carried from block to block. Each row is a median of `--repeat`
runs, in one process (no start-up; as a script it collects garbage as hostir-opt does),
in CPU seconds of this process (on a shared machine, wall time measures the neighbours
too): parsing (`LocatingParser`, and xDSL's plain `Parser` on the same text for
comparison), verifying the input, each pass, the
verification when the pipeline ends (hostir-opt's default; `--verify-each` verifies
after every pass, which costs that line once per pass) and printing the result. The
growth exponent is the slope of log(seconds) against log(ops) between the two largest
sizes: 1 is linear. `--cli` also runs `hostir-opt -p hostir-lower` as a command on a
200-op file, start-up included (wall and CPU seconds).

    python benchmarks/compile_time.py [--sizes 10 100 1000 10000] [--repeat 3] [--cli] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import math
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from xdsl.parser import Parser

from hostir.passes import build_passes
from hostir.passes.opt import garbage_collected_rarely
from hostir_dialect.context import make_context
from hostir_dialect.diagnostics import LocatingParser, verify_located
from hostir_dialect.printer import Printer

SHARDED = "!fusion.tensor<f32[8, 2 didx, 16], mesh=[0, 1]>"
REPLICATED = "!fusion.tensor<f32[8, 2, 16], mesh=[0, 1]>"
STREAMED = "!fusion.tensor<f32[8 stream, 2, 16], mesh=[0, 1]>"
WEIGHT = "!fusion.tensor<f32[16, 16], mesh=[0, 1]>"
PRODUCT = "!fusion.tensor<f32[8 stream, 2, 16, r16], mesh=[0, 1]>"
ROW_SUMS = "!fusion.tensor<f32[8 stream, 2, r16], mesh=[0, 1]>"
BLOCK_OPS = 10


def block(k: int, x: str, acc: str, acc_type: str) -> list[str]:
    """Ten ops reading the carried values `x` (sharded) and `acc` (streamed after the
    first block); they define `%b{k}_x` and `%b{k}_acc`, carried to the next block."""
    p = f"%b{k}_"
    return [
        f"{p}neg = fusion.neg {x} : {SHARDED} -> {SHARDED}",
        f"{p}exp = fusion.exp {p}neg : {SHARDED} -> {SHARDED}",
        f"{p}sum = fusion.add {p}exp, {x} : {SHARDED}, {SHARDED} -> {SHARDED}",
        f"{p}all = fusion.set {p}sum : {SHARDED} -> {STREAMED}",
        f"{p}mul = fusion.mul {p}all, {acc} : {STREAMED}, {acc_type} -> {STREAMED}",
        f"{p}max = fusion.maximum {p}mul, {p}all : {STREAMED}, {STREAMED} -> {STREAMED}",
        f"{p}mm = fusion.matmul {p}max, %w : {STREAMED}, {WEIGHT} -> {PRODUCT}",
        f"{p}acc = fusion.add {p}mm, {p}mul : {PRODUCT}, {STREAMED} -> {STREAMED}",
        f"{p}rows = fusion.reduce sum {p}acc dims [2] : {STREAMED} -> {ROW_SUMS}",
        f"{p}x = fusion.sub {p}sum, {x} : {SHARDED}, {SHARDED} -> {SHARDED}",
    ]


def fusion_text(ops: int) -> str:
    """A fusion of `ops` ops (a multiple of 10)."""
    lines, x, acc, acc_type = [], "%x", "%acc", REPLICATED
    for k in range(ops // BLOCK_OPS):
        lines += block(k, x, acc, acc_type)
        x, acc, acc_type = f"%b{k}_x", f"%b{k}_acc", STREAMED
    body = "\n".join(f"  {line}" for line in lines)
    return (
        f"fusion.func @f(%x: {SHARDED}, %acc: {REPLICATED}, %w: {WEIGHT}) -> ({SHARDED}, {acc_type}) {{\n"
        f"{body}\n  fusion.return {x}, {acc} : {SHARDED}, {acc_type}\n}}\n"
    )


def timed(run: Callable[[], object]) -> tuple[float, object]:
    start = time.process_time()
    result = run()
    return time.process_time() - start, result


def one_compilation(text: str) -> dict[str, float]:
    """CPU seconds of each step of `hostir-opt -p hostir-lower`, in order."""
    seconds: dict[str, float] = {}
    seconds["parse (xDSL Parser)"], _ = timed(lambda: Parser(make_context(), text, "bench.mlir").parse_module())
    seconds["parse"], module = timed(lambda: LocatingParser(make_context(), text, "bench.mlir").parse_module())
    seconds["verify input"], _ = timed(lambda: verify_located(module))
    ctx = make_context()
    for module_pass in build_passes("hostir-lower"):
        seconds[module_pass.name], _ = timed(lambda module_pass=module_pass: module_pass.apply(ctx, module))
    seconds["verification"], _ = timed(lambda: verify_located(module))
    seconds["print"], _ = timed(lambda: Printer(stream=io.StringIO()).print_op(module))
    return seconds


def measure(sizes: list[int], repeat: int) -> dict:
    results: dict = {"sizes": sizes, "repeat": repeat, "python": platform.python_version(), "seconds": {}}
    for ops in sizes:
        text = fusion_text(ops)
        runs = []
        for _ in range(repeat):
            gc.collect()
            runs.append(one_compilation(text))
        steps = list(runs[0])
        medians = {step: statistics.median(run[step] for run in runs) for step in steps}
        medians["total (parse to print)"] = sum(t for step, t in medians.items() if step != "parse (xDSL Parser)")
        results["seconds"][ops] = medians
    return results


def growth(results: dict, step: str) -> float | None:
    """The slope of log(seconds) against log(ops) between the two largest sizes."""
    small, large = sorted(results["sizes"])[-2:]
    a, b = results["seconds"][small][step], results["seconds"][large][step]
    if min(a, b) <= 0 or small == large:
        return None
    return math.log(b / a) / math.log(large / small)


def cli_seconds(ops: int, repeat: int) -> dict:
    """Wall and CPU seconds of `hostir-opt FILE -p hostir-lower` and of `hostir-opt
    --version` (start-up alone), as separate processes: medians of `repeat`."""
    opt = [sys.executable, "-c", "from hostir.passes.opt import console_main; console_main()"]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"fusion{ops}.mlir"
        path.write_text(fusion_text(ops))
        commands = {"start-up": [*opt, "--version"], f"{ops} ops": [*opt, str(path), "-p", "hostir-lower"]}
        times = {}
        for name, command in commands.items():
            wall, cpu = [], []
            for _ in range(repeat):
                before, start = _children_cpu(), time.perf_counter()
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
                wall.append(time.perf_counter() - start)
                cpu.append(_children_cpu() - before)
            times[name] = {"wall": statistics.median(wall), "cpu": statistics.median(cpu)}
    return times


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def table(results: dict) -> str:
    sizes = results["sizes"]
    header = f"| step | {' | '.join(f'{n:,} ops' for n in sizes)} | growth |"
    lines = [header, "|" + " --- |" * (len(sizes) + 2)]
    for step in results["seconds"][sizes[0]]:
        cells = [f"{results['seconds'][n][step]:.4f}" for n in sizes]
        exponent = growth(results, step) if len(sizes) > 1 else None
        lines.append(f"| {step} | {' | '.join(cells)} | {'' if exponent is None else f'N^{exponent:.2f}'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cli", action="store_true", help="also time hostir-opt as a command on 200 ops (7 runs)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if any(n % BLOCK_OPS for n in args.sizes):
        parser.error(f"sizes must be multiples of {BLOCK_OPS}")
    results = measure(args.sizes, args.repeat)
    print(f"hostir-lower compile time, CPU seconds (median of {args.repeat}; python {results['python']})")
    print(table(results))
    if args.cli:
        results["cli_seconds"] = cli_seconds(200, 7)
        print("hostir-opt as a command, seconds (median of 7): " + ", ".join(
            f"{name} {s['wall']:.3f} wall, {s['cpu']:.3f} CPU" for name, s in results["cli_seconds"].items()))
    if args.json:
        write_json(args.json, results)
    return results


def write_json(path: Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    with garbage_collected_rarely():  # measured collecting garbage as hostir-opt does
        main()

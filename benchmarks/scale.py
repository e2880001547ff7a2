"""Scale: the same programs at 1 to 1,024 devices (issue 30). For each program and device
count D: CPU seconds to lower it (parsing and the passes of `hostir-lower` before
`verify-collective-order`) and to verify it (`verify-collective-order`, and the IR
verifier hostir-opt runs when the pipeline ends), the whole from parsing to printing, the
peak of Python's allocations (tracemalloc, a run of its own: it slows the one it watches;
every module of hostir_dialect and hostir.passes imported first, so that it counts what the
compilation allocates, not the first import of modules the passes import when they run),
and the lowered program's op count and printed size. Each compilation runs in a fresh
process, as `hostir-opt` does (the type and shape caches of one compilation would speed up
the next one in the same process), and is timed there, start-up excluded; the memory run
also reports the process's peak resident size (the interpreter and xDSL included).

Programs (types only matter: nothing runs; `hostir-lower{transport=nccl}`, so each keeps
its stream loop as written): the P2P ring (a matmul whose stream axis is
its input's device axis: `hir.shift` in a loop of D iterations), AG+matmul, matmul+RS,
matmul+AR (each on a 1-D mesh of D devices, 4 stream chunks), and a 2-D matmul+AR (data
parallel along DIDy, K split along DIDx, all-reduced on each mesh row) on the squarest
grid of D devices. Each time is a median of `--repeat` runs.

    python benchmarks/scale.py [--devices 1 2 8 64 512 1024] [--repeat 3] [--programs ring ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import io
import json
import pkgutil
import platform
import resource
import statistics
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from compile_time import timed, write_json

import hostir.passes
import hostir_dialect
from hostir.passes import build_passes
from hostir.passes.opt import garbage_collected_rarely
from hostir.passes.verify_collective_order import VerifyCollectiveOrder
from hostir_dialect.context import make_context
from hostir_dialect.diagnostics import LocatingParser, verify_located
from hostir_dialect.printer import Printer
from hostir_dialect.tensor_type import Mesh


def tensor(shape: str, mesh: Mesh) -> str:
    return f"!fusion.tensor<f32[{shape}], mesh={mesh}>"


def line(devices: int) -> Mesh:
    return Mesh.of(list(range(devices)))


def grid(devices: int) -> Mesh:
    """The squarest rows x columns grid of `devices` (a power of two), rows <= columns."""
    rows = 1 << (devices.bit_length() - 1) // 2
    columns = devices // rows
    return Mesh.of([list(range(r * columns, (r + 1) * columns)) for r in range(rows)])


def function(name: str, args: list[tuple[str, str]], ops: list[str], result: tuple[str, str]) -> str:
    """`fusion.func @name(args) -> result { ops; return }`."""
    signature = ", ".join(f"%{a}: {t}" for a, t in args)
    body = "\n".join(f"  {op}" for op in ops)
    return f"fusion.func @{name}({signature}) -> {result[1]} {{\n{body}\n  fusion.return %{result[0]} : {result[1]}\n}}\n"


def ring(d: int) -> str:
    m = line(d)
    a, b, c = tensor(f"{d} didx, 4, 8", m), tensor("8, 3", m), tensor(f"{d} stream, 4, 3, r8", m)
    return function("ring", [("a", a), ("b", b)], [f"%c = fusion.matmul %a, %b : {a}, {b} -> {c}"], ("c", c))


def ag_matmul(d: int) -> str:
    m = line(d)
    a, b, c = tensor(f"4, {d} didx, 2, 8", m), tensor("8, 4", m), tensor(f"4 stream, {d}, 2, 4, r8", m)
    return function("ag_matmul", [("a", a), ("b", b)], [f"%c = fusion.matmul %a, %b : {a}, {b} -> {c}"], ("c", c))


def matmul_rs(d: int) -> str:
    m = line(d)
    a, b, bb = tensor(f"4, {d} didx, {d}, 4, 4", m), tensor(f"{d} didx, 4, 2", m), tensor(f"b1, {d} didx, b1, 4, 2", m)
    u, c = tensor(f"4 stream, {d} didx, {d}, 4, 2, r4", m), tensor(f"4 stream, r{d}, {d} didx, 4, 2", m)
    return function("matmul_rs", [("a", a), ("b", b)], [
        f"%bb = fusion.broadcast %b dims [0, 2] : {b} -> {bb}",
        f"%u = fusion.matmul %a, %bb : {a}, {bb} -> {u}",
        f"%c = fusion.reduce sum %u dims [1] : {u} -> {c}",
    ], ("c", c))


def summed_matmul(name: str, a: str, b: str, u: str, c: str, axis: int) -> str:
    """`c = sum(matmul(a, b), axis)`: each device's partial products, all-reduced."""
    return function(name, [("a", a), ("b", b)], [
        f"%u = fusion.matmul %a, %b : {a}, {b} -> {u}",
        f"%c = fusion.reduce sum %u dims [{axis}] : {u} -> {c}",
    ], ("c", c))


def matmul_ar(d: int) -> str:
    m = line(d)
    a, b = tensor(f"4, {d} didx, 2, 4", m), tensor(f"{d} didx, 4, 4", m)
    u, c = tensor(f"4 stream, {d} didx, 2, 4, r4", m), tensor(f"4 stream, r{d}, 2, 4", m)
    return summed_matmul("matmul_ar", a, b, u, c, 1)


def matmul_ar_2d(d: int) -> str:
    m = grid(d)
    y, x = m.shape
    a, b = tensor(f"4, {y} didy, {x} didx, 2, 4", m), tensor(f"{x} didx, 4, 4", m)
    u, c = tensor(f"4 stream, {y} didy, {x} didx, 2, 4, r4", m), tensor(f"4 stream, {y} didy, r{x}, 2, 4", m)
    return summed_matmul("matmul_ar_2d", a, b, u, c, 2)


PROGRAMS: dict[str, Callable[[int], str]] = {
    "ring": ring, "AG+matmul": ag_matmul, "matmul+RS": matmul_rs, "matmul+AR": matmul_ar, "2-D matmul+AR": matmul_ar_2d,
}


PIPELINE = "hostir-lower{transport=nccl}"
"""Every program as written: `auto` would run these toy sizes whole, without their loops."""


def compilation(text: str) -> dict:
    """CPU seconds of lowering and of verification, and the lowered program's size."""
    ctx = make_context()
    seconds = {"lower": 0.0, "verify": 0.0}
    elapsed, module = timed(lambda: LocatingParser(ctx, text, "scale.mlir").parse_module())
    seconds["lower"] += elapsed
    for module_pass in build_passes(PIPELINE):
        elapsed, _ = timed(lambda module_pass=module_pass: module_pass.apply(ctx, module))
        seconds["verify" if isinstance(module_pass, VerifyCollectiveOrder) else "lower"] += elapsed
    elapsed, _ = timed(lambda: verify_located(module))
    seconds["verify"] += elapsed
    printed = io.StringIO()
    elapsed, _ = timed(lambda: Printer(stream=printed).print_op(module))
    seconds["total"] = seconds["lower"] + seconds["verify"] + elapsed
    return {**seconds, "ops": sum(1 for _ in module.walk()), "chars": len(printed.getvalue())}


def memory(text: str) -> dict:
    """The peak of Python's allocations while `text` is compiled as `compilation` does,
    and the process's peak resident size after it, in MiB."""
    import_compiler_modules()
    gc.collect()
    tracemalloc.start()
    try:
        compilation(text)
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {"peak_mb": traced / 2**20, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10}


def import_compiler_modules() -> None:
    """Every module of hostir_dialect and hostir.passes (some are imported only when a pass
    first runs, which tracemalloc would count as the compilation's)."""
    for package in (hostir_dialect, hostir.passes):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)


def in_fresh_process(name: str, devices: int, what: str) -> dict:
    """`compilation` or `memory` of one program, run by this script in a new process."""
    command = [sys.executable, __file__, "--one", name, str(devices), what]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def measure(names: list[str], devices: list[int], repeat: int) -> dict:
    results: dict = {"devices": devices, "repeat": repeat, "python": platform.python_version(), "programs": {}}
    for name in names:
        rows = results["programs"][name] = {}
        for d in devices:
            runs = [in_fresh_process(name, d, "compilation") for _ in range(repeat)]
            row = {key: statistics.median(run[key] for run in runs) for key in ("lower", "verify", "total")}
            rows[d] = {**row, **in_fresh_process(name, d, "memory"), "ops": runs[0]["ops"], "chars": runs[0]["chars"]}
    return results


def table(results: dict) -> str:
    lines = ["| program | D | lower s | verify s | total s | peak MiB (allocated) | peak RSS MiB | ops | printed chars |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, rows in results["programs"].items():
        for d, r in rows.items():
            label = f"{d} ({'x'.join(map(str, grid(d).shape))})" if name == "2-D matmul+AR" else str(d)
            lines.append(f"| {name} | {label} | {r['lower']:.3f} | {r['verify']:.3f} | {r['total']:.3f} | "
                         f"{r['peak_mb']:.1f} | {r['rss_mb']:.0f} | {r['ops']} | {r['chars']:,} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 8, 64, 512, 1024])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--programs", nargs="+", choices=list(PROGRAMS), default=list(PROGRAMS))
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--one", nargs=3, metavar=("PROGRAM", "D", "WHAT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # a child of `in_fresh_process`
        name, d, what = args.one
        print(json.dumps({"compilation": compilation, "memory": memory}[what](PROGRAMS[name](int(d)))))
        return {}
    if any(d < 1 or d & (d - 1) for d in args.devices):
        parser.error("device counts must be powers of two (the 2-D program's grid halves them)")
    results = measure(args.programs, args.devices, args.repeat)
    print(f"hostir-lower at D devices, CPU seconds (median of {args.repeat}; python {results['python']})")
    print(table(results))
    if args.json:
        write_json(args.json, results)
    return results


if __name__ == "__main__":
    with garbage_collected_rarely():  # measured collecting garbage as hostir-opt does
        main()

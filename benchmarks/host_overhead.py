"""Host overhead of the compiled evaluator: µs per op of a long program of tiny ops,
against the same torch calls made directly from a Python loop.

Two programs of N `fusion.add ... into %o` on a 2x3 CPU tensor (so the torch work is as
small as it gets and the host overhead shows): N straight-line ops, and one op in an
`scf.for` of N iterations. Then what `fd.execute` adds to a run: a 20-op fusion
(relu and add, 10 times) executed again and again, against `Evaluator.run` of its
lowered program (fd.execute keeps its lowered program and evaluator, so the ratio should
stay under 1.1). Prints a table; `--json PATH` also writes the figures.

    python benchmarks/host_overhead.py [--ops 2000] [--repeat 7] [--json benchmarks/results/host_overhead.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from hostir import FusionDefinition
from hostir.runtime import Evaluator
from hostir_dialect.context import parse_module

TYPE = "!t = !fusion.tensor<f32[2, 3]>\n"


def straight_line(ops: int) -> str:
    body = "\n".join(f"  %r{k} = fusion.add %o, %y into %o : !t, !t -> !t" for k in range(ops))
    return TYPE + f"hir.program @main(%o: !t, %y: !t) -> !t {{\n{body}\n  hir.return %o : !t\n}}\n"


def loop(ops: int) -> str:
    return TYPE + f"""hir.program @main(%o: !t, %y: !t) -> !t {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {ops} : index
  scf.for %i = %c0 to %n step %c1 {{
    %r = fusion.add %o, %y into %o : !t, !t -> !t
  }}
  hir.return %o : !t
}}
"""


def direct(o: torch.Tensor, y: torch.Tensor, ops: int) -> None:
    for _ in range(ops):
        torch.add(o, y, out=o)


def median_seconds(run, repeat: int) -> float:
    run()  # warm up
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(ops: int, repeat: int) -> dict:
    o, y = torch.zeros(2, 3), torch.ones(2, 3)
    results = {"ops": ops, "repeat": repeat, "python": platform.python_version(), "torch": torch.__version__}
    direct_s = median_seconds(lambda: direct(o, y, ops), repeat)
    results["direct_us_per_op"] = direct_s / ops * 1e6
    for name, text in (("straight_line", straight_line(ops)), ("loop", loop(ops))):
        start = time.perf_counter()
        evaluator = Evaluator(parse_module(text))
        compile_s = time.perf_counter() - start
        o.zero_()
        (out,) = evaluator.run([o, y])
        assert out is o and torch.equal(o, torch.full((2, 3), float(ops))), f"{name}: wrong result"
        seconds = median_seconds(lambda: evaluator.run([o, y]), repeat)
        results[name] = {
            "evaluator_us_per_op": seconds / ops * 1e6,
            "overhead_us_per_op": (seconds - direct_s) / ops * 1e6,
            "parse_and_compile_s": compile_s,
        }
    results["fd_execute"] = repeated_execute(repeat)
    return results


def twenty_op_fusion() -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor([8, 64])
        b = fd.define_tensor([8, 64])
        for _ in range(10):
            x = fd.ops.add(fd.ops.relu(x), b)
        fd.add_output(x)
    return fd


def repeated_execute(repeat: int) -> dict:
    """Seconds of the first fd.execute (lowering and compiling), of later ones, and of a
    bare Evaluator.run of the same lowered program (medians of `repeat` * 20 runs)."""
    fd = twenty_op_fusion()
    inputs = [torch.randn(8, 64), torch.randn(8, 64)]
    start = time.perf_counter()
    (first,) = fd.execute(inputs)
    first_s = time.perf_counter() - start
    evaluator = Evaluator(fd.lower())
    assert torch.equal(first, evaluator.run(inputs)[0]), "fd.execute and Evaluator.run disagree"
    runs = 20 * repeat
    execute_s = median_seconds(lambda: fd.execute(inputs), runs)
    run_s = median_seconds(lambda: evaluator.run(inputs), runs)
    return {"first_execute_s": first_s, "execute_s": execute_s, "evaluator_run_s": run_s, "ratio": execute_s / run_s}


def table(results: dict) -> str:
    lines = [f"host overhead, {results['ops']} x fusion.add into a 2x3 f32 CPU tensor "
             f"(median of {results['repeat']}; python {results['python']}, torch {results['torch']})",
             f"  {'program':<15}{'evaluator µs/op':>17}{'direct torch µs/op':>20}{'overhead µs/op':>16}"]
    for name in ("straight_line", "loop"):
        r = results[name]
        lines.append(f"  {name:<15}{r['evaluator_us_per_op']:>17.3f}{results['direct_us_per_op']:>20.3f}"
                     f"{r['overhead_us_per_op']:>16.3f}")
    e = results["fd_execute"]
    lines.append(f"fd.execute of a 20-op fusion: first {e['first_execute_s'] * 1e3:.1f} ms (lower, compile, run), "
                 f"then {e['execute_s'] * 1e3:.3f} ms against {e['evaluator_run_s'] * 1e3:.3f} ms for "
                 f"Evaluator.run: {e['ratio']:.3f}x")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()
    results = measure(args.ops, args.repeat)
    print(table(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Communication/computation overlap: hostir's pipelines against their peers, in one launch.

For AG+matmul, matmul+RS and matmul+AR (cases.py) at each shape M×K×N, this checks and then
times on every rank (method: measure.py):

  comm_nccl, comm_ce, matmul     the communication alone (NCCL; copy engine) and the GEMM alone
  naive                          the collective and the matmul one after the other
  handwritten_nccl_S{2,4,8}      hostir's stream schedule written in torch, S chunks on S streams
  handwritten_ce_S{2,4,8}        matmul+AR on 2 GPUs: the copy-engine schedule hostir should
                                 emit, by hand (cases.MatmulAllReduce.handwritten_ce); — elsewhere
  torch_fused                    torch's fused symmetric-memory op (none for matmul+AR: —)
  <hostir label>_S{2,4,8}        the fusion built with the Python frontend, lowered with the
                                 label's pipeline options, run by runtime.Evaluator with
                                 numberOfStreams = S (the _graph labels: replayed from a
                                 CUDA graph; eagerly on CPU ranks)

and prints one row per case and shape: ms of comm, matmul and the two ideals, then each
variant's time over the NCCL ideal (`_best` columns: the best S); then, per case and shape,
the naive and fused variants and each family at its best S against both ideals, the share of
the hideable time they hide and their TFLOP/s per GPU against the GEMM alone's:

  ideal NCCL      max(comm_nccl, matmul): NCCL's communication wholly hidden
  ideal CE        max(the bytes each rank sends on the copy engines at their bandwidth in the
                  machine's cost model (hostir-calibrate, passes/machines/*.json), matmul)
  hidden          (C + G - T) / min(C, G): C the fastest communication alone measured, G the
                  GEMM alone, T the variant; 1 = all of the shorter one hidden, 0 = serial
  TFLOP/s         2·M·N·K per rank (K/D for matmul+RS and matmul+AR) / T
  back to back    the same variant's time per run issued back to back (measure.py), over
                  max(comm_nccl, matmul) timed the same way

A variant whose check fails is reported `WRONG <error>` and not timed.

    torchrun --nproc-per-node 2 benchmarks/overlap.py [--dtype bf16|fp32] [--shapes MxKxN ...]
        [--chunks S ...] [--hostir LABEL ...] [--copy-engine-streams N] [--rounds N] [--json PATH] [--png PATH] [--tiny]

On GPUs it writes benchmarks/results/overlap_<gpu>x<ranks>_<dtype>.json and .png unless told
otherwise. --tiny runs toy sizes (on CPU ranks with gloo where there are no GPUs) to prove the
plumbing and the checks; its times mean nothing, and it writes files only where told.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist
from cases import CASES, Case, Operands, Problem, hostir, lowering_pipeline, unsupported
from measure import (
    DTYPES,
    Variant,
    add_rounds_argument,
    checked_timings,
    format_table,
    join_world,
    leave_world,
    machine_info,
    machine_kind,
    parse_shape,
)

from hostir.passes.cost_model import Machine
from hostir_dialect.copy_engine_facts import copy_engine_algorithm

AUTO = {"choose-pipelining": {"transport": "auto"}, "convert-op-to-communication": {"transport": "auto"}}
AUTO_GRAPH = {"choose-pipelining": {"transport": "auto", "cuda-graph": True},
              "convert-op-to-communication": {"transport": "auto", "cuda-graph": True}}
"""As `hostir-lower{transport=auto cuda-graph=true}` sets its members: both passes price a replay."""
HOSTIR_VARIANTS: tuple[tuple[str, dict[str, dict[str, object]] | None, bool | None], ...] = (
    # (label, options for hostir-lower's passes as {"pass-name": {"option": value}}, replayed
    # from a CUDA graph); each label runs as <label>_S2, _S4 and _S8, plus a <label>_best column.
    # hostir_default: no option anywhere (hostir-lower's and the Evaluator's defaults).
    ("hostir_default", None, None),
    ("hostir_nccl", {}, False),
    ("hostir_nccl_graph", {}, True),
    ("hostir_ce", {"convert-op-to-communication": {"transport": "copy-engine"}}, False),
    ("hostir_auto", AUTO, False),
    ("hostir_ce_graph", {"convert-op-to-communication": {"transport": "copy-engine"}}, True),
    ("hostir_auto_graph", AUTO_GRAPH, True),
    # The defaults with one or both of the copy-engine all-reduce options (on by default,
    # docs/copy_engine.md) off: only symmetric outputs, only the reduction in the producer,
    # neither (the defaults before the tenth session).
    ("hostir_symmetric_output", {**AUTO_GRAPH, "split-by-member": {"reduce-in-producer": False}}, None),
    ("hostir_reduce_in_producer", {**AUTO_GRAPH, "convert-op-to-communication": {
        **AUTO_GRAPH["convert-op-to-communication"], "symmetric-allreduce-output": False}}, None),
    ("hostir_plain_allreduce", {**AUTO_GRAPH, "split-by-member": {"reduce-in-producer": False},
                                "convert-op-to-communication": {
                                    **AUTO_GRAPH["convert-op-to-communication"], "symmetric-allreduce-output": False}},
     None),
    # The defaults with each all-reduce waited in its own iteration, not skewed into the next
    # (order-chunk-compute's `skew`, on by default since the fourteenth session).
    ("hostir_unskewed", {**AUTO_GRAPH, "order-chunk-compute": {"skew": False}}, None),
    # The defaults with reduce-scatters that compute their own part (split-by-member's
    # `reduce-scatter-in-producer`, off by default; docs/copy_engine.md, "Next", item 5).
    ("hostir_rs_in_producer", {**AUTO_GRAPH, "split-by-member": {"reduce-scatter-in-producer": True}}, None),
)
CHUNK_COUNTS = (2, 4, 8)
SHAPES = ("16384x8192x4096", "32768x4096x2048", "16384x8192x1024")
TINY_SHAPES = ("64x32x16",)
BASELINES = ("comm_nccl", "comm_ce", "matmul")
COMMUNICATION = ("comm_nccl", "comm_ce")
NEEDS_CUDA = "n/a (needs CUDA)"
NO_FUSED_OP = "—"
NEEDS_TWO_GPUS = "n/a (needs 2 GPUs)"
RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--shapes", nargs="+", type=parse_shape, help="MxKxN ... (default: the three overlap shapes)")
    parser.add_argument("--repeat", type=int, help="timed runs per variant (default 30; --tiny 3)")
    parser.add_argument("--warmup", type=int, help="untimed runs first (default 5; --tiny 1)")
    add_rounds_argument(parser, "each case's variants")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--png", type=Path, help="write the chart here (needs matplotlib)")
    parser.add_argument("--chunks", nargs="+", type=int, default=list(CHUNK_COUNTS),
                        help="stream chunk counts S of the swept variants (default: 2 4 8)")
    parser.add_argument("--tiny", action="store_true", help="toy sizes: a smoke run of the plumbing and the checks")
    parser.add_argument("--hostir", nargs="+", choices=[label for label, _, _ in HOSTIR_VARIANTS],
                        help="run only these hostir variants (default: all)")
    parser.add_argument("--ops", nargs="+", choices=list(CASES), help="run only these cases (default: all)")
    parser.add_argument("--copy-engine-streams", type=int, default=1,
                        help="the hostir variants' communication streams per copy-engine phase (default 1)")
    args = parser.parse_args(argv)
    args.shapes = args.shapes or [parse_shape(s) for s in (TINY_SHAPES if args.tiny else SHAPES)]
    args.repeat = args.repeat or (3 if args.tiny else 30)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.tiny else 5)
    return args


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark on this rank (every rank returns the same report)."""
    args = parse_args(argv)
    device, joined = join_world()
    try:
        report = benchmark(args, device)
        if dist.get_rank() == 0:
            print(table(report))
            write_outputs(report, args, device)
        return report
    finally:
        leave_world(joined)


def benchmark(args: argparse.Namespace, device: torch.device) -> dict:
    world = dist.get_world_size()
    for m, k, _ in args.shapes:
        problem = unsupported(m, k, world, args.chunks)
        if problem:
            raise SystemExit(f"overlap.py: {problem}")
    dtype = DTYPES[args.dtype]
    cost_model = Machine.load()  # this machine's constants (the copy engines' bandwidth)
    seeds = itertools.count(1)  # a fresh input per check, the same on every rank
    rows = []
    for name, case_class in CASES.items():
        if args.ops and name not in args.ops:
            continue
        for m, k, n in args.shapes:
            case = case_class(Problem(m, k, n, dtype, device, dist.get_rank(), world))
            rows.append(measure_case(case, seeds, args, cost_model))
    return {
        "benchmark": "overlap",
        "machine": machine_info(device, args.dtype),
        "cost_model": {"machine": cost_model.name, "copy_engine_gbps": cost_model.copy_engine.gbps},
        "repeat": args.repeat,
        "warmup": args.warmup,
        "rounds": args.rounds,
        "chunk_counts": args.chunks,
        "copy_engine_streams": args.copy_engine_streams,
        "families": families(selected(args)),
        "hostir_variants": {label: lowering_pipeline(options) + (" (CUDA graph)" if graph else
                                                                 " (the Evaluator's defaults)" if graph is None else "")
                            for label, options, graph in selected(args)},
        "cases": rows,
    }


def selected(args: argparse.Namespace) -> tuple:
    """The hostir variants this run measures."""
    return tuple(v for v in HOSTIR_VARIANTS if not args.hostir or v[0] in args.hostir)


def variant_builders(case: Case, chunk_counts: list[int], hostir_variants: tuple = HOSTIR_VARIANTS,
                     copy_engine_streams: int = 1) -> list[tuple[str, Callable[[], Variant] | str]]:
    """Every variant of the case by name, the swept ones at each of `chunk_counts`: how to
    build it, or why it does not run here."""
    cuda = case.p.device.type == "cuda"
    fused = case.torch_fused if cuda else NEEDS_CUDA
    if case.torch_fused is None:
        fused = NO_FUSED_OP
    return [
        ("comm_nccl", case.comm_nccl),
        ("comm_ce", case.comm_ce if cuda else NEEDS_CUDA),
        ("matmul", case.matmul),
        ("naive", case.naive),
        *((f"handwritten_nccl_S{s}", partial(case.handwritten, s)) for s in chunk_counts),
        *((f"handwritten_ce_S{s}", _handwritten_ce(case, s)) for s in chunk_counts),
        ("torch_fused", fused),
        *((f"{label}_S{s}", partial(hostir, case, s, options, cuda_graph=graph, copy_engine_streams=copy_engine_streams))
          for label, options, graph in hostir_variants for s in chunk_counts),
    ]


def _handwritten_ce(case: Case, chunks: int) -> Callable[[], Variant] | str:
    if case.handwritten_ce is None:
        return NO_FUSED_OP
    if case.p.device.type != "cuda" or case.p.world != 2:
        return NEEDS_TWO_GPUS
    return partial(case.handwritten_ce, chunks)


def families(hostir_variants: tuple = HOSTIR_VARIANTS) -> list[str]:
    """Variants swept over S, whose best S gets a column of its own."""
    return ["handwritten_nccl", "handwritten_ce", *(label for label, _, _ in hostir_variants)]


def measure_case(case: Case, seeds: Iterator[int], args: argparse.Namespace, cost_model: Machine) -> dict:
    builds = dict(variant_builders(case, args.chunks, selected(args), args.copy_engine_streams))
    checked = checked_timings({name: build for name, build in builds.items() if not isinstance(build, str)},
                              lambda: Operands(case.p, next(seeds)), case.p.device, case.p.dtype,
                              args.repeat, args.warmup, args.rounds)
    variants = {name: {"status": build} if isinstance(build, str) else _with_times(checked[name])
                for name, build in builds.items()}
    bounds = Bounds.of(case, variants, cost_model)
    for name, result in variants.items():
        if name not in BASELINES and "ms" in result and bounds is not None:
            result.update(bounds.judge(result))
    best = {}
    for family in families(selected(args)):
        swept = [(variants[f"{family}_S{s}"].get("ms"), s) for s in args.chunks]
        timed = [(ms, s) for ms, s in swept if ms is not None]
        if timed:
            ms, s = min(timed)
            best[family] = {"S": s, **variants[f"{family}_S{s}"]}
    return {"op": case.name, "shape": [case.p.m, case.p.k, case.p.n], **(bounds.report() if bounds else {}),
            "variants": variants, "best": best}


def _with_times(result: dict) -> dict:
    """A checked variant's result with its Timing as the report's ms fields."""
    if "timing" in result:
        timing = result.pop("timing")
        result["ms"] = timing.device_ms
        result["ms_fastest_slowest"] = [timing.device_fastest_ms, timing.device_slowest_ms]
        result["ms_back_to_back"] = timing.back_to_back_ms
    return result


@dataclass(frozen=True)
class Bounds:
    """What a case's variants are judged against (see the module docstring)."""

    matmul_ms: float
    communication_ms: float
    """The fastest communication alone measured."""
    ideal_nccl_ms: float
    ideal_ce_ms: float
    copy_engine_ms: float
    """The bytes each rank sends on the copy engines, at their bandwidth in the cost model."""
    flops: int
    ideal_nccl_back_to_back_ms: float
    """max(comm_nccl, matmul), each timed back to back."""

    @staticmethod
    def of(case: Case, variants: dict, cost_model: Machine) -> Bounds | None:
        """None where the NCCL communication or the GEMM alone has no time (it failed)."""
        measured = {name: variants[name]["ms"] for name in BASELINES if "ms" in variants[name]}
        if "comm_nccl" not in measured or "matmul" not in measured:
            return None
        algorithm = copy_engine_algorithm(case.collective)
        assert algorithm is not None  # the three cases' collectives have one
        copy_engine = algorithm.sent(case.communicated_bytes(), case.p.world) / (cost_model.copy_engine.gbps * 1e6)
        matmul = measured["matmul"]
        back_to_back = max(variants[name]["ms_back_to_back"] for name in ("comm_nccl", "matmul"))
        return Bounds(matmul, min(measured[name] for name in COMMUNICATION if name in measured),
                      max(measured["comm_nccl"], matmul), max(copy_engine, matmul), copy_engine, case.flops(),
                      back_to_back)

    def judge(self, result: dict) -> dict:
        ms, hideable = result["ms"], min(self.communication_ms, self.matmul_ms)
        return {"ratio": ms / self.ideal_nccl_ms, "ratio_ce": ms / self.ideal_ce_ms,
                "hidden": (self.communication_ms + self.matmul_ms - ms) / hideable, "tflops": self.flops / ms / 1e9,
                "ratio_back_to_back": result["ms_back_to_back"] / self.ideal_nccl_back_to_back_ms}

    def report(self) -> dict:
        return {"ideal_nccl_ms": self.ideal_nccl_ms, "ideal_ce_ms": self.ideal_ce_ms,
                "copy_engine_bytes_ms": self.copy_engine_ms, "matmul_tflops": self.flops / self.matmul_ms / 1e9,
                "ideal_nccl_back_to_back_ms": self.ideal_nccl_back_to_back_ms}


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #


def table(report: dict) -> str:
    first = report["cases"][0]["variants"]
    variant_columns = [name for name in first if name not in BASELINES]
    for family in report["families"]:  # the best-S column right after its family's last S
        variant_columns.insert(variant_columns.index(f"{family}_S{report['chunk_counts'][-1]}") + 1, f"{family}_best")
    header = ["case", *(f"{name} ms" for name in BASELINES), "ideal NCCL ms", "ideal CE ms", *variant_columns]
    rows, failures = [], []
    for row in report["cases"]:
        label = _label(row)
        cells = [label, *(_ms_cell(row["variants"][name]) for name in BASELINES),
                 *(_optional_ms(row.get(ideal)) for ideal in ("ideal_nccl_ms", "ideal_ce_ms"))]
        cells += [_variant_cell(row, name) for name in variant_columns]
        rows.append(cells)
        failures += [f"  {label} {name}: {r['message']}" for name, r in row["variants"].items() if "message" in r]
    machine = report["machine"]
    title = (f"overlap, {machine['dtype']}, {machine['world_size']} ranks on {machine['gpu'] or 'CPU'} "
             f"(median of {report['repeat']} runs after {report['warmup']}; variants: time / ideal NCCL; "
             f"ideal CE at {report['cost_model']['copy_engine_gbps']:g} GB/s, cost model "
             f"{report['cost_model']['machine']}; {report['copy_engine_streams']} copy-engine stream(s) per phase)")
    return "\n".join([title, format_table(header, rows), "", summary(report),
                      *(["errors:", *failures] if failures else [])])


SUMMARY_VARIANTS = ("naive", "torch_fused")
"""Besides each family at its best S, the variants the summary lists."""


def summary(report: dict) -> str:
    """Per case: the naive and fused variants and each family at its best S, against both
    ideals, the share of the hideable time hidden, and TFLOP/s per GPU."""
    header = ["case", "variant", "S", "ms", "/ ideal NCCL", "/ ideal CE", "hidden", "TFLOP/s", "/ GEMM alone",
              "back to back ms", "/ its ideal NCCL"]
    rows = []
    for row in report["cases"]:
        chosen = [(name, "", row["variants"][name]) for name in SUMMARY_VARIANTS]
        chosen += [(family, f"S{best['S']}", best) for family, best in row["best"].items()]
        for name, chunks, result in chosen:
            if "ratio" not in result:
                continue
            rows.append([_label(row), name, chunks, f"{result['ms']:.3f}", f"{result['ratio']:.2f}×",
                         f"{result['ratio_ce']:.2f}×", f"{result['hidden']:.0%}", f"{result['tflops']:.3g}",
                         f"{result['tflops'] / row['matmul_tflops']:.0%}", f"{result['ms_back_to_back']:.3f}",
                         f"{result['ratio_back_to_back']:.2f}×"])
    return format_table(header, rows)


def _label(row: dict) -> str:
    return f"{row['op']} {'x'.join(map(str, row['shape']))}"


def _optional_ms(ms: float | None) -> str:
    return "—" if ms is None else f"{ms:.3f}"


def _variant_cell(row: dict, name: str) -> str:
    if name.endswith("_best"):
        best = row["best"].get(name.removesuffix("_best"))
        return f"{best['ratio']:.2f}× S{best['S']}" if best and "ratio" in best else "—"
    return _ratio_cell(row["variants"][name])


def _ms_cell(result: dict) -> str:
    return f"{result['ms']:.3f}" if "ms" in result else result["status"]


def _ratio_cell(result: dict) -> str:
    if "ratio" in result:
        return f"{result['ratio']:.2f}×"
    return f"{result['ms']:.3f} ms" if "ms" in result else result["status"]


def write_outputs(report: dict, args: argparse.Namespace, device: torch.device) -> None:
    stem = f"overlap_{machine_kind(device)}_{args.dtype}"
    json_path = args.json or (None if args.tiny else RESULTS / f"{stem}.json")
    png_path = args.png or (None if args.tiny else RESULTS / f"{stem}.png")
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {json_path}")
    if png_path:
        write_chart(report, png_path)


def write_chart(report: dict, path: Path) -> None:
    """Grouped bars: each case, each variant's time over the NCCL ideal; a line at 1 (the ideal)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no chart ({path})")
        return
    rows = report["cases"]
    names = [name for name in rows[0]["variants"] if any("ratio" in row["variants"][name] for row in rows)]
    width = 0.8 / max(len(names), 1)
    figure, axes = plt.subplots(figsize=(max(8, 1.6 * len(rows)), 5))
    for index, name in enumerate(names):
        positions = [case + (index - len(names) / 2 + 0.5) * width for case in range(len(rows))]
        axes.bar(positions, [row["variants"][name].get("ratio", 0) for row in rows], width, label=name)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xticks(range(len(rows)), [f"{row['op']}\n{'x'.join(map(str, row['shape']))}" for row in rows], fontsize=8)
    axes.set_ylabel("time / ideal NCCL")
    machine = report["machine"]
    axes.set_title(f"overlap, {machine['dtype']}, {machine['world_size']} x {machine['gpu'] or 'CPU'}")
    axes.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
    # On the 2x H200 machines (torch 2.11) a rank that has used symmetric memory and CUDA
    # graphs was seen to hang at interpreter exit after writing its results; nothing is
    # left to do here, so leave without the interpreter's teardown.
    sys.stdout.flush()
    os._exit(0)

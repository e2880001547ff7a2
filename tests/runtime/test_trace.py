"""Traces and overlap reports: ops named by their source in the timeline, device work named
after the op that launched it, the report's arithmetic, and hostir-run's --trace, --report,
--timeline on two CPU ranks."""

from __future__ import annotations

import inspect
import json
import sys

import pytest
import torch

from hostir import FusionDefinition
from hostir.passes import lower
from hostir.runtime import Evaluator, execute
from hostir.runtime.cli import console_main
from hostir.runtime.graphs import EAGER_ON_CPU
from hostir.runtime.timeline import require_matplotlib, rows
from hostir.runtime.trace import (
    COMMUNICATION,
    COMPUTE,
    HOST,
    HOST_CLOCK_NOTE,
    OUTSIDE,
    Trace,
    efficiency_note,
    name_device_work,
    overlap,
    traced_run,
    union_length,
)
from hostir_dialect.context import parse_module


def test_a_traced_run_names_every_op_by_its_source(tmp_path):
    t, s = "!fusion.tensor<f32[4, 8]>", "!fusion.tensor<f32[4 stream, 8]>"
    module = lower(parse_module(f"""fusion.func @square(%x: {t}) -> {s} {{
  %y = fusion.mul %x, %x : {t}, {t} -> {s}
  fusion.return %y : {s}
}}""", "square.mlir"))
    path = tmp_path / "run.json"
    x = torch.randn(4, 8)
    (got,) = execute(module, [x], trace=path)
    torch.testing.assert_close(got, x * x)
    trace = json.loads(path.read_text())
    assert trace["hostirClock"] == HOST_CLOCK_NOTE
    names = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert "hir.program @square" in names and "fusion.mul square.mlir:2:3" in names
    assert "hir.set_current_stream square.mlir:2:3" in names  # lowered ops keep their source
    processes = [e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"]
    assert processes and all(p.startswith("rank 0") for p in processes)


def test_the_python_api_traces_a_run_with_op_names(tmp_path):
    """Ops a FusionDefinition builds carry the user's line: their ranges are named by the
    op and the line of the `fd.ops` call."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 8])
        fd.add_output(fd.ops.neg(x))
        line = inspect.currentframe().f_lineno - 1
    path = tmp_path / "run.json"
    x_value = torch.randn(4, 8)
    (got,) = fd.execute([x_value], trace=path)
    torch.testing.assert_close(got, -x_value)
    names = {e["name"] for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"}
    assert {f"hir.post_on_stream {__file__}:{line}:23", f"fusion.neg {__file__}:{line}:23"} <= names, names


def test_union_length_counts_overlaps_once():
    assert union_length([]) == 0
    assert union_length([(0, 2), (1, 3), (5, 6)]) == 4
    assert union_length([(0, 10), (2, 3)]) == 10


def device_trace() -> Trace:
    """The shape of a Kineto trace on a GPU: op labels and launches on the host thread, kernels
    on streams, tied by correlation ids. An allgather's NCCL kernel (20..60 µs) overlaps a
    matmul's GEMM (30..80 µs) of another chunk; a kernel launched outside any op label (10 µs
    long, from a graph replay) is NCCL's; a barrier's kernel launched before the run is not
    part of it."""
    gather, matmul = "hir.allgather a.mlir:3:5", "fusion.matmul a.mlir:5:5"
    host = {"ph": "X", "pid": 1, "tid": 7}
    kernel = {"ph": "X", "cat": "kernel", "pid": 0, "tid": 13}
    events = [
        {**host, "name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts": -30, "dur": 2, "args": {"correlation": 4}},
        {**kernel, "name": "ncclDevKernel_Barrier", "ts": -25, "dur": 20, "args": {"correlation": 4, "stream": 13}},
        {**host, "name": "hir.program @main", "cat": "user_annotation", "ts": 0, "dur": 50},
        {**host, "name": gather, "cat": "user_annotation", "ts": 5, "dur": 10},
        {**host, "name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts": 6, "dur": 2, "args": {"correlation": 1}},
        {**host, "name": matmul, "cat": "user_annotation", "ts": 20, "dur": 10},
        {**host, "name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts": 21, "dur": 2, "args": {"correlation": 2}},
        {**host, "name": "cudaGraphLaunch", "cat": "cuda_runtime", "ts": 40, "dur": 2, "args": {"correlation": 3}},
        {**kernel, "name": "ncclDevKernel_AllGather", "ts": 20, "dur": 40, "args": {"correlation": 1, "stream": 13}},
        {**kernel, "name": "sm90_gemm", "ts": 30, "dur": 50, "args": {"correlation": 2, "stream": 14}},
        {**kernel, "name": "ncclDevKernel_Other", "ts": 90, "dur": 10, "args": {"correlation": 3, "stream": 13}},
    ]
    return Trace(0, "main", events, {gather: COMMUNICATION, matmul: COMPUTE, "hir.wait a.mlir:4:5": HOST}, True)


def test_device_work_is_named_after_the_op_that_launched_it():
    trace = device_trace()
    name_device_work(trace)
    kernels = [e for e in trace.events if e.get("cat") == "kernel"]
    assert [e["name"] for e in kernels] == ["ncclDevKernel_Barrier", "hir.allgather a.mlir:3:5",
                                           "fusion.matmul a.mlir:5:5",
                                           "hir.program @main (CUDA graph replay): ncclDevKernel_Other"]
    assert [e["args"]["kernel"] for e in kernels] == ["ncclDevKernel_Barrier", "ncclDevKernel_AllGather", "sm90_gemm",
                                                     "ncclDevKernel_Other"]
    assert [e["args"]["hostir kind"] for e in kernels] == [OUTSIDE, COMMUNICATION, COMPUTE, COMMUNICATION]
    assert set(rows(trace)) == {"rank 0 stream 13", "rank 0 stream 14"}


def test_the_overlap_report_of_a_device_trace():
    trace = device_trace()
    name_device_work(trace)
    report = overlap(trace)
    # comm = [20, 60] and [90, 100]: 50 µs; compute = [30, 80]: 50 µs; wall = 0 .. 100 µs.
    assert (report.communication_ms, report.compute_ms, report.wall_ms) == (0.05, 0.05, 0.1)
    assert report.ideal_ms == 0.05 and report.ratio_to_ideal == 2.0 and report.efficiency == 0.0
    assert report.line() == ("overlap @main rank 0 (device clock): comm 0.050 ms, compute 0.050 ms, wall 0.100 ms, "
                             "ideal 0.050 ms, efficiency 0.00, wall/ideal 2.00")


def test_the_efficiency_note_names_the_host_clock_only_for_cpu_ranks():
    assert "host timestamps" in efficiency_note(device_clock=False)
    assert "host timestamps" not in efficiency_note(device_clock=True)


def test_efficiency_needs_both_kinds_of_work():
    trace = Trace(0, "main", [{"ph": "X", "name": "hir.program @main", "ts": 0, "dur": 10},
                              {"ph": "X", "name": "fusion.neg a:1:1", "ts": 1, "dur": 5}],
                  {"fusion.neg a:1:1": COMPUTE}, False)
    report = overlap(trace)
    assert report.compute_ms == 0.005 and report.communication_ms == 0 and report.efficiency is None
    assert "efficiency n/a" in report.line()


def test_hostir_run_traces_reports_and_draws_a_graph_mode_run_on_two_cpu_ranks(tmp_path, capsys):
    sharded, gathered = "!fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]>", "!fusion.tensor<f32[4 stream, 2, 8], mesh=[0, 1]>"
    path = tmp_path / "allgather.mlir"
    path.write_text(f"""fusion.func @f(%a: {sharded}) -> {gathered} {{
  %b = fusion.set %a : {sharded} -> {gathered}
  fusion.return %b : {gathered}
}}""")
    trace_path = tmp_path / "trace.json"
    console_main([str(path), "--nproc", "2", "--cuda-graph", "--repeat", "2", "--trace", str(trace_path), "--report"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("max error vs reference 0"), lines
    assert f"graph mode: {EAGER_ON_CPU}" in lines and f"trace: wrote {trace_path}" in lines
    reports = [line for line in lines if line.startswith("overlap @f rank ")]
    assert [r.split(" (")[0] for r in reports] == ["overlap @f rank 0", "overlap @f rank 1"]
    assert all("(host clock)" in r for r in reports) and lines[-1] == f"trace: {HOST_CLOCK_NOTE}"
    (legend,) = [line for line in lines if line.startswith("efficiency: ")]
    assert lines.index(legend) == lines.index(reports[-1]) + 1  # right after the lines it explains
    assert "eta = (comm + compute - wall) / min(comm, compute)" in legend and "CPU ranks have host timestamps" in legend
    events = json.loads(trace_path.read_text())["traceEvents"]
    ranks = {e["args"]["name"].split(":")[0] for e in events if e.get("name") == "process_name"}
    assert ranks == {"rank 0", "rank 1"}
    gathers = [e["name"] for e in events if e.get("ph") == "X" and e["name"].startswith("hir.allgather ")]
    assert gathers and all(n.startswith(f"hir.allgather {path}:2:") for n in gathers), gathers  # the set's source


def test_a_timeline_without_matplotlib_is_refused_before_anything_runs(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ValueError, match=r"needs matplotlib: pip install 'hostir\[plot\]'"):
        require_matplotlib()
    with pytest.raises(SystemExit):
        console_main(["missing-but-never-read.mlir", "--timeline", "out.png"])
    assert "needs matplotlib" in capsys.readouterr().err


def test_traces_need_labels():
    t = "!fusion.tensor<f32[4]>"
    evaluator = Evaluator(parse_module(f"hir.program @main(%a: {t}) -> {t} {{\n  hir.return %a : {t}\n}}"))
    with pytest.raises(ValueError, match="trace=True"):
        traced_run(evaluator, [torch.zeros(4)])

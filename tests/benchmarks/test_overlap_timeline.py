"""benchmarks/overlap_timeline.py's arithmetic on device events (the timeline itself needs
GPUs): busy time is the union of intervals, and overlap counts only time both kinds run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import overlap_timeline  # noqa: E402
from cases import CASES, Problem  # noqa: E402


def event(name: str, start: float, end: float) -> dict:
    return {"name": name, "stream": 7, "start": start, "end": end}


def test_busy_times_are_unions_and_overlap_is_their_intersection():
    events = [
        event("nvjet_sm90_tst_128x128", 0, 10), event("nvjet_sm90_tst_128x128", 5, 20),  # GEMMs: 0-20
        event("Memcpy PtoP (Device -> Device)", 15, 30),  # a transfer: 15-30
        event("ncclDevKernel_AllGather_RING_LL", 40, 50),  # another: 40-50
        event("Memset (Device)", 55, 60),  # neither, but part of the run
    ]
    assert overlap_timeline.summary(events) == {"wall": 60, "gemm": 20, "transfer": 25, "both": 5}


def test_idle_gaps_are_the_stretches_without_work_on_any_stream_longest_first():
    events = [
        event("nvjet_sm90_tst_128x128", 0, 10), event("Memcpy PtoP (Device -> Device)", 5, 20),
        event("nvjet_sm90_tst_128x128", 23, 30),  # 3 idle before it
        event("Memset (Device)", 40, 45),  # 10 idle before it
    ]
    assert overlap_timeline.idle_gaps(events) == [(30, 10), (20, 3)]
    assert overlap_timeline.idle_gaps(events[:1]) == []


def test_no_device_events_sum_to_nothing():
    assert overlap_timeline.summary([]) == {"wall": 0.0, "gemm": 0.0, "transfer": 0.0, "both": 0.0}


def test_variants_are_named_as_overlap_py_names_them():
    case = CASES["AG+matmul"](Problem(64, 32, 16, torch.float32, torch.device("cpu"), 0, 2))
    names = [name for name, _ in overlap_timeline.builders(case, ["naive", "hostir_ce_graph", "handwritten_nccl"], [2, 4])]
    assert names == ["naive", "hostir_ce_graph_S2", "hostir_ce_graph_S4", "handwritten_nccl_S2", "handwritten_nccl_S4"]
    with pytest.raises(AttributeError):
        list(overlap_timeline.builders(case, ["no_such_variant"], [2]))
    all_reduce = CASES["matmul+AR"](Problem(64, 32, 16, torch.float32, torch.device("cpu"), 0, 2))
    names = [name for name, _ in overlap_timeline.builders(all_reduce, ["handwritten_ce"], [2, 4])]
    assert names == ["handwritten_ce_S2", "handwritten_ce_S4"]


def test_device_events_are_read_from_a_chrome_trace_with_host_clock_times(tmp_path):
    trace = tmp_path / "rank0.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "nvjet_gemm", "ts": 1000.5, "dur": 20, "args": {"stream": 7}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy PtoP", "ts": 1010, "dur": 5, "args": {"stream": 9}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 990, "dur": 3},
        {"ph": "i", "cat": "kernel", "name": "marker", "ts": 1000},
    ]}))
    assert overlap_timeline.device_events(trace) == [
        {"name": "nvjet_gemm", "stream": 7, "start": 1000.5, "end": 1020.5},
        {"name": "Memcpy PtoP", "stream": 9, "start": 1010, "end": 1015},
    ]

"""A timeline and an overlap report of one run of a host program.

`traced_run(evaluator, inputs)` runs once under torch.profiler. The evaluator must be
compiled with `trace=True`: every hir and fusion op's step then runs inside a
`record_function` named after the op and its source (`fusion.matmul in.mlir:12:5`), and the
whole run inside `hir.program @name`. The result is a `Trace`: the Chrome/Perfetto trace
events of this rank, where every kernel, copy and collective on the device is named after
the op that issued it (found through the launch's correlation id and the label around the
launch; the kernel's own name is kept in its args). On CPU ranks there is no device
timeline: the trace holds host timestamps only and says so (`clock`), and an op's host time
stands for its work.

`merge(traces)` joins the traces of all ranks into one file (one process per rank and
device, on a common clock). `overlap(trace)` sums up a run: communication time and compute
time (each the length of the union of its intervals: device intervals on GPUs, host
intervals on CPUs), wall time, ideal = max(comm, compute), overlap efficiency
eta = (comm + compute - wall) / min(comm, compute) (1: the shorter one is hidden entirely;
0: none of it) and wall / ideal.

In CUDA-graph mode the kernels of a replay are launched by one graph launch, outside any op's
label: they are named after the program and counted as communication when their kernel is
NCCL's, as compute otherwise. Device work launched outside the run (the barrier that makes
every rank start the run at once) is left out.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from hostir_dialect.diagnostics import location_of

COMMUNICATION = "communication"
COMPUTE = "compute"
HOST = "host"
OUTSIDE = "outside the run"
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_CLOCK_NOTE = "CPU ranks: host timestamps only (no device timeline); an op's host time stands for its work"


def op_label(op) -> str:
    """`fusion.matmul in.mlir:12:5`: the name of an op's range in traces."""
    where = location_of(op)
    return f"{op.name} {where}" if where else op.name


@dataclass
class Trace:
    """One rank's trace of one run."""

    rank: int
    program: str
    events: list[dict]
    kinds: dict[str, str]
    """Op label -> COMMUNICATION, COMPUTE or HOST."""
    device_clock: bool
    base_ns: int = 0
    """The clock's origin: event timestamps are microseconds after it."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def clock(self) -> str:
        return "device" if self.device_clock else "host"

    @property
    def run_label(self) -> str:
        return f"hir.program @{self.program}"

    def save(self, path: str | os.PathLike) -> None:
        write_trace(merge([self]), path)


def traced_run(evaluator, inputs: Sequence[Any]) -> tuple[list, Trace]:
    """Run once under torch.profiler: the outputs and this rank's trace."""
    if not evaluator.trace:
        raise ValueError("compile the evaluator with trace=True to label its ops in traces")
    cuda = evaluator.device.type == "cuda"
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    with torch.profiler.profile(activities=activities) as profile:
        _start_together(evaluator.device)
        outputs = evaluator.run(inputs)
        if cuda:
            torch.cuda.synchronize(evaluator.device)
    with tempfile.TemporaryDirectory(prefix="hostir-trace-") as directory:
        path = Path(directory) / "trace.json"
        profile.export_chrome_trace(str(path))
        exported = json.loads(path.read_text())
    events = [e for e in exported.get("traceEvents", []) if isinstance(e, dict)]
    trace = Trace(evaluator.rank or 0, evaluator.name, events, dict(evaluator.trace_kinds), cuda,
                  int(exported.get("baseTimeNanoseconds", 0)))
    name_device_work(trace)
    return outputs, trace


def _start_together(device: torch.device) -> None:
    """Every rank starts the run at once (the profiler starts at different times on each), so
    a collective's time is its transfer, not the wait for a late peer."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------------- #
# Device work, named after the op that issued it
# --------------------------------------------------------------------------- #


def _ends(event: dict) -> float:
    return event["ts"] + event.get("dur", 0)


def _labels(trace: Trace) -> dict[tuple, list[dict]]:
    """The op labels and the run label, by (pid, tid), innermost last among overlapping ones."""
    found: dict[tuple, list[dict]] = {}
    for event in trace.events:
        if event.get("ph") == "X" and (event.get("name") in trace.kinds or event.get("name") == trace.run_label):
            found.setdefault((event.get("pid"), event.get("tid")), []).append(event)
    for intervals in found.values():
        intervals.sort(key=lambda e: (e["ts"], -_ends(e)))
    return found


def _enclosing(labels: list[dict], event: dict) -> str | None:
    """The innermost label whose interval holds `event`."""
    inner = None
    for label in labels:
        if label["ts"] > event["ts"]:
            break
        if _ends(label) >= _ends(event):
            inner = label["name"]
    return inner


def device_events(trace: Trace) -> list[dict]:
    """The device work of the run (named by `name_device_work`)."""
    return [e for e in trace.events if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES
            and e.get("args", {}).get("hostir kind") in (COMMUNICATION, COMPUTE, HOST)]


def name_device_work(trace: Trace) -> None:
    """Name every device event after the label around its launch (see the module doc)."""
    labels = _labels(trace)
    launches: dict[Any, str | None] = {}
    for event in trace.events:
        correlation = event.get("args", {}).get("correlation")
        if event.get("ph") == "X" and event.get("cat") not in DEVICE_CATEGORIES and correlation is not None:
            launches[correlation] = _enclosing(labels.get((event.get("pid"), event.get("tid")), []), event)
    for event in (e for e in trace.events if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES):
        label = launches.get(event.get("args", {}).get("correlation"))
        event.setdefault("args", {})["kernel"] = event.get("name")
        if label is None:
            event["args"]["hostir kind"] = OUTSIDE
        elif label == trace.run_label:
            event["name"] = f"{trace.run_label} (CUDA graph replay): {event['name']}"
            event["args"]["hostir kind"] = COMMUNICATION if "nccl" in event["args"]["kernel"].lower() else COMPUTE
        else:
            event["name"] = label
            event["args"]["hostir kind"] = trace.kinds[label]


# --------------------------------------------------------------------------- #
# Every rank in one file
# --------------------------------------------------------------------------- #


def merge(traces: Sequence[Trace]) -> dict:
    """One Chrome trace of every rank's run: each (rank, process) pair becomes a process
    named `rank R: ...`, and timestamps move to the earliest rank's clock origin."""
    base = min(t.base_ns for t in traces)
    events: list[dict] = []
    for trace in traces:
        shift = (trace.base_ns - base) / 1e3
        pids: dict[Any, int] = {}
        for event in trace.events:
            pid = pids.setdefault(event.get("pid"), 1000 * trace.rank + len(pids))
            moved = {**event, "pid": pid}
            if "ts" in moved:
                moved["ts"] = moved["ts"] + shift
            if moved.get("ph") == "M" and moved.get("name") == "process_name":
                moved["args"] = {"name": f"rank {trace.rank}: {event.get('args', {}).get('name', pid)}"}
            events.append(moved)
        for original, pid in pids.items():
            if not any(e.get("ph") == "M" and e.get("name") == "process_name" and e.get("pid") == original for e in trace.events):
                events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"rank {trace.rank}"}})
    merged: dict[str, Any] = {"traceEvents": events, "displayTimeUnit": "ms", "baseTimeNanoseconds": base}
    if not all(t.device_clock for t in traces):
        merged["hostirClock"] = HOST_CLOCK_NOTE
    return merged


def write_trace(merged: dict, path: str | os.PathLike) -> None:
    Path(path).write_text(json.dumps(merged))


# --------------------------------------------------------------------------- #
# The overlap report
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Overlap:
    rank: int
    program: str
    clock: str
    communication_ms: float
    compute_ms: float
    wall_ms: float

    @property
    def ideal_ms(self) -> float:
        return max(self.communication_ms, self.compute_ms)

    @property
    def efficiency(self) -> float | None:
        """eta = (comm + compute - wall) / min(comm, compute); None without both."""
        shorter = min(self.communication_ms, self.compute_ms)
        if shorter <= 0:
            return None
        return (self.communication_ms + self.compute_ms - self.wall_ms) / shorter

    @property
    def ratio_to_ideal(self) -> float | None:
        return self.wall_ms / self.ideal_ms if self.ideal_ms > 0 else None

    def line(self) -> str:
        efficiency = "n/a" if self.efficiency is None else f"{self.efficiency:.2f}"
        ratio = "n/a" if self.ratio_to_ideal is None else f"{self.ratio_to_ideal:.2f}"
        return (f"overlap @{self.program} rank {self.rank} ({self.clock} clock): "
                f"comm {self.communication_ms:.3f} ms, compute {self.compute_ms:.3f} ms, wall {self.wall_ms:.3f} ms, "
                f"ideal {self.ideal_ms:.3f} ms, efficiency {efficiency}, wall/ideal {ratio}")


def efficiency_note(device_clock: bool) -> str:
    """What the report's efficiency means, printed after its lines."""
    note = ("efficiency: eta = (comm + compute - wall) / min(comm, compute): 1 when the shorter is hidden "
            "entirely behind the longer, 0 when none of it is, below 0 when wall exceeds comm + compute "
            "(time in neither: host work and waits between ops)")
    if not device_clock:
        note += ("; CPU ranks have host timestamps only: an op's host time stands for its work and gloo "
                 "collectives block the host, so eta measures the host's steps, usually below 0, not device overlap")
    return note


def union_length(intervals: Sequence[tuple[float, float]]) -> float:
    """The total length covered by the intervals (overlaps counted once)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def overlap(trace: Trace) -> Overlap:
    """The run's communication, compute and wall time (see the module doc)."""
    runs = [e for e in trace.events if e.get("ph") == "X" and e.get("name") == trace.run_label]
    if not runs:
        raise ValueError(f"the trace holds no run of @{trace.program}")
    start, end = min(e["ts"] for e in runs), max(_ends(e) for e in runs)
    if trace.device_clock:
        work = [(e["ts"], _ends(e), e["args"]["hostir kind"]) for e in device_events(trace)]
    else:
        work = [(e["ts"], _ends(e), trace.kinds[e["name"]]) for e in trace.events
                if e.get("ph") == "X" and e.get("name") in trace.kinds]
    end = max([end] + [stop for _, stop, _ in work])
    by_kind = {kind: union_length([(a, b) for a, b, k in work if k == kind]) for kind in (COMMUNICATION, COMPUTE)}
    return Overlap(trace.rank, trace.program, trace.clock, by_kind[COMMUNICATION] / 1e3, by_kind[COMPUTE] / 1e3,
                   (end - start) / 1e3)

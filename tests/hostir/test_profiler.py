"""hostir.profiler: nvFuser's PythonProfiler over hostir's traces."""

from hostir.profiler import PythonProfiler
from hostir.runtime.trace import Trace

SCATTER, WAIT, UNIT = "hir.reduce_scatter f.py:3:5", "hir.wait f.py:3:5", "hir.post_on_stream @unit f.py:2:5"


def _event(name: str, ts: int, cat: str = "user_annotation") -> dict:
    return {"ph": "X", "name": name, "ts": ts, "dur": 1, "cat": cat}


def test_each_op_is_one_kernel_profile_on_gpus_too():
    """A traced GPU run labels the device work an op launches with the op's label (the NCCL
    kernel of a reduce-scatter, a unit's kernels): each op is still one entry, in run
    order, its wait part of its communication."""
    events = [_event(UNIT, 1), _event(UNIT, 2, "kernel"), _event(SCATTER, 3), _event(WAIT, 4), _event(SCATTER, 5, "kernel"),
              _event("aten::mm", 6)]
    trace = Trace(0, "f", events, {UNIT: "compute", SCATTER: "communication", WAIT: "communication"}, True)
    with PythonProfiler() as prof:
        prof.record(trace)
    assert [(k.name, k.scheduler) for k in prof.profile.kernel_profiles] == [(UNIT, "compute"), (SCATTER, "communication")]

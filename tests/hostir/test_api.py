"""The top-level API (hostir/__init__.py): the frontend's FusionDefinition with `lower()`
and `execute()`, which span the dialect, the passes and the runtime."""

import gc
import os
import tracemalloc
from pathlib import Path

import torch

import passes
from hostir import FusionDefinition, ParallelType, Tensor
from hostir_dialect import hir
from runtime import executor_cache


def test_lower_gives_a_host_program_and_execute_matches_torch():
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 8], dtype="float32")
        b = fd.ops.exp(fd.ops.relu(a))
        c = fd.ops.sum(b, dims=[1])
        fd.add_output(c)
    host = fd.lower()
    assert any(isinstance(op, hir.ProgramOp) for op in host.ops)
    assert any(isinstance(op, hir.PostOnStreamOp) for op in host.walk())  # relu + exp fused in a unit
    x = torch.randn(4, 8)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.exp(torch.relu(x)).sum(dim=1), rtol=1e-6, atol=1e-6)



# -- fd.execute keeps what it lowered and compiled (nvFuser's FusionExecutorCache) ----


def unit_and_stream_loop() -> tuple[FusionDefinition, Tensor]:
    """relu + exp in a kernel unit; a copy pipelined over 2 stream chunks (allocation,
    two loops, stream switches and synchronizations)."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([2, 4])
        fd.add_output(fd.ops.exp(fd.ops.relu(a)))
        copy = fd.ops.set(a)
        fd.add_output(copy)
    copy.axis(0).parallelize(ParallelType.Stream)
    return fd, copy


def test_execute_lowers_and_compiles_once_per_schedule_and_options(count_calls):
    lowerings = count_calls(passes, "lower")
    compilations = count_calls(executor_cache, "Evaluator")
    fd, copy = unit_and_stream_loop()
    x = torch.randn(2, 4)
    for _ in range(3):
        relu_exp, same = fd.execute([x])
        torch.testing.assert_close(relu_exp, torch.exp(torch.relu(x)))
        torch.testing.assert_close(same, x)
    assert (len(lowerings), len(compilations)) == (1, 1)
    fd.execute([x], number_of_streams=1)  # other options: compiled again, not lowered again
    fd.execute([x], number_of_streams=1)
    assert (len(lowerings), len(compilations)) == (1, 2)
    copy.axis(0).parallelize(ParallelType.Serial)  # a new schedule: lowered again
    relu_exp, same = fd.execute([x])
    assert (len(lowerings), len(compilations)) == (2, 3)
    assert "scf.for" not in str(fd.lower())
    torch.testing.assert_close(same, x)


def test_ten_thousand_executions_grow_neither_memory_nor_runtime_tables():
    # Regression: every run appended each synchronization to a CPU stream's books.
    fd, _ = unit_and_stream_loop()
    x = torch.randn(2, 4)

    def run(times: int) -> None:
        for _ in range(times):
            fd.execute([x])

    def tables() -> dict[str, object]:
        (evaluator,) = fd._executors.evaluators.values()
        streams = evaluator.streams
        books = {stream.id: len(stream.waited_for) for stream in (streams.default, *map(streams.get, streams.keys))}
        return {"streams": streams.keys, "books": books, "evaluators": len(fd._executors.evaluators),
                "slots": len(evaluator.compiled.template), "log": evaluator.stream_log}

    run(100)  # warm-up: streams created, allocator and caches filled
    before, resident = tables(), resident_bytes()
    run(8_000)
    tracemalloc.start()
    try:
        run(100)
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0]
        run(1_800)
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - traced
    finally:
        tracemalloc.stop()
    assert tables() == before
    assert growth < 16_384, f"{growth} bytes more after 1,800 runs"
    assert resident_bytes() - resident < 8 << 20


def resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")

"""The top-level API (hostir/__init__.py): the frontend's FusionDefinition with `lower()`
and `execute()`, which span the dialect, the passes and the runtime."""

import gc
import os
import tracemalloc
from pathlib import Path

import pytest
import torch

from hostir import DeviceMesh, FusionDefinition, MemoryType, ParallelType, Tensor, definition, passes, runtime
from hostir.runtime import executor_cache
from hostir_dialect import hir
from hostir_dialect.tensor_type import DYNAMIC


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



def _all_to_all_and_ring() -> list[FusionDefinition]:
    """nvFuser's AllToAll ([D(i0), i1] -> [i0, D(i1)]) and P2P DID -> Stream pipeline
    (`a: [D didx, m, k]` -> set -> `[D stream, m, k]` -> matmul), written as nvFuser
    users write them."""
    mesh = DeviceMesh([0, 1])
    with FusionDefinition() as all_to_all:
        x = all_to_all.define_tensor([4, 6], dtype="float32")
        y = all_to_all.ops.set(x)
        all_to_all.add_output(y)
    for tensor, axis in ((x, 0), (y, 1)):
        tensor.set_device_mesh(mesh)
        tensor.outer_split(axis, 2)
        tensor.axis(axis).parallelize(ParallelType.DIDx)
    with FusionDefinition() as ring:
        a = ring.define_tensor([2, 3, 8], dtype="float32")
        b = ring.define_tensor([8, 5], dtype="float32")
        t = ring.ops.set(a)
        c = ring.ops.matmul(t, b)
        ring.add_output(c)
    for tensor in (a, b, t, c):
        tensor.set_device_mesh(mesh)
    a.axis(0).parallelize(ParallelType.DIDx)
    t.axis(0).parallelize(ParallelType.Stream)
    c.axis(0).parallelize(ParallelType.Stream)
    return [all_to_all, ring]


@pytest.mark.parametrize("world", [1, 2])
def test_a_schedule_on_a_value_no_output_needs_refuses_nothing(world):
    """As in nvFuser, such a value is not lowered, nor its schedule (here one hostir
    refuses: Stream on the inner piece of a split); the outputs match torch."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([8, 8])
        unused = fd.ops.select(a, 6, 0)
        doubled = fd.ops.mul(a, 2.0)
        fd.add_output(doubled)
    mesh = DeviceMesh(list(range(world)))
    for tensor in (a, doubled, unused):
        tensor.set_device_mesh(mesh)
        tensor.outer_split(0, world)
        tensor.axis(0).parallelize(ParallelType.DIDx)
    unused.axis(1).parallelize(ParallelType.Stream)
    x = torch.randn(8, 8)
    host = fd.lower()
    (program,) = [op for op in host.ops if isinstance(op, hir.ProgramOp)]
    (input_type,), (output_type,) = program.function_type.inputs.data, program.function_type.outputs.data
    job = runtime.Job(str(host), [[runtime.shard_tensor(x, input_type, r)] for r in range(world)])
    (per_rank,) = runtime.run_spmd_batch([job], world, backend="gloo")
    torch.testing.assert_close(runtime.unshard([r.outputs[0] for r in per_rank], output_type), x * 2.0)


def test_all_to_all_and_p2p_ring_from_the_python_api_match_torch():
    fusions = _all_to_all_and_ring()
    hosts = [fd.lower(pipeline="hostir-lower{transport=nccl}") for fd in fusions]
    assert "hir.all_to_all" in str(hosts[0]) and "hir.shift" in str(hosts[1])
    generator = torch.Generator().manual_seed(0)
    jobs, expected, output_types = [], [], []
    for fd, host in zip(fusions, hosts):
        (program,) = [op for op in host.ops if isinstance(op, hir.ProgramOp)]
        types = program.function_type.inputs.data
        inputs = [torch.randn(t.value_shape(), generator=generator) for t in types]
        expected.append(runtime.run_fusion(fd.to_module(), inputs)[0])
        output_types.append(program.function_type.outputs.data[0])
        jobs.append(runtime.Job(str(host), [[runtime.shard_tensor(x, t, r) for x, t in zip(inputs, types)] for r in range(2)]))
    results = runtime.run_spmd_batch(jobs, 2, backend="gloo")
    for per_rank, want, output_type in zip(results, expected, output_types):
        got = runtime.unshard([r.outputs[0] for r in per_rank], output_type)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def _symmetric_allgather_matmul(devices: int) -> FusionDefinition:
    """nvFuser's test_allgather_matmul_no_overlap[cuda]: the result marked symmetric."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([devices, 4, 8], dtype="float32")
        b = fd.define_tensor([8, 5], dtype="float32")
        c = fd.ops.matmul(a, b)
        c.set_memory_type(MemoryType.Symmetric)
        fd.add_output(c)
    mesh = DeviceMesh(list(range(devices)))
    for tensor in (a, b, c):
        tensor.set_device_mesh(mesh)
    a.axis(0).parallelize(ParallelType.DIDx)
    return fd


@pytest.mark.parametrize("world", [1, 2])
def test_a_tensor_marked_symmetric_computes_what_torch_does_on_every_transport(world):
    generator = torch.Generator().manual_seed(world)
    a, b = torch.randn(world, 4, 8, generator=generator), torch.randn(8, 5, generator=generator)
    jobs, output_types = [], []
    for transport in ("nccl", "copy-engine"):
        host = _symmetric_allgather_matmul(world).lower(pipeline=f"hostir-lower{{transport={transport}}}")
        assert ("transport copy_engine" in str(host)) == (transport == "copy-engine" and world > 1)
        (program,) = [op for op in host.ops if isinstance(op, hir.ProgramOp)]
        types = program.function_type.inputs.data
        output_types.append(program.function_type.outputs.data[0])
        jobs.append(runtime.Job(str(host), [[runtime.shard_tensor(x, t, r) for x, t in zip((a, b), types)]
                                            for r in range(world)]))
    for per_rank, output_type in zip(runtime.run_spmd_batch(jobs, world, backend="gloo"), output_types):
        got = runtime.unshard([r.outputs[0] for r in per_rank], output_type)
        torch.testing.assert_close(got, a @ b, rtol=1e-5, atol=1e-5)


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
                "log": evaluator.stream_log}

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


def _sharded_sum(devices: int) -> FusionDefinition:
    with FusionDefinition() as fd:
        a = fd.define_tensor([devices, 4, 8], dtype="float32")
        fd.add_output(fd.ops.sum(fd.ops.exp(a), dims=[0]))
    if devices > 1:
        a.set_device_mesh(DeviceMesh(list(range(devices))))
        a.axis(0).parallelize(ParallelType.DIDx)
    return fd


def execute_without_a_device(rank: int, world_size: int, x: torch.Tensor) -> torch.Tensor:
    (out,) = _sharded_sum(world_size).execute([x[rank:rank + 1]])
    return out


@pytest.mark.parametrize("world", [1, 2])
def test_execute_without_a_device_runs_where_its_inputs_are_and_matches_torch(world):
    """No `device=`: alone, the inputs' device chooses (as nvFuser's execute does); in a
    world of ranks, the world's. Either way the values of eager torch on the whole data."""
    x = torch.randn(world, 4, 8)
    expected = torch.exp(x).sum(dim=0)
    if world == 1:
        (out,) = _sharded_sum(1).execute([x])
        torch.testing.assert_close(out, expected)
        return
    for out in runtime.launch(execute_without_a_device, world, (x,), backend="gloo"):
        torch.testing.assert_close(out, expected)


def _row_sums(devices: int, rows_too: bool = False) -> FusionDefinition:
    """A sum over the rows of `define_tensor([-1, 4])`, sharded on the rows across
    `devices` (and the rows themselves with `rows_too`: their type shows the extents)."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, 4], dtype="float32")
        fd.add_output(fd.ops.sum(fd.ops.exp(a), dims=[0]))
        if rows_too:
            fd.add_output(a)
    if devices > 1:
        a.set_device_mesh(DeviceMesh(list(range(devices))))
        a.outer_split(0, devices)
        a.axis(0).parallelize(ParallelType.DIDx)
    return fd


def test_a_fusion_of_dynamic_extents_is_lowered_for_each_run_s_extents(count_calls):
    """As nvFuser concretizes a fusion per input shapes: one lowering per set of extents,
    after the program of dynamic extents, whose layouts they must keep."""
    lowerings = count_calls(passes, "lower")
    fd = _row_sums(1)
    for rows in (6, 6, 10):
        x = torch.randn(rows, 4)
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, torch.exp(x).sum(dim=0))
    assert [pipeline for _, _, pipeline in lowerings] == [
        "hostir-lower", "specialize-extents{extents=6},hostir-lower", "specialize-extents{extents=10},hostir-lower"]


def test_past_a_few_sets_of_extents_the_program_of_dynamic_extents_runs_them_all(count_calls):
    lowerings = count_calls(passes, "lower")
    fd = _row_sums(1)
    counts = [2 + k for k in range(definition.SPECIALIZED_SHAPES + 3)]
    for rows in counts + counts[:2]:
        x = torch.randn(rows, 4)
        (out,) = fd.execute([x])
        torch.testing.assert_close(out, torch.exp(x).sum(dim=0))
    assert [pipeline for _, _, pipeline in lowerings] == ["hostir-lower"] + [
        f"specialize-extents{{extents={rows}}},hostir-lower" for rows in counts[:definition.SPECIALIZED_SHAPES]]


def execute_row_sums(rank: int, world_size: int, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, tuple[int, ...]]:
    fd = _row_sums(world_size, rows_too=True)
    rows = x.shape[0] // world_size
    sums, own = fd.execute([x[rank * rows:(rank + 1) * rows]])
    return sums, own, fd.output_types()[1].shape


def test_every_rank_lowers_for_the_global_extents_of_its_shards():
    x = torch.randn(12, 4)
    for rank, (sums, own, shape) in enumerate(runtime.launch(execute_row_sums, 2, (x,), backend="gloo")):
        torch.testing.assert_close(sums, torch.exp(x).sum(dim=0))
        torch.testing.assert_close(own, x[rank * 6:(rank + 1) * 6])
        assert shape == (12, 4)


def execute_flattened(rank: int, world_size: int, x: torch.Tensor) -> tuple[torch.Tensor, tuple[int, ...]]:
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, 4], dtype="float32")
        fd.add_output(fd.ops.reshape(fd.ops.exp(a), [-1]))
    a.set_device_mesh(DeviceMesh(list(range(world_size))))
    a.outer_split(0, world_size)
    a.axis(0).parallelize(ParallelType.DIDx)
    rows = x.shape[0] // world_size
    (out,) = fd.execute([x[rank * rows:(rank + 1) * rows]])
    return out, fd.output_types()[0].shape


def test_a_fusion_whose_layouts_its_extents_would_change_is_not_specialized():
    """Flattening rows of dynamic extent maps no sharding (each rank gets the whole
    result); of static extents the result would stay sharded. Specialized for a few
    sets of extents and not for the others, the same call would return other layouts."""
    x = torch.randn(8, 4)
    for out, shape in runtime.launch(execute_flattened, 2, (x,), backend="gloo"):
        torch.testing.assert_close(out, torch.exp(x).reshape(-1))
        assert shape == (DYNAMIC,)


def test_an_input_of_dynamic_extents_some_rank_does_not_hold_is_not_specialized():
    """That rank could not know the extents: every rank runs the program of dynamic extents."""
    fd = _row_sums(2)
    types, shard = [v.type for v in fd._inputs], torch.randn(3, 4)
    assert definition._run_extents(definition._extent_plan(types, world_size=2), [shard]) == (6,)
    assert definition._extent_plan(types, world_size=3) == []
    assert definition._run_extents(definition._extent_plan(types, world_size=2), [None]) == ()

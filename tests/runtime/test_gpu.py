"""The runtime on 2 GPUs: NCCL collectives and real CUDA streams.

Run on a machine with 2 CUDA devices:  pytest -m gpu tests/runtime
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_collectives import (  # the CPU cases, rerun with NCCL
    RING,
    cases,
    local_inputs,
    ring_inputs,
    shift_program,
    shift_teams,
)

from hostir.runtime import Job, execute, run_fusion, run_spmd_batch, shard_tensor, unshard
from hostir_dialect.context import parse_module

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices"),
]

HOST_PROGRAMS = Path(__file__).resolve().parents[2] / "examples" / "host_programs"


@pytest.fixture(scope="module")
def nccl_results():
    found = cases(2)
    jobs, data = [], {}
    for seed, (name, case) in enumerate(found.items()):
        data[name] = local_inputs(case, 2, seed)
        jobs.append(Job(case.program(), [[data[name].get(r)] for r in range(2)]))
    ring, ring_args = ring_inputs(2)
    jobs.append(Job(RING, ring_args))
    shifted = {team: {r: torch.full((6,), float(r)) for r in team} for team in shift_teams(2)}
    shift_jobs = [Job(shift_program(team), [[xs.get(r)] for r in range(2)]) for team, xs in shifted.items()]
    module = parse_module((HOST_PROGRAMS / "host_allgather_matmul.mlir").read_text())
    program = module.ops.first
    while program.name != "hir.program":
        program = program.next_op
    generator = torch.Generator().manual_seed(0)
    global_inputs = [torch.randn(t.value_shape(), generator=generator) for t in program.function_type.inputs.data]
    shards = [[shard_tensor(x, t, r) for x, t in zip(global_inputs, program.function_type.inputs.data)] for r in range(2)]
    jobs.append(Job(str(module), shards, number_of_streams=2, record_streams=True, repeat=2, cuda_graph=False))  # each run's streams
    results = run_spmd_batch(jobs + shift_jobs, 2, backend="nccl", timeout=300)
    shifts = (shifted, results[len(jobs):])
    return found, data, results[: len(jobs)], ring, (module, program, global_inputs), shifts


def test_every_collective_with_nccl(nccl_results):
    found, data, results, _, _, _ = nccl_results
    for k, (name, case) in enumerate(found.items()):
        for rank, want in case.expected(data[name]).items():
            got = results[k][rank].outputs[0]
            torch.testing.assert_close(got.reshape(-1), want.reshape(-1), msg=f"{name} rank {rank}")


def test_send_recv_ring_with_nccl(nccl_results):
    _, _, results, ring, _, _ = nccl_results
    for rank, result in enumerate(results[-2]):
        assert torch.equal(result.outputs[0], ring[(rank - 1) % 2])


def test_stream_pipelined_allgather_matmul_runs_on_two_cuda_streams(nccl_results):
    _, _, results, _, (module, program, global_inputs), _ = nccl_results
    per_rank = results[-1]
    (expected,) = run_fusion(module, global_inputs, "reference")
    got = unshard([r.outputs[0] for r in per_rank], program.function_type.outputs.data[0])
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)  # TF32 may be on for matmuls
    for rank, result in enumerate(per_rank):
        matmul_streams = [stream for name, stream in result.stream_log if name == "fusion.matmul"]
        print(f"rank {rank}: CUDA stream of each loop iteration's matmul (2 runs): {matmul_streams}")
        assert len(matmul_streams) == 4  # 2 iterations x 2 runs
        first_run = matmul_streams[:2]
        assert first_run[0] != first_run[1], f"both iterations ran on stream {first_run[0]}"
        assert matmul_streams[2:] == first_run  # streams are cached across runs


def test_shift_by_every_offset_with_nccl(nccl_results):
    """One batched send/receive per member and offset: member p's row k holds the input
    of the member at position (p + k) mod D, with no hang whatever the offset."""
    shifted, per_team = nccl_results[-1]
    for (team, xs), per_rank in zip(shifted.items(), per_team):
        for rank, result in enumerate(per_rank):
            p = team.index(rank)
            expected = torch.stack([xs[team[(p + k) % len(team)]] for k in range(2 * len(team))])
            assert torch.equal(result.outputs[0], expected), f"team {team} rank {rank}"


def test_single_rank_programs_on_cuda():
    F = "!fusion.tensor<f32[8, 64]>"
    text = f"""hir.program @main(%a: {F}, %b: {F}, %o: {F}) -> ({F}, !fusion.tensor<f32[8, r64]>) {{
  %c = fusion.mul %a, %b into %o : {F}, {F} -> {F}
  %s = fusion.reduce sum %c dims [1] : {F} -> !fusion.tensor<f32[8, r64]>
  hir.return %c, %s : {F}, !fusion.tensor<f32[8, r64]>
}}"""
    a, b, o = (torch.randn(8, 64, device="cuda") for _ in range(3))
    c, s = execute(parse_module(text), [a, b, o], device="cuda")
    assert c is o
    torch.testing.assert_close(s, (a * b).sum(1))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_grouped_mm_replays_from_a_cuda_graph_whatever_kernel_torch_has_for_its_dtype(dtype):
    """bf16 takes torch's grouped GEMM kernel; float32, captured, hostir's per-group
    matmuls (torch's own float32 path copies the offsets to the host, which a capture
    refuses; the eager run before the capture takes it)."""
    from hostir import FusionDefinition
    from hostir.passes import lower
    from hostir.runtime import Evaluator
    from hostir.runtime.graphs import CUDA_GRAPH

    with FusionDefinition() as fd:
        a, b = fd.define_tensor([64, 32], dtype=dtype), fd.define_tensor([3, 32, 16], dtype=dtype)
        fd.add_output(fd.ops.grouped_mm(a, b, fd.define_tensor([3], dtype="int32")))
    evaluator = Evaluator(lower(fd.to_module()), device="cuda", cuda_graph=True)
    for ends in ([16, 40, 64], [8, 8, 60]):  # a replay reads the offsets on the device
        x, y = torch.randn(64, 32, device="cuda", dtype=dtype), torch.randn(3, 32, 16, device="cuda", dtype=dtype)
        (got,) = evaluator.run([x, y, torch.tensor(ends, dtype=torch.int32, device="cuda")])
        expected = torch.cat([x[s:e].float() @ y[g].float() for g, (s, e) in enumerate(zip([0, *ends[:-1]], ends))])
        torch.testing.assert_close(got[:ends[-1]].float(), expected, rtol=2e-2, atol=2e-2)
    assert evaluator.graph_mode == CUDA_GRAPH and len(evaluator.graphs) == 1

"""The reshardings on 2 GPUs (NCCL, real CUDA streams): all-to-alls, inner axes and the
P2P DID -> Stream ring compute what eager torch computes, and the ring's shift of one
member's shard overlaps the matmul of another's.

Run on a machine with 2 CUDA devices:  pytest -m gpu tests/passes/test_reshardings_gpu.py
"""

from __future__ import annotations

import pytest
import torch
from test_lowering_e2e import (  # the CPU cases, rerun with NCCL
    CASES,
    assert_matches,
    prepare,
)
from test_stream_pipelines_e2e import GPU_TOLERANCE, lowered, overlapping, p2p_ag_matmul, profile_job, random_inputs

from hostir import runtime
from hostir_dialect import hir
from hostir_dialect.context import parse_module

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices"),
]

WORLD = 2
RESHARDINGS = [
    "all_to_all", "all_to_all_split", "all_to_all_inner_axes", "reshape_merging_a_sharded_inner_axis",
    "allgather_inner_axis", "allgather_column_major", "scatter_inner_axis", "reduce_scatter_inner_axis",
    "p2p_matmul",
]


@pytest.fixture(scope="module")
def nccl_outputs():
    prepared = {name: prepare(CASES[name][0], WORLD) for name in RESHARDINGS}
    jobs = [runtime.Job(p.program, p.per_rank_inputs, number_of_streams=2) for p in prepared.values()]
    results = runtime.run_spmd_batch(jobs, WORLD, backend="nccl", timeout=300)
    outputs = {
        name: [runtime.unshard([r.outputs[i] for r in per_rank], ty) for i, ty in enumerate(p.output_types)]
        for (name, p), per_rank in zip(prepared.items(), results)
    }
    return prepared, outputs


@pytest.mark.parametrize("name", RESHARDINGS)
def test_resharding_with_nccl_matches_eager(nccl_outputs, name):
    prepared, outputs = nccl_outputs
    assert_matches(name, outputs[name], prepared[name].expected)


def test_p2p_ring_is_correct_and_overlaps_shift_with_matmul():
    """Iteration 0 multiplies this rank's own shard while iteration 1's shift brings the
    other's: with 2 streams the NCCL send/receive overlaps a GEMM; with 1 it cannot."""
    text = p2p_ag_matmul(4096, k=4096, n=1024)
    reference = parse_module(text)
    inputs = random_inputs(reference, seed=0)
    expected = runtime.run_fusion(reference, [x.cuda() for x in inputs])[0].cpu()
    program = lowered(text, "hostir-lower")
    assert any(op.name == "hir.shift" for op in program.walk())
    (function,) = [op for op in program.ops if isinstance(op, hir.ProgramOp)]
    arg_types = [arg.type for arg in function.args]
    per_rank = [[runtime.shard_tensor(x, ty, r) for x, ty in zip(inputs, arg_types)] for r in range(WORLD)]
    output_type = function.function_type.outputs.data[0]
    for streams, overlap_expected in ((2, True), (1, False)):
        ranks = runtime.launch(profile_job, WORLD, (str(program), per_rank, streams), backend="nccl")
        for rank, result in enumerate(ranks):
            torch.testing.assert_close(result["outputs"][0], runtime.shard_tensor(expected, output_type, rank),
                                       **GPU_TOLERANCE)
            assert len(result["collective"]) >= 1 and len(result["matmul"]) >= 2, result
            assert overlapping(result["collective"], result["matmul"]) == overlap_expected, (
                f"rank {rank} numberOfStreams={streams}: shift {result['collective']} matmul {result['matmul']}"
            )

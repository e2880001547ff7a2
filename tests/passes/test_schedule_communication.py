"""schedule-communication: the attention projections (two independent chains in one stream
loop) post both collectives before the compute that does not need them and wait last, and
still compute what eager torch computes, with the stream hazard check on, on 2 CPU ranks,
with every transport and bounded intermediates."""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects import scf

from hostir.passes import PassManagerOptions, lower
from hostir.runtime import Evaluator, launch, run_fusion, shard_tensor, unshard
from hostir_dialect import fusion, hir
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import located_text

PROJECTIONS = """
!x = !fusion.tensor<f32[4, 2 didx, 2, 4], mesh=[0, 1]>
!wqkv = !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>
!qkv = !fusion.tensor<f32[4 stream, 2, 2, 6(2 didx, 3), r4], mesh=[0, 1]>
!a = !fusion.tensor<f32[4, 2, 2, 4(2 didx, 2)], mesh=[0, 1]>
!wo = !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1]>
!o = !fusion.tensor<f32[4 stream, 2 didx, 2, 4, r4], mesh=[0, 1]>
fusion.func @projections(%x: !x, %wqkv: !wqkv, %a: !a, %wo: !wo) -> (!o, !qkv) {
  %o = fusion.matmul %a, %wo : !a, !wo -> !o
  %qkv = fusion.matmul %x, %wqkv : !x, !wqkv -> !qkv
  fusion.return %o, %qkv : !o, !qkv
}
"""
PIPELINES = ["hostir-lower{transport=nccl}", "hostir-lower{transport=copy-engine}",
             "hostir-lower{transport=copy-engine bounded-intermediates=true}"]


def lowered(pipeline: str, disabled: frozenset[str] = frozenset()) -> hir.ProgramOp:
    module = parse_module(PROJECTIONS, "projections.mlir")
    lower(module, PassManagerOptions(disabled=disabled), pipeline=pipeline)
    (program,) = [op for op in module.ops if isinstance(op, hir.ProgramOp)]
    return program


def stream_loop_body(program: hir.ProgramOp) -> list:
    """The top-level ops of the body of the loop that computes (the last top-level loop)."""
    loop = [op for op in program.body.block.ops if isinstance(op, scf.ForOp)][-1]
    return list(loop.body.block.ops)


def position(ops: list, kind: type) -> int:
    return next(i for i, op in enumerate(ops) if isinstance(op, kind) or any(isinstance(o, kind) for o in op.walk()))


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_both_collectives_are_posted_before_the_compute_that_does_not_need_them(pipeline):
    for disabled, expected in ((frozenset(), True), (frozenset({"schedule-communication"}), False)):
        body = stream_loop_body(lowered(pipeline, disabled))
        first_matmul = position(body, fusion.MatmulOp)
        allgather = position(body, hir.AllgatherOp)
        whole_waits = [i for i, op in enumerate(body) if isinstance(op, hir.WaitOp) and op.member is None]
        assert (allgather < first_matmul) == expected, f"{pipeline}, without {set(disabled)}: all-gather at {allgather}"
        if expected:
            last_compute = max(i for i, op in enumerate(body) if any(isinstance(o, fusion.MatmulOp) for o in op.walk()))
            if "copy-engine" in pipeline:  # on NCCL the QKV GEMM needs the whole all-gather
                assert min(whole_waits) > last_compute


def _run_checked(rank: int, world_size: int, program_text: str, inputs: list) -> list[torch.Tensor]:
    evaluator = Evaluator(parse_module(program_text), rank=rank, world_size=world_size, check_hazards=True)
    mine = [shard_tensor(x, arg.type, rank) for x, arg in zip(inputs, evaluator.function.args)]
    return [evaluator.run(mine) for _ in range(2)][-1]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_the_scheduled_projections_compute_what_eager_torch_computes(pipeline):
    reference = parse_module(PROJECTIONS)
    function = next(iter(reference.ops))
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randn(arg.type.value_shape(), generator=generator) for arg in function.args]
    expected = run_fusion(reference, inputs)
    program = lowered(pipeline)
    per_rank = launch(_run_checked, 2, (located_text(program.parent_op()), inputs), backend="gloo", timeout=60)
    for i, (want, result_type) in enumerate(zip(expected, program.function_type.outputs.data)):
        got = unshard({rank: outputs[i] for rank, outputs in enumerate(per_rank)}, result_type)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)

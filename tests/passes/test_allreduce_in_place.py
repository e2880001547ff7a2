"""allreduce-in-place (passes/allreduce_in_place.py): an NCCL all-reduce's partial sums
are computed into its output, so NCCL reduces in place (no copy of the input into the
output first), and the program computes what the fusion computes eagerly on the
unsharded data, on 2 CPU ranks (gloo)."""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from hostir import passes, runtime
from hostir.passes import PassManagerOptions
from hostir.passes.buffer_aliases import buffer_roots
from hostir_dialect import hir
from hostir_dialect.context import parse_module
from hostir_dialect.symbols import programs

A, B, C = "f32[4, 8(2 didx, 4)], mesh=[0, 1]", "f32[8(2 didx, 4), 6], mesh=[0, 1]", "f32[4, 6, r8]"
MATMUL_ALLREDUCE = f"""fusion.func @f(%a: !fusion.tensor<{A}>, %b: !fusion.tensor<{B}>) -> !fusion.tensor<{C}> {{
  %c = fusion.matmul %a, %b : !fusion.tensor<{A}>, !fusion.tensor<{B}> -> !fusion.tensor<{C}>
  fusion.return %c : !fusion.tensor<{C}>
}}"""


def lowered(*disabled: str) -> ModuleOp:
    return passes.lower(parse_module(MATMUL_ALLREDUCE), PassManagerOptions(disabled=frozenset(disabled)),
                        "hostir-lower{transport=nccl}")


def allreduce_buffers(module: ModuleOp) -> tuple[SSAValue, SSAValue]:
    (program,) = programs(module)
    (allreduce,) = [op for op in program.walk() if isinstance(op, hir.AllreduceOp)]
    roots = buffer_roots(program)
    return roots[allreduce.input], roots[allreduce.output]


def test_the_partial_sums_are_computed_into_the_all_reduces_output():
    source, target = allreduce_buffers(lowered())
    assert source is target


def test_without_the_pass_the_all_reduce_reads_a_buffer_of_its_own():
    source, target = allreduce_buffers(lowered("allreduce-in-place"))
    assert source is not target


def test_reduced_in_place_it_computes_the_eager_result_on_two_ranks():
    fusion_module = parse_module(MATMUL_ALLREDUCE)
    types = [arg.type for arg in fusion_module.ops.first.args]  # type: ignore[union-attr]  # the fusion.func
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.rand(t.value_shape(), generator=generator) * 2 - 1 for t in types]
    per_rank = [[runtime.shard_tensor(x, t, rank) for x, t in zip(inputs, types)] for rank in range(2)]
    (results,) = runtime.run_spmd_batch([runtime.Job(str(lowered()), per_rank)], 2, backend="gloo")
    for rank, result in enumerate(results):
        torch.testing.assert_close(result.outputs[0], inputs[0] @ inputs[1], msg=f"rank {rank}")

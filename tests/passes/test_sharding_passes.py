"""The sharding passes keep a fusion's value: eager torch on unsharded data (sharding
annotations ignored) gives the same outputs before and after each pass, and each pass is
idempotent and leaves the module verifying."""

from __future__ import annotations

import pytest
import torch

from hostir.passes.decompose_reshardings import DecomposeReshardings
from hostir.passes.finalize_multidevice_domains import FinalizeMultideviceDomains
from hostir.passes.propagate_shardings import PropagateShardings
from hostir.passes.reorder_sharded_axis import ReorderShardedAxisPass
from hostir.runtime.layouts import torch_dtype
from hostir.runtime.reference import run_fusion
from hostir_dialect.context import make_context, parse_module
from hostir_dialect.diagnostics import verify_located

TOLERANCE = dict(rtol=1e-5, atol=1e-5)  # float32 sums over at most 16 terms, reassociated


def _t(text: str) -> str:
    return f"!fusion.tensor<{text}>"


M2 = "mesh=[0, 1]"

FUSIONS = {
    "reduce_sum": f"""
fusion.func @f(%x: {_t(f"f32[4, 8(2 didx, 4)], {M2}")}) -> {_t(f"f32[4, r8(2 didx, 4)], {M2}")} {{
  %c = fusion.reduce sum %x dims [1] : {_t(f"f32[4, 8(2 didx, 4)], {M2}")} -> {_t(f"f32[4, r8(2 didx, 4)], {M2}")}
  fusion.return %c : {_t(f"f32[4, r8(2 didx, 4)], {M2}")}
}}""",
    "reduce_max_two_axes": f"""
fusion.func @f(%x: {_t(f"f32[3, 8(2 didx, 4), 5], {M2}")}) -> {_t(f"f32[3, r8(2 didx, 4), r5], {M2}")} {{
  %c = fusion.reduce max %x dims [1, 2] : {_t(f"f32[3, 8(2 didx, 4), 5], {M2}")} -> {_t(f"f32[3, r8(2 didx, 4), r5], {M2}")}
  fusion.return %c : {_t(f"f32[3, r8(2 didx, 4), r5], {M2}")}
}}""",
    "reduce_scatter": f"""
fusion.func @f(%x: {_t(f"f32[8, 8(2 didx, 4)], {M2}")}) -> {_t(f"f32[8(2 didx, 4), r8], {M2}")} {{
  %c = fusion.reduce sum %x dims [1] : {_t(f"f32[8, 8(2 didx, 4)], {M2}")} -> {_t(f"f32[8(2 didx, 4), r8], {M2}")}
  fusion.return %c : {_t(f"f32[8(2 didx, 4), r8], {M2}")}
}}""",
    "matmul_k_sharded": f"""
fusion.func @f(%a: {_t(f"f32[4, 8(2 didx, 4)], {M2}")}, %b: {_t(f"f32[8(2 didx, 4), 6], {M2}")}) -> {_t(f"f32[4, 6], {M2}")} {{
  %c = fusion.matmul %a, %b : {_t(f"f32[4, 8(2 didx, 4)], {M2}")}, {_t(f"f32[8(2 didx, 4), 6], {M2}")} -> {_t(f"f32[4, 6, r8(2 didx, 4)], {M2}")}
  %d = fusion.relu %c : {_t(f"f32[4, 6, r8(2 didx, 4)], {M2}")} -> {_t(f"f32[4, 6], {M2}")}
  fusion.return %d : {_t(f"f32[4, 6], {M2}")}
}}""",
    "batched_matmul_k_sharded": f"""
fusion.func @f(%a: {_t(f"f32[3, 4, 8(2 didx, 4)], {M2}")}, %b: {_t(f"f32[3, 8(2 didx, 4), 6], {M2}")}) -> {_t(f"f32[3, 4, 6, r8(2 didx, 4)], {M2}")} {{
  %c = fusion.matmul %a, %b : {_t(f"f32[3, 4, 8(2 didx, 4)], {M2}")}, {_t(f"f32[3, 8(2 didx, 4), 6], {M2}")} -> {_t(f"f32[3, 4, 6, r8(2 didx, 4)], {M2}")}
  fusion.return %c : {_t(f"f32[3, 4, 6, r8(2 didx, 4)], {M2}")}
}}""",
    "linear_bias": f"""
fusion.func @f(%x: {_t(f"f32[3, 4, 8(2 didx, 4)], {M2}")}, %w: {_t(f"f32[6, 8(2 didx, 4)], {M2}")}, %bias: {_t(f"f32[6], {M2}")}) -> {_t(f"f32[3, 4, 6, r8(2 didx, 4)], {M2}")} {{
  %y = fusion.linear %x, %w bias %bias : {_t(f"f32[3, 4, 8(2 didx, 4)], {M2}")}, {_t(f"f32[6, 8(2 didx, 4)], {M2}")}, {_t(f"f32[6], {M2}")} -> {_t(f"f32[3, 4, 6, r8(2 didx, 4)], {M2}")}
  fusion.return %y : {_t(f"f32[3, 4, 6, r8(2 didx, 4)], {M2}")}
}}""",
    "ag_matmul": f"""
fusion.func @f(%a: {_t(f"f32[4, 2 didx, 3, 8], {M2}")}, %b: {_t(f"f32[8, 5], {M2}")}) -> {_t(f"f32[4 stream, 2, 3, 5, r8], {M2}")} {{
  %c = fusion.matmul %a, %b : {_t(f"f32[4, 2 didx, 3, 8], {M2}")}, {_t(f"f32[8, 5], {M2}")} -> {_t(f"f32[4 stream, 2, 3, 5, r8], {M2}")}
  fusion.return %c : {_t(f"f32[4 stream, 2, 3, 5, r8], {M2}")}
}}""",
    "all_to_all_split": f"""
fusion.func @f(%x: {_t(f"f32[4(2 didx, 2), 6], {M2}")}) -> {_t(f"f32[4, 6(2 didx, 3)], {M2}")} {{
  %y = fusion.set %x : {_t(f"f32[4(2 didx, 2), 6], {M2}")} -> {_t(f"f32[4, 6(2 didx, 3)], {M2}")}
  fusion.return %y : {_t(f"f32[4, 6(2 didx, 3)], {M2}")}
}}""",
    "inner_axes_streamed": f"""
fusion.func @f(%x: {_t(f"f32[3, 4, 2 didx], {M2}")}, %w: {_t(f"f32[2 didx, 4, 8], {M2}")}) -> ({_t(f"f32[3 stream, 4, 2], {M2}")}, {_t(f"f32[r2, 4, 8(2 didx, 4)], {M2}")}) {{
  %y = fusion.set %x : {_t(f"f32[3, 4, 2 didx], {M2}")} -> {_t(f"f32[3 stream, 4, 2], {M2}")}
  %r = fusion.reduce sum %w dims [0] : {_t(f"f32[2 didx, 4, 8], {M2}")} -> {_t(f"f32[r2, 4, 8(2 didx, 4)], {M2}")}
  fusion.return %y, %r : {_t(f"f32[3 stream, 4, 2], {M2}")}, {_t(f"f32[r2, 4, 8(2 didx, 4)], {M2}")}
}}""",
    "didx_and_didy": f"""
fusion.func @f(%x: {_t("f32[2 didy, 2 didx, 4], mesh=[[0, 1], [2, 3]]")}) -> {_t("f32[2, 2, 4(2 didy, 2)], mesh=[[0, 1], [2, 3]]")} {{
  %y = fusion.set %x : {_t("f32[2 didy, 2 didx, 4], mesh=[[0, 1], [2, 3]]")} -> {_t("f32[2, 2, 4(2 didy, 2)], mesh=[[0, 1], [2, 3]]")}
  fusion.return %y : {_t("f32[2, 2, 4(2 didy, 2)], mesh=[[0, 1], [2, 3]]")}
}}""",
    "unannotated_chain": f"""
fusion.func @f(%x: {_t(f"f32[4, 8(2 didx, 4)], {M2}")}, %y: {_t("f32[4, 8]")}) -> {_t("f32[4, r8]")} {{
  %e = fusion.exp %y : {_t("f32[4, 8]")} -> {_t("f32[4, 8]")}
  %s = fusion.add %x, %e : {_t(f"f32[4, 8(2 didx, 4)], {M2}")}, {_t("f32[4, 8]")} -> {_t("f32[4, 8]")}
  %c = fusion.reduce sum %s dims [1] : {_t("f32[4, 8]")} -> {_t("f32[4, r8]")}
  fusion.return %c : {_t("f32[4, r8]")}
}}""",
    # Regressions (issue 12, defects 4 and 5): an IndexError for a 1-D b, even without a
    # mesh; invalid IR from the rFactor of a 1-D a, a broadcast M, a batched b.
    "matrix_vector": f"""
fusion.func @f(%a: {_t("f32[4, 6]")}, %b: {_t("f32[6]")}) -> {_t("f32[4, r6]")} {{
  %c = fusion.matmul %a, %b : {_t("f32[4, 6]")}, {_t("f32[6]")} -> {_t("f32[4, r6]")}
  fusion.return %c : {_t("f32[4, r6]")}
}}""",
    "vector_matrix_k_sharded": f"""
fusion.func @f(%a: {_t(f"f32[8(2 didx, 4)], {M2}")}, %b: {_t(f"f32[8(2 didx, 4), 6], {M2}")}) -> {_t(f"f32[6, r8(2 didx, 4)], {M2}")} {{
  %c = fusion.matmul %a, %b : {_t(f"f32[8(2 didx, 4)], {M2}")}, {_t(f"f32[8(2 didx, 4), 6], {M2}")} -> {_t(f"f32[6, r8(2 didx, 4)], {M2}")}
  fusion.return %c : {_t(f"f32[6, r8(2 didx, 4)], {M2}")}
}}""",
    "matrix_vector_k_sharded": f"""
fusion.func @f(%a: {_t(f"f32[3, 8(2 didx, 4)], {M2}")}, %b: {_t(f"f32[8(2 didx, 4)], {M2}")}) -> {_t(f"f32[3, r8(2 didx, 4)], {M2}")} {{
  %c = fusion.matmul %a, %b : {_t(f"f32[3, 8(2 didx, 4)], {M2}")}, {_t(f"f32[8(2 didx, 4)], {M2}")} -> {_t(f"f32[3, r8(2 didx, 4)], {M2}")}
  fusion.return %c : {_t(f"f32[3, r8(2 didx, 4)], {M2}")}
}}""",
    "batched_b_k_sharded": f"""
fusion.func @f(%a: {_t(f"f32[3, 8(2 didx, 4)], {M2}")}, %b: {_t(f"f32[5, 8(2 didx, 4), 6], {M2}")}) -> {_t(f"f32[5, 3, 6, r8(2 didx, 4)], {M2}")} {{
  %c = fusion.matmul %a, %b : {_t(f"f32[3, 8(2 didx, 4)], {M2}")}, {_t(f"f32[5, 8(2 didx, 4), 6], {M2}")} -> {_t(f"f32[5, 3, 6, r8(2 didx, 4)], {M2}")}
  fusion.return %c : {_t(f"f32[5, 3, 6, r8(2 didx, 4)], {M2}")}
}}""",
    "linear_broadcast_m_k_sharded": f"""
fusion.func @f(%x: {_t(f"f32[b1, 8(2 didx, 4)], {M2}")}, %w: {_t(f"f32[6, 8(2 didx, 4)], {M2}")}) -> {_t(f"f32[b1, 6, r8(2 didx, 4)], {M2}")} {{
  %y = fusion.linear %x, %w : {_t(f"f32[b1, 8(2 didx, 4)], {M2}")}, {_t(f"f32[6, 8(2 didx, 4)], {M2}")} -> {_t(f"f32[b1, 6, r8(2 didx, 4)], {M2}")}
  fusion.return %y : {_t(f"f32[b1, 6, r8(2 didx, 4)], {M2}")}
}}""",
    # Regression (TRIAGE C4): the split's inner part sharded in the result was not seen
    # as a resharding.
    "reshape_split_inner_sharded": f"""
fusion.func @f(%a: {_t(f"f32[8], {M2}")}) -> {_t(f"f32[2, 4(2 didx, 2)], {M2}")} {{
  %b = fusion.reshape %a : {_t(f"f32[8], {M2}")} -> {_t(f"f32[2, 4(2 didx, 2)], {M2}")}
  fusion.return %b : {_t(f"f32[2, 4(2 didx, 2)], {M2}")}
}}""",
}

PIPELINES = {
    "propagate": [PropagateShardings()],
    "decompose": [PropagateShardings(), DecomposeReshardings()],
    "decompose_after": [PropagateShardings(), DecomposeReshardings(insert_after=True)],
    "reorder": [PropagateShardings(), DecomposeReshardings(), ReorderShardedAxisPass()],
    "all": [PropagateShardings(), DecomposeReshardings(), ReorderShardedAxisPass(), FinalizeMultideviceDomains()],
}


def _inputs(module, seed: int = 0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    func = next(iter(module.ops))
    return [
        torch.randn(t.value_shape(), generator=generator, dtype=torch_dtype(t.element_type))
        for t in func.function_type.inputs.data
    ]


def _apply(module, passes) -> None:
    ctx = make_context()
    for p in passes:
        p.apply(ctx, module)
        verify_located(module)


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("fusion", FUSIONS)
def test_passes_keep_the_value(fusion: str, pipeline: str) -> None:
    module = parse_module(FUSIONS[fusion])
    inputs = _inputs(module)
    expected = run_fusion(module, inputs)
    _apply(module, PIPELINES[pipeline])
    got = run_fusion(module, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, **TOLERANCE)


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("fusion", FUSIONS)
def test_passes_are_idempotent(fusion: str, pipeline: str) -> None:
    module = parse_module(FUSIONS[fusion])
    _apply(module, PIPELINES[pipeline])
    once = str(module)
    _apply(module, PIPELINES[pipeline][-1:])
    assert str(module) == once


def test_decompose_leaves_only_single_communications() -> None:
    """After decompose-reshardings every resharding op is a set or a one-axis reduce."""
    from hostir.passes.sharding_policy import communication_problem
    from hostir_dialect.fusion import ReduceOp, SetOp
    from hostir_dialect.sharding import is_resharding

    for text in FUSIONS.values():
        module = parse_module(text)
        _apply(module, PIPELINES["decompose"])
        resharding = [op for op in module.walk() if is_resharding(op)]
        assert all(isinstance(op, SetOp | ReduceOp) for op in resharding)
        assert all(communication_problem(op) is None for op in module.walk())


def test_reorder_leaves_every_communication_laid_out_for_its_collective() -> None:
    """After reorder-sharded-axis no communication has a layout problem, in its stream
    loop's chunks where it has one; and the test is not vacuous: some had one before."""
    from hostir.passes.sharding_policy import layout_problem
    from hostir_dialect.fusion import ReduceOp, SetOp
    from hostir_dialect.sharding import communicates

    def problems(module) -> list[str]:
        return [
            problem for op in module.walk()
            if isinstance(op, SetOp | ReduceOp) and communicates(op)
            and (problem := layout_problem(op, op.result.type.stream_axis())) is not None
        ]

    before = 0
    for text in FUSIONS.values():
        module = parse_module(text)
        _apply(module, PIPELINES["decompose"])
        before += len(problems(module))
        _apply(module, [ReorderShardedAxisPass()])
        assert problems(module) == []
    assert before >= 4


def test_propagation_fills_every_tensor_with_the_mesh() -> None:
    module = parse_module(FUSIONS["unannotated_chain"])
    _apply(module, [PropagateShardings()])
    func = next(iter(module.ops))
    values = [*func.body.block.args, *(r for op in func.body.block.ops for r in op.results)]
    assert all(v.type.mesh is not None for v in values)
    # The unannotated fusion input %y gets the mesh but stays replicated.
    assert not func.body.block.args[1].type.is_sharded()


def test_kernel_units_and_references_of_a_host_program_are_left_alone() -> None:
    """Only fusions to lower are sharded and allocated: a unit called by
    hir.post_on_stream was lowered already (its intermediate would otherwise become
    per-chunk), and a fusion with the program's signature is its eager reference."""
    t, u = _t("f32[8 stream, 4]"), _t("f32[8, 4]")
    module = parse_module(f"""
hir.program @main(%a: {u}) -> {t} {{
  %r = hir.post_on_stream @unit(%a) : ({u}) -> {t}
  hir.return %r : {t}
}}
fusion.func @unit(%a: {u}) -> {t} {{
  %b = fusion.exp %a : {u} -> {t}
  %c = fusion.neg %b : {t} -> {t}
  fusion.return %c : {t}
}}
fusion.func @reference(%a: {u}) -> {t} {{
  %b = fusion.exp %a : {u} -> {t}
  %c = fusion.neg %b : {t} -> {t}
  fusion.return %c : {t}
}}
fusion.func @user(%a: {t}) -> {t} {{
  %b = fusion.exp %a : {t} -> {t}
  %c = fusion.neg %b : {t} -> {t}
  fusion.return %c : {t}
}}""")
    _apply(module, PIPELINES["all"])
    unit, reference, user = (str(op) for op in module.ops if op.name == "fusion.func")
    assert "alloc=" not in unit
    assert "alloc=" not in reference
    assert "alloc=[0 stream, 1]" in user

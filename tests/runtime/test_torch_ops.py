"""Kernels writing into destinations: every element lands where the destination's strides
say, whatever torch's `out=` variants would do with them."""

from __future__ import annotations

import pytest
import torch

from hostir import DeviceMesh, FusionDefinition, ParallelType
from hostir.runtime import execute
from hostir.runtime.torch_ops import Kernel, OpContext, _gemm_with_epilogue, _ZerosByColumns
from hostir_dialect import fusion


@pytest.mark.parametrize("x_shape", [[3, 4], [3, 2, 4]])
@pytest.mark.parametrize("op", ["linear", "matmul"])
def test_stream_parallel_contraction_into_a_permuted_buffer(op, x_shape):
    # Regression (issue 11, defect 3): each chunk of Y is a strided view of a buffer
    # allocated column-major; aten.linear.out re-strided it and scattered the result.
    with FusionDefinition() as fd:
        x = fd.define_tensor(x_shape)
        w = fd.define_tensor([5, 4] if op == "linear" else [4, 5])
        y = getattr(fd.ops, op)(x, w)
        fd.add_output(y)
    y.axis(0).parallelize(ParallelType.Stream)
    order = list(range(len(x_shape) + 1))
    order[0], order[1] = 1, 0
    y.set_allocation_order(order)
    xs, ws = torch.randn(x_shape), torch.randn(5, 4) if op == "linear" else torch.randn(4, 5)
    (got,) = execute(fd.lower(), [xs, ws])
    expected = torch.nn.functional.linear(xs, ws) if op == "linear" else xs @ ws
    torch.testing.assert_close(got, expected)


def test_a_strided_destination_keeps_its_strides_and_its_neighbours():
    from hostir.runtime.torch_ops import _contraction_into

    base = torch.zeros(5, 3)
    view = base.t()[1]  # shape [5], stride 3
    x, w = torch.randn(4), torch.randn(5, 4)
    into = _contraction_into(torch.nn.functional.linear, lambda out, a, b: torch.ops.aten.linear.out(a, b, None, out=out))
    result = into(view, x, w)
    assert result.stride() == (3,)
    torch.testing.assert_close(base[:, 1], w @ x)
    assert not base[:, 0].any() and not base[:, 2].any()


@pytest.mark.parametrize("reduction", ["sum", "prod"])
def test_an_integer_reduction_keeps_its_element_type(reduction):
    # Regression (TRIAGE W1): torch sums int32 into int64, so the dtype depended on whether
    # a collective (an i32 buffer) or a fresh kernel computed the sum.
    from hostir.runtime import run_fusion

    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 3], dtype="int32")
        # nvFuser's default sums integers into int64; dtype keeps the IR's reduction in int32
        fd.add_output(getattr(fd.ops, reduction)(a, dims=[0], dtype="int32"))
    x = torch.arange(1, 13, dtype=torch.int32).reshape(4, 3)
    expected = getattr(torch, reduction)(x, 0).to(torch.int32)
    for got in (run_fusion(fd.to_module(), [x])[0], execute(fd.lower(), [x])[0]):
        assert got.dtype == torch.int32 and torch.equal(got, expected)


def test_a_scalar_lhs_never_goes_to_the_device():
    """A binary op with a scalar lhs passes the scalar as a CPU 0-d tensor (a kernel
    argument): a tensor made on the device would be a host-to-device copy per call, which a
    CUDA graph cannot capture. Built for a CUDA device and run on CPU tensors, the kernel
    must not touch the device (this torch may have none)."""
    from hostir.runtime.torch_ops import OpContext, build_kernel
    from hostir_dialect.context import parse_module

    t = "!fusion.tensor<f32[4]>"
    module = parse_module(f"""fusion.func @f(%x: {t}) -> {t} {{
  %two = arith.constant 2.0 : f32
  %y = fusion.sub %two, %x : f32, {t} -> {t}
  fusion.return %y : {t}
}}""")
    sub = [op for op in module.walk() if op.name == "fusion.sub"][0]
    kernel = build_kernel(sub, OpContext(rank=None, device=torch.device("cuda", 0)))
    x = torch.randn(4)
    torch.testing.assert_close(kernel.fresh(2.0, x), 2 - x)
    out = torch.empty(4)
    assert kernel.into(out, 2.0, x) is out
    torch.testing.assert_close(out, 2 - x)


@pytest.mark.parametrize("into", [False, True])
def test_a_broadcast_matrix_operand_is_one_gemm_on_the_rows(into):
    """a [2, 3, 4, 5] @ b [1, 1, 5, 6] (the weight of every stream chunk): one mm, where
    torch.matmul expands b to a's batch, copies it and runs a batched GEMM."""
    from hostir_dialect.context import parse_module

    a_t, b_t, r_t = "!fusion.tensor<f32[2, 3, 4, 5]>", "!fusion.tensor<f32[b1, b1, 5, 6]>", "!fusion.tensor<f32[2, 3, 4, 6, r5]>"
    destination = (f", %o: {r_t}", " into %o") if into else ("", "")
    module = parse_module(f"""hir.program @main(%a: {a_t}, %b: {b_t}{destination[0]}) -> {r_t} {{
  %r = fusion.matmul %a, %b{destination[1]} : {a_t}, {b_t} -> {r_t}
  hir.return %r : {r_t}
}}""")
    a, b = torch.randn(2, 3, 4, 5), torch.randn(1, 1, 5, 6)
    inputs = [a, b] + ([torch.empty(2, 3, 4, 6)] if into else [])
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        (got,) = execute(module, inputs)
    torch.testing.assert_close(got, torch.matmul(a, b))
    ops = {event.name for event in profile.events()}
    assert "aten::mm" in ops and not {"aten::bmm", "aten::clone", "aten::expand"} & ops, ops


def test_a_product_laid_out_with_a_batch_axis_outermost_is_written_in_place():
    """a [3, 2, 4, 5] @ b [1, 1, 5, 6] into a result laid out with axis 1 outermost (a
    reduce-scatter's row blocks inside a batch axis, reorder-sharded-axis): one
    strided-batched GEMM per index of axis 1 into a buffer of that layout, no copy."""
    from hostir_dialect.context import parse_module

    a_t, b_t = "!fusion.tensor<f32[3, 2, 4, 5]>", "!fusion.tensor<f32[b1, b1, 5, 6]>"
    r_t = "!fusion.tensor<f32[3, 2, 4, 6, r5], alloc=[1, 0, 2, 3, 4]>"
    module = parse_module(f"""hir.program @main(%a: {a_t}, %b: {b_t}) -> {r_t} {{
  %r = fusion.matmul %a, %b : {a_t}, {b_t} -> {r_t}
  hir.return %r : {r_t}
}}""")
    a, b = torch.randn(3, 2, 4, 5), torch.randn(1, 1, 5, 6)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        (got,) = execute(module, [a, b])
    torch.testing.assert_close(got, torch.matmul(a, b))
    assert got.permute(1, 0, 2, 3).is_contiguous()  # laid out as its type says
    ops = [event.name for event in profile.events()]
    assert ops.count("aten::bmm") == 2 and not {"aten::copy_", "aten::clone"} & set(ops), ops


def _grouped_mm_reference(a, b, ends, grouping):
    starts = [0, *ends[:-1]]
    if grouping == "m":
        return torch.cat([a[s:e] @ b[g] for g, (s, e) in enumerate(zip(starts, ends))])
    if grouping == "n":
        return torch.cat([a[g] @ b[:, s:e] for g, (s, e) in enumerate(zip(starts, ends))], dim=1)
    return torch.stack([a[:, s:e] @ b[s:e] for s, e in zip(starts, ends)])


@pytest.mark.parametrize(("grouping", "a_shape", "b_shape"), [
    ("m", (12, 16), (3, 16, 8)), ("n", (3, 4, 16), (16, 12)), ("k", (4, 12), (12, 8)),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_grouped_mm_runs_torchs_grouped_gemm_or_a_matmul_per_group(grouping, a_shape, b_shape, dtype):
    """float32 with 16-byte strides takes torch._grouped_mm; float64 a loop of matmuls."""
    from hostir.runtime import run_fusion

    ends = [4, 9, 12]
    with FusionDefinition() as fd:
        a, b = fd.define_tensor(list(a_shape), dtype=dtype), fd.define_tensor(list(b_shape), dtype=dtype)
        offsets = fd.define_tensor([3], dtype="int32")
        fd.add_output(fd.ops.grouped_mm(a, b, offsets))
    x, y = torch.randn(a_shape, dtype=dtype), torch.randn(b_shape, dtype=dtype)
    (got,) = run_fusion(fd.to_module(), [x, y, torch.tensor(ends, dtype=torch.int32)])
    torch.testing.assert_close(got, _grouped_mm_reference(x, y, ends, grouping), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("dtypes", "capability", "capturing", "takes"), [
    ({torch.bfloat16}, (9, 0), True, True),  # H100/H200: torch's CUTLASS kernel
    ({torch.bfloat16}, (10, 0), True, True),
    ({torch.float32}, (9, 0), True, False),  # torch's fallback copies the offsets to the host
    ({torch.bfloat16, torch.float32}, (9, 0), True, False),
    ({torch.bfloat16}, (8, 0), True, False),
    ({torch.float32}, (9, 0), False, True),  # eagerly, torch's loop over the groups does
    ({torch.float32}, None, False, True),  # CPU
    ({torch.float64}, None, False, False),
    ({torch.float64}, (9, 0), False, False),
])
def test_torchs_grouped_gemm_is_taken_on_gpus_only_where_its_kernel_reads_the_offsets_on_the_device(
        dtypes, capability, capturing, takes):
    from hostir.runtime.torch_ops import grouped_gemm_kernel_takes

    assert grouped_gemm_kernel_takes(dtypes, capability, capturing) is takes


def test_a_grouped_mm_loop_keeps_each_groups_values_to_itself():
    """float64 takes the per-group loop: rows past the last offset stay zero, and an inf in
    one group's rows does not turn another group's rows into NaN."""
    from hostir.runtime import run_fusion

    ends = [4, 9, 10]
    with FusionDefinition() as fd:
        a, b = fd.define_tensor([12, 16], dtype="float64"), fd.define_tensor([3, 16, 8], dtype="float64")
        fd.add_output(fd.ops.grouped_mm(a, b, fd.define_tensor([3], dtype="int32")))
    x, y = torch.randn(12, 16, dtype=torch.float64), torch.randn(3, 16, 8, dtype=torch.float64)
    x[2, 0] = float("inf")
    (got,) = run_fusion(fd.to_module(), [x, y, torch.tensor(ends, dtype=torch.int32)])
    torch.testing.assert_close(got[:10], _grouped_mm_reference(x, y, ends, "m"), equal_nan=True)
    assert not got[4:].isnan().any() and not got[10:].any()


def test_a_linear_with_stacked_weights_is_one_linear_per_weight():
    from hostir.runtime import run_fusion

    with FusionDefinition() as fd:
        x, w, b = fd.define_tensor([2, 3, 4]), fd.define_tensor([2, 5, 4]), fd.define_tensor([2, 5])
        fd.add_output(fd.ops.linear(x, w, b))
    xs, ws, bs = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5)
    (got,) = run_fusion(fd.to_module(), [xs, ws, bs])
    torch.testing.assert_close(got, torch.stack([torch.nn.functional.linear(xs, ws[g], bs[g]) for g in range(2)]))


def test_a_slice_along_an_axis_sharded_over_one_device_is_computed():
    """A device type on a mesh axis of one device splits nothing: the slice is local."""
    from hostir.runtime import execute

    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 6])
        fd.add_output(fd.ops.slice(a, [1, 0], [3, 6]))
    a.set_device_mesh(DeviceMesh([0]))
    a.outer_split(0, 1)
    a.axis(0).parallelize(ParallelType.DIDx)
    x = torch.randn(4, 6)
    (out,) = execute(fd.lower(), [x], rank=0, world_size=1)
    torch.testing.assert_close(out, x[1:3])


@pytest.mark.parametrize("op", ["matmul", "linear"])
def test_an_integer_contraction_is_refused_on_gpus_and_computed_on_cpus(op):
    """torch has no CUDA kernel for integer GEMMs (found by the GPU differential profile):
    refused when a program for a GPU is compiled, computed on CPUs."""
    from hostir.runtime.torch_ops import OpContext, UnsupportedOp, build_kernel
    from hostir_dialect.context import parse_module

    a, b, c = "!fusion.tensor<i64[2, 3]>", "!fusion.tensor<i64[3, 3]>", "!fusion.tensor<i64[2, 3, r3]>"
    module = parse_module(f"""fusion.func @f(%a: {a}, %b: {b}) -> {c} {{
  %c = fusion.{op} %a, %b : {a}, {b} -> {c}
  fusion.return %c : {c}
}}""")
    contraction = [o for o in module.walk() if o.name == f"fusion.{op}"][0]
    with pytest.raises(UnsupportedOp, match="multiplies torch.int64 matrices, for which torch has no CUDA kernel"):
        build_kernel(contraction, OpContext(rank=None, device=torch.device("cuda", 0)))
    kernel = build_kernel(contraction, OpContext(rank=None, device=torch.device("cpu")))
    x, y = torch.arange(6).reshape(2, 3), torch.arange(9).reshape(3, 3)
    assert torch.equal(kernel.fresh(x, y), x @ y if op == "matmul" else x @ y.T)


def _reshape_fusion(source: str, target: str) -> str:
    return f"""fusion.func @f(%x: !fusion.tensor<f32[{source}]>) -> !fusion.tensor<f32[{target}]> {{
  %y = fusion.reshape %x : !fusion.tensor<f32[{source}]> -> !fusion.tensor<f32[{target}]>
  fusion.return %y : !fusion.tensor<f32[{target}]>
}}"""


def test_a_reshape_with_several_dynamic_extents_reads_them_from_its_input():
    # Issue 25: torch infers one -1; the other dynamic extents pair with the input's.
    from hostir.passes import lower
    from hostir.runtime import run_fusion
    from hostir_dialect.context import parse_module

    x = torch.randn(5, 6, 7)
    text = _reshape_fusion("?, 6, ?", "?, 2, 3, ?")
    for got in (run_fusion(parse_module(text), [x])[0], execute(lower(parse_module(text)), [x], rank=0, world_size=1)[0]):
        torch.testing.assert_close(got, x.reshape(5, 2, 3, 7))


def test_a_reshape_whose_dynamic_extents_its_input_does_not_determine_is_refused():
    from hostir.runtime import run_fusion
    from hostir_dialect.context import parse_module
    from hostir_dialect.diagnostics import HostIRError

    with pytest.raises(HostIRError, match=r"'fusion.reshape' op result axes \[0, 1\] are dynamic in one group of axes"):
        run_fusion(parse_module(_reshape_fusion("?", "?, ?")), [torch.randn(6)])


EPILOGUE_PROGRAMS = {
    "matmul": ("!fusion.tensor<f32[?, 3, 8]>", "!fusion.tensor<f32[8, ?]>", None,
               "fusion.matmul %a, %b epilogue relu", lambda a, b, bias: a @ b),
    "matmul of a one-matrix batch": ("!fusion.tensor<f32[?, 3, 8]>", "!fusion.tensor<f32[b1, 8, ?]>", None,
                                     "fusion.matmul %a, %b epilogue relu", lambda a, b, bias: a @ b),
    "linear": ("!fusion.tensor<f32[?, 8]>", "!fusion.tensor<f32[?, 8]>", None,
               "fusion.linear %a, %b epilogue relu", lambda a, b, bias: a @ b.t()),
    "linear with bias": ("!fusion.tensor<f32[?, 8]>", "!fusion.tensor<f32[?, 8]>", "!fusion.tensor<f32[?]>",
                         "fusion.linear %a, %b bias %bias epilogue relu", lambda a, b, bias: a @ b.t() + bias),
}


def _epilogue_op(case: str):
    from hostir_dialect.context import parse_module

    a_t, b_t, bias_t, text, _ = EPILOGUE_PROGRAMS[case]
    r_t = "!fusion.tensor<f32[?, 3, ?, r8]>" if "?, 3, 8" in a_t else "!fusion.tensor<f32[?, ?, r8]>"
    bias = (f", %bias: {bias_t}", f", {bias_t}") if bias_t else ("", "")
    module = parse_module(f"""fusion.func @f(%a: {a_t}, %b: {b_t}{bias[0]}) -> {r_t} {{
  %r = {text} : {a_t}, {b_t}{bias[1]} -> {r_t}
  fusion.return %r : {r_t}
}}""")
    return next(op for op in module.walk() if isinstance(op, (fusion.MatmulOp, fusion.LinearOp)))


@pytest.mark.parametrize("case", list(EPILOGUE_PROGRAMS))
def test_the_gemm_epilogue_takes_dynamic_extents_from_its_operands(case):
    """cuBLASLt's GEMM + activation (torch._addmm_activation; run here on CPU with relu,
    which CPU torch computes as CUDA does) for nvFuser's dynamic shapes: rows, columns and
    reduction extents read at run time, zeros made per column count."""
    op = _epilogue_op(case)
    separate = Kernel(lambda *args: pytest.fail("the GEMM ran as a product and an activation"), lambda out, *args: None)
    kernel = _gemm_with_epilogue(op, OpContext(None, torch.device("cpu")), fusion.Epilogue.RELU, separate)
    assert kernel is not None
    reference = EPILOGUE_PROGRAMS[case][4]
    for rows, columns in ((5, 6), (2, 4)):
        a = torch.randn(rows, 3, 8) if "?, 3, 8" in EPILOGUE_PROGRAMS[case][0] else torch.randn(rows, 8)
        b = torch.randn(columns, 8) if "linear" in case else torch.randn(8, columns)
        b = b[None] if "batch" in case else b
        args = (a, b, torch.randn(columns)) if "bias" in case else (a, b)
        expected = torch.relu(reference(a, b[0] if "batch" in case else b, args[-1]))
        torch.testing.assert_close(kernel.fresh(*args), expected)
        out = torch.empty(expected.shape)
        assert kernel.into(out, *args) is out
        torch.testing.assert_close(out, expected)


def test_zeros_for_the_epilogue_are_never_made_inside_a_capture(monkeypatch):
    """Made in a CUDA-graph capture, they would hold zeros only once that graph replays:
    the GEMM runs as its product and activation in that capture instead."""
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    zeros = _ZerosByColumns(torch.float32, torch.device("cuda"))
    assert zeros[6] is None and not zeros.made
    op = _epilogue_op("matmul")
    calls = []
    separate = Kernel(lambda a, b: calls.append("fresh") or torch.relu(a @ b),
                      lambda out, a, b: calls.append("into") or out.copy_(torch.relu(a @ b)))
    kernel = _gemm_with_epilogue(op, OpContext(None, torch.device("cuda")), fusion.Epilogue.RELU, separate)
    a, b = torch.randn(5, 3, 8), torch.randn(8, 6)
    torch.testing.assert_close(kernel.fresh(a, b), torch.relu(a @ b))
    kernel.into(torch.empty(5, 3, 6), a, b)
    assert calls == ["fresh", "into"]

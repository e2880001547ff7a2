"""The Python frontend: every op builds, verifies and round-trips; scheduling; errors."""

import re
import subprocess
import sys

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

from hostir_dialect import (
    DataType,
    DeviceMesh,
    FusionDefinition,
    FusionDefinitionError,
    ParallelType,
    Scalar,
    TensorType,
    fusion,
    parse_module,
)
from hostir_dialect.frontend import MemoryType
from hostir_dialect.tensor_type import ParallelKind as PT


def build(body, *shapes, dtype="float32"):
    """A fusion of inputs `shapes` whose single output is `body(fd, *inputs)`."""
    with FusionDefinition() as fd:
        inputs = [fd.define_tensor(s, dtype=dtype) for s in shapes]
        out = body(fd, *inputs)
        fd.add_output(out)
    return fd, out


def roundtrip(fd: FusionDefinition) -> str:
    text = str(fd)
    assert str(parse_module(text, "<frontend>")) == text
    return text


def result_type(fd: FusionDefinition) -> str:
    return str(fd.to_module().body.block.first_op.function_type.outputs.data[0])


# --------------------------------------------------------------------------- #
# Every op
# --------------------------------------------------------------------------- #

OPS = {
    "set": (lambda fd, a: fd.ops.set(a), [[8, 4]], "f32[8, 4]"),
    "cast": (lambda fd, a: fd.ops.cast(a, DataType.BFloat16), [[8, 4]], "bf16[8, 4]"),
    "sum": (lambda fd, a: fd.ops.sum(a, dims=[1]), [[8, 4]], "f32[8, r4]"),
    "sum_all": (lambda fd, a: fd.ops.sum(a), [[8, 4]], "f32[r8, r4]"),
    "sum_keepdim": (lambda fd, a: fd.ops.sum(a, dims=[0], keepdim=True), [[8, 4]], "f32[b1, 4]"),
    "prod": (lambda fd, a: fd.ops.prod(a, dims=[-1]), [[8, 4]], "f32[8, r4]"),
    "max": (lambda fd, a: fd.ops.max(a, dims=[0]), [[8, 4]], "f32[r8, 4]"),
    "min": (lambda fd, a: fd.ops.min(a, dims=0), [[8, 4]], "f32[r8, 4]"),
    "matmul": (lambda fd, a, b: fd.ops.matmul(a, b), [[8, 4], [4, 2]], "f32[8, 2, r4]"),
    "matmul_batched": (lambda fd, a, b: fd.ops.matmul(a, b), [[3, 8, 4], [3, 4, 2]], "f32[3, 8, 2, r4]"),
    "linear": (lambda fd, a, w: fd.ops.linear(a, w), [[8, 4], [3, 4]], "f32[8, 3, r4]"),
    "linear_bias": (lambda fd, a, w, b: fd.ops.linear(a, w, bias=b), [[8, 4], [3, 4], [3]], "f32[8, 3, r4]"),
    "broadcast": (lambda fd, a: fd.ops.broadcast(a, is_broadcast_dim=[True, False, False]), [[8, 4]], "f32[b1, 8, 4]"),
    "broadcast_inner": (lambda fd, a: fd.ops.broadcast(a, [False, True, False]), [[8, 4]], "f32[8, b1, 4]"),
    "permute": (lambda fd, a: fd.ops.permute(a, dims=[1, 0]), [[8, 4]], "f32[4, 8]"),
    "reshape": (lambda fd, a: fd.ops.reshape(a, [32]), [[8, 4]], "f32[32]"),
    "reshape_infer": (lambda fd, a: fd.ops.reshape(a, [2, -1]), [[8, 4]], "f32[2, 16]"),
    "reshape_dynamic": (lambda fd, a: fd.ops.reshape(a, [-1]), [[-1, 4]], "f32[?]"),
    "reshape_unit": (lambda fd, a: fd.ops.reshape(a, [8, -1, 4]), [[8, 4]], "f32[8, b1, 4]"),
    "squeeze": (lambda fd, a: fd.ops.squeeze(a, dims=[0]), [[1, 8, 4]], "f32[8, 4]"),
    "slice": (lambda fd, a: fd.ops.slice(a, [0, 1], [8, 4], [2, 1]), [[8, 4]], "f32[4, 3]"),
    "slice_unit_strides": (lambda fd, a: fd.ops.slice(a, start_indices=[2, 0], end_indices=[6, 4]), [[8, 4]], "f32[4, 4]"),
    "select": (lambda fd, a: fd.ops.select(a, 2, dim=0), [[8, 4]], "f32[4]"),
    "select_scalar": (lambda fd, a: fd.ops.select(a, fd.define_scalar(3), 1), [[8, 4]], "f32[8]"),
    "dynamic": (lambda fd, a: fd.ops.exp(a), [[-1, 4]], "f32[?, 4]"),
    **{
        f: ((lambda fd, a, f=f: getattr(fd.ops, f)(a)), [[8, 4]], "f32[8, 4]")
        for f in fusion.UNARY_FUNCTIONS
    },
}


@pytest.mark.parametrize("name", OPS)
def test_op_builds_verifies_and_roundtrips(name):
    body, shapes, expected = OPS[name]
    fd, _ = build(body, *shapes)
    assert isinstance(fd.to_module(), ModuleOp)
    assert result_type(fd) == f"!fusion.tensor<{expected}>"
    roundtrip(fd)


@pytest.mark.parametrize("function", fusion.BINARY_OPS)
@pytest.mark.parametrize(
    "operands",
    [
        lambda fd, a, b: (a, b),
        lambda fd, a, b: (a, 2.5),
        lambda fd, a, b: (3, a),
        lambda fd, a, b: (a, fd.define_scalar(2.0, dtype="float32")),
        lambda fd, a, b: (fd.ops.broadcast(fd.ops.sum(b, dims=[0]), [True, False]), a),
    ],
    ids=["tensors", "float", "int_lhs", "scalar", "broadcast"],
)
def test_binary_op(function, operands):
    fd, out = build(lambda fd, a, b: getattr(fd.ops, function)(*operands(fd, a, b)), [8, 4], [8, 4])
    element = "i1" if function in fusion.COMPARISON_FUNCTIONS else "f32"
    assert result_type(fd) == f"!fusion.tensor<{element}[8, 4]>"
    text = roundtrip(fd)
    assert f"= fusion.{function} " in text


def test_number_operands_become_constants_of_nvfusers_scalar_types():
    """bool -> Bool, int -> Int, float -> Double; a tensor of rank > 0 decides the type
    within its category."""
    fd, out = build(lambda fd, a: fd.ops.mul(fd.ops.add(a, 1), True), [4], dtype=DataType.Int32)
    text = roundtrip(fd)
    assert "arith.constant 1 : i64" in text and "arith.constant true" in text and out.dtype == DataType.Int32
    fd, out = build(lambda fd, a: fd.ops.add(a, 0.5), [4], dtype=DataType.Int32)
    assert out.dtype == DataType.Double and "fusion.cast %T0" in roundtrip(fd)


@pytest.mark.parametrize(
    ("call", "dtypes", "result"),
    [
        (lambda fd, x, y: fd.ops.add(x, y), ("float16", "float16"), DataType.Float),  # nvFuser's test_binary
        (lambda fd, x, y: fd.ops.mul(x, y), ("bfloat16", "float32"), DataType.Float),
        (lambda fd, x, y: fd.ops.sub(x, y), ("int32", "int64"), DataType.Int),
        (lambda fd, x, y: fd.ops.add(x, y), ("float64", "float16"), DataType.Double),
        (lambda fd, x, y: fd.ops.mul(x, 2), ("bfloat16", "bfloat16"), DataType.Float),
        (lambda fd, x, y: fd.ops.exp(x), ("int32", "int32"), DataType.Float),
        (lambda fd, x, y: fd.ops.neg(x), ("bfloat16", "bfloat16"), DataType.Float),
        (lambda fd, x, y: fd.ops.abs(x), ("bfloat16", "bfloat16"), DataType.BFloat16),
        (lambda fd, x, y: fd.ops.lt(x, y), ("float16", "float32"), DataType.Bool),
        (lambda fd, x, y: fd.ops.sum(x), ("int32", "int32"), DataType.Int),
        (lambda fd, x, y: fd.ops.sum(x, dtype=DataType.Float), ("float16", "float16"), DataType.Float),
        (lambda fd, x, y: fd.ops.max(x), ("int32", "int32"), DataType.Int32),
        (lambda fd, x, y: fd.ops.where(fd.ops.gt(x, 0), x, y), ("bfloat16", "float32"), DataType.Float),
        (lambda fd, x, y: fd.ops.where(fd.ops.gt(x, 0), x, 0.0), ("bfloat16", "bfloat16"), DataType.BFloat16),
        (lambda fd, x, y: fd.ops.cat([x, y], 0), ("int32", "int64"), DataType.Int),
    ],
)
def test_type_promotion_is_nvfusers(call, dtypes, result):
    """As nvFuser's computeTypes: a common type, half precision computed in float32,
    integers in float32 for float functions (csrc/type_promotion.cpp)."""
    with FusionDefinition() as fd:
        x, y = (fd.define_tensor([4], dtype=d) for d in dtypes)
        out = call(fd, x, y)
        fd.add_output(out)
    assert out.dtype == result
    roundtrip(fd)


def test_ops_of_scalars_are_folded():
    """nvFuser's scalar ops (a reciprocal of a scalar in its transformer tests) give
    scalars; hostir's scalars are constants, so the frontend computes them."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([4])
        s = fd.ops.reciprocal(fd.define_scalar(4.0, dtype=DataType.Double))
        assert isinstance(s, Scalar) and s.value == 0.25 and s.dtype == DataType.Double
        assert fd.ops.add(1, 2).value == 3 and fd.ops.div(7, 2).value == 3 and fd.ops.lt(1, 2).value is True
        fd.add_output(fd.ops.mul(a, s))
    assert "arith.constant 2.500000e-01 : f64" in roundtrip(fd)


def everything() -> FusionDefinition:
    """One fusion that uses every fusion op, with scheduling."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([8, 4])
        b = fd.define_tensor([4, 2])
        w = fd.define_tensor([3, 4])
        bias = fd.define_tensor([3])
        ops = [fd.ops.set(a), fd.ops.cast(a, "float16"), fd.ops.matmul(a, b), fd.ops.linear(a, w, bias)]
        ops += [getattr(fd.ops, f)(a) for f in fusion.UNARY_FUNCTIONS]
        ops += [fd.ops.gelu(a, approximate="tanh"), fd.ops.gelu(a)]
        ops += [getattr(fd.ops, f)(a, 2.0) for f in fusion.BINARY_OPS]
        ops += [getattr(fd.ops, k)(a, dims=[1]) for k in ("sum", "prod", "max", "min")]
        ops.append(fd.ops.squeeze(fd.ops.broadcast(a, [True, False, False]), [0]))
        ops += [fd.ops.permute(a, [1, 0]), fd.ops.reshape(a, [32]), fd.ops.slice(a, [0, 0], [4, 4])]
        ops.append(fd.ops.select(a, 1, 0))
        ops += [fd.ops.cat([a, a], 1), fd.ops.expand(fd.ops.broadcast(bias, [True, False]), [5, 3]),
                fd.ops.where(fd.ops.gt(a, 0.0), a, 0.0), fd.ops.iota(4), fd.ops.triu(a),
                *fd.ops.var_mean(a, [1]), fd.ops.uniform(0.0, 1.0, [2, 3], rng_seed=1, rng_offset=0)]
        offsets, groups = fd.define_tensor([2], dtype="int32"), fd.define_tensor([2, 4, 5])
        ops.append(fd.ops.grouped_mm(a, groups, offsets))
        q = fd.define_tensor([2, 3, 8, 4])
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, q, q, is_causal=True)
        ops += [out, *fd.ops.sdpfa_bwd(out, q, q, q, out, lse, 0.0, True, seed, offset)]
        for out in ops:
            fd.add_output(out)
    ops[0].set_device_mesh(DeviceMesh([0, 1]))
    ops[0].outer_split(0, 2)
    ops[0].axis(0).parallelize(ParallelType.DIDx)
    ops[2].axis(0).parallelize(ParallelType.Stream)
    return fd


def test_every_fusion_op_is_reachable_from_fd_ops():
    used = {op.name for op in everything().to_module().walk()}
    assert {op.name for op in fusion.COMPUTE_OPS} <= used


def test_a_value_no_output_needs_is_left_out():
    """As in nvFuser, a value is part of the fusion where an output needs it."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([8, 8])
        fd.ops.select(a, 6, 0)
        fd.add_output(fd.ops.mul(a, 2.0))
    assert "fusion.select" not in str(fd)
    with FusionDefinition() as used:
        a = used.define_tensor([8, 8])
        used.add_output(used.ops.select(a, 6, 0))
    assert "fusion.select" in str(used)


def test_hostir_opt_parses_the_printed_fusion_back_identically(tmp_path):
    fd = everything()
    path = tmp_path / "fusion.mlir"
    path.write_text(str(fd))
    result = subprocess.run(["hostir-opt", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip("\n") == str(fd)


def test_values_are_named_as_nvfuser_names_them():
    fd, _ = build(lambda fd, a: fd.ops.add(a, fd.define_scalar(1.0)), [4])
    text = str(fd)
    assert "fusion.func @fusion(%T0: " in text
    assert "%S1 = arith.constant 1.000000e+00 : f64" in text
    assert "%T2 = fusion.add %T0, %S1" in text


def test_import_is_light():
    code = "import sys, hostir_dialect; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --------------------------------------------------------------------------- #
# Types and dtypes
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "dtype, element",
    [
        ("float32", "f32"), ("float16", "f16"), ("bfloat16", "bf16"), ("float64", "f64"),
        ("int32", "i32"), ("int64", "i64"), ("bool", "i1"), ("f32", "f32"),
        (torch.float32, "f32"), (torch.half, "f16"), (torch.bfloat16, "bf16"), (torch.long, "i64"),
        (torch.bool, "i1"), (DataType.Float, "f32"), (DataType.Half, "f16"), (DataType.BFloat16, "bf16"),
        (DataType.Double, "f64"), (DataType.Int32, "i32"), (DataType.Int, "i64"), (DataType.Bool, "i1"),
    ],
)
def test_dtypes(dtype, element):
    fd, out = build(lambda fd, a: a, [2], dtype=dtype)
    assert str(out.type) == f"!fusion.tensor<{element}[2]>"
    roundtrip(fd)


def test_cast_accepts_every_dtype_spelling():
    fd, out = build(lambda fd, a: fd.ops.cast(a, torch.int32), [2])
    assert out.dtype == DataType.Int32
    roundtrip(fd)


@pytest.mark.parametrize(
    "value, dtype, text",
    [
        (True, None, "arith.constant true"),
        (3, None, "arith.constant 3 : i64"),
        (0.5, None, "arith.constant 5.000000e-01 : f64"),
        (2, "float16", "arith.constant 2.000000e+00 : f16"),
        (7, DataType.Int32, "arith.constant 7 : i32"),
    ],
)
def test_define_scalar(value, dtype, text):
    fd, _ = build(lambda fd, a: fd.ops.add(a, fd.define_scalar(value, dtype)), [2])
    assert text in roundtrip(fd)


def test_shape_ndim_and_kinds_follow_the_dialect_rules():
    with FusionDefinition() as fd:
        a = fd.define_tensor([1, 8, 4])
        out = fd.ops.sum(a, dims=[1])
    assert str(a.type) == "!fusion.tensor<f32[b1, 8, 4]>"  # extent 1 is a broadcast axis, as in nvFuser
    assert str(out.type) == "!fusion.tensor<f32[b1, r8, 4]>"
    assert out.shape == (1, 4) and out.ndim == 2  # reduction axes are not part of the value
    assert [d.is_reduction for d in out.loop_domain] == [False, True, False]
    assert out.dtype == DataType.Float


# --------------------------------------------------------------------------- #
# Scheduling
# --------------------------------------------------------------------------- #


def emitted_types(fd: FusionDefinition) -> dict[str, TensorType]:
    module = fd.to_module()
    func = module.body.block.first_op
    values = list(func.args) + [op.results[0] for op in func.body.block.ops if op.results]
    return {v.name_hint: v.type for v in values if isinstance(v.type, TensorType)}


def test_stream_parallel():
    fd, out = build(lambda fd, a: fd.ops.set(a), [8, 64])
    out.axis(0).parallelize(ParallelType.Stream)
    types = emitted_types(fd)
    assert str(types["T1"]) == "!fusion.tensor<f32[8 stream, 64]>"
    assert types["T1"].stream_axis() == 0
    assert types["T1"].local_shape(0) == (8, 64)  # a stream axis is allocated in full by default
    roundtrip(fd)


def test_didx_on_a_logical_axis_of_extent_d():
    fd, out = build(lambda fd, a: fd.ops.set(a), [2, 64])
    out.set_device_mesh(DeviceMesh([0, 1]))
    out.axis(0).parallelize(ParallelType.DIDx)
    t = emitted_types(fd)["T1"]
    assert str(t) == "!fusion.tensor<f32[2 didx, 64], mesh=[0, 1]>"
    assert t.local_shape(1) == (1, 64)
    assert t.local_shape(2) is None  # not in the mesh: no buffer
    roundtrip(fd)


def test_outer_split_then_didx():
    fd, out = build(lambda fd, a: fd.ops.set(a), [64, 8])
    out.set_device_mesh(DeviceMesh([0, 1, 2, 3]))
    out.outer_split(0, 4)
    out.axis(0).parallelize(ParallelType.DIDx)
    assert [d.extent for d in out.loop_domain] == [4, 16, 8]
    t = emitted_types(fd)["T1"]
    assert str(t) == "!fusion.tensor<f32[64(4 didx, 16), 8], mesh=[0, 1, 2, 3]>"
    assert t.local_shape(3) == (16, 8)
    roundtrip(fd)


def test_outer_split_of_an_inner_axis_and_a_dynamic_axis():
    fd, out = build(lambda fd, a: fd.ops.set(a), [-1, 8])
    out.outer_split(1, 2)
    out.outer_split(0, 4)
    out.axis(0).parallelize(ParallelType.Stream)
    assert str(out.type) == "!fusion.tensor<f32[?(4 stream, ?), 8(2, 4)]>"
    roundtrip(fd)


def test_nested_splits_give_the_pieces_chain():
    fd, out = build(lambda fd, a: fd.ops.set(a), [64])
    out.outer_split(0, 2)  # [2, 32]
    out.outer_split(1, 4)  # [2, 4, 8]
    out.outer_split(0, 2)  # [2, 1, 4, 8]
    assert [p.extent for p in out.type.axes[0].pieces] == [2, 1, 4, 8]
    assert str(out.type) == "!fusion.tensor<f32[64(2, 1, 4, 8)]>"
    roundtrip(fd)


def test_2d_mesh_didy_and_didx():
    fd, out = build(lambda fd, a: fd.ops.set(a), [2, 4, 8])
    out.set_device_mesh(DeviceMesh([[0, 1], [2, 3]]))
    out.axis(0).parallelize(ParallelType.DIDy)
    out.outer_split(1, 2)
    out.axis(1).parallelize(ParallelType.DIDx)
    t = emitted_types(fd)["T1"]
    assert str(t) == "!fusion.tensor<f32[2 didy, 4(2 didx, 2), 8], mesh=[[0, 1], [2, 3]]>"
    assert t.local_shape(3) == (1, 2, 8)
    assert t.mesh.slice(3, PT.DIDX) == (2, 3)
    roundtrip(fd)


def test_reduction_axis_can_be_sharded_and_inputs_scheduled():
    with FusionDefinition() as fd:
        a = fd.define_tensor([8, 4])
        out = fd.ops.matmul(a, fd.define_tensor([4, 2]))
        fd.add_output(out)
    for t in (a, out):
        t.set_device_mesh(DeviceMesh([0, 1]))
    a.outer_split(1, 2)
    a.axis(1).parallelize(ParallelType.DIDx)
    out.outer_split(2, 2)  # the reduction axis rK
    out.axis(2).parallelize(ParallelType.DIDx)
    types = emitted_types(fd)
    assert str(types["T0"]) == "!fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>"
    assert str(types["T2"]) == "!fusion.tensor<f32[8, 2, r4(2 didx, 2)], mesh=[0, 1]>"
    assert types["T2"].local_shape(0) == (8, 2)
    roundtrip(fd)


def test_allocation_order():
    fd, out = build(lambda fd, a: fd.ops.set(a), [8, 4])
    out.set_allocation_order([1, 0])
    t = emitted_types(fd)["T1"]
    assert str(t) == "!fusion.tensor<f32[8, 4], alloc=[1, 0]>"
    assert t.local_shape(0) == (4, 8)
    roundtrip(fd)


def test_nvfuser_spellings_of_parallel_types():
    assert ParallelType.DIDx is ParallelType.mesh_x is PT.DIDX
    assert ParallelType.Stream is ParallelType.stream is PT.STREAM
    fd, out = build(lambda fd, a: fd.ops.set(a), [8])
    out.axis(0).parallelize(ParallelType.Stream)
    out.axis(0).parallelize(ParallelType.Serial)  # undo
    assert str(out.type) == "!fusion.tensor<f32[8]>"


def test_device_mesh():
    assert DeviceMesh([[0, 1], [2, 3]]).shape == (2, 2)
    assert DeviceMesh([0, 1]) == DeviceMesh([0, 1]) != DeviceMesh([1, 0])
    assert DeviceMesh([3, 1]).device_ids == [3, 1] and repr(DeviceMesh([0, 1])) == "DeviceMesh([0, 1])"


# --------------------------------------------------------------------------- #
# Errors
# --------------------------------------------------------------------------- #


def raises(message: str):
    return pytest.raises(FusionDefinitionError, match=re.escape(message))


def test_definition_errors():
    with FusionDefinition() as fd:
        a = fd.define_tensor([8, 4])
        b = fd.define_tensor([8, 5])
        with raises("fd.ops.add: fusion.add axis 1: extents 4 and 5 are not broadcast-compatible"):
            fd.ops.add(a, b)
        with raises("fd.ops.matmul: inner dimensions do not match"):
            fd.ops.matmul(a, a)
        with raises("fd.ops.sum: reduction axis 2 is out of range for rank 2"):
            fd.ops.sum(a, dims=[2])
        with raises("fd.ops.permute: dims [0, 0] is not a permutation of 2 axes"):
            fd.ops.permute(a, [0, 0])
        with raises("fd.ops.reshape: cannot reshape [8, 4] (32 elements) to [5, 6] (30 elements)"):
            fd.ops.reshape(a, [5, 6])
        with raises("fd.ops.squeeze: cannot squeeze axis 0 of extent 8"):
            fd.ops.squeeze(a, [0])
        with raises("fd.ops.slice: axis 1: slice [0, 9) is out of bounds for extent 4"):
            fd.ops.slice(a, [0, 0], [8, 9], manual_normalization=True)
        with raises("fd.ops.select: index 8 is out of range for axis 0 of extent 8"):
            fd.ops.select(a, 8, 0)
        with raises("fd.ops.select: index S2 must be an integer scalar, not float64"):
            fd.ops.select(a, fd.define_scalar(1.5), 0)
        with raises("fd.ops.broadcast: is_broadcast_dim needs one bool per output axis with exactly 2 False"):
            fd.ops.broadcast(a, [True, False])
        with raises("fd.ops.add: operand 'x' is neither a Tensor, a Scalar nor a number"):
            fd.ops.add(a, "x")
        with raises("fd.ops.set: expected a Tensor of this FusionDefinition, got 3"):
            fd.ops.set(3)
        with raises("fd.ops.linear: bias must have shape [3] (the weight's without K)"):
            fd.ops.linear(a, fd.define_tensor([3, 4]), fd.define_tensor([4]))
        with raises("fd.ops.log: math domain error for scalars [0.0]"):
            fd.ops.log(fd.define_scalar(0.0))


def test_a_rejected_op_records_nothing():
    with FusionDefinition() as fd:
        a = fd.define_tensor([8, 4])
        with raises("fd.ops.select: select dim 5 is out of range for rank 2"):
            fd.ops.select(a, 1, 5)
        with raises("fd.ops.select: index 9 is out of range"):
            fd.ops.select(a, 9, 0)
        out = fd.ops.mul(a, 3.0)
        fd.add_output(out)
    text = roundtrip(fd)
    assert text.count("arith.constant") == 1
    assert "%S1 = arith.constant 3.000000e+00 : f64" in text and "%T2 = fusion.mul %T0, %S1" in text


def test_type_of_an_incompletely_scheduled_tensor_is_an_error():
    fd, out = build(lambda fd, a: fd.ops.set(a), [2, 8])
    out.axis(0).parallelize(ParallelType.DIDx)
    with raises("T1: didx axis on a tensor without a device mesh"):
        _ = out.type
    out.set_device_mesh(DeviceMesh([0, 1]))
    assert out.type.local_shape(0) == (1, 8)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda fd: fd.define_tensor([2], dtype="complex64"), "unsupported dtype 'complex64'; use one of float64, float32"),
        (lambda fd: fd.define_tensor([2], dtype=torch.complex64), "unsupported dtype torch.complex64"),
        (lambda fd: fd.define_tensor([2, -3]), "define_tensor: shape must be a list of extents >= 0 (or -1 for dynamic)"),
        (lambda fd: fd.define_tensor("ab"), "define_tensor: shape must be a list of extents"),
        (lambda fd: fd.define_scalar("x"), "define_scalar: unsupported value 'x'"),
        (lambda fd: fd.define_scalar(2, dtype="bool"), "define_scalar: 2 is not a valid bool value"),
        (lambda fd: fd.define_scalar(dtype="int64"), "define_scalar without a value (a scalar input known at run time)"),
        (lambda fd: fd.define_scalar(2**40, dtype="int32"), "out of range for type i32"),
        (lambda fd: fd.ops.cast(fd.define_tensor([2]), "float8"), "unsupported dtype 'float8'"),
        (lambda fd: fd.ops.sum(fd.define_tensor([2]), dims=[0.5]), "fd.ops.sum: dims must be an int or a list of ints, got [0.5]"),
        (lambda fd: fd.ops.slice(fd.define_tensor([2]), [0], "x"), "fd.ops.slice: start_indices and end_indices need one entry per axis"),
        (lambda fd: fd.ops.select(fd.define_tensor([2]), 0.0, 0), "fd.ops.select: index must be an int or an integer Scalar, got 0.0"),
    ],
)
def test_bad_arguments(call, message):
    with FusionDefinition() as fd:
        with raises(message):
            call(fd)


def test_lifecycle_errors():
    fd = FusionDefinition()
    with raises("define_tensor: define the fusion inside `with FusionDefinition() as fd:`"):
        fd.define_tensor([2])
    with fd:
        a = fd.define_tensor([2])
    with raises("fd.ops.neg: this FusionDefinition is closed"):
        fd.ops.neg(a)
    with raises("add_output: this FusionDefinition is closed"):
        fd.add_output(a)
    with raises("a FusionDefinition can be entered only once"):
        with fd:
            pass
    with FusionDefinition() as other:
        with raises("fd.ops.neg: T0 belongs to another FusionDefinition"):
            other.ops.neg(a)
        with raises("fd.ops.add: T0 belongs to another FusionDefinition"):
            other.ops.add(other.define_tensor([2]), a)
        with raises("add_output: T0 belongs to another FusionDefinition"):
            other.add_output(a)
        with raises("add_output: expected a Tensor of this FusionDefinition, got S1: 1 : int64"):
            other.add_output(other.define_scalar(1))


def test_scheduling_errors():
    fd, out = build(lambda fd, a: fd.ops.set(a), [8, 6])
    with raises("T1: axis 2 is out of range for a loop domain of 2 axes"):
        out.axis(2)
    with raises("T1: outer_split axis 5 is out of range"):
        out.outer_split(5, 2)
    with raises("T1.outer_split: factor 4 does not divide extent 6 of loop axis 1"):
        out.outer_split(1, 4)
    with raises("T1.outer_split: factor must be a positive int, got 0"):
        out.outer_split(0, 0)
    with raises("unknown parallel type 'gpu'; use ParallelType.Serial, Stream, DIDx, DIDy or DIDz"):
        out.axis(0).parallelize("gpu")
    with raises("T1.set_device_mesh expects a DeviceMesh, got [0, 1]"):
        out.set_device_mesh([0, 1])
    with raises("T1.set_allocation_order: [0, 0] is not a permutation of its 2 logical axes"):
        out.set_allocation_order([0, 0])
    out.axis(0).parallelize(ParallelType.Stream)
    with raises("T1: loop axis 0 is already parallelized on stream; a tensor has at most one stream axis"):
        out.axis(1).parallelize(ParallelType.Stream)
    with raises("T1.outer_split: loop axis 0 is parallelized on stream; split before parallelizing"):
        out.outer_split(0, 2)
    stale = out.axis(1)
    out.outer_split(1, 2)
    with raises("T1: this axis is no longer in the loop domain (it was split)"):
        stale.parallelize(ParallelType.DIDx)


@pytest.mark.parametrize(
    "mesh, message",
    [
        ([[0, 1], [2]], "2-D device mesh rows must have equal lengths"),
        ([0, 0], "duplicate device ids in mesh [0, 0]"),
        ([-1], "negative device id"),
        ([], "device mesh is empty"),
    ],
)
def test_bad_device_mesh(mesh, message):
    with raises(message):
        DeviceMesh(mesh)


@pytest.mark.parametrize(
    "schedule, message",
    [
        (lambda t: t.axis(0).parallelize(ParallelType.DIDx), "T1: didx axis on a tensor without a device mesh; call T1.set_device_mesh(DeviceMesh([...])) first"),
        (lambda t: (t.set_device_mesh(DeviceMesh([0, 1])), t.axis(0).parallelize(ParallelType.DIDx)), "didx axis of extent 4 does not match the 2 devices of mesh [0, 1]"),
        (lambda t: (t.set_device_mesh(DeviceMesh([0, 1])), t.axis(0).parallelize(ParallelType.DIDy)), "didy axis but mesh [0, 1] has no such axis"),
    ],
)
def test_schedule_errors_are_reported_when_emitting(schedule, message):
    fd, out = build(lambda fd, a: fd.ops.set(a), [4, 8])
    schedule(out)
    with raises(message):
        fd.to_module()
    with raises(message):
        str(fd)


@pytest.mark.parametrize("call, message", [
    (lambda fd, p, i: fd.ops.abs(p), "fd.ops.abs: fusion.abs computes on numbers, not predicates (i1)"),
    (lambda fd, p, i: fd.ops.add(p, p), "fd.ops.add: fusion.add computes on numbers, not predicates (i1)"),
    (lambda fd, p, i: fd.ops.prod(p, dtype=DataType.Bool), "fd.ops.prod: fusion.reduce computes on numbers, not predicates (i1)"),
    (lambda fd, p, i: fd.ops.matmul(p, p), "fd.ops.matmul: fusion.matmul computes on numbers, not predicates (i1)"),
])
def test_arithmetic_torch_cannot_compute_in_the_element_type_is_refused(call, message):
    # Regression (TRIAGE C9): abs of a predicate passed the frontend and crashed eager torch.
    with FusionDefinition() as fd:
        predicate = fd.ops.lt(fd.define_tensor([4, 4]), 0.0)
        integers = fd.define_tensor([4], dtype="int32")
        with raises(message):
            call(fd, predicate, integers)
        fd.ops.max(predicate)  # max and min of predicates are "any" and "all"
        fd.ops.eq(predicate, predicate)
        fd.ops.neg(integers)


def test_every_definition_and_scheduling_call_makes_a_new_revision():
    # What is built from a definition (hostir's fd.execute keeps the lowered program)
    # is stale exactly when the revision has changed.
    seen = []
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 8])
        seen.append(fd.revision)
        two = fd.define_scalar(2.0, dtype="float32")
        seen.append(fd.revision)
        b = fd.ops.mul(fd.ops.relu(a), two)
        seen.append(fd.revision)
        fd.add_output(b)
        seen.append(fd.revision)
    for schedule in (
        lambda: a.set_device_mesh(DeviceMesh([0, 1])),
        lambda: a.outer_split(0, 2),
        lambda: a.axis(0).parallelize(ParallelType.DIDx),
        lambda: b.set_allocation_order([1, 0]),
    ):
        schedule()
        seen.append(fd.revision)
    assert len(set(seen)) == len(seen), seen
    with pytest.raises(FusionDefinitionError):
        a.outer_split(1, 3)  # refused: nothing changed
    assert fd.revision == seen[-1]


# --------------------------------------------------------------------------- #
# nvFuser's spellings (issue 28)
# --------------------------------------------------------------------------- #


def test_define_tensor_takes_nvfusers_arguments():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[2, 3, 4], contiguity=[True, None, True], dtype=DataType.BFloat16,
                             is_cpu=False, stride_order=[2, 0, 1])
        b = fd.define_tensor((-1,), contiguity=False, dtype=DataType.UInt64)
        with raises("define_tensor: contiguity must be a bool or one bool (or None) per axis"):
            fd.define_tensor([2, 3], contiguity=[True])
        with raises("define_tensor: is_cpu=True (a CPU scalar input) is not supported"):
            fd.define_tensor([], is_cpu=True)
        with raises("define_tensor: stride_order [0, 0] is not a permutation of 2 axes"):
            fd.define_tensor([2, 3], stride_order=[0, 0])
    assert a.type.allocation_order() == (0, 2, 1)  # stride rank 2 outermost, 0 innermost
    assert str(b.type) == "!fusion.tensor<ui64[?]>" and b.dtype() == DataType.UInt64
    assert fd.fusion.inputs() == [a, b] and fd.fusion.outputs() == []


def test_loop_splits_reorders_and_allocation_domains():
    fd, out = build(lambda fd, a: fd.ops.set(a), [8, 6])
    out.split(0, 2)  # inner split: [4, 2], as nvFuser's default
    assert [d.extent for d in out.loop_domain] == [4, 2, 6]
    out.split(2, 3, inner_split=False)
    out.reorder({2: 0})
    assert [d.extent for d in out.loop_domain] == [3, 4, 2, 2]
    out.set_allocation_domain([out.axis(0), out.axis(3), out.axis(1), out.axis(2)], True)
    assert out.type.allocation_order() == (1, 0)
    with raises("T1.set_allocation_domain: the pieces of logical axis 0 are apart"):
        out.set_allocation_domain([out.axis(1), out.axis(0), out.axis(3), out.axis(2)], True)
    with raises("T1.set_allocation_domain: the pieces of logical axis 1 are out of order"):
        out.set_allocation_domain([out.axis(3), out.axis(0), out.axis(1), out.axis(2)], True)
    with raises("T1.reorder: {0: 1, 1: 1} moves two axes to one place"):
        out.reorder({0: 1, 1: 1})


def test_a_device_axis_stands_anywhere_in_an_allocation_domain():
    fd, out = build(lambda fd, a: fd.ops.set(a), [8, 6])
    out.set_device_mesh(DeviceMesh([0, 1]))
    out.outer_split(0, 2)
    out.axis(0).parallelize(ParallelType.DIDx)
    out.set_allocation_domain([out.axis(2), out.axis(0), out.axis(1)], True)
    assert out.type.allocation_order() == (1, 0)


def test_an_inner_split_of_a_dynamic_axis_shards_it_strided():
    fd, t = build(lambda fd, a: fd.ops.set(a), [-1])
    t.set_device_mesh(DeviceMesh([0, 1]))
    t.inner_split(0, 2)
    t.axis(1).parallelize(ParallelType.DIDx)
    assert str(t.type) == "!fusion.tensor<f32[?(?, 2 didx)], mesh=[0, 1]>"


def test_3d_meshes_from_tensors_and_didz():
    mesh = DeviceMesh(torch.arange(8).reshape(2, 2, 2))
    assert mesh.shape == (2, 2, 2) and DeviceMesh(range(3)).device_ids == [0, 1, 2]
    fd, out = build(lambda fd, a: fd.ops.set(a), [4, 2, 2])
    out.set_device_mesh(mesh)
    out.outer_split(0, 2)
    out.axis(0).parallelize(ParallelType.mesh_z)
    out.axis(2).parallelize(ParallelType.mesh_y)
    out.axis(3).parallelize(ParallelType.DIDx)
    assert str(out.type) == "!fusion.tensor<f32[4(2 didz, 2), 2 didy, 2 didx], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]>"
    with raises("device meshes have at most 3 dimensions"):
        DeviceMesh([[[[0]]]])


def test_a_device_type_on_a_reduction_axis_beside_an_iteration_axis():
    """nvFuser's request for a reduce-scatter: the same device type on the reduction
    axis (partial sums) and on an iteration axis (the scattered result)."""
    fd, out = build(lambda fd, a, w: fd.ops.linear(a, w), [4, 8], [6, 8])
    out.set_device_mesh(DeviceMesh([0, 1]))
    out.split(-1, 2, inner_split=False)
    out.axis(-2).parallelize(ParallelType.DIDx)
    out.outer_split(0, 2)
    out.axis(0).parallelize(ParallelType.DIDx)
    assert str(out.type) == "!fusion.tensor<f32[4(2 didx, 2), 6, r8(2 didx, 4)], mesh=[0, 1]>"
    with raises("T2: loop axis 0 is already parallelized on didx; a tensor has at most one didx axis (and one on a reduction axis)"):
        out.axis(2).parallelize(ParallelType.DIDx)


def test_rfactor_schedules_the_tensor_it_rfactors():
    fd, out = build(lambda fd, a, b: fd.ops.matmul(a, b), [4, 8], [8, 2])
    out.outer_split(-1, 2)
    local = out.rfactor(axes=[-1])
    local.set_device_mesh(DeviceMesh([0, 1]))
    local.axis(-2).parallelize(ParallelType.DIDx)
    assert str(out.type) == "!fusion.tensor<f32[4, 2, r8(2 didx, 4)], mesh=[0, 1]>"
    with raises("T2.rfactor: axes [0] must be reduction axes of the loop domain"):
        out.rfactor(axes=[0])
    with raises("rfactor(..).outer_split is not supported"):
        local.outer_split(0, 2)


def test_symbolic_extents_slice_to_the_end_and_expand():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1, 4])
        y = fd.ops.relu(x)
        sizes = fd.ops.shape(x)
        assert sizes[2] == 4 and repr(sizes[0]) == "fd.ops.size(T0, 0)"
        head = fd.ops.slice(y, [0, 1, 0], [fd.ops.size(x, 0), sizes[1], 2])
        w = fd.ops.broadcast_in_dim(fd.define_tensor([4]), shape=sizes, broadcast_dims=[-1])
        with raises("fd.ops.slice: bound fd.ops.size(T0, 1) of axis 0 of T1 is not known to be that axis's extent"):
            fd.ops.slice(y, [0, 0, 0], [sizes[1], 1, 1])
        fd.add_output(head)
        fd.add_output(w)
    text = roundtrip(fd)
    assert "stops [9223372036854775807, 9223372036854775807, 2]" in text
    assert re.search(r"fusion.expand %T\d+ like %T0 axes \[0, 1, -1\]", text)


def test_expanded_axes_broadcast_again_in_elementwise_ops():
    """nvFuser's expanded broadcast axes still broadcast: a mask expanded to 4 meets a
    tensor of 8 along that axis (alphafold3.py)."""
    with FusionDefinition() as fd:
        mask = fd.define_tensor([2, 3], dtype=DataType.Bool)
        z = fd.define_tensor([2, 3, 8])
        expanded = fd.ops.broadcast_in_dim(mask, shape=[2, 3, 4], broadcast_dims=[0, 1])
        fd.add_output(fd.ops.where(expanded, z, 0.0))
    assert expanded.shape == (2, 3, 4) and result_type(fd) == "!fusion.tensor<f32[2, 3, 8]>"


def test_ops_and_errors_name_the_users_line():
    with FusionDefinition() as fd:
        a = fd.define_tensor([4])
        line = sys._getframe().f_lineno + 1
        out = fd.ops.neg(a)
        fd.add_output(out)
    (op,) = [o for o in fd.to_module().walk() if o.name == "fusion.neg"]
    assert (op.location.filename.data, op.location.line.data, op.location.column.data) == (__file__, line, 15)
    with FusionDefinition() as fd:
        a = fd.define_tensor([4])
        with pytest.raises(FusionDefinitionError, match=rf"^{re.escape(__file__)}:\d+:\d+: fd\.ops\.softmax is not supported"):
            fd.ops.softmax(a)


def test_nvfuser_no_op_spellings():
    fd, out = build(lambda fd, a: fd.ops.set(a), [4, 6])
    assert out.swizzle1d(0, ParallelType.mesh_x) is out
    out.set_memory_type("symmetric")
    out.set_memory_type(MemoryType.Global)
    with raises("T1.set_memory_type(Shared) is not supported"):
        out.set_memory_type(MemoryType.shared)
    with raises("unknown memory type 'registers'"):
        out.set_memory_type("registers")
    with raises("swizzle1d rotates by a device index"):
        out.swizzle1d(0, ParallelType.Stream)

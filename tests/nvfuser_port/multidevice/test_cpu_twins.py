# SPDX-FileCopyrightText: Copyright (c) 2024-present NVIDIA CORPORATION & AFFILIATES.
# All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
"""The CPU path of each nvFuser test that needs CUDA (marked `gpu` where it is ported):
the same definitions and schedule calls, with this rank's device where nvFuser writes
`.cuda()` or `device="cuda"`, the transformer at small sizes, and what nvFuser asserts
about CUDA kernels (NCCL kernel names) left out. Where nvFuser checks shapes only, the
outputs are also compared with the fusion's eager evaluation on the unsharded inputs."""

import pytest
import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.placement_types import Replicate, Shard
from torch.nn.attention import SDPBackend

import hostir as nvfuser
from hostir import CommunicatorBackend, DataType, FusionDefinition, runtime
from hostir.pytorch_utils import torch_dtype_to_nvfuser_dtype

from ..direct_utils import create_sdpa_rng_tensors
from . import Parallelism
from .fusion_definition_wrapper import FusionDefinitionWrapper
from .linear import LinearFunction
from .test_alphafold3 import _DEFAULT_CONFIG, Direction, gating, layer_norm
from .test_multidevice import QkvFormat
from .test_overlap import column_parallel_linear_forward
from .test_transformer import (
    transformer_backward_definition,
    transformer_forward_definition,
    transformer_forward_multidevice_schedule,
)

pytestmark = pytest.mark.cpu_twin  # on GPUs (the runner's NCCL world) the `gpu` tests themselves run


def assert_like_unsharded(fd, inputs, outputs, rank):
    """Each output is this rank's shard of the fusion evaluated eagerly on `inputs`."""
    expected = runtime.run_fusion(fd.to_module(), inputs)
    for out, want, t in zip(outputs, expected, fd.output_types()):
        want = runtime.shard_tensor(want, t, rank)
        if want.dtype in (torch.bool, torch.uint64):
            assert torch.equal(out.cpu(), want)
        else:
            scale = max(1.0, want.abs().max().item())
            torch.testing.assert_close(out.cpu(), want, rtol=5e-2, atol=5e-2 * scale)


# test_multidevice.py::test_sdpa
@pytest.mark.parametrize("qkv_format", [QkvFormat.BHSE, QkvFormat.BSHE])
@pytest.mark.mpi
def test_sdpa(multidevice_test, qkv_format: QkvFormat):
    d, b, s, h, e = multidevice_test.size, 2, 1024, 12, 768

    if h % d != 0:
        pytest.skip(f"We only support even split, so {h} has to be divisible by {d}.")

    def _definition(fd: FusionDefinition, qkv_format: QkvFormat) -> None:
        match qkv_format:
            case QkvFormat.BHSE:
                stride_order = [4, 3, 2, 1, 0]
            case QkvFormat.BSHE:
                stride_order = [4, 3, 1, 2, 0]

        q, k, v, out_grad = [
            fd.define_tensor(
                shape=[d, b, h // d, s, e // h],
                contiguity=True,
                dtype=DataType.BFloat16,
                stride_order=stride_order,
            )
            for _ in range(4)
        ]
        dropout_p = fd.define_scalar(0.0, dtype=DataType.Double)
        is_causal = fd.define_scalar(True, dtype=DataType.Bool)
        attn, logsumexp, seed, offset = fd.ops.sdpfa_fwd(
            q, k, v, dropout_p=dropout_p, is_causal=is_causal
        )
        q_grad, k_grad, v_grad = fd.ops.sdpfa_bwd(
            out_grad, q, k, v, attn, logsumexp, dropout_p, is_causal, seed, offset, scale=None,
        )
        fd.add_output(attn)
        for grad in [q_grad, k_grad, v_grad]:
            fd.add_output(grad)

    def _multidevice_schedule(fd: FusionDefinition) -> None:
        mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d))
        for t in fd.fusion.inputs():
            t.set_device_mesh(mesh)
            t.axis(0).parallelize(nvfuser.ParallelType.mesh_x)

    def make_unsharded_tensor() -> torch.Tensor:
        return torch.randn(b, h, s, e // h, dtype=torch.bfloat16, device=multidevice_test.device)

    q, k, v = [make_unsharded_tensor().requires_grad_() for _ in range(3)]
    out_grad = make_unsharded_tensor()

    with torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        expected_out = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, dropout_p=0.0, is_causal=True, scale=None
        )
        expected_out.backward(out_grad)
        expected_q_grad, expected_k_grad, expected_v_grad = q.grad, k.grad, v.grad

    rank = multidevice_test.rank

    def head_parallelize(t: torch.Tensor) -> torch.Tensor:
        assert t.shape == torch.Size([b, h, s, e // h])
        t = t.detach().view([b, d, h // d, s, e // h]).narrow(1, rank, 1)
        match qkv_format:
            case QkvFormat.BHSE:
                return t.transpose(0, 1).contiguous()
            case QkvFormat.BSHE:
                return t.permute(1, 0, 3, 2, 4).contiguous().transpose(2, 3)

    with FusionDefinition() as fd:
        _definition(fd, qkv_format)
        _multidevice_schedule(fd)

    out, q_grad, k_grad, v_grad = fd.execute(
        [
            head_parallelize(q).requires_grad_(),
            head_parallelize(k).requires_grad_(),
            head_parallelize(v).requires_grad_(),
            head_parallelize(out_grad),
        ]
    )

    def assert_close(actual: torch.Tensor, expected: torch.Tensor) -> None:
        match qkv_format:
            case QkvFormat.BHSE:
                assert actual.is_contiguous()
            case QkvFormat.BSHE:
                assert actual.transpose(2, 3).is_contiguous()
        torch.testing.assert_close(actual, expected, rtol=1.6e-2, atol=1e-2)

    assert_close(out, head_parallelize(expected_out))
    assert_close(q_grad, head_parallelize(expected_q_grad))
    assert_close(k_grad, head_parallelize(expected_k_grad))
    assert_close(v_grad, head_parallelize(expected_v_grad))


# test_matmul.py::test_column_parallel_grouped_mm and test_row_parallel_grouped_mm
@pytest.mark.mpi
@pytest.mark.parametrize("parallelism", ["column", "row"])
def test_grouped_mm(multidevice_test, parallelism):
    d = multidevice_test.size
    g = 4
    k = 16 * (d if parallelism == "row" else 1)
    n = 64 * (d if parallelism == "column" else 1)

    with FusionDefinition() as fd:
        inp_tv = fd.define_tensor([-1, k], dtype=DataType.BFloat16, contiguity=True)
        w_tv = fd.define_tensor([g, n, k], dtype=DataType.BFloat16, contiguity=True)
        w_t = fd.ops.permute(w_tv, [0, 2, 1])
        offsets_tv = fd.define_tensor([g], dtype=DataType.Int32, contiguity=True)
        out = fd.ops.grouped_mm(inp_tv, w_t, offsets_tv)
        fd.add_output(out)

        mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d))
        for t in [inp_tv, w_tv, offsets_tv]:
            t.set_device_mesh(mesh)

        if parallelism == "column":
            w_tv.outer_split(1, d)
            w_tv.axis(1).parallelize(nvfuser.ParallelType.mesh_x)
        else:
            inp_tv.outer_split(-1, d)
            inp_tv.axis(-2).parallelize(nvfuser.ParallelType.mesh_x)
            w_tv.outer_split(-1, d)
            w_tv.axis(-2).parallelize(nvfuser.ParallelType.mesh_x)

    m = 32
    inp_ref = torch.randint(-2, 3, (m, k), dtype=torch.bfloat16)
    w_ref = torch.randint(-2, 3, (g, n, k), dtype=torch.bfloat16)
    group_sizes = [5, 7, 9, 11]
    assert sum(group_sizes) == m
    group_outs = [
        group_in @ group_w.T
        for group_in, group_w in zip(inp_ref.split(group_sizes), w_ref.unbind())
    ]
    out_ref = torch.cat(group_outs, dim=0)

    inp = multidevice_test.shard_tensor(inp_ref, inp_tv)
    w = multidevice_test.shard_tensor(w_ref, w_tv)
    offsets = torch.cumsum(torch.tensor(group_sizes), 0, dtype=torch.int32).to(multidevice_test.device)
    (out,) = fd.execute([inp, w, offsets])

    if parallelism == "column":
        mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d))
        torch.testing.assert_close(out, multidevice_test.shard_tensor_1d(out_ref, 1, mesh))
    else:
        torch.testing.assert_close(out.cpu(), out_ref)


# test_overlap.py::test_column_parallel_linear_forward (values only: nvFuser counts NCCL kernels)
@pytest.mark.mpi
@pytest.mark.parametrize("parallelism", ["collective_permute", "broadcast"])
def test_column_parallel_linear_forward(multidevice_test, parallelism: str):
    h, t = 2, 24
    d = multidevice_test.size
    if (h * 4) % d != 0:
        pytest.skip(f"Column-parallel linear requires {h * 4} to be divisible by world size {d}.")
    if t % d != 0:
        pytest.skip(f"Column-parallel linear requires {t} to be divisible by world size {d}.")

    fd = column_parallel_linear_forward(h, d, parallelism)

    inp_ref = torch.testing.make_tensor(t, h, dtype=torch.int32, device="cpu").to(torch.bfloat16)
    weight_ref = torch.testing.make_tensor(4 * h, h, dtype=torch.int32, device="cpu").to(torch.bfloat16)

    inp = multidevice_test.shard_tensor(inp_ref, fd.fusion.inputs()[0])
    weight = multidevice_test.shard_tensor(weight_ref, fd.fusion.inputs()[1])

    out_ref = torch.nn.functional.linear(inp_ref.to(multidevice_test.device), weight)
    (out,) = fd.execute([inp, weight], _enable_options=["host_ir_lowering"])
    torch.testing.assert_close(out, out_ref)


# test_overlap.py::test_overlap_allgather_matmul_stream_outermost and _shard_outermost, and
# test_allgather_matmul_no_overlap
def _allgathered_linear(multidevice_test, x_shape: list[int], sharded_axis: int, **executor_options) -> None:
    """nvFuser's two all-gather + linear overlap tests: x sharded on `sharded_axis`, the
    output's axis 0 on streams, run twice by a MultiDeviceExecutor with `executor_options`."""
    k, n, d = x_shape[-1], 2**5, multidevice_test.size
    mesh = nvfuser.multidevice.DeviceMesh(range(d))
    x_unsharded = torch.testing.make_tensor(*x_shape, dtype=torch.bfloat16, device="cpu")
    x = multidevice_test.shard_tensor_1d(x_unsharded, sharded_axis, mesh)
    weight = torch.testing.make_tensor(n, k, dtype=torch.bfloat16, device="cpu")
    bias = torch.testing.make_tensor(n, dtype=torch.bfloat16, device="cpu")
    out_ref = torch.nn.functional.linear(x_unsharded, weight, bias)

    with FusionDefinition() as fd:
        tensors = [fd.define_tensor(shape=x_shape, contiguity=True, dtype=DataType.BFloat16),
                   fd.define_tensor(shape=[n, k], contiguity=True, dtype=DataType.BFloat16),
                   fd.define_tensor(shape=[n], contiguity=True, dtype=DataType.BFloat16)]
        out = fd.ops.linear(*tensors)
        fd.add_output(out)
        for tv in (*tensors, out):
            tv.set_device_mesh(mesh)
        tensors[0].axis(sharded_axis).parallelize(nvfuser.ParallelType.mesh_x)
        out.axis(0).parallelize(nvfuser.ParallelType.stream)

    params = nvfuser.multidevice.MultiDeviceExecutorParams()
    params.backend_type = CommunicatorBackend.nccl
    for name, value in executor_options.items():
        setattr(params, name, value)
    multidevice_executor = nvfuser.multidevice.MultiDeviceExecutor(fd.fusion, params)
    for _ in range(2):
        out = multidevice_executor.run([x, weight, bias])[0].cpu()
        assert out.dtype == torch.bfloat16
        assert out.shape == torch.Size([*x_shape[:-1], n])
        torch.testing.assert_close(out, out_ref, rtol=1e-1, atol=1e-1)


@pytest.mark.mpi
@pytest.mark.parametrize("s", [1, 8])
def test_overlap_allgather_matmul_stream_outermost(multidevice_test, s):
    m, k, d = 2**7, 2**5, multidevice_test.size
    _allgathered_linear(multidevice_test, [s, d, m // (s * d), k], 1)


@pytest.mark.mpi
def test_overlap_allgather_matmul_shard_outermost(multidevice_test):
    m, k, d = 2**7, 2**5, multidevice_test.size
    _allgathered_linear(multidevice_test, [d, m // d, k], 0, use_allocation_cache=True,
                        offset_stream_indexing_by_rank=True)


@pytest.mark.mpi
@pytest.mark.parametrize("backend_type", [CommunicatorBackend.nccl, CommunicatorBackend.cuda])
def test_allgather_matmul_no_overlap(multidevice_test, backend_type):
    def fusion_definition(fd, m, k, n, d):
        a = fd.define_tensor(shape=[d, m // d, k], contiguity=True, dtype=torch_dtype_to_nvfuser_dtype(dtype))
        b = fd.define_tensor(shape=[k, n], contiguity=True, dtype=torch_dtype_to_nvfuser_dtype(dtype))
        c = fd.ops.matmul(a, b)
        if backend_type == CommunicatorBackend.cuda:
            c.set_memory_type(nvfuser.MemoryType.symmetric)
        fd.add_output(c)
        return [a, b, c]

    def multidevice_schedule(tensors, num_devices) -> None:
        mesh = nvfuser.multidevice.DeviceMesh(range(num_devices))
        for tv in tensors:
            tv.set_device_mesh(mesh)
        a, _, _ = tensors
        a.axis(0).parallelize(nvfuser.ParallelType.mesh_x)

    d = multidevice_test.size
    m, k, n = 128, 64, 96
    dtype = torch.bfloat16
    with FusionDefinition() as fd:
        tensors = fusion_definition(fd, m, k, n, d)
        multidevice_schedule(tensors, d)

    a_ref = torch.testing.make_tensor(d, m // d, k, dtype=torch.int32, device="cpu").to(dtype)
    b_ref = torch.testing.make_tensor(k, n, dtype=torch.int32, device="cpu").to(dtype)
    a = multidevice_test.shard_tensor(a_ref, fd.fusion.inputs()[0])

    params = nvfuser.multidevice.MultiDeviceExecutorParams()
    params.backend_type = backend_type
    multidevice_executor = nvfuser.multidevice.MultiDeviceExecutor(fd.fusion, params)
    (out,) = multidevice_executor.run([a, b_ref])
    torch.testing.assert_close(out.cpu(), torch.matmul(a_ref, b_ref))


# test_dtensor.py, on a CPU device mesh
@pytest.mark.mpi
def test_plus_one(setup_default_process_group, multidevice_test):
    def define_fusion(fd: FusionDefinition):
        inp = fd.define_tensor((-1, -1), contiguity=False, dtype=DataType.Float)
        one = fd.define_scalar(1.0, dtype=DataType.Float)
        out = fd.ops.add(inp, one)
        fd.add_output(out)

    op = FusionDefinitionWrapper(define_fusion)
    num_devices = dist.get_world_size()
    in_tensor = torch.randn(num_devices, 4)
    mesh = dist.device_mesh.init_device_mesh("cpu", [num_devices], mesh_dim_names=["tp"])
    in_dtensor = dist.tensor.distribute_tensor(in_tensor, mesh, [Shard(0)])

    (out_dtensor,) = op([in_dtensor])
    torch.testing.assert_close(out_dtensor.to_local(), in_dtensor.to_local() + 1)
    assert out_dtensor.device_mesh == in_dtensor.device_mesh
    assert out_dtensor.placements == in_dtensor.placements
    assert out_dtensor.device_mesh.mesh_dim_names == in_dtensor.device_mesh.mesh_dim_names


@pytest.mark.mpi
def test_column_parallel_linear(setup_default_process_group, multidevice_test):
    d, b, s, e = dist.get_world_size(), 2, 3, 5
    mesh = dist.device_mesh.init_device_mesh("cpu", [d])
    inp_tensor = torch.randint(-4, 4, (b, s, e), dtype=torch.bfloat16, requires_grad=True)
    weight_tensor = torch.randint(-4, 4, (d * e, e), dtype=torch.bfloat16, requires_grad=True)
    inp_dtensor = dist.tensor.distribute_tensor(inp_tensor, mesh, [Replicate()])
    weight_dtensor = dist.tensor.distribute_tensor(weight_tensor, mesh, [Shard(0)])

    def assert_close(expected_tensor: torch.Tensor, dtensor: DTensor):
        torch.testing.assert_close(expected_tensor, dtensor.to_local().cpu())

    out_tensor = torch.nn.functional.linear(inp_tensor, weight_tensor)
    out_dtensor = LinearFunction.apply(inp_dtensor, weight_dtensor)
    rank = dist.get_rank()
    assert_close(out_tensor.split(e, dim=-1)[rank], out_dtensor)

    (expected_grad_x, expected_grad_w) = torch.autograd.grad(out_tensor, (inp_tensor, weight_tensor), torch.ones_like(out_tensor))
    (grad_x, grad_w) = torch.autograd.grad(out_dtensor, (inp_dtensor, weight_dtensor), torch.ones_like(out_dtensor))
    assert_close(expected_grad_x, grad_x)
    assert_close(expected_grad_w.split(e, dim=0)[rank], grad_w)


@pytest.mark.mpi
def test_row_parallel_linear(setup_default_process_group, multidevice_test):
    d, b, s, e = dist.get_world_size(), 2, 3, 5
    mesh = dist.device_mesh.init_device_mesh("cpu", [d])
    inp_tensor = torch.randint(-4, 4, (b, s, d * e), dtype=torch.bfloat16, requires_grad=True)
    weight_tensor = torch.randint(-4, 4, (e, d * e), dtype=torch.bfloat16, requires_grad=True)
    inp_dtensor = dist.tensor.distribute_tensor(inp_tensor, mesh, [Shard(-1)])
    weight_dtensor = dist.tensor.distribute_tensor(weight_tensor, mesh, [Shard(-1)])

    def assert_close(expected_tensor: torch.Tensor, dtensor: DTensor):
        torch.testing.assert_close(expected_tensor, dtensor.to_local().cpu())

    out_tensor = torch.nn.functional.linear(inp_tensor, weight_tensor)
    out_dtensor = LinearFunction.apply(inp_dtensor, weight_dtensor)
    assert_close(out_tensor, out_dtensor)

    (expected_grad_x, expected_grad_w) = torch.autograd.grad(out_tensor, (inp_tensor, weight_tensor), torch.ones_like(out_tensor))
    (grad_x, grad_w) = torch.autograd.grad(out_dtensor, (inp_dtensor, weight_dtensor), torch.ones_like(out_dtensor))
    rank = dist.get_rank()
    assert_close(expected_grad_x.split(e, dim=-1)[rank], grad_x)
    assert_close(expected_grad_w.split(e, dim=-1)[rank], grad_w)


# test_transformer.py, at small sizes, compared with the unsharded eager evaluation
TRANSFORMER_SIZES = dict(b=1, s=16, h=4, e=32)


@pytest.mark.parametrize("parallelism", [Parallelism.TENSOR_PARALLEL, Parallelism.SEQUENCE_PARALLEL], ids=lambda p: p.name)
@pytest.mark.mpi
def test_transformer_forward(multidevice_test, parallelism: Parallelism):
    d = multidevice_test.size
    b, s, h, e = TRANSFORMER_SIZES.values()
    if h % d != 0:
        pytest.skip(f"the number of heads ({h}) has to be divisible by the number of ranks ({d})")
    make = lambda *shape: torch.testing.make_tensor(*shape, dtype=torch.bfloat16, device="cpu", low=-1, high=1)  # noqa: E731
    unsharded = [make(b, s, e), make(e), make(e), make(e * 3, e), make(e * 3), make(e, e), make(e), make(e), make(e),
                 make(e * 4, e), make(e * 4), make(e, e * 4), make(e)]
    with FusionDefinition() as fd:
        transformer_forward_definition(fd, b, s, h, e)
        transformer_forward_multidevice_schedule(fd, d, parallelism)
    ins = [multidevice_test.shard_tensor(x, tv) for x, tv in zip(unsharded, fd.fusion.inputs())]
    outputs = fd.execute(ins)
    assert_like_unsharded(fd, unsharded, outputs, multidevice_test.rank)
    s_local = s // d if parallelism == Parallelism.SEQUENCE_PARALLEL else s
    assert outputs[0].shape == torch.Size([b, s_local]) and outputs[3].shape == torch.Size([b, h // d, s, e // h])


@pytest.mark.parametrize("parallelism", [Parallelism.TENSOR_PARALLEL, Parallelism.SEQUENCE_PARALLEL], ids=lambda p: p.name)
@pytest.mark.mpi
def test_transformer_backward(multidevice_test, parallelism: Parallelism):
    d = multidevice_test.size
    b, s, h, e = TRANSFORMER_SIZES.values()
    if h % d != 0:
        pytest.skip(f"the number of heads ({h}) has to be divisible by the number of ranks ({d})")
    with FusionDefinition() as fd:
        transformer_backward_definition(fd, b, s, h, e, parallelism, d)
    seed, offset = create_sdpa_rng_tensors()
    unsharded = []
    for tv in fd.fusion.inputs():
        if tv.dtype == DataType.UInt64:
            unsharded.append((seed if tv.ndim else offset).cpu())
        elif tv.dtype == DataType.Bool:
            unsharded.append(torch.testing.make_tensor(tv.shape, dtype=torch.bool, device="cpu"))
        else:
            dtype = getattr(torch, tv.dtype.value)
            unsharded.append(torch.testing.make_tensor(tv.shape, dtype=dtype, device="cpu", low=-1, high=1))
    ins = [multidevice_test.shard_tensor(x, tv) for x, tv in zip(unsharded, fd.fusion.inputs())]
    outputs = fd.execute(ins, _disable_options=["resize_scheduler"])
    assert_like_unsharded(fd, unsharded, outputs, multidevice_test.rank)
    assert outputs[0].shape == torch.Size([e, e * 4 // d])


# test_alphafold3.py::test_triangle_updates, with the weights on this rank's device
@pytest.mark.mpi
@pytest.mark.parametrize("direction", [Direction.OUTGOING, Direction.INCOMING], ids=lambda d: d.name.lower())
def test_triangle_updates(direction, multidevice_test):
    d = multidevice_test.size
    cp_size = 2
    if d % (cp_size * cp_size) != 0:
        pytest.skip(f"We only support even split, so {d} has to be divisible by {cp_size * cp_size} for {cp_size=}.")
    dp_size = d // (cp_size * cp_size)
    c_z = _DEFAULT_CONFIG.c_z

    with FusionDefinition() as fd:
        z_in_tv = fd.define_tensor(shape=[-1, -1, -1, c_z], dtype=DataType.BFloat16, contiguity=True)
        w_norm_in = fd.define_tensor(shape=[c_z], dtype=DataType.BFloat16, contiguity=True)
        b_norm_in = fd.define_tensor(shape=[c_z], dtype=DataType.BFloat16, contiguity=True)
        w_p_in = fd.define_tensor(shape=[c_z * 2, c_z], dtype=DataType.BFloat16, contiguity=True)
        w_g_in = fd.define_tensor(shape=[c_z * 2, c_z], dtype=DataType.BFloat16, contiguity=True)
        w_norm_out = fd.define_tensor(shape=[c_z], dtype=DataType.BFloat16, contiguity=True)
        b_norm_out = fd.define_tensor(shape=[c_z], dtype=DataType.BFloat16, contiguity=True)
        w_p_out = fd.define_tensor(shape=[c_z, c_z], dtype=DataType.BFloat16, contiguity=True)
        w_g_out = fd.define_tensor(shape=[c_z, c_z], dtype=DataType.BFloat16, contiguity=True)
        mask_tv = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Bool, contiguity=True)

        batch_size = fd.ops.size(z_in_tv, 0)
        n_tokens = fd.ops.size(z_in_tv, 1)

        z_in = layer_norm(fd, z_in_tv, w_norm_in, b_norm_in)
        z = gating(fd, z_in, w_p_in, z_in, w_g_in)
        mask = fd.ops.broadcast_in_dim(mask_tv, shape=[batch_size, n_tokens, n_tokens, c_z], broadcast_dims=[0, 1, 2])
        z = fd.ops.where(mask, z, 0.0)
        a = fd.ops.slice(z, [0, 0, 0, 0], [batch_size, n_tokens, n_tokens, c_z])
        b = fd.ops.slice(z, [0, 0, 0, c_z], [batch_size, n_tokens, n_tokens, c_z * 2])

        match direction:
            case Direction.OUTGOING:
                a = fd.ops.permute(a, [0, 3, 1, 2])
                b = fd.ops.permute(b, [0, 3, 2, 1])
            case Direction.INCOMING:
                a = fd.ops.permute(a, [0, 3, 2, 1])
                b = fd.ops.permute(b, [0, 3, 1, 2])
        z = fd.ops.matmul(a, b)
        matmul_out = z
        z = fd.ops.permute(z, [0, 2, 3, 1])

        z = layer_norm(fd, z, w_norm_out, b_norm_out)
        z = gating(fd, z, w_p_out, z_in, w_g_out)
        fd.add_output(z)

        mesh = nvfuser.multidevice.DeviceMesh(torch.arange(d).reshape(dp_size, cp_size, cp_size))
        for tv in [z_in_tv, w_norm_in, b_norm_in, w_p_in, w_g_in, w_norm_out, b_norm_out, w_p_out, w_g_out, mask_tv, matmul_out]:
            tv.set_device_mesh(mesh)

        for tv in [z_in_tv, mask_tv]:
            tv.outer_split(2, cp_size)
            tv.axis(2).parallelize(nvfuser.ParallelType.mesh_x)
            tv.outer_split(1, cp_size)
            tv.axis(1).parallelize(nvfuser.ParallelType.mesh_y)
            tv.outer_split(0, dp_size)
            tv.axis(0).parallelize(nvfuser.ParallelType.mesh_z)

        matmul_out.outer_split(-1, cp_size)
        match direction:
            case Direction.OUTGOING:
                matmul_out.axis(-2).parallelize(nvfuser.ParallelType.mesh_x)
            case Direction.INCOMING:
                matmul_out.axis(-2).parallelize(nvfuser.ParallelType.mesh_y)
        matmul_out.outer_split(3, cp_size)
        matmul_out.axis(3).parallelize(nvfuser.ParallelType.mesh_x)
        matmul_out.outer_split(2, cp_size)
        matmul_out.axis(2).parallelize(nvfuser.ParallelType.mesh_y)
        matmul_out.outer_split(0, dp_size)
        matmul_out.axis(0).parallelize(nvfuser.ParallelType.mesh_z)

    batch_per_rank = 3
    n_tokens_per_rank = 5
    shape = (batch_per_rank * dp_size, n_tokens_per_rank * cp_size, n_tokens_per_rank * cp_size)
    unsharded = [torch.testing.make_tensor(*shape, c_z, dtype=torch.bfloat16, device="cpu")]
    for weight in ([c_z], [c_z], [c_z * 2, c_z], [c_z * 2, c_z], [c_z], [c_z], [c_z, c_z], [c_z, c_z]):
        unsharded.append(torch.testing.make_tensor(*weight, dtype=torch.bfloat16, device="cpu"))
    unsharded.append(torch.testing.make_tensor(*shape, dtype=torch.bool, device="cpu"))
    ins = [multidevice_test.shard_tensor(x, tv) for x, tv in zip(unsharded, fd.fusion.inputs())]
    (z_out,) = fd.execute(ins)
    assert z_out.shape == (batch_per_rank, n_tokens_per_rank, n_tokens_per_rank, c_z)
    assert_like_unsharded(fd, unsharded, [z_out], multidevice_test.rank)

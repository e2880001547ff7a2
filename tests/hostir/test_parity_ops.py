"""The ops and schedules nvFuser's multi-device tests use (issue 28), end to end: each
fusion as a user writes it, on one rank unscheduled and on 2 gloo CPU ranks sharded (all
programs in one launch), against eager torch on the unsharded data. Positional ops (iota,
triu, seeded random numbers, attention dropout) give the same numbers on every layout."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.placement_types import Replicate, Shard

from hostir import DataType, DeviceMesh, FusionDefinition, FusionDefinitionError, ParallelType, runtime
from hostir.dtensor import execute_with_dtensors
from hostir.runtime import random_numbers
from hostir_dialect.diagnostics import HostIRError, located_text

MESH = DeviceMesh([0, 1])
DIDX = ParallelType.DIDx


def shard(t, axis: int, devices: int = 2, parallel=DIDX) -> None:
    t.set_device_mesh(MESH)
    t.outer_split(axis, devices)
    t.axis(axis).parallelize(parallel)


@dataclass
class Case:
    """A fusion (`define` returns its inputs and outputs), its schedule, its unsharded
    inputs and what eager torch computes from them."""

    define: Callable
    schedule: Callable
    inputs: list[torch.Tensor]
    expected: Callable
    tolerance: float = 1e-5

    def fusion(self, scheduled: bool) -> FusionDefinition:
        with FusionDefinition() as fd:
            inputs, outputs = self.define(fd)
            for out in outputs:
                fd.add_output(out)
        if scheduled:
            self.schedule(*inputs, *outputs)
        return fd


def _layer_norm_with_extents(fd):
    """alphafold3.py's layer_norm: a weight broadcast to the extents of a dynamic tensor."""
    x = fd.define_tensor([-1, -1, 6])
    w = fd.define_tensor([6])
    var, mean = fd.ops.var_mean(x, dims=[-1], correction=0, keepdim=True)
    y = fd.ops.mul(fd.ops.sub(x, mean), fd.ops.rsqrt(fd.ops.add(var, 1e-5)))
    y = fd.ops.mul(y, fd.ops.broadcast_in_dim(w, shape=fd.ops.shape(x), broadcast_dims=[-1]))
    half = fd.ops.slice(y, [0, 0, 0], [fd.ops.size(x, 0), fd.ops.size(x, 1), 3])
    return [x, w], [y, half]


def _layer_norm(x, w):
    y = torch.nn.functional.layer_norm(x, [x.shape[-1]], eps=1e-5) * w
    return [y, y[..., :3]]


def _grouped(fd, k_sharded: bool):
    a = fd.define_tensor([12, 16], dtype=DataType.BFloat16)
    w = fd.define_tensor([3, 8, 16], dtype=DataType.BFloat16)
    offsets = fd.define_tensor([3], dtype=DataType.Int32)
    return [a, w, offsets], [fd.ops.grouped_mm(a, fd.ops.permute(w, [0, 2, 1]), offsets)]


def _grouped_reference(a, w, offsets):
    ends = offsets.tolist()
    return [torch.cat([a[s:e] @ w[g].T for g, (s, e) in enumerate(zip([0, *ends[:-1]], ends))])]


def _attention(dropout_p: float):
    def define(fd):
        q, k, v, g = (fd.define_tensor([2, 4, 8, 16]) for _ in range(4))
        out, lse, seed, offset = fd.ops.sdpfa_fwd(q, k, v, dropout_p=dropout_p, is_causal=True)
        grads = fd.ops.sdpfa_bwd(g, q, k, v, out, lse, dropout_p, True, seed, offset)
        return [q, k, v, g], [out, *grads]
    return define


def _attention_reference(q, k, v, g):
    inputs = [x.clone().requires_grad_() for x in (q, k, v)]
    out = torch.nn.functional.scaled_dot_product_attention(*inputs, is_causal=True)
    return [out.detach(), *torch.autograd.grad(out, inputs, g)]


def _heads(*tensors):
    for t in tensors[:4]:
        shard(t, 1)


def _uniform(fd):
    x = fd.define_tensor([4, 6])
    u = fd.ops.uniform(-1.0, 1.0, [4, 6], rng_seed=11, rng_offset=5)
    return [x], [fd.ops.add(x, u), fd.ops.lt(u, 0.5)]


def _uniform_reference(x):
    positions = torch.arange(24).reshape(4, 6)
    u = (-1.0 + 2.0 * random_numbers.uniform(11, 5, positions)).float()
    return [x + u, u < 0.5]


torch.manual_seed(0)
CASES: dict[str, Case] = {
    "cat of sharded rows": Case(
        lambda fd: ((x := fd.define_tensor([4, 3]), y := fd.define_tensor([4, 5])), [fd.ops.cat([x, y], dim=1)]),
        lambda x, y, out: (shard(x, 0), shard(y, 0)),
        [torch.randn(4, 3), torch.randn(4, 5)], lambda x, y: [torch.cat([x, y], 1)]),
    "cat along a sharded axis": Case(
        lambda fd: ((x := fd.define_tensor([4, 6]), y := fd.define_tensor([4, 2])), [fd.ops.cat([x, y], dim=1)]),
        lambda x, y, out: (shard(x, 1), y.set_device_mesh(MESH)),
        [torch.randn(4, 6), torch.randn(4, 2)], lambda x, y: [torch.cat([x, y], 1)]),
    "expanded axis sharded": Case(
        lambda fd: ((b := fd.define_tensor([6]),), [fd.ops.broadcast_in_dim(b, [4, 6], [1])]),
        lambda b, out: (b.set_device_mesh(MESH), shard(out, 0)),
        [torch.randn(6)], lambda b: [b.expand(4, 6)]),
    "layer norm to dynamic extents": Case(
        _layer_norm_with_extents, lambda x, w, y, half: (shard(x, 1), w.set_device_mesh(MESH)),
        [torch.randn(2, 4, 6), torch.randn(6)], _layer_norm, 1e-4),
    "where, triu and iota by global positions": Case(
        lambda fd: ((x := fd.define_tensor([4, 6]),),
                    [fd.ops.triu(fd.ops.where(fd.ops.gt(x, 0.0), x, -1.0), 1),
                     fd.ops.mul(x, fd.ops.broadcast(fd.ops.iota(6, 1, 2, dtype=DataType.Float), [True, False]))]),
        lambda x, a, b: shard(x, 1),
        [torch.randn(4, 6)],
        lambda x: [torch.triu(torch.where(x > 0, x, -1.0), 1), x * (1 + 2 * torch.arange(6.0))]),
    "seeded uniform": Case(_uniform, lambda x, a, b: (shard(x, 1), shard(a, 0)), [torch.randn(4, 6)],
                           _uniform_reference),
    "var_mean over a kept and a sharded axis": Case(
        lambda fd: ((x := fd.define_tensor([4, 6]),), [*fd.ops.var_mean(x, [1]), *fd.ops.var_mean(x, [0], correction=0)]),
        lambda x, *outs: shard(x, 1),
        [torch.randn(4, 6)],
        lambda x: [x.var(1), x.mean(1), x.var(0, correction=0), x.mean(0)]),
    "var_mean over a sharded axis of dynamic extent": Case(
        lambda fd: ((x := fd.define_tensor([-1, -1]),), [*fd.ops.var_mean(x, [1]), *fd.ops.var_mean(x, [0, 1], correction=0)]),
        lambda x, *outs: shard(x, 1),
        [torch.randn(4, 6)],
        lambda x: [x.var(1), x.mean(1), x.var((0, 1), correction=0), x.mean((0, 1))]),
    "bf16 mean and var over 1,002 sharded elements of dynamic extent": Case(
        lambda fd: ((x := fd.define_tensor([-1, -1], dtype=DataType.BFloat16),), [fd.ops.mean(x, [1]), fd.ops.var(x, [1])]),
        lambda x, *outs: shard(x, 1),
        [(torch.randn(3, 1002) + 3).bfloat16()],
        lambda x: [x.mean(1), x.var(1)], 2e-2),
    "column-parallel grouped_mm": Case(
        lambda fd: _grouped(fd, False), lambda a, w, o, out: (a.set_device_mesh(MESH), shard(w, 1), o.set_device_mesh(MESH)),
        [torch.randn(12, 16).bfloat16(), torch.randn(3, 8, 16).bfloat16(), torch.tensor([4, 9, 12], dtype=torch.int32)],
        _grouped_reference, 2e-2),
    "row-parallel grouped_mm": Case(
        lambda fd: _grouped(fd, True), lambda a, w, o, out: (shard(a, 1), shard(w, 2), o.set_device_mesh(MESH)),
        [torch.randint(-2, 3, (12, 16)).bfloat16(), torch.randint(-2, 3, (3, 8, 16)).bfloat16(),
         torch.tensor([4, 9, 12], dtype=torch.int32)],
        _grouped_reference),
    "head-parallel attention": Case(_attention(0.0), _heads, [torch.randn(2, 4, 8, 16) for _ in range(4)],
                                    _attention_reference, 1e-4),
    "stream on an input": Case(
        lambda fd: ((x := fd.define_tensor([6, 8]), w := fd.define_tensor([3, 8])), [fd.ops.linear(x, w)]),
        lambda x, w, out: (x.set_device_mesh(MESH), x.axis(0).parallelize(ParallelType.Stream), shard(x, 1), shard(w, 1)),
        [torch.randn(6, 8), torch.randn(3, 8)], lambda x, w: [torch.nn.functional.linear(x, w)]),
}


def _close(got: torch.Tensor, want: torch.Tensor, tolerance: float) -> None:
    if want.dtype == torch.bool:
        assert torch.equal(got, want)
    else:
        scale = max(1.0, want.abs().max().item())
        torch.testing.assert_close(got, want.to(got.dtype), rtol=tolerance, atol=tolerance * scale)


@pytest.fixture(scope="module")
def on_two_ranks() -> dict[str, list[torch.Tensor]]:
    """Every case's unsharded outputs, computed on 2 ranks in one launch."""
    jobs, types = [], {}
    for name, case in CASES.items():
        program = case.fusion(scheduled=True).lower()
        (function,) = [op for op in program.ops if op.name == "hir.program"]
        inputs, outputs = function.function_type.inputs.data, function.function_type.outputs.data
        per_rank = [[runtime.shard_tensor(x, t, r) for x, t in zip(case.inputs, inputs)] for r in range(2)]
        jobs.append(runtime.Job(located_text(program), per_rank))
        types[name] = outputs
    results = runtime.run_spmd_batch(jobs, 2, backend="gloo")
    return {name: [runtime.unshard({r: ranks[r].outputs[i] for r in range(2)}, t) for i, t in enumerate(types[name])]
            for name, ranks in zip(CASES, results)}


@pytest.mark.parametrize("name", CASES)
def test_one_rank_matches_torch(name):
    case = CASES[name]
    got = case.fusion(scheduled=False).execute(case.inputs)
    for g, w in zip(got, case.expected(*case.inputs)):
        _close(g, w, case.tolerance)


@pytest.mark.parametrize("name", CASES)
def test_two_ranks_match_torch(name, on_two_ranks):
    case = CASES[name]
    for g, w in zip(on_two_ranks[name], case.expected(*case.inputs)):
        _close(g, w, case.tolerance)


DROPOUT = Case(_attention(0.25), _heads, [torch.randn(2, 4, 8, 16) for _ in range(4)], None)


def _dropout_rank(rank: int, world_size: int) -> tuple[list, list, int]:
    """This rank's shards of the head-parallel attention with dropout, the unsharded
    evaluation of the same fusion, and this process's torch seed (the default seeds derive
    from it: every rank must seed torch alike, as spawned ranks do)."""
    sharded = DROPOUT.fusion(scheduled=True)
    inputs = [runtime.shard_tensor(x, t.type, rank) for x, t in zip(DROPOUT.inputs, sharded.fusion.inputs())]
    unsharded = DROPOUT.fusion(scheduled=False)
    return sharded.execute(inputs), unsharded.execute(DROPOUT.inputs), torch.initial_seed()


def test_dropout_is_the_same_on_every_layout_and_the_backward_replays_it():
    """Attention with dropout: heads sharded over 2 ranks compute what one device computes,
    and the gradients are those of the forward with the same mask."""
    ranks = runtime.launch(_dropout_rank, 2, backend="gloo")
    types = DROPOUT.fusion(scheduled=True).output_types()
    two = [runtime.unshard({r: ranks[r][0][i] for r in range(2)}, t) for i, t in enumerate(types)]
    one, initial_seed = ranks[0][1], ranks[0][2]
    for a, b in zip(one, two):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(one[0], _attention_reference(*DROPOUT.inputs)[0], atol=1e-3)  # dropout changed it
    q, k, v, g = (x.clone().requires_grad_() for x in DROPOUT.inputs)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(16)
    scores = scores.masked_fill(~torch.ones(8, 8, dtype=torch.bool).tril(), float("-inf"))
    previous = torch.initial_seed()
    torch.manual_seed(initial_seed)
    seed, offset = random_numbers.default_state(0, 0)  # the fusion's one random op, on its first run
    torch.manual_seed(previous)
    keep = random_numbers.uniform(seed, offset, torch.arange(2 * 4 * 8 * 8).reshape(2, 4, 8, 8)) >= 0.25
    out = (torch.softmax(scores, -1) * keep / 0.75) @ v
    grads = torch.autograd.grad(out, (q, k, v), g)
    for got, want in zip(one, (out.detach(), *grads)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_random_numbers_differ_between_runs_and_ops_without_seeds():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.uniform(0.0, 1.0, [8]))
        fd.add_output(fd.ops.uniform(0.0, 1.0, [8]))
    first, second = fd.execute([]), fd.execute([])
    assert not torch.equal(first[0], first[1]) and not torch.equal(first[0], second[0])
    assert all(((x >= 0) & (x <= 1)).all() for x in (*first, *second))


def test_a_grouped_gemm_over_grouped_k_sharded_is_refused_at_the_users_line():
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 12])
        b = fd.define_tensor([12, 5])
        offsets = fd.define_tensor([3], dtype=DataType.Int32)
        fd.add_output(fd.ops.grouped_mm(a, b, offsets))
    shard(a, 1)
    shard(b, 0)
    offsets.set_device_mesh(MESH)
    with pytest.raises(HostIRError, match=r"test_parity_ops\.py:\d+:\d+: error: 'fusion.grouped_mm' op .*cut the groups"):
        fd.lower()


# --------------------------------------------------------------------------- #
# DTensor in and out, torchrun
# --------------------------------------------------------------------------- #


def _dtensor_rank(rank: int, world_size: int) -> list[torch.Tensor]:
    mesh = dist.device_mesh.init_device_mesh("cpu", [world_size], mesh_dim_names=["tp"])
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    w = torch.arange(18, dtype=torch.float32).reshape(3, 6)
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 6])
        b = fd.define_tensor([3, 6])
        fd.add_output(fd.ops.linear(a, b))
        fd.add_output(fd.ops.relu(a))
    x_d = dist.tensor.distribute_tensor(x, mesh, [Shard(0)])
    w_d = dist.tensor.distribute_tensor(w, mesh, [Replicate()])
    y, r = execute_with_dtensors(fd, [x_d, w_d])
    assert isinstance(y, DTensor) and y.device_mesh is mesh and y.placements == (Shard(0),)
    mismatch = dist.tensor.distribute_tensor(x, mesh, [Shard(1)])
    try:
        execute_with_dtensors(fd, [mismatch, w_d])
    except FusionDefinitionError as error:
        assert "is scheduled on" in str(error)
    else:
        raise AssertionError("a DTensor placed unlike its scheduled input was not refused")
    return [y.full_tensor(), r.full_tensor()]


def test_execute_with_dtensors_takes_their_placements_and_gives_dtensors():
    results = runtime.launch(_dtensor_rank, 2, backend="gloo")
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    w = torch.arange(18, dtype=torch.float32).reshape(3, 6)
    for y, r in results:
        torch.testing.assert_close(y, torch.nn.functional.linear(x, w))
        torch.testing.assert_close(r, torch.relu(x))


TORCHRUN_SCRIPT = textwrap.dedent("""
    import torch
    from hostir import DeviceMesh, FusionDefinition, ParallelType
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 6])
        fd.add_output(fd.ops.sum(a, [0]))
    a.set_device_mesh(DeviceMesh([0, 1]))
    a.outer_split(0, 2)
    a.axis(0).parallelize(ParallelType.DIDx)
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    (out,) = fd.execute([x.chunk(2)[int(__import__("os").environ["RANK"])]])
    torch.testing.assert_close(out, x.sum(0))
    print("joined", torch.distributed.get_world_size())
""")


def _free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_execute_under_torchrun_joins_the_world_by_itself():
    """No init_process_group in the script: fd.execute reads torchrun's environment."""
    port = str(_free_loopback_port())
    processes = [
        subprocess.Popen([sys.executable, "-c", TORCHRUN_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2",
                              "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
        for r in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert all(p.returncode == 0 for p in processes), [err[-2000:] for _, err in outputs]
    assert all("joined 2" in out for out, _ in outputs)

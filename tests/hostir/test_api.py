"""The top-level API (hostir/__init__.py): the frontend's FusionDefinition with `lower()`
and `execute()`, which span the dialect, the passes and the runtime."""

import torch

import runtime
from hostir import DeviceMesh, FusionDefinition, ParallelType
from hostir_dialect import hir


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


def test_all_to_all_and_p2p_ring_from_the_python_api_match_torch():
    fusions = _all_to_all_and_ring()
    hosts = [fd.lower() for fd in fusions]
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

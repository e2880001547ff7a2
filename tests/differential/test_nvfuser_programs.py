"""Programs as nvFuser's multi-device tests write them, inputs declared with whole shapes
dynamic (`fd.define_tensor([-1, -1, ...])`), run through the differential harness on 2 and
4 gloo ranks: each computes what eager torch computes on the unsharded data (every rank's
shard checked too), with the collectives nvFuser would use, and no more.

Each source is a reproducer (`python -m tests.differential.harness --replay FILE`); a
dynamic input's comment gives the concrete shape it is run with.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from . import harness
from .generator import build, program_from_source


def _mesh(d: int) -> str:
    return f"DeviceMesh({list(range(d))})"


def _sharded(var: str, axis: int, d: int) -> str:
    """Schedule lines: `var` on `mesh`, its `axis` split by d, the outer piece on DIDx."""
    return f"{var}.set_device_mesh(mesh)\n{var}.outer_split({axis}, {d})\n{var}.axis({axis}).parallelize(ParallelType.DIDx)\n"


def sharded_input_program(d: int, declared: list[int], concrete: list[int], op: str, axis: int, split: bool = True,
                          result_on_the_mesh: bool = False) -> str:
    """y = `op` of one input x, whose `axis` is sharded over the d devices (split by d, or
    parallelized whole)."""
    split_line = f"x.outer_split({axis}, {d})\n" if split else ""
    result_line = f"y.set_device_mesh({_mesh(d)})\n" if result_on_the_mesh else ""
    return f"""
with FusionDefinition() as fd:
    x = fd.define_tensor({declared}, dtype='float32')  # concrete: {concrete}
    y = fd.ops.{op}
    fd.add_output(y)
x.set_device_mesh({_mesh(d)})
{split_line}x.axis({axis}).parallelize(ParallelType.DIDx)
{result_line}"""


def sum_of_a_sharded_dynamic_axis(d: int) -> str:
    """The issue's example: the rFactor reshapes two dynamic extents at run time."""
    return sharded_input_program(d, [-1, -1], [2 * d, 5], "sum(x, dims=[0])", 0)


def sum_of_a_sharded_axis_between_dynamic_ones(d: int) -> str:
    """[?, 3d(d didx, 3), ?] -> [?, d didx, 3, ?] is exact: reduced locally, then one all-reduce."""
    return sharded_input_program(d, [-1, 3 * d, -1], [2, 3 * d, 4], "sum(x, dims=[1])", 1)


def allreduce_of_an_unsplit_dynamic_device_axis(d: int) -> str:
    return sharded_input_program(d, [-1, -1], [d, 6], "sum(x, dims=[0])", 0, split=False)


def allgather_of_an_unsplit_dynamic_device_axis(d: int) -> str:
    return sharded_input_program(d, [-1, -1], [d, 6], "set(x)", 0, split=False, result_on_the_mesh=True)


def row_parallel_linear(d: int, k: int | None = None, bias: bool = False) -> str:
    """nvFuser's test_row_parallel_linear(_with_bias): batch and sequence dynamic (K too
    where `k` is None)."""
    declared_k = -1 if k is None else k
    bias_lines = ("    b = fd.define_tensor([5], dtype='float32')\n", ", bias=b", "b.set_device_mesh(mesh)\n") if bias else ("", "", "")
    return f"""
with FusionDefinition() as fd:
    x = fd.define_tensor([-1, -1, {declared_k}], dtype='float32')  # concrete: [2, 3, {4 * d}]
    w = fd.define_tensor([{5 if k else -1}, {declared_k}], dtype='float32')  # concrete: [5, {4 * d}]
{bias_lines[0]}    y = fd.ops.linear(x, w{bias_lines[1]})
    fd.add_output(y)
mesh = {_mesh(d)}
{_sharded("x", 2, d)}{_sharded("w", 1, d)}{bias_lines[2]}"""


def row_parallel_matmul(d: int) -> str:
    """nvFuser's test_row_parallel_matmul, every extent dynamic."""
    return f"""
with FusionDefinition() as fd:
    x = fd.define_tensor([-1, -1, -1], dtype='float32')  # concrete: [2, 3, {2 * d}]
    w = fd.define_tensor([-1, -1], dtype='float32')  # concrete: [{2 * d}, 4]
    y = fd.ops.matmul(x, w)
    fd.add_output(y)
mesh = {_mesh(d)}
{_sharded("x", 2, d)}{_sharded("w", 0, d)}"""


def sequence_parallel_linear_add(d: int, dynamic: bool = True) -> str:
    """A row-parallel linear (K sharded) feeding a sequence-sharded residual add, as in
    every sequence-parallel transformer layer: one reduce-scatter, the linear's output
    sequence-sharded (nvFuser's test_linear_reduce_scatter)."""
    s, k = (-1, -1) if dynamic else (2 * d, 4 * d)
    return f"""
with FusionDefinition() as fd:
    x = fd.define_tensor([-1, {s}, {k}], dtype='float32')  # concrete: [3, {2 * d}, {4 * d}]
    w = fd.define_tensor([5, {k}], dtype='float32')  # concrete: [5, {4 * d}]
    r = fd.define_tensor([-1, {s}, 5], dtype='float32')  # concrete: [3, {2 * d}, 5]
    y = fd.ops.linear(x, w)
    z = fd.ops.add(y, r)
    fd.add_output(z)
mesh = {_mesh(d)}
{_sharded("x", 2, d)}{_sharded("w", 1, d)}{_sharded("r", 1, d)}"""


def replicated_plus_sharded(d: int) -> str:
    """Each rank slices its part of the replicated operand: nothing moves."""
    return f"""
with FusionDefinition() as fd:
    a = fd.define_tensor([-1, -1], dtype='float32')  # concrete: [{2 * d}, 3]
    b = fd.define_tensor([-1, -1], dtype='float32')  # concrete: [{2 * d}, 3]
    c = fd.ops.add(a, b)
    fd.add_output(c)
mesh = {_mesh(d)}
a.set_device_mesh(mesh)
{_sharded("b", 0, d)}"""


REDUCTIONS_ON_A_2D_MESH = """
with FusionDefinition() as fd:
    x = fd.define_tensor([-1, -1, -1], dtype='float32')  # concrete: [4, 3, 6]
    rows = fd.ops.sum(x, dims=[2])
    columns = fd.ops.max(x, dims=[0])
    fd.add_output(rows)
    fd.add_output(columns)
mesh = DeviceMesh([[0, 1], [2, 3]])
x.set_device_mesh(mesh)
x.outer_split(0, 2)
x.axis(0).parallelize(ParallelType.DIDy)
x.outer_split(3, 2)
x.axis(3).parallelize(ParallelType.DIDx)
"""

DATA_AND_TENSOR_PARALLEL_MLP = """
with FusionDefinition() as fd:
    x = fd.define_tensor([-1, -1, 8], dtype='float32')  # concrete: [4, 3, 8]
    w1 = fd.define_tensor([8, 12], dtype='float32')
    w2 = fd.define_tensor([12, 8], dtype='float32')
    h = fd.ops.matmul(x, w1)
    a = fd.ops.tanh(h)
    y = fd.ops.matmul(a, w2)
    fd.add_output(y)
mesh = DeviceMesh([[0, 1], [2, 3]])
x.set_device_mesh(mesh)
x.outer_split(0, 2)
x.axis(0).parallelize(ParallelType.DIDy)
w1.set_device_mesh(mesh)
w1.outer_split(1, 2)
w1.axis(1).parallelize(ParallelType.DIDx)
w2.set_device_mesh(mesh)
w2.outer_split(0, 2)
w2.axis(0).parallelize(ParallelType.DIDx)
"""

CASES: dict[str, tuple[str, int, dict[str, int]]] = {}
"""name -> (source, world size, the communications of its lowered program by kind)."""
for _d in (2, 4):
    CASES |= {
        f"sum_of_a_sharded_dynamic_axis_{_d}": (sum_of_a_sharded_dynamic_axis(_d), _d, {"allreduce": 1}),
        f"sum_of_a_sharded_axis_between_dynamic_ones_{_d}": (sum_of_a_sharded_axis_between_dynamic_ones(_d), _d,
                                                             {"allreduce": 1}),
        f"allreduce_of_an_unsplit_dynamic_device_axis_{_d}": (allreduce_of_an_unsplit_dynamic_device_axis(_d), _d,
                                                              {"allreduce": 1}),
        f"allgather_of_an_unsplit_dynamic_device_axis_{_d}": (allgather_of_an_unsplit_dynamic_device_axis(_d), _d,
                                                              {"allgather": 1}),
        f"row_parallel_linear_{_d}": (row_parallel_linear(_d, k=4 * _d), _d, {"allreduce": 1}),
        f"row_parallel_linear_with_bias_{_d}": (row_parallel_linear(_d, k=4 * _d, bias=True), _d, {"allreduce": 1}),
        f"row_parallel_linear_every_extent_dynamic_{_d}": (row_parallel_linear(_d), _d, {"allreduce": 1}),
        f"row_parallel_matmul_{_d}": (row_parallel_matmul(_d), _d, {"allreduce": 1}),
        f"sequence_parallel_linear_add_{_d}": (sequence_parallel_linear_add(_d), _d, {"reduce_scatter": 1}),
        f"sequence_parallel_linear_add_static_{_d}": (sequence_parallel_linear_add(_d, dynamic=False), _d,
                                                      {"reduce_scatter": 1}),
        f"replicated_plus_sharded_{_d}": (replicated_plus_sharded(_d), _d, {"local_shard": 1}),
    }
CASES |= {
    # one all-reduce along the mesh rows (DIDx), one along its columns (DIDy): each rank
    # resolves its own row's or column's team (issue 30)
    "reductions_on_a_2d_mesh_4": (REDUCTIONS_ON_A_2D_MESH, 4, {"allreduce": 2}),
    # x's batch on DIDy, the hidden axis on DIDx: one all-reduce along the rows, nothing else
    "data_and_tensor_parallel_mlp_4": (DATA_AND_TENSOR_PARALLEL_MLP, 4, {"allreduce": 1}),
}

_COMMUNICATION = re.compile(r"\bhir\.(allgather|allreduce|reduce_scatter|scatter|gather|broadcast|reduce|send_recv|"
                            r"all_to_all|shift|send|recv|local_shard) ")


def communications(program: str) -> Counter:
    """The communications of a lowered program's text, by kind."""
    return Counter(_COMMUNICATION.findall(program))


@pytest.fixture(scope="module")
def results() -> dict[str, harness.Result]:
    cases = [harness.Case(program_from_source(source, world), i, None) for i, (source, world, _) in enumerate(CASES.values())]
    return dict(zip(CASES, harness.run_cases(cases, 0)))


@pytest.mark.parametrize("name", list(CASES))
def test_computes_what_eager_torch_computes(results, name):
    result = results[name]
    assert result.outcome == "correct", f"{result.outcome} in {result.phase}: {result.message}"


@pytest.mark.parametrize("name", list(CASES))
def test_communicates_as_little_as_nvfuser(name):
    source, world, expected = CASES[name]
    fd, _ = build(program_from_source(source, world))
    assert communications(str(harness.lower_fusion(fd.to_module()))) == Counter(expected)

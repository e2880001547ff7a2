"""The fusion and hir dialects from Python: constructors build verifying ops, and memory
effects keep every host op alive under xDSL's dead-code elimination."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, bf16, f32, i1
from xdsl.ir import Operation, SSAValue
from xdsl.printer import Printer
from xdsl.traits import get_effects
from xdsl.transforms.dead_code_elimination import DeadCodeElimination, dce, region_dce

from hostir.passes.pipeline import run_passes
from hostir_dialect import fusion, hir
from hostir_dialect.context import make_context, parse_module
from hostir_dialect.diagnostics import HostIRError, verify_located
from hostir_dialect.fusion import ReduceKind
from hostir_dialect.tensor_type import Axis, IterKind, Mesh, ParallelKind, Piece, TensorType


def tensor(*axes: int | Axis, element=f32, mesh: Mesh | None = None) -> TensorType:
    return TensorType.of(element, list(axes), mesh=mesh)


def red(extent: int) -> Axis:
    return Axis(extent, IterKind.REDUCTION)


def bcast() -> Axis:
    return Axis(1, IterKind.BROADCAST)


def printed(op: Operation) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue()


def assert_round_trips(module: ModuleOp) -> str:
    """Verifies, prints, parses back, and prints the same text again."""
    verify_located(module)
    text = printed(module)
    assert printed(parse_module(text)) == text
    return text


# --------------------------------------------------------------------------- #
# Constructors
# --------------------------------------------------------------------------- #


def build_fusion_func() -> fusion.FuncOp:
    """One fusion.func that uses every compute op's constructor."""
    t84, t42, t34 = tensor(8, 4), tensor(4, 2), tensor(3, 4)
    func = fusion.FuncOp("every_op", [t84, t42, t34, tensor(3), f32], [tensor(8, 2, red(4))])
    a, b, w, bias, scalar = func.args
    block = func.body.block

    def add(op: Operation) -> SSAValue:
        block.add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    add(fusion.SetOp(a, t84))
    add(fusion.CastOp(a, tensor(8, 4, element=bf16)))
    for op_class in fusion.UNARY_OPS.values():
        add(op_class(a, t84))
    for name, op_class in fusion.BINARY_OPS.items():
        result = tensor(8, 4, element=i1) if name in fusion.COMPARISON_FUNCTIONS else t84
        add(op_class(a, a, result))
    add(fusion.BINARY_OPS["mul"](a, scalar, t84))
    add(fusion.PermuteOp(a, [1, 0], tensor(4, 8)))
    add(fusion.ReshapeOp(a, tensor(32)))
    expanded = add(fusion.BroadcastOp(a, [0], tensor(bcast(), 8, 4)))
    add(fusion.SqueezeOp(expanded, [0], t84))
    for kind in ReduceKind:
        add(fusion.ReduceOp(kind, a, [1], tensor(8, red(4))))
    product = add(fusion.MatmulOp(a, b, tensor(8, 2, red(4))))
    add(fusion.LinearOp(a, w, None, tensor(8, 3, red(4))))
    add(fusion.LinearOp(a, w, bias, tensor(8, 3, red(4))))
    add(fusion.SliceOp(a, [0, 1], [8, 4], [2, 1], tensor(4, 3)))
    index = add(arith.ConstantOp(IntegerAttr(2, IndexType())))
    add(fusion.SelectOp(a, index, 0, tensor(4)))
    add(fusion.ReturnOp(product))
    return func


def test_every_fusion_op_builds_from_python_and_round_trips() -> None:
    text = assert_round_trips(ModuleOp([build_fusion_func()]))
    for name in ["set", "cast", "permute", "reshape", "broadcast", "squeeze", "matmul", "linear", "slice", "select",
                 *fusion.UNARY_FUNCTIONS, *fusion.ARITHMETIC_FUNCTIONS, *fusion.COMPARISON_FUNCTIONS]:
        assert f"= fusion.{name} " in text, name
    for kind in ReduceKind:
        assert f"fusion.reduce {kind} %" in text
    assert "fusion.linear %0, %2 bias %3 :" in text


def build_host_program() -> ModuleOp:
    """A host program that uses every hir op's constructor."""
    x4, x8, t84 = tensor(4), tensor(8), tensor(8, 4)
    unit = fusion.FuncOp("unit", [t84], [t84])
    neg = fusion.UNARY_OPS["neg"](unit.args[0], t84)
    unit.body.block.add_ops([neg, fusion.ReturnOp(neg.result)])

    program = hir.ProgramOp("main", [t84, x4, x8], [t84])
    a, x, y = program.args
    ops: list[Operation] = []

    def add(op: Operation) -> Operation:
        ops.append(op)
        return op

    buf = add(hir.AllocateOp(t84)).results[0]
    add(fusion.SetOp(a, t84, out=buf))
    user = add(hir.GetCurrentStreamOp()).results[0]
    add(hir.NumberOfStreamsOp())
    zero = add(arith.ConstantOp(IntegerAttr(0, IndexType()))).results[0]
    peer = add(arith.ConstantOp(IntegerAttr(1, IndexType()))).results[0]
    worker = add(hir.StreamOp(zero)).results[0]
    add(hir.SetCurrentStreamOp(worker))
    add(hir.SynchronizeOp(user))
    add(hir.AliasSelectOp(buf, zero, 0, x4))
    add(hir.AliasChunkOp(buf, zero, 0, 2, tensor(4, 4)))
    on_mesh = add(hir.AllocateOp(tensor(8, mesh=Mesh.of([0, 1])))).results[0]
    add(hir.AliasAsOp(on_mesh, tensor(2, 4, mesh=Mesh.of([0, 1]))))
    position = add(hir.TeamPositionOp([0, 1])).results[0]
    add(hir.ExtentOp(a, 1))
    add(hir.PostOnStreamOp("unit", [a], [t84]))
    add(hir.PostOnStreamOp("unit", [a], [t84], outs=[buf]))
    works = [
        add(hir.AllgatherOp(x, y, [0, 1])),
        add(hir.AllreduceOp(x, x, [0, 1], reduction=ReduceKind.SUM)),
        add(hir.ReduceScatterOp(y, x, [0, 1], reduction=ReduceKind.MAX)),
        add(hir.ScatterOp(y, x, [0, 1], root=0)),
        add(hir.GatherOp(x, y, [0, 1], root=1)),
        add(hir.BroadcastOp(x, x, [0, 1], root=0)),
        add(hir.ReduceOp(x, x, [0, 1], root=1, reduction=ReduceKind.PROD)),
        add(hir.SendRecvOp(x, x, [0, 1], root=0)),
        add(hir.AllToAllOp(y, y, [0, 1])),
        add(hir.ShiftOp(x, x, [1, 0], add(hir.TeamPositionOp([1, 0])).results[0])),
        add(hir.SendOp(x, peer)),
        add(hir.RecvOp(x, peer)),
        add(hir.AllreduceOp(x, x, [0, 1], reduction=ReduceKind.MAX, transport=hir.Transport.COPY_ENGINE, via=y)),
    ]
    add(hir.LocalShardOp(y, x, 0, [0, 1]))
    add(hir.WaitOp(works[0].results[0], position))
    for work in works:
        add(hir.WaitOp(work.results[0]))
    add(hir.DeallocateOp(buf))
    add(hir.ReturnOp(a))
    program.body.block.add_ops(ops)
    return ModuleOp([unit, program])


def test_every_hir_op_builds_from_python_and_round_trips() -> None:
    text = assert_round_trips(build_host_program())
    for op_class in hir.HIR.operations:
        assert op_class.name in text, op_class.name
    assert "hir.reduce_scatter %2 -> %1 team [0, 1] op max :" in text
    assert "hir.reduce %1 -> %1 team [0, 1] root 1 op prod :" in text
    assert "hir.allreduce %1 -> %1 via %2 team [0, 1] op max transport copy_engine :" in text
    assert "hir.recv %1, %8 :" in text
    assert "outs(%3 : !fusion.tensor<f32[8, 4]>)" in text
    assert "hir.shift %1 -> %1 team [1, 0] offset %" in text
    assert "hir.local_shard %2 -> %1 axis 0 team [0, 1] :" in text


def test_constructed_types_carry_sharding() -> None:
    sharded = TensorType.of(f32, [4, Axis(2, pieces=(Piece(2, ParallelKind.DIDX),))], mesh=Mesh.of([0, 1]))
    func = fusion.FuncOp("f", [sharded], [tensor(4, Axis(2, pieces=(Piece(2, ParallelKind.STREAM),)), mesh=Mesh.of([0, 1]))])
    copy = fusion.SetOp(func.args[0], func.function_type.outputs.data[0])  # type: ignore[arg-type]
    func.body.block.add_ops([copy, fusion.ReturnOp(copy.result)])
    text = assert_round_trips(ModuleOp([func]))
    assert "!fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2 stream], mesh=[0, 1]>" in text


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda x, y: hir.AllgatherOp(x, y, [0, 1], root=0), "hir.allgather takes no root"),
        (lambda x, y: hir.ScatterOp(y, x, [0, 1]), "hir.scatter needs root"),
        (lambda x, y: hir.AllreduceOp(x, x, [0, 1]), "needs a reduction kind"),
        (lambda x, y: hir.GatherOp(x, y, [0, 1], root=3), r"root 3 is not in team \[0, 1\]"),
        (lambda x, y: hir.AllToAllOp(y, y, []), "team must not be empty"),
        (lambda x, y: hir.LocalShardOp(x, y, 0, [0, 1]), r"the input's local shape \[4\] must be the output's \[8\] "
                                                          "with axis 0 2 times as long"),
        (lambda x, y: hir.LocalShardOp(y, x, 0, [0, 0]), r"team \[0, 0\] repeats a device"),
    ],
)
def test_constructed_collectives_are_verified(build: Callable, message: str) -> None:
    program = hir.ProgramOp("main", [tensor(4), tensor(8)], [])
    program.body.block.add_ops([build(*program.args), hir.ReturnOp()])
    with pytest.raises(HostIRError, match=message):
        verify_located(ModuleOp([program]))


def test_a_team_along_a_mesh_axis_is_each_rank_s_slice() -> None:
    grid = Mesh.of([[0, 1, 2], [3, 4, 5]])
    rows, columns = hir.Team(grid, ParallelKind.DIDX), hir.Team(grid, ParallelKind.DIDY)
    assert (rows.size, columns.size) == (3, 2)
    assert rows.members(4) == (3, 4, 5) and columns.members(4) == (1, 4) and rows.members(6) is None
    assert rows.members(3) is rows.members(5)  # one tuple per team, shared by its members
    assert rows.teams() == [(0, 1, 2), (3, 4, 5)] and columns.teams() == [(0, 3), (1, 4), (2, 5)]
    assert [rows.position_of(d) for d in (3, 4, 6)] == [0, 1, -1] and columns.position_of(4) == 1
    listed = hir.Team.of([2, 0, 1])
    assert listed.members(0) == (2, 0, 1) and listed.position_of(1) == 2 and listed.teams() == [(2, 0, 1)]
    assert str(rows) == "[[0, 1, 2], [3, 4, 5]] along didx" and str(hir.Team.of(range(9))) == "[0, ..., 8]"


def test_a_rooted_collective_on_slices_has_a_root_in_each() -> None:
    t = TensorType.of(f32, [4], mesh=Mesh.of([[0, 1], [2, 3]]))
    program = hir.ProgramOp("main", [t], [])
    (x,) = program.args
    scatter = hir.ScatterOp(x, x, hir.Team(t.mesh, ParallelKind.DIDY), root=1)
    assert [scatter.root_of(d) for d in range(4)] == [2, 3, 2, 3]
    assert [scatter.needs_input(d) for d in range(4)] == [False, False, True, True]
    assert scatter.team_of(1) == (1, 3) and scatter.team_size == 2 and not scatter.takes_part(4)


def test_constructed_compute_ops_are_verified() -> None:
    func = fusion.FuncOp("f", [tensor(8, 4), tensor(8, 2)], [])
    a, b = func.args
    func.body.block.add_ops([fusion.MatmulOp(a, b, tensor(8, 2, red(4))), fusion.ReturnOp()])
    with pytest.raises(HostIRError, match="'fusion.matmul' op inner dimensions do not match: a has K=4, b has K=8"):
        verify_located(ModuleOp([func]))


@pytest.mark.parametrize("source, target, groups", [
    ((2, 3, 4), (6, 4), [([0, 1], [0]), ([2], [1])]),
    ((4, 1), (4,), [([0, 1], [0])]),  # a trailing size-1 axis joins the group before it
    # A size-1 axis on one side joins the group before it, so that 16 becomes 16, not 1 (a
    # device split of 16 could not be replayed on the 1); on both sides, ones pair.
    ((4, 16), (4, 1, 16), [([0], [0, 1]), ([1], [2])]),
    ((4, 1, 16), (4, 16), [([0, 1], [0]), ([2], [1])]),
    ((4, 1, 16), (4, 1, 16), [([0], [0]), ([1], [1]), ([2], [2])]),
    ((16,), (1, 16), [([0], [0, 1])]),
    # A dynamic extent ends matching from either side; what lies between is one group.
    ((8, 8, -1), (8, -1, 4, 3), [([0], [0]), ([1, 2], [1, 2, 3])]),
    ((-1, 2, 3), (-1, 6), [([0], [0]), ([1, 2], [1])]),
    ((2, -1, 5), (2, -1, 5), [([0], [0]), ([1], [1]), ([2], [2])]),
    ((-1, 1), (-1,), [([0, 1], [0])]),
    # Dynamic extents pair with each other where everything else matches statically.
    ((-1, 6, -1), (-1, 2, 3, -1), [([0], [0]), ([1], [1, 2]), ([2], [3])]),
    ((-1, -1), (-1, 4), [([0, 1], [0, 1])]),  # the second -1 would have to be 4: one group
    ((3, -1, -1), (3, 2, -1, -1), [([0], [0]), ([1], [1, 2]), ([2], [3])]),  # a split by a static factor
    ((-1, 2, -1), (-1, -1), [([0], [0]), ([1, 2], [1])]),  # a merge
    ((-1, 2), (2, -1), [([0, 1], [0, 1])]),  # the factor 2 left over: one group
    ((-1, 1, 2, -1), (2, -1, 1, 2, -1), [([0], [0, 1]), ([1], [2]), ([2], [3]), ([3], [4])]),  # ones pair
    ((-1, 1, -1), (-1, -1), [([0, 1], [0]), ([2], [1])]),  # a lone one joins the group before it
])
def test_reshape_groups_axes_only_where_products_are_known_to_match(
        source: tuple[int, ...], target: tuple[int, ...], groups: list) -> None:
    func = fusion.FuncOp("f", [tensor(*source)], [])
    reshape = fusion.ReshapeOp(func.args[0], tensor(*target))
    assert reshape.groups() == groups


def test_a_dynamic_axis_split_by_static_factors_pairs_as_its_pieces() -> None:
    """The rFactor's [?(2 didx, ?), ?] -> [2 didx, ?, ?]: axis 0 becomes the first two."""
    mesh, devices = Mesh.of([0, 1]), Piece(2, ParallelKind.DIDX)
    func = fusion.FuncOp("f", [tensor(Axis(-1, pieces=(devices, Piece(-1))), -1, mesh=mesh)], [])
    reshape = fusion.ReshapeOp(func.args[0], tensor(Axis(2, pieces=(devices,)), -1, -1, mesh=mesh))
    assert reshape.groups() == [([0], [0, 1]), ([1], [2])]


# --------------------------------------------------------------------------- #
# Memory effects and dead-code elimination
# --------------------------------------------------------------------------- #

HOST_PROGRAM = """
fusion.func @unit(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %dead_in_unit = fusion.abs %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %b = fusion.exp %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %b : !fusion.tensor<f32[8, 4]>
}
hir.program @main(%a: !fusion.tensor<f32[8, 4]>, %x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  %dead_pure = fusion.neg %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %dead_count = hir.number_of_streams
  %dead_extent = hir.extent %a axis 0 : !fusion.tensor<f32[8, 4]>
  %buf = hir.allocate : !fusion.tensor<f32[8, 4]>
  %unused_buf = hir.allocate : !fusion.tensor<f32[8, 4]>
  %into = fusion.exp %a into %buf : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %user = hir.get_current_stream
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %dead_stream = hir.stream %c1
  scf.for %i = %c0 to %c8 step %c1 {
    %worker = hir.stream %i
    hir.set_current_stream %worker
    hir.synchronize %user
    %dead_in_loop = fusion.relu %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
    %dead_view = hir.alias_select %a[%i] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
    %row = hir.alias_select %buf[%i] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
    %copied = fusion.set %x into %row : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  }
  %ag = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  %ar = hir.allreduce %x -> %x team [0, 1] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %rs = hir.reduce_scatter %y -> %x team [0, 1] op sum : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  %sc = hir.scatter %y -> %x team [0, 1] root 0 : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  %ga = hir.gather %x -> %y team [0, 1] root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  %bc = hir.broadcast %x -> %x team [0, 1] root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %rd = hir.reduce %x -> %x team [0, 1] root 0 op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %sr = hir.send_recv %x -> %x team [0, 1] root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %a2a = hir.all_to_all %y -> %y team [0, 1] : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>
  %snd = hir.send %x, %c1 : !fusion.tensor<f32[4]>
  %rcv = hir.recv %x, %c1 : !fusion.tensor<f32[4]>
  hir.wait %ar
  hir.wait %ag
  hir.wait %rs
  hir.wait %sc
  hir.wait %ga
  hir.wait %bc
  hir.wait %rd
  hir.wait %sr
  hir.wait %a2a
  hir.wait %snd
  hir.wait %rcv
  %posted = hir.post_on_stream @unit(%a) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
  %posted_into = hir.post_on_stream @unit(%a) outs(%buf : !fusion.tensor<f32[8, 4]>) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
  hir.deallocate %buf : !fusion.tensor<f32[8, 4]>
  hir.return
}
"""

DEAD = {"dead_in_unit", "dead_pure", "dead_count", "dead_extent", "dead_stream", "dead_in_loop", "dead_view"}


def result_names(module: ModuleOp) -> set[str]:
    return {r.name_hint for op in module.walk() for r in op.results if r.name_hint}


def side_effecting_ops(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("hir.") and not op.name.endswith(("program", "return"))
            and op.name not in ("hir.stream", "hir.number_of_streams", "hir.extent", "hir.alias_select")]


@pytest.mark.parametrize(
    "eliminate",
    [dce, lambda module: region_dce(module.body), lambda module: DeadCodeElimination().apply(make_context(), module)],
    ids=["dce", "region_dce", "dce-pass"],
)
def test_dead_code_elimination_keeps_every_host_effect(eliminate: Callable[[ModuleOp], object]) -> None:
    module = parse_module(HOST_PROGRAM)
    names_before = result_names(module)
    effects_before = side_effecting_ops(module)
    eliminate(module)
    verify_located(module)
    names_after = result_names(module)
    # only the dead pure values went away
    assert names_before - names_after == DEAD
    # every side-effecting hir op is still there, in order (unused allocations included),
    # and so is every compute op with a destination
    assert side_effecting_ops(module) == effects_before
    assert {"into", "copied", "unused_buf", "ag", "snd", "rcv", "posted", "posted_into", "user", "worker"} <= names_after


def test_effects_of_compute_ops_depend_on_the_destination() -> None:
    module = parse_module(HOST_PROGRAM)
    by_name = {r.name_hint: r.owner for op in module.walk() for r in op.results}
    assert get_effects(by_name["dead_pure"]) == set()
    assert get_effects(by_name["into"])  # writes its destination
    assert get_effects(by_name["copied"])
    for pure in ("dead_count", "dead_extent", "dead_stream", "dead_view"):
        assert get_effects(by_name[pure]) == set(), pure
    for effectful in ("buf", "user", "ag", "snd", "rcv", "posted"):
        assert get_effects(by_name[effectful]), effectful


def test_pass_manager_dce_pass_keeps_host_ops() -> None:
    """The same guarantee when DCE runs as a pass through the pass manager."""
    module = parse_module(HOST_PROGRAM)
    before = side_effecting_ops(module)
    run_passes(make_context(), module, [DeadCodeElimination()])
    assert side_effecting_ops(module) == before
    assert "dead_pure" not in result_names(module)

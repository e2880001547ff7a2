"""The segmenter: the merge predicate is its only policy; merges never create cycles and
the groups come back in a valid run order."""

from __future__ import annotations

import pytest

from hostir.passes.lower_to_host import lower_module
from hostir.passes.segmenter import Group, segment, should_merge_segmented_groups
from hostir_dialect import fusion
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import HostIRError

T = "!fusion.tensor<f32[4, 8]>"


def func_of(body: str, args: str = f"%a: {T}", results: str = T) -> fusion.FuncOp:
    module = parse_module(f"fusion.func @f({args}) -> {results} {{\n{body}\n}}")
    (func,) = module.ops
    assert isinstance(func, fusion.FuncOp)
    return func


def names(groups: list[Group]) -> list[list[str]]:
    return [[op.results[0].name_hint for op in g.ops] for g in groups]


def unary(name: str, fn: str, x: str) -> str:
    return f"  %{name} = fusion.{fn} %{x} : {T} -> {T}"


def binary(name: str, fn: str, x: str, y: str) -> str:
    return f"  %{name} = fusion.{fn} %{x}, %{y} : {T}, {T} -> {T}"


def ret(x: str) -> str:
    return f"  fusion.return %{x} : {T}"


CHAIN = "\n".join([
    unary("r", "relu", "a"), unary("e", "exp", "r"), binary("m", "mul", "e", "e"),
    unary("n", "neg", "m"), unary("s", "sin", "n"), ret("s"),
])


def merge_all(first: Group, second: Group) -> bool:
    return True


def merge_unary_only(first: Group, second: Group) -> bool:
    ops = (*first.ops, *second.ops)
    return all(isinstance(op, tuple(fusion.UNARY_OPS.values())) for op in ops) and "exp" not in {
        op.name.split(".")[1] for op in ops
    }


def test_default_predicate_keeps_standalone_ops_alone():
    assert names(segment(func_of(CHAIN))) == [["r", "e"], ["m"], ["n", "s"]]


def test_merge_everything_gives_one_group():
    assert names(segment(func_of(CHAIN), merge_all)) == [["r", "e", "m", "n", "s"]]


def test_a_different_predicate_gives_different_groups():
    # unary ops merge, except exp: r | e | m | n+s
    assert names(segment(func_of(CHAIN), merge_unary_only)) == [["r"], ["e"], ["m"], ["n", "s"]]


def test_no_merge_creates_a_cycle():
    # r -> m -> t and r -> t: merging r with t would make {r, t} -> m -> {r, t}.
    body = "\n".join([unary("r", "relu", "a"), binary("m", "mul", "r", "r"), binary("t", "add", "m", "r"), ret("t")])

    def all_but_mul(first: Group, second: Group) -> bool:
        return not any(op.name == "fusion.mul" for op in (*first.ops, *second.ops))

    assert names(segment(func_of(body), all_but_mul)) == [["r"], ["m"], ["t"]]


def test_run_order_is_topological_and_groups_know_their_boundary():
    # Two independent chains meeting in an add; the merged group outputs what is used outside.
    body = "\n".join([
        unary("x1", "relu", "a"), unary("y1", "exp", "b"), unary("x2", "neg", "x1"),
        unary("y2", "abs", "y1"), binary("z", "add", "x2", "y2"), unary("w", "exp", "x1"), ret("z"),
    ])
    func = func_of(body, args=f"%a: {T}, %b: {T}")
    groups = segment(func)
    assert names(groups) == [["x1", "x2", "w"], ["y1", "y2"], ["z"]]
    first = groups[0]
    assert [v.name_hint for v in first.inputs()] == ["a"]
    assert [v.name_hint for v in first.outputs()] == ["x2"]  # %w is dead, x1 stays inside
    seen: set = set(func.args)
    for group in groups:
        assert all(v in seen for v in group.inputs())
        seen.update(r for op in group.ops for r in op.results)


def test_default_predicate_rejects_any_standalone_op():
    func = func_of(CHAIN)
    ops = {op.results[0].name_hint: Group([op]) for op in func.body.block.ops if op.results}
    assert should_merge_segmented_groups(ops["r"], ops["e"])
    assert not should_merge_segmented_groups(ops["e"], ops["m"])


def test_lowering_with_a_custom_predicate_outlines_the_merged_group():
    module = parse_module(f"fusion.func @f(%a: {T}) -> {T} {{\n{CHAIN}\n}}")
    lower_module(module, merge_all)
    text = str(module)
    assert "hir.post_on_stream @f_unit0(%a)" in text and "fusion.mul" in text.split("fusion.func @f_unit0")[1]


def test_a_communicating_op_never_hides_in_a_unit():
    sharded, gathered = "!fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>", "!fusion.tensor<f32[2, 8], mesh=[0, 1]>"
    module = parse_module(f"""fusion.func @f(%a: {sharded}) -> {gathered} {{
  %g = fusion.set %a : {sharded} -> {gathered}
  %r = fusion.relu %g : {gathered} -> {gathered}
  fusion.return %r : {gathered}
}}""", "f.mlir")
    with pytest.raises(HostIRError, match=r"f.mlir:2:3: error: 'fusion.set' op communicates between devices and cannot be fused"):
        lower_module(module, merge_all)


def test_a_unit_cannot_take_a_scalar_argument():
    module = parse_module(f"""fusion.func @f(%a: {T}, %s: f32) -> {T} {{
  %m = fusion.mul %a, %s : {T}, f32 -> {T}
  %r = fusion.relu %m : {T} -> {T}
  fusion.return %r : {T}
}}""")
    with pytest.raises(HostIRError, match="a kernel unit cannot take the non-tensor input s"):
        lower_module(module, merge_all)

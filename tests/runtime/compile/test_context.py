"""The function compiler: a function body becomes one generated Python function whose
lines are the ops' torch calls; a failure names the op whose line raised."""

import pytest
import torch

from hostir.runtime import Evaluator, ExecutionError, run_spmd, shard_tensor, unshard
from hostir.runtime.compile.context import OUTLINING_DEPTH, identifier
from hostir_dialect.context import parse_module

F = "!fusion.tensor<f32[4, 8]>"
I32 = "!fusion.tensor<i32[4]>"


def program(body: str, args: str, results: str, units: str = "") -> str:
    return f"hir.program @main({args}) -> ({results}) {{\n{body}\n}}\n{units}"


def loop(body: str, yields: str = "") -> str:
    return f"""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {{
{body}
  }}"""


def test_a_stream_loop_is_one_python_loop_of_the_ops_calls():
    body = loop(f"""
    %n = hir.number_of_streams
    %key = arith.remui %i, %n : index
    %s = hir.stream %key
    hir.set_current_stream %s
    %row = hir.alias_select %o[%i] axis 0 : {F} -> !fusion.tensor<f32[8]>
    %x = hir.alias_select %a[%i] axis 0 : {F} -> !fusion.tensor<f32[8]>
    %y = fusion.neg %x into %row : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>""")
    evaluator = Evaluator(parse_module(program(f"  %o = hir.allocate : {F}{body}\n  hir.return %o : {F}", f"%a: {F}", F)))
    source = evaluator.compiled.source
    assert source.count("def ") == 1 and source.count("for ") == 1, source
    assert "v0_a.select(0, " in source and ".set_current(" in source, source
    a = torch.randn(4, 8)
    (out,) = evaluator.run([a])
    torch.testing.assert_close(out, -a)


def test_loop_carried_values_are_assigned_at_once():
    # Yielding (%b, %a) swaps the pair on every trip: assigned one after the other, the
    # second would read the first's new value.
    body = f"""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %ra, %rb = scf.for %i = %c0 to %c3 step %c1 iter_args(%p = %a, %q = %b) -> ({F}, {F}) {{
    scf.yield %q, %p : {F}, {F}
  }}
  hir.return %ra, %rb : {F}, {F}"""
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    ra, rb = Evaluator(parse_module(program(body, f"%a: {F}, %b: {F}", f"{F}, {F}"))).run([a, b])
    assert ra is b and rb is a


def test_a_failure_in_a_unit_names_the_units_op():
    units = f"""fusion.func @divide(%x: {I32}, %y: {I32}) -> {I32} {{
  %q = fusion.div %x, %y : {I32}, {I32} -> {I32}
  fusion.return %q : {I32}
}}"""
    body = f"""  %r = hir.post_on_stream @divide(%a, %b) : ({I32}, {I32}) -> ({I32})
  hir.return %r : {I32}"""
    evaluator = Evaluator(parse_module(program(body, f"%a: {I32}, %b: {I32}", I32, units), "units.mlir"))
    with pytest.raises(ExecutionError, match=r"^units.mlir:6:3: error: 'fusion.div' op failed: .*[Zz]ero"):
        evaluator.run([torch.ones(4, dtype=torch.int32), torch.zeros(4, dtype=torch.int32)])


def test_a_failure_in_a_loop_names_the_op_of_the_failing_line():
    body = loop(f"""    %q = fusion.div %a, %b : {I32}, {I32} -> {I32}""") + f"\n  hir.return %a : {I32}"
    evaluator = Evaluator(parse_module(program(body, f"%a: {I32}, %b: {I32}", I32), "loop.mlir"))
    with pytest.raises(ExecutionError, match=r"^loop.mlir:7:5: error: 'fusion.div' op failed"):
        evaluator.run([torch.ones(4, dtype=torch.int32), torch.zeros(4, dtype=torch.int32)])
    (same,) = evaluator.run([torch.ones(4, dtype=torch.int32), torch.ones(4, dtype=torch.int32)])
    assert same.tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("depth", [OUTLINING_DEPTH - 1, OUTLINING_DEPTH, 3 * OUTLINING_DEPTH + 1, 150])
def test_loops_nested_deeper_than_python_compiles_in_one_function_run(depth, monkeypatch):
    # Past OUTLINING_DEPTH the loops become functions of their own: the buffer the
    # innermost body allocates on the outer loop's first trip stays allocated on the others.
    opening = "scf.for %i = %c0 to %c3 step %c1 {\n" + "".join(
        f"scf.for %i{k} = %c0 to %c1 step %c1 {{\n" for k in range(depth - 1))
    body = f"""  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
{opening}%b = hir.allocate : {I32}
%s = fusion.add %acc, %one into %b : {I32}, {I32} -> {I32}
%t = fusion.set %s into %acc : {I32} -> {I32}
{"}" * depth}
  hir.return %acc : {I32}"""
    allocations = []
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: allocations.append(a) or real_empty(*a, **k))
    evaluator = Evaluator(parse_module(program(body, f"%acc: {I32}, %one: {I32}", I32)))
    (total,) = evaluator.run([torch.zeros(4, dtype=torch.int32), torch.ones(4, dtype=torch.int32)])
    assert total.tolist() == [3] * 4 and len(allocations) == 1
    assert evaluator.compiled.source.count("for ") == min(depth, OUTLINING_DEPTH - 1)  # the body is one block


def test_a_failure_in_an_outlined_loop_names_its_op():
    depth = OUTLINING_DEPTH + 2
    opening = "".join(f"scf.for %i{k} = %c0 to %c1 step %c1 {{\n" for k in range(depth))
    body = f"""  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
{opening}%q = fusion.div %a, %b : {I32}, {I32} -> {I32}
{"}" * depth}
  hir.return %a : {I32}"""
    evaluator = Evaluator(parse_module(program(body, f"%a: {I32}, %b: {I32}", I32), "deep.mlir"))
    with pytest.raises(ExecutionError, match=rf"^deep.mlir:{depth + 4}:1: error: 'fusion.div' op failed"):
        evaluator.run([torch.ones(4, dtype=torch.int32), torch.zeros(4, dtype=torch.int32)])


SYMBOL_NAMES = ["ﬁ", "fi", "²", "\x00", "a.b", "a_b", "a__x2e_b", "é"]


def test_symbol_names_become_distinct_ascii_identifiers():
    # Python reads `ﬁ` as `fi` (NFKC) and refuses `²` in identifiers; `\w` keeps both.
    identifiers = [identifier(name) for name in SYMBOL_NAMES]
    assert all(f"hostir_{i}".isidentifier() and i.isascii() for i in identifiers), identifiers
    assert len(set(identifiers)) == len(SYMBOL_NAMES), identifiers


def neg(name: str, t: str) -> str:
    quoted = '"' + name.replace("\x00", "\\00") + '"'  # MLIR writes a byte as \XX
    return f"""fusion.func @{quoted}(%a: {t}) -> {t} {{
  %b = fusion.neg %a : {t} -> {t}
  fusion.return %b : {t}
}}"""


@pytest.mark.parametrize("name", ["ﬁ", "²", "\x00"])
@pytest.mark.parametrize("t, world_size", [("!fusion.tensor<f32[2, 4]>", 1),
                                           ("!fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>", 2)])
def test_programs_of_any_symbol_name_compute_what_eager_torch_computes(name, t, world_size):
    module = parse_module(neg(name, t))
    x = torch.randn(2, 4)
    tensor_type = module.body.block.first_op.function_type.inputs.data[0]
    shards = [[shard_tensor(x, tensor_type, rank)] for rank in range(world_size)]
    outputs = run_spmd(module, shards, world_size=world_size, backend="gloo", lower=True)
    torch.testing.assert_close(unshard({rank: out[0] for rank, out in enumerate(outputs)}, tensor_type), -x)

"""Which values share a buffer and what a function does with it; the evaluator's views: an
op whose value is a view of its input (a broadcast, a set, ...) copies nothing where no op
writes either buffer, and still copies where one does."""

from __future__ import annotations

import torch

from hostir.passes import lower
from hostir.runtime import Evaluator, run_fusion
from hostir.runtime.buffers import BufferUses
from hostir_dialect import hir
from hostir_dialect.context import parse_module

T = "!fusion.tensor<f32[4, 8]>"
ROW = "!fusion.tensor<f32[8]>"
BCAST = "!fusion.tensor<f32[b1, 4, 8]>"


def the_program(text: str) -> hir.ProgramOp:
    (program,) = [op for op in parse_module(text).ops if isinstance(op, hir.ProgramOp)]
    return program


def test_roots_writes_and_returns():
    program = the_program(f"""hir.program @main(%a: {T}, %o: {T}) -> {T} {{
  %c0 = arith.constant 0 : index
  %v = hir.alias_select %o[%c0] axis 0 : {T} -> {ROW}
  %x = hir.alias_select %a[%c0] axis 0 : {T} -> {ROW}
  %n = fusion.neg %x into %v : {ROW} -> {ROW}
  %f = fusion.exp %a : {T} -> {T}
  %g = fusion.set %f : {T} -> {T}
  hir.return %g : {T}
}}""")
    values = {v.name_hint: v for op in program.walk() for v in op.results}
    a, o = program.args
    uses = BufferUses(program)
    assert uses.argument_of(values["v"]) is o and uses.argument_of(values["n"]) is o
    assert uses.argument_of(values["x"]) is a and uses.argument_of(values["f"]) is None
    assert uses.immutable(a) and uses.immutable(values["x"]) and uses.immutable(values["f"])
    assert not uses.immutable(o) and not uses.immutable(values["n"])  # written
    assert not uses.immutable(values["g"]) and uses.unwritten(values["g"])  # returned


def broadcast_then_add(write_source: bool) -> str:
    """%b: a broadcast of %a read by an add; with `write_source`, %a's buffer is negated in
    place after the broadcast, so %b must be a copy of the old values."""
    source = f"""  %s = fusion.set %a : {T} -> {T}
  %b = fusion.broadcast %s dims [0] : {T} -> {BCAST}
""" + (f"  %m = fusion.neg %s into %s : {T} -> {T}\n" if write_source else "")
    return f"""hir.program @main(%a: {T}, %c: {BCAST}) -> {BCAST} {{
{source}  %d = fusion.add %b, %c : {BCAST}, {BCAST} -> {BCAST}
  hir.return %d : {BCAST}
}}"""


def clones_in_one_run(evaluator: Evaluator, inputs: list) -> tuple[list, int]:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        outputs = evaluator.run(inputs)
    return outputs, sum(event.name == "aten::clone" for event in profile.events())


def test_views_replace_copies_of_buffers_nothing_writes():
    a, c = torch.randn(4, 8), torch.randn(1, 4, 8)
    (d,), clones = clones_in_one_run(Evaluator(parse_module(broadcast_then_add(False))), [a, c])
    torch.testing.assert_close(d, a + c)
    assert clones == 0


def test_a_buffer_written_later_is_copied_before():
    a, c = torch.randn(4, 8), torch.randn(1, 4, 8)
    (d,), clones = clones_in_one_run(Evaluator(parse_module(broadcast_then_add(True))), [a, c])
    torch.testing.assert_close(d, a + c)
    assert clones == 2  # the set and the broadcast


def test_the_broadcast_unit_of_matmul_reduce_scatter_is_a_view():
    """The broadcast of the weight in matmul+RS runs as a post_on_stream unit; it used to
    copy the weight every run."""
    a, b = "!fusion.tensor<f32[2, 2, 3, 4]>", "!fusion.tensor<f32[4, 5]>"
    bb, u = "!fusion.tensor<f32[b1, b1, 4, 5]>", "!fusion.tensor<f32[2 stream, 2, 3, 5, r4]>"
    fusion_text = f"""fusion.func @f(%a: {a}, %b: {b}) -> {u} {{
  %bb = fusion.broadcast %b dims [0, 1] : {b} -> {bb}
  %u = fusion.matmul %a, %bb : {a}, {bb} -> {u}
  fusion.return %u : {u}
}}"""
    host = lower(parse_module(fusion_text))
    assert any(isinstance(op, hir.PostOnStreamOp) for op in host.walk())
    x, w = torch.randn(2, 2, 3, 4), torch.randn(4, 5)
    (got,), clones = clones_in_one_run(Evaluator(host), [x, w])
    torch.testing.assert_close(got, run_fusion(parse_module(fusion_text), [x, w])[0])
    assert clones == 0


RELABEL = "!fusion.tensor<f32[8, 4]>"


def relabelling(between: str) -> str:
    """A unit that only relabels %buf's elements (a permute), read after `between`."""
    return f"""hir.program @main(%a: {T}, %b: {T}) -> {T} {{
  %buf = hir.allocate : {T}
  %n = fusion.neg %a into %buf : {T} -> {T}
  %p = hir.post_on_stream @relabel(%buf) : ({T}) -> {RELABEL}
{between}
  %q = fusion.permute %p dims [1, 0] : {RELABEL} -> {T}
  %r = fusion.add %q, %b : {T}, {T} -> {T}
  hir.return %r : {T}
}}
fusion.func @relabel(%x: {T}) -> {RELABEL} {{
  %y = fusion.permute %x dims [1, 0] : {T} -> {RELABEL}
  fusion.return %y : {RELABEL}
}}"""


def test_a_relabelling_unit_gives_views_only_while_nothing_writes_its_input():
    """Views of the unit's input stay valid while its results are read only if nothing
    writes the input's buffer in between: there the unit copies, and the value is right."""
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    for between, views in (("", True), (f"  %o = fusion.abs %b into %buf : {T} -> {T}", False)):
        program = the_program(relabelling(between))
        post = next(op for op in program.walk() if isinstance(op, hir.PostOnStreamOp))
        assert BufferUses(program).unwritten_while_read(post) is views
        (got,) = Evaluator(program.parent_op()).run([a, b])
        torch.testing.assert_close(got, -a + b)

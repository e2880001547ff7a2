"""stream-parallel-type: grouping, slicing and stream handling checked on the IR (the
exact op sequences are in lit_tests/passes/stream_parallel_type*.mlir)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import f32

from hostir.passes import build_passes
from hostir.passes.chunking import sliced_type
from hostir.passes.stream_parallel_type import StreamParallelType, group
from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module
from hostir_dialect.diagnostics import HostIRError
from hostir_dialect.tensor_type import TensorType


def t(shape: str) -> str:
    return f"!fusion.tensor<f32[{shape}]>"


def program(body: str, args: str = f"%a: {t('4, 8')}", results: str = t("4 stream, 8")) -> str:
    return f"hir.program @p({args}) -> {results} {{\n{body}\n}}"


TWO_OPS = program(f"""
  %b = fusion.set %a : {t('4, 8')} -> {t('4 stream, 8')}
  %c = fusion.add %b, %a : {t('4 stream, 8')}, {t('4, 8')} -> {t('4 stream, 8')}
  %d = fusion.mul %c, %a : {t('4 stream, 8')}, {t('4, 8')} -> {t('4 stream, 8')}
  hir.return %d : {t('4 stream, 8')}""")

THREE_SETS = program(f"""
  %b = fusion.set %a : {t('4, 8')} -> {t('4 stream, 8')}
  %c = fusion.set %b : {t('4 stream, 8')} -> {t('4, 8')}
  %d = fusion.set %c : {t('4, 8')} -> {t('4 stream, 8')}
  hir.return %d : {t('4 stream, 8')}""")


def lowered(text: str, **options) -> hir.ProgramOp:
    module = parse_module(text)
    StreamParallelType(**options).apply(make_context(), module)
    module.verify()
    (prog,) = [op for op in module.ops if isinstance(op, hir.ProgramOp)]
    return prog


def loops(prog: hir.ProgramOp) -> list[scf.ForOp]:
    return [op for op in prog.body.block.ops if isinstance(op, scf.ForOp)]


def names(block) -> list[str]:
    return [op.name for op in block.ops]


def test_grouping_merges_adjacent_mapped_ops_and_splits_at_other_ops():
    merged = group(parse_module(TWO_OPS).body.block.first_op.body.block)
    assert [len(loop.slicings) for loop in merged] == [3]
    split = group(parse_module(THREE_SETS).body.block.first_op.body.block)
    assert [[s.op.result.name_hint for s in loop.slicings] for loop in split] == [["b"], ["d"]]


def test_ops_of_one_shape_share_a_slicing_by_positions():
    """slicing_of answers a compute op from the ops of its shape seen before: each op
    gets its own results and operand positions, and a different shape its own answer."""
    text = program(f"""
  %b = fusion.set %a : {t('4, 8')} -> {t('4 stream, 8')}
  %c = fusion.add %b, %a : {t('4 stream, 8')}, {t('4, 8')} -> {t('4 stream, 8')}
  %d = fusion.add %c, %a : {t('4 stream, 8')}, {t('4, 8')} -> {t('4 stream, 8')}
  %e = fusion.add %a, %d : {t('4, 8')}, {t('4 stream, 8')} -> {t('4 stream, 8')}
  hir.return %e : {t('4 stream, 8')}""")
    (loop,) = group(parse_module(text).body.block.first_op.body.block)
    _, c, d, e = loop.slicings
    for s in (c, d, e):
        assert s.axes == {s.op.result: 0} and s.chunked() == {v: 0 for v in s.op.operands}
    assert c.op.operands[0] is not d.op.operands[0] and d.op.operands[0] is c.op.result


def test_top_level_shape_per_stream_region():
    prog = lowered(THREE_SETS)
    kinds = [n for n in names(prog.body.block) if n != "arith.constant"]
    assert kinds == [
        "hir.allocate", "hir.get_current_stream", "scf.for", "scf.for",
        "fusion.set",
        "hir.allocate", "hir.get_current_stream", "scf.for", "scf.for",
        "hir.return",
    ]


def test_sync_loop_only_synchronizes_and_main_loop_returns_to_the_user_stream():
    prog = lowered(TWO_OPS)
    user = next(op for op in prog.body.block.ops if isinstance(op, hir.GetCurrentStreamOp)).result
    sync, main = loops(prog)
    assert names(sync.body.block) == [
        "hir.number_of_streams", "arith.remui", "hir.stream", "hir.set_current_stream", "hir.synchronize", "scf.yield",
    ]
    assert sync.body.block.ops.last.prev_op.stream is user  # type: ignore[union-attr]
    ops = list(main.body.block.ops)
    worker = ops[2].result
    assert isinstance(ops[3], hir.SetCurrentStreamOp) and ops[3].stream is worker
    assert isinstance(ops[-3], hir.SetCurrentStreamOp) and ops[-3].stream is user
    assert isinstance(ops[-2], hir.SynchronizeOp) and ops[-2].stream is worker
    assert not any(isinstance(op, hir.SynchronizeOp) and op.stream is user for op in ops)


def test_one_select_per_tensor_per_loop():
    (_, main) = loops(lowered(TWO_OPS))
    selected = [op.input.name_hint for op in main.body.block.ops if isinstance(op, hir.AliasSelectOp)]
    assert sorted(selected) == ["a", "b", "c", "d"]


def test_results_after_the_loop_read_the_full_buffer():
    prog = lowered(THREE_SETS)
    middle = next(op for op in prog.body.block.ops if op.name == "fusion.set")
    assert isinstance(middle.input.owner, hir.AllocateOp)
    returned = prog.body.block.last_op.operands[0]
    assert isinstance(returned.owner, hir.AllocateOp)


def test_bounded_intermediates_allocates_chunks_in_the_loop():
    prog = lowered(TWO_OPS, bounded_intermediates=True)
    top = [op.result.name_hint for op in prog.body.block.ops if isinstance(op, hir.AllocateOp)]
    assert top == ["d"]
    (_, main) = loops(prog)
    local = [op.result for op in main.body.block.ops if isinstance(op, hir.AllocateOp)]
    freed = [op.buffer for op in main.body.block.ops if isinstance(op, hir.DeallocateOp)]
    assert [v.name_hint for v in local] == ["b_i", "c_i"] and freed == local


def test_pass_option_from_the_pipeline_spelling():
    (spt,) = build_passes("stream-parallel-type{bounded-intermediates=true}")
    assert isinstance(spt, StreamParallelType) and spt.bounded_intermediates


def test_program_without_stream_axes_is_unchanged():
    text = program(f"""
  %b = fusion.neg %a : {t('4, 8')} -> {t('4, 8')}
  hir.return %b : {t('4, 8')}""", results=t("4, 8"))
    module = parse_module(text)
    before = str(module)
    StreamParallelType().apply(make_context(), module)
    assert str(module) == before


def test_chunk_type_drops_the_axis_from_the_allocation_order():
    full = TensorType.of(f32, [4, 8, 2], alloc_order=[2, 0, 1])
    chunk = sliced_type(full, 0)
    assert chunk.shape == (8, 2) and chunk.allocation_order() == (1, 0)


def test_precondition_errors_name_the_op_and_its_location():
    chunked = "!fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]>"
    text = program(f"""
  %b = fusion.set %a : {chunked} -> {t('4, 8')}
  hir.return %b : {t('4, 8')}""", args=f"%a: {chunked}", results=t("4, 8"))
    module = parse_module(text, "prog.mlir")
    with pytest.raises(HostIRError, match=r"^prog.mlir:1:1: error: 'hir.program' op input 0 .* is allocated one stream chunk at a time"):
        StreamParallelType().apply(make_context(), module)


def test_a_stream_axis_of_an_input_is_sliced_chunk_by_chunk():
    """nvFuser's row-parallel overlap puts Stream on an input: the caller passes it whole,
    each iteration reads its chunk."""
    prog = lowered(program(f"""
  %b = fusion.neg %a : {t('4 stream, 8')} -> {t('4 stream, 8')}
  hir.return %b : {t('4 stream, 8')}""", args=f"%a: {t('4 stream, 8')}", results=t("4 stream, 8")))
    (loop,) = [op for op in loops(prog) if any(isinstance(o, hir.AliasSelectOp) for o in op.walk())]
    selected = {op.input for op in loop.walk() if isinstance(op, hir.AliasSelectOp)}
    assert prog.args[0] in selected


@pytest.mark.parametrize(
    "op, result",
    [
        (f"fusion.reduce sum %a dims [0] : {t('4, 8')} -> {t('r4 stream, 8')}", t("r4 stream, 8")),
        (f"fusion.reshape %a : {t('4, 8')} -> {t('32 stream')}", t("32 stream")),
        (f"fusion.reshape %a : {t('4, 8')} -> {t('32(2 stream, 16)')}", t("32(2 stream, 16)")),
    ],
)
def test_an_op_that_cannot_compute_chunks_runs_whole(op, result):
    """Stream schedules and never changes what is computed: no loop, no refusal (a
    Stream on a split axis with a warning that says so)."""
    from hostir.passes.stream_parallel_type import UnpipelinedStreamWarning

    split = "(2 stream" in result
    with pytest.warns(UnpipelinedStreamWarning) if split else contextlib.nullcontext():
        prog = lowered(program(f"  %b = {op}\n  hir.return %b : {result}", results=result))
    assert not loops(prog)


def run_lowered(fd, inputs):
    from hostir import runtime

    return runtime.execute(fd.lower(), inputs)


@pytest.mark.parametrize("start, stop, step", [(1, 6, 1), (1, 7, 2), (0, 7, 3), (2, 7, 1)])
def test_stream_parallel_slice_reads_from_its_start_with_its_step(start, stop, step):
    # Regression (issue 11, defect 1): chunk i of the result is input chunk start + step * i.
    import torch

    from hostir import FusionDefinition, ParallelType

    with FusionDefinition() as fd:
        x = fd.define_tensor([7, 3])
        y = fd.ops.slice(x, [start, 0], [stop, 3], [step, 1])
        fd.add_output(y)
    y.axis(0).parallelize(ParallelType.Stream)
    data = torch.randn(7, 3)
    (got,) = run_lowered(fd, [data])
    torch.testing.assert_close(got, data[start:stop:step])


def test_an_offset_slice_does_not_join_the_loop_of_its_producer():
    # Chunk i of the slice reads chunk i + 1 of `e`, which a later iteration produces.
    import torch

    from hostir import FusionDefinition, ParallelType

    with FusionDefinition() as fd:
        x = fd.define_tensor([6, 3])
        e = fd.ops.mul(x, 2.0)
        y = fd.ops.slice(e, [1, 0], [6, 3])
        fd.add_output(y)
    e.axis(0).parallelize(ParallelType.Stream)
    y.axis(0).parallelize(ParallelType.Stream)
    program = [op for op in fd.lower().ops if isinstance(op, hir.ProgramOp)][0]
    assert len(loops(program)) == 4  # a sync loop and a main loop for each of the two ops
    data = torch.randn(6, 3)
    (got,) = run_lowered(fd, [data])
    torch.testing.assert_close(got, (data * 2)[1:])


# DID -> Stream programs a ring of shifts cannot compute (another mesh, a 2-D mesh, an op
# other than a set reading the device axis per chunk) run whole instead of being refused:
# `hostir-run` lowers each, runs it on its ranks (gloo) and exits 1 when an output differs
# from eager torch on the unsharded data.
RUN_WHOLE = {
    "set_to_another_mesh": """fusion.func @f(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 8], mesh=[1, 0]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[1, 0]>
  fusion.return %b : !fusion.tensor<f32[2 stream, 8], mesh=[1, 0]>
}""",
    "add_reading_the_device_axis": """fusion.func @f(%a: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 4], mesh=[0, 1]> {
  %b = fusion.add %a, %a : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 4], mesh=[0, 1]>
  fusion.return %b : !fusion.tensor<f32[2 stream, 4], mesh=[0, 1]>
}""",
    "set_on_a_2d_mesh": """fusion.func @f(%a: !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2 stream, 8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 stream, 8], mesh=[[0, 1], [2, 3]]>
  fusion.return %b : !fusion.tensor<f32[2 stream, 8], mesh=[[0, 1], [2, 3]]>
}""",
}


def test_a_did_to_stream_set_of_a_split_axis_is_a_ring_that_matches_eager(tmp_path):
    """nvFuser's column-parallel overlap spelling: the input split over the devices
    outermost, the set's result split in as many stream chunks: a ring of shifts into
    narrowed chunks, whose values `hostir-run` checks against eager torch on 2 ranks."""
    path = tmp_path / "ring_split.mlir"
    path.write_text("""fusion.func @f(%a: !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[0, 1]>, %w: !fusion.tensor<f32[5, 3], mesh=[0, 1]>) -> !fusion.tensor<f32[8(2 stream, 4), 5, r3], mesh=[0, 1]> {
  %t = fusion.set %a : !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 stream, 4), 3], mesh=[0, 1]>
  %y = fusion.linear %t, %w : !fusion.tensor<f32[8(2 stream, 4), 3], mesh=[0, 1]>, !fusion.tensor<f32[5, 3], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 stream, 4), 5, r3], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[8(2 stream, 4), 5, r3], mesh=[0, 1]>
}""")
    lowered = subprocess.run([str(Path(sys.executable).with_name("hostir-opt")), str(path), "-p", "hostir-lower{transport=nccl}"],
                             capture_output=True, text=True, timeout=300)
    assert lowered.returncode == 0, lowered.stderr
    assert "hir.shift %a -> %t_i team [0, 1]" in lowered.stdout and "hir.alias_chunk" in lowered.stdout
    done = subprocess.run([str(Path(sys.executable).with_name("hostir-run")), str(path), "--seed", "3"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "max error vs reference 0" in done.stdout, done.stdout


@pytest.mark.parametrize("name", list(RUN_WHOLE))
def test_a_did_to_stream_program_no_ring_computes_runs_whole_and_matches_eager(name, tmp_path):
    path = tmp_path / f"{name}.mlir"
    path.write_text(RUN_WHOLE[name])
    hostir_run = Path(sys.executable).with_name("hostir-run")  # the installed console script
    done = subprocess.run([str(hostir_run), str(path), "--seed", "3"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "max error vs reference 0" in done.stdout, done.stdout


def test_a_stream_on_the_outer_piece_of_a_split_axis_pipelines_it():
    """nvFuser's spelling of chunking, outer_split then Stream on the outer piece: a loop of
    S iterations, each on one contiguous block of the axis (`hir.alias_chunk`, which keeps
    the axis), with the values of eager torch."""
    import warnings

    import torch

    from hostir import FusionDefinition, ParallelType, runtime
    from hostir.passes.stream_parallel_type import UnpipelinedStreamWarning

    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, 4])
        y = fd.ops.relu(fd.ops.neg(x))
        fd.add_output(y)
    y.outer_split(0, 3)
    y.axis(0).parallelize(ParallelType.Stream)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnpipelinedStreamWarning)
        program = str(fd.lower(pipeline="hostir-lower{transport=nccl}"))
    assert "scf.for" in program and "%extent = arith.constant 3 : index" in program
    assert "hir.alias_chunk %T0[%i_1] axis 0 parts 3 : !fusion.tensor<f32[?, 4]> -> !fusion.tensor<f32[?, 4]>" in program
    data = torch.randn(9, 4)
    (out,) = fd.execute([data])
    torch.testing.assert_close(out, torch.relu(-data))
    with pytest.raises(runtime.InputError, match=r"'fusion.relu' op specialize-extents: its result .* cannot take "
                                                 r"extents \[10\]: a split does not divide one"):
        fd.execute([torch.randn(10, 4)])


def test_a_stream_on_a_split_axis_that_cannot_be_pipelined_is_not_ignored_silently():
    """A Stream piece that is not the static outer piece of its axis (here the inner one):
    the op runs whole (the values are right) and the lowering says so, located."""
    import warnings

    from hostir import FusionDefinition, ParallelType
    from hostir.passes.stream_parallel_type import UnpipelinedStreamWarning

    with FusionDefinition() as fd:
        x = fd.define_tensor([8, 4])
        y = fd.ops.relu(x)
        fd.add_output(y)
    y.outer_split(0, 2)
    y.axis(1).parallelize(ParallelType.Stream)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = fd.lower(pipeline="hostir-lower{transport=nccl}")
    (warning,) = [w for w in caught if issubclass(w.category, UnpipelinedStreamWarning)]
    assert "'hir.post_on_stream' op runs whole: its Stream piece of a split axis cannot be computed one chunk" in str(warning.message)
    assert "test_stream_parallel_type.py" in str(warning.message)  # located at the user's line
    assert "scf.for" not in str(program)


def test_a_unit_that_only_relabels_elements_gives_views_in_the_loop():
    """The reshape + permute an rFactor puts between two matmuls (here written by hand):
    inside the loop the unit has no buffer of its own (no outs) and runs as views of the
    first matmul's chunk, which nothing writes while the second matmul reads them; the
    values are eager torch's."""
    import torch

    from hostir import FusionDefinition, ParallelType
    from hostir.runtime import Evaluator

    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 8, 16])
        w1 = fd.define_tensor([16, 12])
        w2 = fd.define_tensor([12, 6])
        g = fd.ops.matmul(x, w1)
        t = fd.ops.permute(fd.ops.reshape(g, [4, 8, 3, 4]), [0, 2, 1, 3])  # [4, 3, 8, 4]
        y = fd.ops.matmul(fd.ops.reshape(fd.ops.permute(t, [0, 2, 1, 3]), [4, 8, 12]), w2)
        fd.add_output(y)
    for tensor in (g, y):
        tensor.axis(0).parallelize(ParallelType.Stream)
    program = fd.lower(pipeline="hostir-lower{transport=nccl}")
    text = str(program)
    assert text.count("scf.for") == 2 and "hir.post_on_stream" in text and "outs(" not in text, text
    evaluator = Evaluator(program)
    assert [key[3] for key in evaluator.context.units] == [True]  # (callee, outs, direct, views)
    xs = [torch.randn(4, 8, 16), torch.randn(16, 12), torch.randn(12, 6)]
    (out,) = evaluator.run(xs)
    torch.testing.assert_close(out, xs[0] @ xs[1] @ xs[2])

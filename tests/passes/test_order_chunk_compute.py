"""order-chunk-compute on the example pipelines, as hostir-lower runs it: a loop that only
sends through the copy engines' two-phase all-reduce (matmul+AR), or through a reduce-scatter
that computes its own part (matmul+RS with reduce-scatter-in-producer), runs its compute in
chunk order and joins its workers after the loop; where the collective computes its own part
(reduce-in-producer, the default for all-reduces) the loop is skewed: each iteration waits
for the previous one's collective; loops of one-phase collectives (matmul+AR on NCCL,
matmul+RS without the option) and a loop that receives (AG+matmul, whose split-by-member
waits sit in an inner loop) keep their order; running the pass again changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import scf

from hostir.passes import build_passes, run_passes
from hostir.passes.order_chunk_compute import OrderChunkCompute, sending_iteration
from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fusions"


RS_IN_PRODUCER = ("matmul_rs_through_bcast.mlir", "reduce-scatter-in-producer=true")
"""matmul+RS whose reduce-scatter computes its own part."""


def lowered(example: str, transport: str, skip_ordering: bool = False, options: str = "", chunks: int = 4):
    """The example (4 stream chunks), or with `chunks` chunks."""
    module = parse_module((EXAMPLES / example).read_text().replace("f32[4", f"f32[{chunks}"))
    passes = build_passes(f"hostir-lower{{transport={transport} {options}}}")
    if skip_ordering:
        passes = [p for p in passes if not isinstance(p, OrderChunkCompute)]
    run_passes(make_context(), module, passes)
    return module


def top_loops(module) -> list[scf.ForOp]:
    (program,) = [op for op in module.ops if isinstance(op, hir.ProgramOp)]
    return [op for op in program.body.block.ops if isinstance(op, scf.ForOp)]


def joins_workers(loop: scf.ForOp) -> bool:
    body = list(loop.body.block.ops)
    return isinstance(body[-2], hir.SynchronizeOp) and isinstance(body[-2].stream.owner, hir.StreamOp) and \
        not any(isinstance(op, hir.SetCurrentStreamOp) for op in body)


@pytest.mark.parametrize(("example", "options", "chunks"), [
    ("matmul_ar.mlir", "skew=false", 4), ("matmul_ar.mlir", "reduce-in-producer=false", 4),
    ("matmul_ar.mlir", "bounded-intermediates=true", 4),
    ("matmul_ar.mlir", "", 2),  # too few chunks to skew (SKEWED_ITERATIONS)
    (RS_IN_PRODUCER[0], RS_IN_PRODUCER[1] + " skew=false", 4), (*RS_IN_PRODUCER, 2),
])
def test_a_loop_that_only_sends_through_a_later_step_computes_in_chunk_order_and_joins_after(example, options, chunks):
    sync, main, join = top_loops(lowered(example, "copy-engine", options=options, chunks=chunks))
    body = list(main.body.block.ops)
    enter = next(op for op in body if isinstance(op, hir.SetCurrentStreamOp))
    user = body[-2].stream
    assert isinstance(enter.next_op, hir.SynchronizeOp) and enter.next_op.stream == user
    first_wait = next(i for i, op in enumerate(body) if isinstance(op, hir.WaitOp))
    handover = body[first_wait - 3:first_wait]
    assert [type(op) for op in handover] == [hir.SetCurrentStreamOp, hir.SynchronizeOp, hir.SetCurrentStreamOp]
    assert handover[0].stream == user and handover[1].stream == enter.stream == handover[2].stream
    assert not any(isinstance(op, hir.SynchronizeOp) for op in body[first_wait:])
    assert joins_workers(join) and sending_iteration(main) is None  # ordered once


@pytest.mark.parametrize(("example", "transport"), [
    ("ag_matmul.mlir", "nccl"), ("ag_matmul.mlir", "copy-engine"), ("matmul_ar.mlir", "nccl"),
    ("matmul_rs_through_bcast.mlir", "nccl"), ("matmul_rs_through_bcast.mlir", "copy-engine"),
])
def test_loops_that_receive_or_post_one_phase_collectives_keep_their_order(example, transport):
    ordered, unordered = lowered(example, transport), lowered(example, transport, skip_ordering=True)
    assert str(ordered) == str(unordered)
    assert all(sending_iteration(loop) is None for loop in top_loops(ordered))


def test_without_the_pass_the_all_reduce_loop_is_one_it_would_order():
    # The check of the first test fails without the pass: the loop is a sending iteration.
    loops = top_loops(lowered("matmul_ar.mlir", "copy-engine", skip_ordering=True))
    assert len(loops) == 2 and sending_iteration(loops[1]) is not None


@pytest.mark.parametrize(("example", "options"), [("matmul_ar.mlir", ""), RS_IN_PRODUCER])
def test_a_loop_whose_collective_computes_its_own_part_waits_for_it_in_the_next_iteration(example, options):
    module = lowered(example, "copy-engine", options=options)
    loops = top_loops(module)  # the peeled first iteration's loop over the peers among them
    sync, join = loops[0], loops[-1]
    (main,) = [loop for loop in loops if loop.iter_args]
    body = list(main.body.block.ops)
    (previous,) = main.body.block.args[1:]
    (wait,) = [op for op in body if isinstance(op, hir.WaitOp)]
    (post,) = [op for op in body if isinstance(op, hir.OwnProductCollectiveOp)]
    assert wait.work == previous and post.own and tuple(body[-1].operands) == (post.work,)
    assert [type(op) for op in body[body.index(wait) - 3:body.index(wait)]] == \
        [hir.SetCurrentStreamOp, hir.SynchronizeOp, hir.SetCurrentStreamOp]  # after this iteration's compute
    outside = list(main.parent_block().ops)
    (first,) = [op for op in outside[outside.index(sync):outside.index(main)] if isinstance(op, hir.OwnProductCollectiveOp)]
    assert tuple(main.iter_args) == (first.work,) and main.lb.owner.value.value.data == 1  # the first iteration peeled
    last = main.next_op
    assert isinstance(last, hir.WaitOp) and last.work == main.res[0] and last.next_op is join
    assert joins_workers(join)
    again = str(module)
    run_passes(make_context(), module, [OrderChunkCompute()])
    assert str(module) == again

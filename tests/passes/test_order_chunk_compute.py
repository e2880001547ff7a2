"""order-chunk-compute on the example pipelines, as hostir-lower runs it: a loop that only
sends through the copy engines' two-phase all-reduce (matmul+AR) runs its compute in chunk
order and joins its workers after the loop; loops of one-phase collectives (matmul+AR on
NCCL, matmul+RS on either transport) and a loop that receives (AG+matmul, whose
split-by-member waits sit in an inner loop) keep their order; running the pass again
changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import scf

from hostir.passes import build_passes, run_passes
from hostir.passes.order_chunk_compute import OrderChunkCompute, sending_iteration
from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fusions"


def lowered(example: str, transport: str, skip_ordering: bool = False):
    module = parse_module((EXAMPLES / example).read_text())
    passes = build_passes(f"hostir-lower{{transport={transport}}}")
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


def test_a_loop_that_only_sends_through_a_two_phase_all_reduce_computes_in_chunk_order_and_joins_after():
    sync, main, join = top_loops(lowered("matmul_ar.mlir", "copy-engine"))
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

"""verify-collective-order (passes/verify_collective_order.py): the diagnostics that need
a value the program computes differently on each rank, the one-entry extension point, and
the buffer rules the projection shares with the communicator. Hand-written deadlocks of
the current IR are in lit_tests/passes/verify_collective_order_errors.mlir.

`test.rank` is a test-only op whose value is the rank running the program (what the
copy-engine ops' `hir.team_position` gives within a team): with it, one program text makes
the ranks post different collectives. Its projection is one entry in PROJECTIONS.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def

from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module
from hostir_dialect.diagnostics import HostIRError, LocatingParser, verify_located
from hostir_dialect.tensor_type import TensorType
from passes import lower
from passes.verify_collective_order import PROJECTIONS, Projection, VerifyCollectiveOrder
from runtime.communicator import CollectiveError, Communicator

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@irdl_op_definition
class RankOp(IRDLOperation):
    """%r = test.rank   -- the rank running the program."""

    name = "test.rank"
    result = result_def(IndexType)
    assembly_format = "attr-dict"


@irdl_op_definition
class SignalOp(IRDLOperation):
    """%w = test.signal %b : T   -- a communication the projection does not know."""

    name = "test.signal"
    buffer = operand_def(TensorType)
    work = result_def(hir.WorkType)
    assembly_format = "$buffer attr-dict `:` type($buffer)"


TEST = Dialect("test", [RankOp, SignalOp])


def project_rank(p: Projection, op: RankOp):
    p.set(op.results, [p.rank])
    return ()


@pytest.fixture
def rank_op(monkeypatch):
    monkeypatch.setitem(PROJECTIONS, RankOp, project_rank)


def verify(text: str, world_size: int | None = None) -> None:
    ctx = make_context()
    ctx.load_dialect(TEST)
    module = LocatingParser(ctx, text, "test.mlir").parse_module()
    verify_located(module)
    VerifyCollectiveOrder(world_size).apply(ctx, module)


def by_rank(then: str, otherwise: str, types: str = "") -> str:
    """A program where rank 0 runs `then` and every other rank `otherwise`."""
    return f"""!t = !fusion.tensor<f32[4], mesh=[0, 1]>
!t8 = !fusion.tensor<f32[8], mesh=[0, 1]>
!b = !fusion.tensor<bf16[4], mesh=[0, 1]>
hir.program @main(%x: !t, %o: !t, %x8: !t8, %xb: !b) {{
  %c0 = arith.constant 0 : index
  %r = test.rank
  %first = arith.cmpi eq, %r, %c0 : index
  scf.if %first {{
    %w = {then}
    hir.wait %w
  }} else {{
    %w = {otherwise}
    hir.wait %w
  }}
  hir.return
}}
"""


@pytest.mark.parametrize("then, otherwise, message", [
    ("hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t", "hir.broadcast %x -> %o team [0, 1] root 0 : !t -> !t",
     "test.mlir:9:5: error: 'hir.allreduce' op ranks disagree: rank 0 posts 'hir.allreduce' on team [0, 1] where "
     "rank 1 posts 'hir.broadcast' at test.mlir:12:5"),
    ("hir.broadcast %x -> %o team [0, 1] root 0 : !t -> !t", "hir.broadcast %x -> %o team [0, 1] root 1 : !t -> !t",
     "'hir.broadcast' op ranks disagree on the root: rank 0 posts it with 0 where rank 1 posts 'hir.broadcast' at "
     "test.mlir:12:5 with 1"),
    ("hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t", "hir.allreduce %x -> %o team [0, 1] op max : !t -> !t",
     "'hir.allreduce' op ranks disagree on the reduction: rank 0 posts it with sum where rank 1 posts "
     "'hir.allreduce' at test.mlir:12:5 with max"),
    ("hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t", "hir.allreduce %xb -> %xb team [0, 1] op sum : !b -> !b",
     "ranks disagree on the element type: rank 0 posts it with f32 where rank 1 posts 'hir.allreduce' at "
     "test.mlir:12:5 with bf16"),
    ("hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t", "hir.allreduce %x8 -> %x8 team [0, 1] op sum : !t8 -> !t8",
     "ranks disagree on the input size: rank 0 posts it with 4 elements where rank 1 posts 'hir.allreduce' at "
     "test.mlir:12:5 with 8 elements"),
])
def test_ranks_posting_different_collectives_on_a_team_are_refused(rank_op, then, otherwise, message):
    with pytest.raises(HostIRError) as error:
        verify(by_rank(then, otherwise))
    assert message in str(error.value)


def test_the_same_collective_in_both_branches_is_accepted(rank_op):
    collective = "hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t"
    verify(by_rank(collective, collective))


T = "!t = !fusion.tensor<f32[4], mesh=[0, 1]>\n"


def test_a_rank_dependent_trip_count_leaves_a_collective_unanswered(rank_op):
    # Rank r runs r + 1 iterations: rank 1's second allreduce has no partner.
    with pytest.raises(HostIRError, match=r"test.mlir:8:5: error: 'hir.allreduce' op would wait forever \(loop "
                                          r"iteration 1\): rank 1 posts it on team \[0, 1\], but rank 0 never "
                                          r"posts it"):
        verify(T + """hir.program @main(%x: !t, %o: !t) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = test.rank
  %n = arith.addi %r, %c1 : index
  scf.for %i = %c0 to %n step %c1 {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return
}""")


def test_a_loop_checked_once_must_have_the_same_bounds_on_every_rank(rank_op):
    # Too long to unroll: checked for any iteration, so the bounds must agree.
    with pytest.raises(HostIRError, match=r"test.mlir:8:3: error: 'scf.for' op ranks may disagree on it: rank 0 runs "
                                          r"it with bounds 0 to 1000000000 step 1 where rank 1 runs it with bounds 0 "
                                          r"to 1000000001 step 1"):
        verify(T + """hir.program @main(%x: !t, %o: !t) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000 : index
  %r = test.rank
  %n = arith.addi %big, %r : index
  scf.for %i = %c0 to %n step %c1 {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return
}""")


def test_a_branch_checked_for_both_outcomes_must_have_the_same_condition_on_every_rank(rank_op):
    # The extent is unknown but the same everywhere; comparing it with the rank is not.
    with pytest.raises(HostIRError, match=r"test.mlir:8:3: error: 'scf.if' op ranks may disagree on it: rank 0 runs "
                                          r"it with condition slt\(extent\(%d, 0\), 0\) where rank 1 runs it with "
                                          r"condition slt\(extent\(%d, 0\), 1\)"):
        verify(T + """hir.program @main(%x: !t, %o: !t, %d: !fusion.tensor<f32[?], mesh=[0, 1]>) {
  %c0 = arith.constant 0 : index
  %n = hir.extent %d axis 0 : !fusion.tensor<f32[?], mesh=[0, 1]>
  %r = test.rank
  %below = arith.cmpi slt, %n, %r : index
  %c1 = arith.constant 1 : index
  scf.if %below {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return
}""")


def test_a_peer_from_a_loop_index_that_is_not_unrolled_cannot_be_verified():
    with pytest.raises(HostIRError, match=r"'hir.send' op cannot be verified: its peer on rank 0 is "
                                          r"remui\(the index of 'scf.for' at test.mlir:6:3, 2\), unknown before"):
        verify("""!t = !fusion.tensor<f32[4], mesh=[0]>
hir.program @main(%x: !t) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %big = arith.constant 1000000000 : index
  scf.for %i = %c0 to %big step %c2 {
    %peer = arith.remui %i, %c2 : index
    %w = hir.send %x, %peer : !t
    hir.wait %w
  }
  hir.return
}""", world_size=2)


def test_a_communication_op_without_a_projection_is_refused():
    with pytest.raises(HostIRError, match=r"test.mlir:3:3: error: 'test.signal' op communicates, but "
                                          r"verify-collective-order cannot tell which ranks post it"):
        verify(T + """hir.program @main(%x: !t) {
  %w = test.signal %x : !t
  hir.wait %w
  hir.return
}""")


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.mlir") if not p.name.startswith("host_")))
def test_the_lowered_examples_are_accepted(example):
    module = lower(parse_module((EXAMPLES / example).read_text(), example))  # hostir-lower ends with the check
    VerifyCollectiveOrder(world_size=4).apply(make_context(), module)  # a larger world: extra ranks post nothing


# --------------------------------------------------------------------------- #
# The buffer rules the projection reads from the ops are the communicator's
# --------------------------------------------------------------------------- #

BUFFER = "!fusion.tensor<f32[4], mesh=[0, 1]>"


def collective_op(cls: type[hir.CollectiveOp], root: int) -> hir.CollectiveOp:
    extra = f" root {root}" if cls.HAS_ROOT else ""
    extra += " op sum" if cls.REDUCES else ""
    team = "[0, 1]" if cls is not hir.SendRecvOp or root == 0 else "[1, 0]"
    module: ModuleOp = parse_module(f"""hir.program @main(%x: {BUFFER}, %o: {BUFFER}) {{
  %w = {cls.name} %x -> %o team {team}{extra} : {BUFFER} -> {BUFFER}
  hir.wait %w
  hir.return
}}""")
    return next(op for op in module.walk() if isinstance(op, cls))


def refuses_missing(op: hir.CollectiveOp, member: int, missing: str) -> bool:
    """Does the communicator refuse to post `op` on `member` without that buffer? It
    checks buffers before calling torch.distributed, which is not initialized here."""
    post = Communicator(member, 2, torch.device("cpu")).poster(op)
    buffers = {"input": torch.ones(4), "output": torch.ones(4)}
    buffers[missing] = None
    try:
        post(buffers["input"], buffers["output"])
    except CollectiveError as error:
        return f"holds no {missing} buffer" in str(error)
    except (RuntimeError, ValueError):
        return False  # it got as far as torch.distributed: the buffer was not needed
    return False


@pytest.mark.parametrize("cls", hir.COLLECTIVE_OPS, ids=lambda c: c.name)
@pytest.mark.parametrize("root", [0, 1])
@pytest.mark.parametrize("member", [0, 1])
def test_needed_buffers_are_the_ones_the_communicator_refuses_to_miss(cls, root, member):
    op = collective_op(cls, root)
    assert op.needs_input(member) == refuses_missing(op, member, "input")
    assert op.needs_output(member) == refuses_missing(op, member, "output")

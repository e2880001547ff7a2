"""verify-collective-order (passes/verify_collective_order.py) beyond its lit tests
(lit_tests/passes/verify_collective_order*.mlir, every diagnostic): the safety net for a
communication op without a projection, the lowered examples, and the buffer rules the
projection shares with the communicator."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def

from hostir.passes import lower, verify_collective_order
from hostir.passes.verify_collective_order import VerifyCollectiveOrder
from hostir.runtime.communicator import CollectiveError, Communicator
from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module
from hostir_dialect.diagnostics import HostIRError, LocatingParser, verify_located
from hostir_dialect.tensor_type import TensorType

FUSIONS = Path(__file__).resolve().parents[2] / "examples" / "fusions"


@irdl_op_definition
class SignalOp(IRDLOperation):
    """%w = test.signal %b : T   -- a communication the projection does not know."""

    name = "test.signal"
    buffer = operand_def(TensorType)
    work = result_def(hir.WorkType)
    assembly_format = "$buffer attr-dict `:` type($buffer)"


@irdl_op_definition
class IndexOp(IRDLOperation):
    """%i = test.index   -- an index the projection cannot read."""

    name = "test.index"
    result = result_def(IndexType)
    assembly_format = "attr-dict"


TEST = Dialect("test", [SignalOp, IndexOp])


def verify(text: str) -> None:
    ctx = make_context()
    ctx.load_dialect(TEST)
    module = LocatingParser(ctx, text, "test.mlir").parse_module()
    verify_located(module)
    VerifyCollectiveOrder().apply(ctx, module)


T = "!t = !fusion.tensor<f32[4], mesh=[0, 1]>\n"


def test_a_communication_op_without_a_projection_is_refused():
    with pytest.raises(HostIRError, match=r"test.mlir:3:3: error: 'test.signal' op communicates, but "
                                          r"verify-collective-order cannot tell which ranks post it"):
        verify(T + """hir.program @main(%x: !t) {
  %w = test.signal %x : !t
  hir.wait %w
  hir.return
}""")


def test_a_loop_that_posts_nothing_is_not_unrolled_but_still_checked():
    """A loop of index arithmetic only is skipped (silent), after its body is checked for
    communication the projection does not know, and its step for 0."""
    loop = T + """hir.program @main(%x: !t) {{
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step {step} {{
    %n = hir.number_of_streams
    {inner}
  }}
  hir.return
}}"""
    verify(loop.format(step="%c4", inner=""))
    with pytest.raises(HostIRError, match=r"test.mlir:7:5: error: 'test.signal' op communicates, but"):
        verify(loop.format(step="%c4", inner="%w = test.signal %x : !t"))
    unverified = LocatingParser(make_context(), loop.format(step="%c0", inner=""), "test.mlir").parse_module()
    with pytest.raises(HostIRError, match=r"test.mlir:5:3: error: 'scf.for' op has step 0"):  # the verifier says so too
        VerifyCollectiveOrder().apply(make_context(), unverified)


def test_every_rank_unrolls_the_same_loops_when_the_budget_runs_short(monkeypatch):
    """Each rank projects the same blocks (the second rank from the first one's record of
    them), so each spends the unrolling budget op by op alike and unrolls the same loops:
    here the loop, with 20 ops after it that the budget cannot also cover."""
    monkeypatch.setattr(verify_collective_order, "UNROLL_BUDGET", 30)
    filler = "\n".join(f"  %a{k} = hir.allocate : !t" for k in range(20))
    verify(T + f"""hir.program @main(%x: !t, %o: !t) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {{
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }}
{filler}
  hir.return
}}""")


def test_a_peer_from_an_op_the_projection_cannot_read_is_refused():
    with pytest.raises(HostIRError, match=r"test.mlir:4:3: error: 'hir.send' op cannot be verified: its peer on "
                                          r"rank 0 depends on %peer, a result of 'test.index' at test.mlir:3:3, "
                                          r"which this pass cannot read"):
        verify(T + """hir.program @main(%x: !t) {
  %peer = test.index
  %w = hir.send %x, %peer : !t
  hir.wait %w
  hir.return
}""")


@pytest.mark.parametrize("transport", ["nccl", "auto"])
@pytest.mark.parametrize("example", sorted(p.name for p in FUSIONS.glob("*.mlir")))
def test_the_lowered_examples_are_accepted(example, transport):
    module = parse_module((FUSIONS / example).read_text(), example)
    lower(module, pipeline=f"hostir-lower{{transport={transport}}}")  # it ends with the check
    VerifyCollectiveOrder(world_size=4).apply(make_context(), module)  # a larger world: extra ranks post nothing


# --------------------------------------------------------------------------- #
# The buffer rules the projection reads from the ops are the communicator's
# --------------------------------------------------------------------------- #

BUFFER = "!fusion.tensor<f32[4], mesh=[0, 1]>"
OFFSET = 1  # a shift's offset: a rotation that sends and receives (offset 0 copies locally)


def collective_op(cls: type[hir.CollectiveOp], root: int) -> hir.CollectiveOp:
    extra = " offset %k" if cls is hir.ShiftOp else ""
    extra += f" root {root}" if cls.HAS_ROOT else ""
    extra += " op sum" if cls.REDUCES else ""
    team = "[0, 1]" if cls is not hir.SendRecvOp or root == 0 else "[1, 0]"
    # Both buffers of one size: the verifier refuses that for the gathering and scattering
    # ops, but which buffers a member needs does not depend on their sizes.
    module: ModuleOp = LocatingParser(make_context(), f"""hir.program @main(%x: {BUFFER}, %o: {BUFFER}) {{
  %k = arith.constant {OFFSET} : index
  %w = {cls.name} %x -> %o team {team}{extra} : {BUFFER} -> {BUFFER}
  hir.wait %w
  hir.return
}}""").parse_module()
    return next(op for op in module.walk() if isinstance(op, cls))


def refuses_missing(op: hir.CollectiveOp, member: int, missing: str) -> bool:
    """Does the communicator refuse to post `op` on `member` without that buffer? It
    checks buffers before calling torch.distributed, which is not initialized here."""
    post = Communicator(member, 2, torch.device("cpu")).poster(op)
    buffers = {"input": torch.ones(4), "output": torch.ones(4)}
    buffers[missing] = None
    try:
        post(buffers["input"], buffers["output"], *([OFFSET] if isinstance(op, hir.ShiftOp) else []))
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

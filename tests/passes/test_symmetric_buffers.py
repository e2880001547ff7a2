"""passes/symmetric_buffers.py: which outputs the peers of a copy-engine collective can push
into, and making them symmetric."""

from __future__ import annotations

from hostir.passes.symmetric_buffers import can_be_symmetric_output, symmetric_output
from hostir_dialect import hir
from hostir_dialect.context import parse_module

PROGRAM = """
hir.program @p(%x: !fusion.tensor<f32[4], mesh=[0, 1]>) -> (!fusion.tensor<f32[4], mesh=[0, 1]>, !fusion.tensor<f32[2], mesh=[0, 1]>) {
  %whole = hir.allocate : !fusion.tensor<f32[4], mesh=[0, 1]>
  %viewed = hir.allocate : !fusion.tensor<f32[2, 2], mesh=[0, 1]>
  %c0 = arith.constant 0 : index
  %half = hir.alias_select %viewed[%c0] axis 0 : !fusion.tensor<f32[2, 2], mesh=[0, 1]> -> !fusion.tensor<f32[2], mesh=[0, 1]>
  %kept = hir.allocate : !fusion.tensor<f32[4], mesh=[0, 1]>
  hir.return %whole, %half : !fusion.tensor<f32[4], mesh=[0, 1]>, !fusion.tensor<f32[2], mesh=[0, 1]>
}
"""


def _allocations() -> dict[str, hir.AllocateOp]:
    module = parse_module(PROGRAM)
    return {op.result.name_hint: op for op in module.walk() if isinstance(op, hir.AllocateOp)}


def test_a_buffer_returned_as_itself_or_kept_can_be_made_symmetric_one_returned_through_a_view_cannot():
    allocations = _allocations()
    assert can_be_symmetric_output(allocations["whole"].result)
    assert can_be_symmetric_output(allocations["kept"].result)
    # Its result set would be handed out as a view of a buffer the peers write whole.
    assert not can_be_symmetric_output(allocations["viewed"].result)


def test_symmetric_output_makes_the_allocation_symmetric_where_it_can_and_leaves_the_rest():
    allocations = _allocations()
    for name in ("whole", "viewed"):
        assert symmetric_output(allocations[name].result) is allocations[name].result
    assert allocations["whole"].symmetric is not None
    assert allocations["viewed"].symmetric is None

"""specialize-extents (passes/specialize_extents.py): the axis arithmetic; the IR it
writes is in lit_tests/passes/specialize_extents*.mlir, its use by `FusionDefinition.execute`
in tests/hostir/test_api.py, its numbers in the differential profiles (`auto+specialized`)."""

import pytest
from xdsl.dialects.builtin import f32

from hostir.passes.specialize_extents import check_fit, dynamic_extents, specialized_axis
from hostir_dialect import symbols
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import HostIRError
from hostir_dialect.tensor_type import DYNAMIC, Axis, IterKind, Mesh, ParallelKind, Piece, TensorType

DIDX, STREAM = ParallelKind.DIDX, ParallelKind.STREAM


@pytest.mark.parametrize(("axis", "extent", "expected"), [
    (Axis(DYNAMIC), 12, Axis(12)),
    (Axis(DYNAMIC, IterKind.REDUCTION), 12, Axis(12, IterKind.REDUCTION)),
    (Axis(DYNAMIC, pieces=(Piece(DYNAMIC, DIDX),)), 2, Axis(2, pieces=(Piece(2, DIDX),))),
    (Axis(DYNAMIC, pieces=(Piece(2, DIDX), Piece(DYNAMIC))), 12, Axis(12, pieces=(Piece(2, DIDX), Piece(6)))),
    (Axis(DYNAMIC, pieces=(Piece(DYNAMIC), Piece(2, DIDX))), 12, Axis(12, pieces=(Piece(6), Piece(2, DIDX)))),
    (Axis(DYNAMIC, pieces=(Piece(3, STREAM), Piece(2, DIDX), Piece(DYNAMIC))), 12,
     Axis(12, pieces=(Piece(3, STREAM), Piece(2, DIDX), Piece(2)))),
    (Axis(DYNAMIC, pieces=(Piece(4, DIDX), Piece(DYNAMIC))), 6, None),
])
def test_a_dynamic_piece_takes_what_the_others_leave(axis, extent, expected):
    assert specialized_axis(axis, extent) == expected


def test_the_extents_of_an_argument_are_its_dynamic_axes_in_order():
    t = TensorType.of(f32, [Axis(DYNAMIC, pieces=(Piece(2, DIDX), Piece(DYNAMIC))), Axis(4), Axis(DYNAMIC)],
                      Mesh.of([0, 1]))
    assert dynamic_extents(t, [12, 4, 5]) == [12, 5]


ADD_OF_DYNAMIC_ROWS = """
fusion.func @f(%a: !fusion.tensor<f32[?, 3]>, %b: !fusion.tensor<f32[?, 3]>) -> !fusion.tensor<f32[?, 3]> {
  %c = fusion.add %a, %b : !fusion.tensor<f32[?, 3]>, !fusion.tensor<f32[?, 3]> -> !fusion.tensor<f32[?, 3]>
  fusion.return %c : !fusion.tensor<f32[?, 3]>
}
"""


def test_the_fit_check_names_the_op_that_cannot_take_the_extents_and_leaves_the_fusion_as_it_is():
    (func,) = symbols.user_fusions(parse_module(ADD_OF_DYNAMIC_ROWS, "add.mlir"))
    before = str(func)
    check_fit(func, (4, 4), "f")
    with pytest.raises(HostIRError, match=r"^@f: inputs of dynamic extents \[4, 6\] do not fit the fusion: "
                                          r"add.mlir:3:3: error: 'fusion.add' op .*extents 4 and 6"):
        check_fit(func, (4, 6), "f")
    assert str(func) == before

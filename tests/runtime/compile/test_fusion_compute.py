"""runtime/compile/fusion_compute.py: how a compute op writes its destination."""

import pytest
import torch

from hostir.runtime import Evaluator
from hostir.runtime.compile.fusion_compute import checked_into
from hostir.runtime.torch_ops import Kernel
from hostir_dialect import fusion
from hostir_dialect.context import parse_module

DYNAMIC_NEG = """hir.program @p(%x: !fusion.tensor<f32[?, 4]>, %d: !fusion.tensor<f32[?, 4]>) -> !fusion.tensor<f32[?, 4]> {
  %y = fusion.neg %x into %d : !fusion.tensor<f32[?, 4]> -> !fusion.tensor<f32[?, 4]>
  hir.return %y : !fusion.tensor<f32[?, 4]>
}"""


def test_a_destination_of_a_dynamic_shape_is_written_in_place_once_its_shape_is_checked():
    """Where the kernel (or the op, elementwise) tells its result's shape, a destination of
    that shape is written by `into` (no fresh result, no copy); another shape gets a copy of
    a fresh result, which refuses it (torch's `out=` would resize the caller's buffer with a
    warning)."""
    op = next(o for o in parse_module(DYNAMIC_NEG).walk() if isinstance(o, fusion.NegOp))
    calls = []

    def into(out, x):
        calls.append("into")
        return torch.neg(x, out=out)

    def fresh(x):
        calls.append("fresh")
        return torch.neg(x)

    write = checked_into(Kernel(fresh, into, result_shape=lambda x: x.shape), op, None)
    x = torch.randn(6, 4)
    out = torch.empty(6, 4)
    assert write(out, x) is out and calls == ["into"] and torch.equal(out, -x)
    calls.clear()
    with pytest.raises(ValueError, match=r"destination has shape \[5, 4\] but the value has shape \[6, 4\]"):
        write(torch.empty(5, 4), x)
    assert calls == ["fresh"]
    elementwise = checked_into(Kernel(fresh, into), op, None)  # an elementwise op's shape is its input's
    calls.clear()
    elementwise(out, x)
    assert calls == ["into"] and torch.equal(out, -x)


DYNAMIC_ADD = """hir.program @p(%x: !fusion.tensor<f32[?, 4]>, %y: !fusion.tensor<f32[b1, 4]>, %d: !fusion.tensor<f32[?, 4]>) -> !fusion.tensor<f32[?, 4]> {
  %z = fusion.add %x, %y into %d : !fusion.tensor<f32[?, 4]>, !fusion.tensor<f32[b1, 4]> -> !fusion.tensor<f32[?, 4]>
  hir.return %z : !fusion.tensor<f32[?, 4]>
}"""


def test_a_binary_op_knows_its_shape_from_its_tensor_operands():
    op = next(o for o in parse_module(DYNAMIC_ADD).walk() if isinstance(o, fusion.AddOp))
    calls = []
    write = checked_into(Kernel(torch.add, lambda out, a, b: calls.append("into") or torch.add(a, b, out=out)), op, None)
    x, y, out = torch.randn(5, 4), torch.randn(1, 4), torch.empty(5, 4)
    write(out, x, y)
    assert calls == ["into"] and torch.equal(out, x + y)


REORDER = """hir.program @p(%x: !fusion.tensor<f32[4, 2, 3]>) -> !fusion.tensor<f32[4, 2, 3], alloc=[1, 0, 2]> {
  %y = fusion.set %x : !fusion.tensor<f32[4, 2, 3]> -> !fusion.tensor<f32[4, 2, 3], alloc=[1, 0, 2]>
  hir.return %y : !fusion.tensor<f32[4, 2, 3], alloc=[1, 0, 2]>
}"""


@pytest.mark.parametrize("shape", ["[4, 2, 3]", "[?, 2, 3]"])
def test_a_view_laid_out_anew_is_copied_once(shape):
    """A reorder (`fusion.set` into another allocation order) costs one copy into the new
    layout, not a clone and then a permuting copy (16 us of a 32 MiB reorder on H200)."""
    module = parse_module(REORDER.replace("[4, 2, 3]", shape))
    evaluator = Evaluator(module, rank=0, world_size=1)
    x = torch.randn(4, 2, 3)
    with torch.profiler.profile() as profile:
        (y,) = evaluator.run([x])
    copies = [e.name for e in profile.events() if e.name in ("aten::copy_", "aten::clone")]
    assert copies == ["aten::copy_"], copies
    assert torch.equal(y, x) and y.permute(1, 0, 2).is_contiguous()
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()

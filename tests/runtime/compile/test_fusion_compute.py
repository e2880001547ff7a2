"""runtime/compile/fusion_compute.py: how a compute op writes its destination."""

import pytest
import torch

from hostir.runtime.compile.fusion_compute import checked_into
from hostir.runtime.torch_ops import Kernel
from hostir_dialect import fusion
from hostir_dialect.context import parse_module

DYNAMIC_NEG = """hir.program @p(%x: !fusion.tensor<f32[?, 4]>, %d: !fusion.tensor<f32[?, 4]>) -> !fusion.tensor<f32[?, 4]> {
  %y = fusion.neg %x into %d : !fusion.tensor<f32[?, 4]> -> !fusion.tensor<f32[?, 4]>
  hir.return %y : !fusion.tensor<f32[?, 4]>
}"""


def test_a_destination_of_a_dynamic_shape_is_written_in_place_once_its_shape_is_checked():
    """Where the kernel knows its result's shape, a destination of that shape is written by
    `into` (no fresh result, no copy); another shape gets a copy of a fresh result, which
    refuses it (torch's `out=` would resize the caller's buffer with a warning)."""
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
    unknown = checked_into(Kernel(fresh, into), op, None)
    calls.clear()
    unknown(out, x)
    assert calls == ["fresh"] and torch.equal(out, -x)

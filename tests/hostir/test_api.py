"""The top-level API (hostir/__init__.py): the frontend's FusionDefinition with `lower()`
and `execute()`, which span the dialect, the passes and the runtime."""

import torch

from hostir import FusionDefinition
from hostir_dialect import hir


def test_lower_gives_a_host_program_and_execute_matches_torch():
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 8], dtype="float32")
        b = fd.ops.exp(fd.ops.relu(a))
        c = fd.ops.sum(b, dims=[1])
        fd.add_output(c)
    host = fd.lower()
    assert any(isinstance(op, hir.ProgramOp) for op in host.ops)
    assert any(isinstance(op, hir.PostOnStreamOp) for op in host.walk())  # relu + exp fused in a unit
    x = torch.randn(4, 8)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.exp(torch.relu(x)).sum(dim=1), rtol=1e-6, atol=1e-6)


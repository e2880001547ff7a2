"""The eager reference semantics of a fusion: every lowering is checked against it."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import ModuleOp

from hostir_dialect import fusion
from hostir_dialect.symbols import lookup, user_fusions

from .evaluator import Evaluator


def reference_function(module: ModuleOp, name: str | None = None) -> fusion.FuncOp:
    """The `fusion.func` named `name`, else the first user fusion (kernel units of a host
    program are not whole fusions)."""
    if name is not None:
        found = lookup(module, name)
        if not isinstance(found, fusion.FuncOp):
            raise ValueError(f"the module has no fusion.func named @{name}")
        return found
    fusions = user_fusions(module)
    if not fusions:
        raise ValueError("the module has no fusion.func to use as a reference")
    return fusions[0]


def run_fusion(module: ModuleOp, global_inputs: Sequence[torch.Tensor], name: str | None = None) -> list[torch.Tensor]:
    """Eager torch outputs of a `fusion.func` on unsharded data (sharding annotations ignored)."""
    func = reference_function(module, name)
    device = next((t.device for t in global_inputs if isinstance(t, torch.Tensor)), None)
    return Evaluator(module, name=func.sym_name.data, device=device).run(global_inputs)

"""The eager reference semantics of a fusion: every lowering is checked against it."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import ModuleOp

from hostir_dialect import fusion, hir

from .evaluator import Evaluator


def reference_function(module: ModuleOp, name: str | None = None) -> fusion.FuncOp:
    """The `fusion.func` named `name`, else the first one no `hir.post_on_stream` calls
    (kernel units of a host program are not whole fusions)."""
    funcs = [op for op in module.ops if isinstance(op, fusion.FuncOp)]
    if name is not None:
        for func in funcs:
            if func.sym_name.data == name:
                return func
        raise ValueError(f"the module has no fusion.func named @{name}")
    units = {op.callee_name() for op in module.walk() if isinstance(op, hir.PostOnStreamOp)}
    for func in funcs:
        if func.sym_name.data not in units:
            return func
    raise ValueError("the module has no fusion.func to use as a reference")


def run_fusion(module: ModuleOp, global_inputs: Sequence[torch.Tensor], name: str | None = None) -> list[torch.Tensor]:
    """Eager torch outputs of a `fusion.func` on unsharded data (sharding annotations ignored)."""
    func = reference_function(module, name)
    device = next((t.device for t in global_inputs if isinstance(t, torch.Tensor)), None)
    return Evaluator(module, name=func.sym_name.data, device=device).run(global_inputs)

# runtime.execute given IR text instead of a module.
# EXPECT-RAISES: TypeError|ValueError: (?i)(module|ModuleOp)
import torch
from hostir import runtime
from hostir_dialect import parse_module
P = '''hir.program @main(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  hir.return %x : !fusion.tensor<f32[4]>
}'''
runtime.execute(P, [torch.zeros(4)])

# runtime.execute(name='nope').
# EXPECT-RAISES: ValueError: no hir.program or fusion.func named @nope
import torch
from hostir import runtime
from hostir_dialect import parse_module
P = '''hir.program @main(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  hir.return %x : !fusion.tensor<f32[4]>
}'''
runtime.execute(parse_module(P), [torch.zeros(4)], name='nope')

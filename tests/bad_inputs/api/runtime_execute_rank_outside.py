# runtime.execute(rank=3, world_size=2).
# EXPECT-RAISES: ValueError|InputError: (?i)rank 3
import torch
from hostir import runtime
from hostir_dialect import parse_module
P = '''hir.program @main(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  hir.return %x : !fusion.tensor<f32[4]>
}'''
runtime.execute(parse_module(P), [torch.zeros(4)], rank=3, world_size=2)

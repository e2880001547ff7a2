# shard_tensor of a [3, 4] tensor for f32[2 didx, 4].
# EXPECT-RAISES: ValueError: (?i)shape
import torch
from hostir import runtime
from hostir_dialect import parse_module
t = parse_module('%a = hir.allocate : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>').body.block.first_op.result.type
runtime.shard_tensor(torch.zeros(3, 4), t, 0)

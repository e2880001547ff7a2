# unshard with rank 1's shard missing.
# EXPECT-RAISES: ValueError: (?i)rank 1|missing
import torch
from hostir import runtime
from hostir_dialect import parse_module
from hostir_dialect import TensorType
t = parse_module('%a = hir.allocate : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>').body.block.first_op.result.type
runtime.unshard({0: torch.zeros(1, 4)}, t)

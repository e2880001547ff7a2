# fd.execute(..., device='cuda') on a machine without CUDA: a clear error.
# EXPECT-RAISES: ValueError|InputError|ExecutionError: (?i)cuda.*(not available|unavailable|no (cuda|gpu))
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
import sys
if torch.cuda.is_available():
    raise ValueError('cuda is available here: case not applicable')
fd.execute([torch.zeros(4, 8)], device='cuda')

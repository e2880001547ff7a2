# fd.execute(..., device='gpu0').
# EXPECT-RAISES: ValueError|InputError: (?i)device
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.execute([torch.zeros(4, 8)], device='gpu0')

# fd.execute(..., number_of_streams=0).
# EXPECT-RAISES: ValueError: number_of_streams must be at least 1
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.execute([torch.zeros(4, 8)], number_of_streams=0)

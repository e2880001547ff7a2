# fd.execute(..., rank=-1, world_size=1).
# EXPECT-RAISES: ValueError|InputError: (?i)rank -1
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.execute([torch.zeros(4, 8)], rank=-1, world_size=1)

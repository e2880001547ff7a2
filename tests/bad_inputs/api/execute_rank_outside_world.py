# fd.execute(..., rank=5, world_size=2): a rank outside the world.
# EXPECT-RAISES: ValueError|InputError: (?i)rank 5
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.execute([torch.zeros(4, 8)], rank=5, world_size=2)

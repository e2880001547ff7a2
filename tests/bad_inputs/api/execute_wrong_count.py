# fd.execute with two inputs for one argument.
# EXPECT-RAISES: InputError: takes 1 inputs, got 2
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.execute([torch.zeros(4, 8), torch.zeros(4, 8)])

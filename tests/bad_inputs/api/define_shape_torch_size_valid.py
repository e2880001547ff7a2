# A shape given as a torch.Size: valid.
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor(torch.zeros(4, 8).shape)
    fd.add_output(fd.ops.neg(a))
str(fd)

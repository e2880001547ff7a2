# fd.execute with a [4, 7] input for [4, 8].
# EXPECT-RAISES: InputError: expected shape \[4, 8\]
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.execute([torch.zeros(4, 7)])

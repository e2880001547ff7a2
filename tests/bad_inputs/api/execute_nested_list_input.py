# fd.execute with a nested Python list instead of a tensor.
# EXPECT-RAISES: InputError: expected a tensor
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.execute([[[0.0] * 8] * 4])

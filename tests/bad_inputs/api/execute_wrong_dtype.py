# fd.execute with a float64 input for f32.
# EXPECT-RAISES: InputError: expected dtype torch.float32
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.execute([torch.zeros(4, 8, dtype=torch.float64)])

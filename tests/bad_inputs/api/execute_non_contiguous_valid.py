# fd.execute with a transposed (non-contiguous) input: valid.
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
x = torch.arange(32.0).reshape(8, 4).t()
(y,) = fd.execute([x])
assert torch.equal(y, -x)

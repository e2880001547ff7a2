# fd.execute with a requires_grad input: valid, returns -x.
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
x = torch.ones(4, 8, requires_grad=True)
(y,) = fd.execute([x])
assert torch.equal(y.detach(), -x.detach())

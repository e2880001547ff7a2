# linear with bias=3.
# EXPECT-RAISES: FusionDefinitionError: expected a Tensor
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    w = fd.define_tensor([2, 8])
    fd.ops.linear(a, w, bias=3)

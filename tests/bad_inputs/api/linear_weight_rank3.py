# linear with a 3-d weight.
# EXPECT-RAISES: FusionDefinitionError: \[N, K\] weight
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    w = fd.define_tensor([2, 2, 8])
    fd.ops.linear(a, w)

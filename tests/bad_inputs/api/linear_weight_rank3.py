# linear with a 1-d weight (a weight of rank 3 is a stack of weights, as in nvFuser).
# EXPECT-RAISES: FusionDefinitionError: \[\.\., N, K\] weight
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    w = fd.define_tensor([8])
    fd.ops.linear(a, w)

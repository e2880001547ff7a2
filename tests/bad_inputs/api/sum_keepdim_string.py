# sum with keepdim='no' (a truthy string).
# EXPECT-RAISES: FusionDefinitionError: keepdim
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.sum(a, dims=[0], keepdim='no')

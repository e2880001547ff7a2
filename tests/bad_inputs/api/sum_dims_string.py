# sum with dims='0'.
# EXPECT-RAISES: FusionDefinitionError: dims must be an int or a list of ints
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.sum(a, dims='0')

# select with index 1.5.
# EXPECT-RAISES: FusionDefinitionError: index must be an int
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.select(a, 1.5, 0)

# select along dim 5 of a 2-d tensor.
# EXPECT-RAISES: FusionDefinitionError: out of range
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.select(a, 0, 5)

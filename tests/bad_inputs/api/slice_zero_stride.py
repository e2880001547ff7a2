# slice with a zero stride.
# EXPECT-RAISES: FusionDefinitionError: must be positive
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.slice(a, [0, 0], [4, 8], [0, 1])

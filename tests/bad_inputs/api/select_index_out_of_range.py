# select index 9 of an axis of extent 4.
# EXPECT-RAISES: FusionDefinitionError: out of range
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.select(a, 9, 0)

# An extent of -2.
# EXPECT-RAISES: FusionDefinitionError: shape must be a list
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_tensor([-2, 8])

# A shape of None.
# EXPECT-RAISES: FusionDefinitionError: shape must be a list
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_tensor(None)

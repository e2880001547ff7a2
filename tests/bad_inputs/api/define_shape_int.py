# A shape given as a bare int (nvFuser takes a list).
# EXPECT-RAISES: FusionDefinitionError: shape must be a list
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_tensor(4)

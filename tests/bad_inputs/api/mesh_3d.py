# DeviceMesh([[[0]]]).
# EXPECT-RAISES: FusionDefinitionError: at most 2 dimensions
from hostir import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([[[0]]])

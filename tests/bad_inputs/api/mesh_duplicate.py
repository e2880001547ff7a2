# DeviceMesh([0, 0]).
# EXPECT-RAISES: FusionDefinitionError: duplicate device ids
from hostir import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([0, 0])

# DeviceMesh([[0, 1], [2]]).
# EXPECT-RAISES: FusionDefinitionError: equal lengths
from hostir import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([[0, 1], [2]])

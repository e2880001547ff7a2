# DeviceMesh([]).
# EXPECT-RAISES: FusionDefinitionError: mesh is empty
from hostir import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([])

# DeviceMesh([]).
# EXPECT-RAISES: FusionDefinitionError: mesh is empty
from hostir_dialect import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([])

# DeviceMesh([[0, 1], [2]]).
# EXPECT-RAISES: FusionDefinitionError: equal lengths
from hostir_dialect import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([[0, 1], [2]])

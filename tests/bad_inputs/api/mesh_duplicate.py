# DeviceMesh([0, 0]).
# EXPECT-RAISES: FusionDefinitionError: duplicate device ids
from hostir_dialect import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([0, 0])

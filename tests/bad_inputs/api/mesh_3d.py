# DeviceMesh([[[0]]]).
# EXPECT-RAISES: FusionDefinitionError: at most 2 dimensions
from hostir_dialect import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([[[0]]])

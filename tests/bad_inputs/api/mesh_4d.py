# DeviceMesh([[[[0]]]]): 4 dimensions.
# EXPECT-RAISES: FusionDefinitionError: at most 3 dimensions
from hostir import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([[[[0]]]])

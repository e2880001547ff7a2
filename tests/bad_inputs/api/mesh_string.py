# DeviceMesh('01').
# EXPECT-RAISES: FusionDefinitionError: (?i)(integers|device ids? must be)
from hostir import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh('01')

# DeviceMesh([0.5, 1]): device ids are ints.
# EXPECT-RAISES: FusionDefinitionError: (?i)(integers|device ids? must be)
from hostir import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([0.5, 1])

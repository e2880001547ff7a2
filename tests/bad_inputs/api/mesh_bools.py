# DeviceMesh([True, False]): bools are not device ids.
# EXPECT-RAISES: FusionDefinitionError: (?i)(integers|device ids? must be)
from hostir import FusionDefinition, DeviceMesh, ParallelType
DeviceMesh([True, False])

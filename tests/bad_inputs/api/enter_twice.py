# Entering one FusionDefinition twice.
# EXPECT-RAISES: FusionDefinitionError: entered only once
from hostir import FusionDefinition, DeviceMesh, ParallelType
fd = FusionDefinition()
with fd:
    pass
with fd:
    pass

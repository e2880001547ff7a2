# An extent of 2**70, beyond int64.
# EXPECT-RAISES: FusionDefinitionError: (?i)(64|too large|overflow)
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_tensor([2**70])

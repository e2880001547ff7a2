# An int tensor plus 2**70.
# EXPECT-RAISES: FusionDefinitionError: (?i)(valid int64|64|range)
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4], dtype='int64')
    fd.ops.add(a, 2**70)

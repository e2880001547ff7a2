# define_scalar(2**64) as int64.
# EXPECT-RAISES: FusionDefinitionError: (?i)(64|range|overflow|large)
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_scalar(2**64, dtype='int64')

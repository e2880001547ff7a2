# define_scalar(3, dtype='bool').
# EXPECT-RAISES: FusionDefinitionError: not a valid bool
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_scalar(3, dtype='bool')

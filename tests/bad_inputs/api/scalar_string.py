# define_scalar of a string.
# EXPECT-RAISES: FusionDefinitionError: unsupported
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_scalar('abc')

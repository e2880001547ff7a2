# define_scalar of a string.
# EXPECT-RAISES: FusionDefinitionError: unsupported
from hostir_dialect import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_scalar('abc')

# cast to 'float128'.
# EXPECT-RAISES: FusionDefinitionError: unsupported dtype
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.cast(a, 'float128')

# dtype=None.
# EXPECT-RAISES: FusionDefinitionError: unsupported dtype
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_tensor([4], dtype=None)

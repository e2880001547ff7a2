# outer_split(0, 2.0).
# EXPECT-RAISES: FusionDefinitionError: positive int
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
a.outer_split(0, 2.0)

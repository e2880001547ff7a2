# outer_split(0, 3) of extent 4.
# EXPECT-RAISES: FusionDefinitionError: does not divide
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
a.outer_split(0, 3)

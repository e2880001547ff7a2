# axis(5) of a 2-axis loop domain.
# EXPECT-RAISES: FusionDefinitionError: out of range
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
a.axis(5)

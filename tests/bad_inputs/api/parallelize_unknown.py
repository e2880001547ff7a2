# parallelize('didw').
# EXPECT-RAISES: FusionDefinitionError: unknown parallel type
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
a.axis(0).parallelize('didw')

# Two stream axes on one tensor.
# EXPECT-RAISES: FusionDefinitionError: at most one stream
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
a.axis(0).parallelize(ParallelType.Stream)
a.axis(1).parallelize(ParallelType.Stream)

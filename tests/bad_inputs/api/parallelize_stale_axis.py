# parallelize an IterDomain that a split replaced.
# EXPECT-RAISES: FusionDefinitionError: no longer in the loop domain
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
old = a.axis(0)
a.outer_split(0, 2)
old.parallelize(ParallelType.Stream)

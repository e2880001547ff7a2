# broadcast flags that do not cover the input's axes.
# EXPECT-RAISES: FusionDefinitionError: one bool per output axis
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.broadcast(a, [True])

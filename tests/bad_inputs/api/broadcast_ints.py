# broadcast flags given as ints [1, 0, 0].
# EXPECT-RAISES: FusionDefinitionError: one bool per output axis
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.broadcast(a, [1, 0, 0])

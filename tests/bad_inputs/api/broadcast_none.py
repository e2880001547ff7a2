# broadcast flags of None.
# EXPECT-RAISES: FusionDefinitionError: is_broadcast_dim
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.broadcast(a, None)

# add of [4, 8] and [4, 5].
# EXPECT-RAISES: FusionDefinitionError: not broadcast-compatible
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    b = fd.define_tensor([4, 5])
    fd.ops.add(a, b)

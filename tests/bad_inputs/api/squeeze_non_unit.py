# squeeze an axis of extent 4.
# EXPECT-RAISES: FusionDefinitionError: only extent-1 axes
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.squeeze(a, [0])

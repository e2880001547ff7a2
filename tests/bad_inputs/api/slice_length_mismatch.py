# slice with fewer ends than starts.
# EXPECT-RAISES: FusionDefinitionError: one entry per axis
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.slice(a, [0, 0], [4])

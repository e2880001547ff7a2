# reshape [4, 8] to [3, 5].
# EXPECT-RAISES: FusionDefinitionError: cannot reshape
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.reshape(a, [3, 5])

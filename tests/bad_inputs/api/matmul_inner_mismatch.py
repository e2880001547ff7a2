# matmul of [4, 8] by [4, 2].
# EXPECT-RAISES: FusionDefinitionError: inner dimensions do not match
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    b = fd.define_tensor([4, 2])
    fd.ops.matmul(a, b)

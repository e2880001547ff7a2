# matmul of f32 by bf16.
# EXPECT-RAISES: FusionDefinitionError: different element types
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    b = fd.define_tensor([8, 2], dtype='bfloat16')
    fd.ops.matmul(a, b)
